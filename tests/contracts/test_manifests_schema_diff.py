"""Differential test: evstore's manifest schema against the published orbidocs schemas.

Claim: on projection-revision-1 documents without ``phase``, our schema
(evstore/schemas/orbidocs-manifest-v1.schema.json) accepts a document exactly when at least one
of the two published revisions in ../shared/contracts/orbidocs accepts it. Checked over the
upstream fixtures, a systematic enumeration of mutations of four base manifests (every member
removed, wrong types, bad enums and patterns, bounds, extra members, item kind and flag
combinations, review/target variations) and hypothesis-driven combinations of them.

The published schemas are read from ../shared and never fetched: their ``$id``s are ``urn:``s,
against which jsonschema-rs cannot resolve their relative ``$ref``s (``operator-task-common...
.schema.json#/$defs/name``), so each is given, in memory, an ``https://...invalid/`` base and
its referenced files are served from a local registry by file name; any other retrieval fails.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evstore.contracts.manifests import rules as m
from evstore.core.canonical import loads
from evstore.core.digests import sha256_b64u

pytestmark = pytest.mark.shared

PUBLISHED = (
    "corpus-passage-evidence-manifest.v1.schema.json",
    "at-8c55b85/corpus-passage-evidence-manifest.v1.schema.json",
)
BASE_URI = "https://orbidocs.invalid/schemas/"
FIXTURES = (
    "fixture.corpus-passage-evidence-manifest.json",
    "at-8c55b85/fixture.corpus-passage-evidence-manifest.json",
    "invalid/omitted-required.corpus-passage-evidence-manifest.json",
)
# Codes validate() derives from our schema; they are empty exactly when the schema accepts.
SCHEMA_CODES = {
    m.SCHEMA,
    m.RULE_1,
    m.PHASE_MISSING,
    m.REQUIRED_EXCLUDED,
    m.OMITTED_REASON,
    m.INCLUDED_REASON,
    m.ARTIFACT_EXECUTION,
}

Validator = Callable[[Any], bool]


def _refuse(uri: str) -> Any:
    raise ValueError(f"no network: {uri} is not a local schema")


def _rebased(path: Path) -> dict[str, Any]:
    schema = json.loads(path.read_text(encoding="utf-8"))
    schema["$id"] = BASE_URI + path.name
    return schema


@pytest.fixture(scope="module")
def published(shared_dir: Path) -> list[Validator]:
    folder = shared_dir / "contracts" / "orbidocs"
    # Every schema in the folder, by file name: the manifest schemas reference
    # corpus-reasoning-room-policy.v1 and operator-task-common.v1 that way.
    registry = jsonschema_rs.Registry(
        [(BASE_URI + p.name, _rebased(p)) for p in sorted(folder.glob("*.schema.json"))],
        retriever=_refuse,
    )
    out = []
    for name in PUBLISHED:
        validator = jsonschema_rs.Draft202012Validator(
            _rebased(folder / name), validate_formats=True, registry=registry, retriever=_refuse
        )
        out.append(validator.is_valid)
    return out


@pytest.fixture(scope="module")
def ours() -> Validator:
    return jsonschema_rs.Draft202012Validator(
        m.load_schema(), validate_formats=True, retriever=_refuse
    ).is_valid


def _published_accepts(published: list[Validator], doc: Any) -> bool:
    return any(is_valid(doc) for is_valid in published)


def _in_domain(doc: Any) -> bool:
    """Projection revision 1 without phase: not a document with phase or revision 2."""
    if not isinstance(doc, dict) or "phase" in doc:
        return False
    projection = doc.get("projection")
    if isinstance(projection, dict):
        rev = projection.get("revision")
        if isinstance(rev, (int, float)) and not isinstance(rev, bool) and rev == 2:
            return False
    return True


# --- base documents ---------------------------------------------------------------------


def _d(tag: str) -> str:
    return "sha256:" + sha256_b64u(tag.encode())


def _rich() -> dict[str, Any]:
    """Six item kinds, an omitted item, step/id and source/instance, a review target."""
    ex = "corpus-task-pack-execution:" + _d("ex")
    kinds = ["execution", "artifact", "candidate", "proposal", "review", "decision"]
    items: list[dict[str, Any]] = []
    for kind in kinds:
        item: dict[str, Any] = {
            "kind": kind,
            "ref": f"corpus-{kind}:" + _d(kind),
            "digest": _d(kind),
            "required": kind in ("execution", "candidate"),
            "included": True,
            "execution/ref": ex,
            "step/id": f"step-{kind}",
            "source/instance": "environment:qmail-01",
        }
        items.append(item)
    items[4]["included"] = False
    items[4]["omitted/reason"] = "exceeds-limit"
    content = b"rendered evidence\n"
    return {
        "schema": "corpus-passage-evidence-manifest.v1",
        "manifest/ref": "corpus-evidence-manifest:" + _d("self"),
        "query/id": "query:q",
        "room/id": "room:r",
        "reader": {"kind": "nym", "id": "nym:anon"},
        "inference-flow-binding/ref": "corpus-inference-flow-binding:b",
        "projection": {"id": "corpus-task-pack-evidence", "revision": 1},
        "bytes/max": 262144,
        "items": items,
        "class/key": "Personal",
        "content/ref": "object-store:sha256:" + sha256_b64u(content),
        "content/digest": "sha256:" + sha256_b64u(content),
        "content/size-bytes": 1,
        "review/target": {
            "proposal/ref": "corpus-experiment:" + _d("proposal"),
            "proposal/digest": _d("proposal"),
            "candidate/digest": _d("candidate"),
        },
    }


def _minimal() -> dict[str, Any]:
    """Only required members, one item."""
    doc = _rich()
    del doc["review/target"]
    doc["items"] = [
        {
            "kind": "execution",
            "ref": "x:y",
            "digest": _d("x"),
            "required": False,
            "included": True,
        }
    ]
    return doc


@pytest.fixture(scope="module")
def bases(shared_dir: Path) -> dict[str, dict[str, Any]]:
    folder = shared_dir / "fixtures" / "orbidocs"
    return {
        "fixture": loads((folder / FIXTURES[0]).read_bytes()),
        "fixture-8c55b85": loads((folder / FIXTURES[1]).read_bytes()),
        "rich": _rich(),
        "minimal": _minimal(),
    }


# --- mutations ----------------------------------------------------------------------------

Path_ = tuple[str | int, ...]
# A mutation: (id, path, op, value); op is "del", "set" or "add" (add a member to an object).
Mutation = tuple[str, Path_, str, Any]

OTHER_TYPES: list[Any] = [None, True, False, 0, 1, -1, 1.5, "", "x", [], {}, [1], {"a": 1}]
B64 = "A" * 43


def _walk(value: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _walk(child, (*path, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _walk(child, (*path, i))


def _string_variants(s: str) -> list[str]:
    out = [
        s + " ",
        " " + s,
        s + "\n",
        s + "\t",
        s.upper(),
        s.lower(),
        s[:-1],
        s + "A",
        s + "=",
        s + "+",
        s + "/",
        s.replace(":", "", 1),
        s.replace(":", " :", 1),
        s.replace(":", "_", 1),
        ":" + s,
        "1" + s,
        "A" + s,
        s.split(":", 1)[0] + ":",
        s.split(":", 1)[0] + ": x",
        s + "é",
        s + "\u00a0",
        s + "\u2028",
        "\u00e9" + s,
    ]
    for n in (128, 129, 512, 513, 4096, 4097):
        if len(s) < n:
            out.append(s + "a" * (n - len(s)))
    if s.startswith("sha256:") or ":sha256:" in s:
        head, _, tail = s.rpartition(":")
        out += [
            f"{head}:{tail[:-1]}",
            f"{head}:{tail}A",
            f"{head}:{tail[:-1]}=",
            f"{head}:{tail[:-1]}+",
            f"{head}:{tail[:-1]}/",
            f"{head}:{tail[:-1]}.",
            f"{head.replace('sha256', 'SHA256')}:{tail}",
            f"{head.replace('sha256', 'sha-256')}:{tail}",
            f"{head}:{'0' * 64}",
        ]
    return out


def _int_variants(n: int) -> list[Any]:
    return [n - 1, n + 1, 0, 1, 2, -1, 262143, 262144, 262145, float(n), n + 0.5, str(n)]


# Values that are valid somewhere in the schema, tried everywhere.
KNOWN_VALUES: list[Any] = [
    "corpus-passage-evidence-manifest.v1",
    "corpus-evidence-manifest:sha256:" + B64,
    "corpus-task-pack-execution:sha256:" + B64,
    "corpus-experiment:sha256:" + B64,
    "object-store:sha256:" + B64,
    "sha256:" + B64,
    "query:q",
    "room:r",
    "a:b",
    "inspect-qmail",
    "exceeds-limit",
    "Public",
    "Community",
    "Personal",
    "corpus-task-pack-evidence",
    *["nym", "participant", "node", "routing-subject", "organization", "robot"],
    *["execution", "artifact", "candidate", "proposal", "review", "decision", "note"],
]


def _mutations(doc: dict[str, Any]) -> Iterator[Mutation]:
    for path, value in _walk(doc):
        where = "/".join(map(str, path)) or "(root)"
        if path:
            yield f"del {where}", path, "del", None
        if not path:
            continue
        for other in OTHER_TYPES:
            yield f"set {where}={other!r}", path, "set", other
        if isinstance(value, str):
            for variant in _string_variants(value):
                yield f"set {where}={variant!r}", path, "set", variant
            for known in KNOWN_VALUES:
                yield f"set {where}={known!r}", path, "set", known
        elif isinstance(value, bool):
            yield f"flip {where}", path, "set", not value
            yield f"set {where}=int", path, "set", int(value)
        elif isinstance(value, int):
            for variant in _int_variants(value):
                yield f"set {where}={variant!r}", path, "set", variant
        if isinstance(value, dict):
            for key in ("x-extra", "Schema", "phase ", *_ALL_MEMBERS):
                if key not in value and key != "phase":
                    yield f"add {where}+{key}", path, "add", (key, _member_value(key))
        if isinstance(value, list) and value:
            yield f"{where}=[]", path, "set", []
            yield f"{where}=first", path, "set", value[:1]
            yield f"{where}=32", path, "set", (value * 32)[:32]
            yield f"{where}=33", path, "set", (value * 33)[:33]
            yield f"{where}=dup", path, "set", value + value[:1]
    # Root-level additions (the walk skips the root's own path for "set").
    for key in ("x-extra", "review/target", "omitted/reason", "kind"):
        if key not in doc:
            yield f"add +{key}", (), "add", (key, _member_value(key))


_ALL_MEMBERS = (
    "omitted/reason",
    "execution/ref",
    "step/id",
    "source/instance",
    "review/target",
    "id",
    "kind",
    "revision",
    "required",
    "included",
    "candidate/digest",
)


def _member_value(key: str) -> Any:
    return {
        "omitted/reason": "exceeds-limit",
        "execution/ref": "corpus-task-pack-execution:sha256:" + B64,
        "step/id": "s",
        "source/instance": "environment:e",
        "review/target": {
            "proposal/ref": "corpus-experiment:sha256:" + B64,
            "proposal/digest": "sha256:" + B64,
            "candidate/digest": "sha256:" + B64,
        },
        "id": "corpus-task-pack-evidence",
        "kind": "execution",
        "revision": 1,
        "required": False,
        "included": True,
        "candidate/digest": "sha256:" + B64,
    }.get(key, 1)


def _apply(doc: dict[str, Any], mutation: Mutation) -> dict[str, Any] | None:
    """A mutated deep copy, or None where the path no longer exists."""
    _, path, op, value = mutation
    out = copy.deepcopy(doc)
    if not path:
        if op != "add" or not isinstance(out, dict):
            return None
        out[value[0]] = copy.deepcopy(value[1])
        return out
    node: Any = out
    for key in path[:-1]:
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            return None
    last = path[-1]
    try:
        if op == "del":
            del node[last]
        elif op == "set":
            node[last] = copy.deepcopy(value)
        else:
            target = node[last]
            if not isinstance(target, dict):
                return None
            target[value[0]] = copy.deepcopy(value[1])
    except (KeyError, IndexError, TypeError):
        return None
    return out


def _item_combinations() -> Iterator[tuple[str, dict[str, Any]]]:
    """Every kind x required x included x omitted/reason x execution/ref, as item 0."""
    for kind in ("execution", "artifact", "candidate", "proposal", "review", "decision", "x"):
        for required in (True, False):
            for included in (True, False, None, "false"):
                for reason in (None, "exceeds-limit", "other"):
                    for execution in (True, False):
                        item: dict[str, Any] = {
                            "kind": kind,
                            "ref": "a:b",
                            "digest": "sha256:" + B64,
                            "required": required,
                        }
                        if included is not None:
                            item["included"] = included
                        if reason is not None:
                            item["omitted/reason"] = reason
                        if execution:
                            item["execution/ref"] = "corpus-task-pack-execution:sha256:" + B64
                        yield (
                            f"item {kind} req={required} inc={included} reason={reason} "
                            f"exec={execution}",
                            item,
                        )


def _corpus(bases: dict[str, dict[str, Any]]) -> Iterator[tuple[str, Any]]:
    for name, base in bases.items():
        yield name, base
        for mutation in _mutations(base):
            doc = _apply(base, mutation)
            if doc is not None:
                yield f"{name}: {mutation[0]}", doc
    for label, item in _item_combinations():
        for name in ("minimal", "rich"):
            doc = copy.deepcopy(bases[name])
            doc["items"][0] = item
            yield f"{name}: {label}", doc


def _disagreements(
    corpus: Iterator[tuple[str, Any]], published: list[Validator], ours: Validator
) -> tuple[list[str], int, int]:
    bad: list[str] = []
    accepted = rejected = 0
    for label, doc in corpus:
        if not _in_domain(doc):
            continue
        theirs = _published_accepts(published, doc)
        mine = ours(doc)
        accepted += theirs
        rejected += not theirs
        if theirs != mine:
            bad.append(f"{label}: published {theirs}, ours {mine}")
    return bad, accepted, rejected


# --- tests ----------------------------------------------------------------------------------


def test_fixtures_verdicts(shared_dir: Path, published: list[Validator], ours: Validator) -> None:
    folder = shared_dir / "fixtures" / "orbidocs"
    verdicts = {}
    for name in FIXTURES:
        doc = loads((folder / name).read_bytes())
        verdicts[name] = (_published_accepts(published, doc), ours(doc))
    assert verdicts == {
        FIXTURES[0]: (True, True),
        FIXTURES[1]: (True, True),
        FIXTURES[2]: (False, False),
    }


def test_published_revisions_differ_where_expected(
    published: list[Validator], bases: dict[str, dict[str, Any]]
) -> None:
    # The older revision knows two item kinds and no review target; the newer, six and one.
    newer, older = published
    rich = bases["rich"]
    assert newer(rich) and not older(rich)
    assert newer(bases["fixture-8c55b85"]) and older(bases["fixture-8c55b85"])


def test_systematic_mutations(
    published: list[Validator], ours: Validator, bases: dict[str, dict[str, Any]]
) -> None:
    bad, accepted, rejected = _disagreements(_corpus(bases), published, ours)
    assert bad == []
    # The corpus must exercise both verdicts in bulk, or agreement proves little.
    assert accepted >= 200, accepted
    assert rejected >= 2000, rejected


def test_validate_codes_track_our_schema(ours: Validator, bases: dict[str, dict[str, Any]]) -> None:
    # validate() maps every fault of our schema to a code; none may be lost or invented.
    for label, doc in _corpus(bases):
        errors = m.validate(doc).errors
        schema_faults = [e for e in errors if e.code in SCHEMA_CODES]
        assert (schema_faults == []) == ours(doc), label


ALL_MUTATIONS: list[tuple[str, Mutation]] = []


def _all_mutations(bases: dict[str, dict[str, Any]]) -> list[tuple[str, Mutation]]:
    if not ALL_MUTATIONS:
        for name, base in bases.items():
            ALL_MUTATIONS.extend((name, mu) for mu in _mutations(base))
    return ALL_MUTATIONS


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_combined_mutations(
    data: st.DataObject,
    published: list[Validator],
    ours: Validator,
    bases: dict[str, dict[str, Any]],
) -> None:
    pool = _all_mutations(bases)
    base_name = data.draw(st.sampled_from(sorted(bases)), label="base")
    doc: Any = bases[base_name]
    steps = data.draw(
        st.lists(st.sampled_from([mu for name, mu in pool if name == base_name]), max_size=4),
        label="mutations",
    )
    for mu in steps:
        doc = _apply(doc, mu) or doc
    # And one free-text string somewhere, against the patterns.
    strings = [p for p, v in _walk(doc) if isinstance(v, str) and p]
    if strings and data.draw(st.booleans(), label="free text"):
        path = data.draw(st.sampled_from(strings), label="path")
        text = data.draw(st.text(max_size=60), label="text")
        prefix = data.draw(st.sampled_from(["", doc_prefix(doc, path)]), label="prefix")
        doc = _apply(doc, ("free", path, "set", prefix + text)) or doc
    if _in_domain(doc):
        assert ours(doc) == _published_accepts(published, doc)


def doc_prefix(doc: Any, path: Path_) -> str:
    """The text up to and including the last ``:`` of the string at ``path`` (keeps schemes)."""
    node = doc
    for key in path:
        node = node[key]
    return node.rpartition(":")[0] + ":" if ":" in node else ""


# The harness must be able to fail: weaken or tighten our schema in small ways and it must
# find a disagreement for each.
def _drop_kind(s: dict[str, Any]) -> None:
    s["$defs"]["item"]["properties"]["kind"]["enum"].remove("decision")


def _no_max_items(s: dict[str, Any]) -> None:
    del s["properties"]["items"]["maxItems"]


def _loose_digest(s: dict[str, Any]) -> None:
    s["$defs"]["sha256-digest"]["pattern"] = "^sha256:[A-Za-z0-9_=-]{43}$"


def _no_rule_1(s: dict[str, Any]) -> None:
    s["allOf"] = [a for a in s["allOf"] if a["$ref"] != "#/$defs/rule-1"]


def _no_included_reason_rule(s: dict[str, Any]) -> None:
    s["$defs"]["item"]["allOf"].pop(2)


def _open_reader(s: dict[str, Any]) -> None:
    del s["$defs"]["room-subject"]["additionalProperties"]


def _short_step(s: dict[str, Any]) -> None:
    s["$defs"]["item"]["properties"]["step/id"]["maxLength"] = 127


@pytest.mark.parametrize(
    "weaken",
    [
        _drop_kind,
        _no_max_items,
        _loose_digest,
        _no_rule_1,
        _no_included_reason_rule,
        _open_reader,
        _short_step,
    ],
)
def test_harness_catches_schema_drift(
    weaken: Callable[[dict[str, Any]], None],
    published: list[Validator],
    bases: dict[str, dict[str, Any]],
) -> None:
    schema = m.load_schema()
    weaken(schema)
    drifted = jsonschema_rs.Draft202012Validator(
        schema, validate_formats=True, retriever=_refuse
    ).is_valid
    bad, _, _ = _disagreements(_corpus(bases), published, drifted)
    assert bad, f"{weaken.__name__} went unnoticed"


# --- our schema is our own and self-contained ------------------------------------------------


def test_our_schema_is_self_contained_and_ours(shared_dir: Path) -> None:
    schema = m.load_schema()
    jsonschema_rs.meta.validate(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].startswith("urn:evstore:")
    refs = [v for p, v in _walk(schema) if p and p[-1] == "$ref"]
    assert refs and all(r.startswith("#/") for r in refs)
    upstream = json.loads(
        (shared_dir / "contracts" / "orbidocs" / PUBLISHED[0]).read_text(encoding="utf-8")
    )
    texts = {v for p, v in _walk(upstream) if p and p[-1] in ("title", "description")}
    ours_texts = {v for p, v in _walk(schema) if p and p[-1] in ("title", "description")}
    assert not texts & ours_texts


def test_revision_2_is_where_we_go_beyond_upstream(
    published: list[Validator], ours: Validator, bases: dict[str, dict[str, Any]]
) -> None:
    # Outside the differential's domain: revision 2 with a phase object (possibly no item) is
    # ours alone; revision 1 with a phase is refused by both.
    for base in bases.values():
        rev2 = copy.deepcopy(base)
        rev2["projection"]["revision"] = 2
        rev2["phase"] = {}
        rev2_empty = copy.deepcopy(rev2)
        rev2_empty["items"] = []
        rev2_empty.pop("review/target", None)
        rev1_phase = copy.deepcopy(base)
        rev1_phase["phase"] = {}
        assert ours(rev2) and not _published_accepts(published, rev2)
        assert ours(rev2_empty) and not _published_accepts(published, rev2_empty)
        assert not ours(rev1_phase) and not _published_accepts(published, rev1_phase)
