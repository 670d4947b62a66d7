"""Semantic rules of insonic answer evidence 1.3.0 (evstore.contracts.packages.store), no database.

Each case mutates one rich, valid package (or envelope) so that exactly one rule breaks, and
asserts the one fault: its code and JSON Pointer. A mutation that broke the schema, or a
second rule, would show up as an extra fault and fail the case.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evstore.contracts.packages import rules as R
from evstore.contracts.packages import rules_context as C
from evstore.contracts.packages import schema as S
from evstore.contracts.packages import store as P
from evstore.core import errors as E
from evstore.core.errors import BindingConflict, ContractError

SCHEMA = "contracts/insonic-answer-evidence-1.3.0.schema.json"

WS = "20000000-0000-4000-8000-000000000001"
REC_A = "20000000-0000-4000-8000-0000000000a1"
REC_B = "20000000-0000-4000-8000-0000000000b2"
PKG_ID = "20000000-0000-4000-8000-000000000099"


def _hex(c: str) -> str:
    return c * 64


def _reference(recording: str, revision: str, cue: str, ordinal: str, digest: str) -> dict:
    return {
        "workspace_id": WS,
        "recording_id": recording,
        "recording_revision": revision,
        "document_digest": _hex(digest),
        "source_digest": _hex("1"),
        "source_map_digest": _hex("2"),
        "identity_digest": _hex("3"),
        "cue_id": cue,
        "ordinal": ordinal,
        "source": {"start_us": "1000000", "end_us": "2500000"},
        "stream_index": 0,
        "channel": 1,
    }


def _item(ident: str, ref: dict, text: str, family: str) -> dict:
    return {
        "id": ident,
        "reference": ref,
        "text": text,
        "date_known": True,
        "recording_date": "2024-05-01",
        "family": family,
        "lineage": "same source digest",
        "paths": [{"kind": "catalog-filter"}],
        "statements": [
            {
                "subject": "launch",
                "relation": "moved to",
                "object": "June",
                "polarity": "positive",
                "modality": "asserted",
                "conditions": None,
                "cue_ids": [ref["cue_id"]],
            }
        ],
        "score": {
            "relevance": 9,
            "independence": 1,
            "coverage": 2,
            "contradiction": 0,
            "total": 12,
        },
        "reasons": ["matched question terms"],
    }


def finish(doc: dict) -> dict:
    """Set context.bytes = context.tokens to the context's own compact UTF-8 size.

    Computed here independently of evstore: try sizes until the claim equals the measure.
    """
    ctx = doc["context"]
    for n in range(1, 262145):
        ctx["bytes"] = ctx["tokens"] = n
        size = len(json.dumps(ctx, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        if size == n:
            return doc
    raise AssertionError("no fixed point")


def rich_package() -> dict:
    """Three items over two recordings, non-ASCII text, conflicts, a context tree."""
    a1 = _reference(REC_A, "7", "cue-1", "0", "a")
    a2 = _reference(REC_A, "7", "cue-2", "1", "a")  # same revision, same digests: consistent
    b1 = _reference(REC_B, "9007199254740993", "cue-9", "4", "b")
    b1["source"] = {"start_us": "9007199254740992", "end_us": "9007199254740993"}
    items = [
        _item("ev-1", a1, "Le lancement est repoussé à juin — décision finale.", "fam-a"),
        _item("ev-2", a2, "Launch moved to June, pending budget review.", "fam-a"),
        _item("ev-3", b1, "発売は六月に延期されました。", "fam-b"),
    ]
    question = "When is the launch?"
    doc = {
        "kind": "answer-evidence-context",
        "schema_version": "1.3.0",
        "id": PKG_ID,
        "workspace_id": WS,
        "key": _hex("c"),
        "state": "complete",
        "request": {
            "version": "1.3.0",
            "question": question,
            "filters": {"source_interval": {"start_us": "0", "end_us": "9999999999999999999"}},
            "budget": {"items": 8},
        },
        "observation": {
            "source_epoch": _hex("d"),
            "catalog_revision": "9007199254740993",
            "graph_state": "current",
        },
        "items": items,
        "independent_families": 2,
        "conflicts": [{"evidence_ids": ["ev-1", "ev-3"], "reason": "date disagreement"}],
        "exclusions": [{"evidence_id": "ev-excluded-elsewhere", "reason": "outside scope"}],
        "diagnostics": [],
        "usage": {
            "rows": 3,
            "source_bytes": 300,
            "evidence_bytes": 200,
            "edges": 0,
            "rounds": 1,
            "elapsed_ms": 4,
        },
        "context": {
            "contract": "source-extract-v1",
            "question": question,
            "token_accounting": "utf8-byte-upper-bound",
            "bytes": 0,
            "tokens": 0,
            "omitted": 1,
            "nodes": [
                {"id": "n-root", "level": "cross-recording", "sources": ["ev-1", "ev-2", "ev-3"]},
                {"id": "n-rec-a", "level": "recording", "parent": "n-root", "sources": ["ev-1"]},
                {"id": "n-sec-a", "level": "section", "parent": "n-rec-a", "sources": ["ev-1"]},
                {
                    "id": "n-cue-1",
                    "level": "cue",
                    "parent": "n-sec-a",
                    "text": "Le lancement est repoussé",
                    "sources": ["ev-1"],
                    "condensed": True,
                },
                {
                    "id": "n-cue-3",
                    "level": "cue",
                    "parent": "n-root",
                    "text": "発売は六月に延期されました。",
                    "sources": ["ev-3"],
                },
                {"id": "n-cue-bare", "level": "cue", "parent": "n-root", "sources": ["ev-2"]},
            ],
        },
    }
    return finish(doc)


def rich_envelope() -> dict:
    pkg = rich_package()
    return {
        "version": "1.3.0",
        "package_id": PKG_ID,
        "state": "partial",
        "claims": [
            {
                "id": "c1",
                "text": "The launch moved to June.",
                "support": "supported",
                "kind": "quote",
                "citations": [
                    {
                        "evidence_id": "ev-1",
                        "reference": copy.deepcopy(pkg["items"][0]["reference"]),
                        "quote": "repoussé à juin",
                    },
                    {
                        "evidence_id": "ev-3",
                        "reference": copy.deepcopy(pkg["items"][2]["reference"]),
                        "quote": "六月",
                    },
                ],
            },
            {
                "id": "c2",
                "text": "The budget review outcome is unknown.",
                "support": "uncertain",
                "uncertainty": "No cue states the outcome.",
            },
        ],
        "limitations": ["one recording only partly transcribed"],
    }


def codes(faults: list) -> list[tuple[str, str]]:
    return [(f.code, f.pointer) for f in faults]


def pair(faults: E.Faults) -> tuple[list, list]:
    """(errors, warnings) of a Faults, to compare with literals."""
    return faults.errors, faults.warnings


@pytest.fixture(scope="module")
def published(shared_dir: Path) -> dict[str, Any]:
    return json.loads((shared_dir / SCHEMA).read_text("utf-8"))


# --------------------------------------------------------------------------- valid inputs


def test_embedded_examples_validate(published: dict[str, Any]) -> None:
    package = published["examples"][0]
    request = published["$defs"]["request"]["examples"][0]
    envelope = published["$defs"]["envelope"]["examples"][0]
    assert pair(R.validate_package(package)) == ([], [])
    assert pair(R.validate_package(package, {R.STRICT_CONTEXT_BYTES: True})) == ([], [])
    assert pair(R.validate_request(request)) == ([], [])
    assert pair(R.validate_request(package["request"])) == ([], [])
    assert pair(R.validate_envelope(envelope)) == ([], [])
    # The example envelope names the example package's id.
    assert pair(R.validate_envelope(envelope, package)) == ([], [])
    assert (R.detect(package), R.detect(request), R.detect(envelope)) == (
        "package",
        "request",
        "envelope",
    )


def test_example_context_bytes_is_its_own_compact_size(published: dict[str, Any]) -> None:
    context = published["examples"][0]["context"]
    assert context["bytes"] == 150 == context["tokens"]
    assert C.measure_context(context) == 150
    assert C.context_fixed_point(context) == 150
    assert context["bytes"] == 150  # context_fixed_point works on a copy


def test_rich_package_and_envelope_validate() -> None:
    pkg = rich_package()
    assert pair(R.validate_package(pkg, {R.STRICT_CONTEXT_BYTES: True})) == ([], [])
    assert pair(R.validate_envelope(rich_envelope(), pkg)) == ([], [])
    assert R.detect(rich_envelope()) == "envelope"


# --------------------------------------------------------------------------- package rules

Mutation = Callable[[dict], Any]


def _dup_item(d: dict) -> None:
    d["items"].append(copy.deepcopy(d["items"][0]))


def _cycle(d: dict) -> None:
    d["context"]["nodes"][0]["parent"] = "n-cue-1"  # root -> cue-1 -> sec-a -> rec-a -> root


def _self_parent(d: dict) -> None:
    d["context"]["nodes"][2]["parent"] = "n-sec-a"


def _revision_conflict(d: dict) -> None:
    d["items"][1]["reference"]["identity_digest"] = _hex("e")


def _revision_conflict_uuid_case(d: dict) -> None:
    # UUIDs are case-insensitive: an upper-case recording id is the same recording.
    d["items"][1]["reference"]["recording_id"] = REC_A.upper()
    d["items"][1]["reference"]["source_digest"] = _hex("f")


def _reversed_big_interval(d: dict) -> None:
    # As floats both are 9007199254740992.0: only an exact integer compare sees the order.
    d["items"][2]["reference"]["source"] = {
        "start_us": "9007199254740993",
        "end_us": "9007199254740992",
    }


PACKAGE_CASES: list[tuple[str, Mutation, str, str]] = [
    ("item-id-duplicate", _dup_item, "package.item-id-duplicate", "/items/3/id"),
    (
        "conflict-unknown",
        lambda d: d["conflicts"][0]["evidence_ids"].__setitem__(1, "ev-404"),
        "package.conflict-unknown-evidence",
        "/conflicts/0/evidence_ids/1",
    ),
    (
        "node-source-unknown",
        lambda d: d["context"]["nodes"][0]["sources"].__setitem__(2, "ev-404"),
        "package.node-source-unknown",
        "/context/nodes/0/sources/2",
    ),
    (
        "node-id-duplicate",
        lambda d: d["context"]["nodes"][5].__setitem__("id", "n-cue-3"),
        "package.node-id-duplicate",
        "/context/nodes/5/id",
    ),
    (
        "node-parent-unknown",
        lambda d: d["context"]["nodes"][2].__setitem__("parent", "n-ghost"),
        "package.node-parent-unknown",
        "/context/nodes/2/parent",
    ),
    ("node-parent-cycle", _cycle, "package.node-parent-cycle", "/context/nodes/0/parent"),
    ("node-parent-self", _self_parent, "package.node-parent-cycle", "/context/nodes/2/parent"),
    (
        "node-text-level",
        lambda d: d["context"]["nodes"][2].__setitem__("text", "Le lancement"),
        "package.node-text-level",
        "/context/nodes/2/text",
    ),
    (
        "node-text-two-sources",
        lambda d: d["context"]["nodes"][3]["sources"].append("ev-2"),
        "package.node-text-sources",
        "/context/nodes/3/sources",
    ),
    (
        "node-text-no-source",
        lambda d: d["context"]["nodes"][3].__setitem__("sources", []),
        "package.node-text-sources",
        "/context/nodes/3/sources",
    ),
    (
        "node-text-not-prefix",
        # A substring but not a prefix.
        lambda d: d["context"]["nodes"][3].__setitem__("text", "lancement est repoussé"),
        "package.node-text-prefix",
        "/context/nodes/3/text",
    ),
    (
        "node-text-unicode-variant",
        # "é" decomposed (e + combining acute) is a different string: no normalization.
        lambda d: d["context"]["nodes"][3].__setitem__("text", "Le lancement est repousse\u0301"),
        "package.node-text-prefix",
        "/context/nodes/3/text",
    ),
    (
        "item-interval-equal",
        lambda d: d["items"][0]["reference"]["source"].__setitem__("end_us", "1000000"),
        "package.interval-order",
        "/items/0/reference/source/end_us",
    ),
    (
        "item-interval-big-reversed",
        _reversed_big_interval,
        "package.interval-order",
        "/items/2/reference/source/end_us",
    ),
    (
        "request-interval",
        lambda d: d["request"]["filters"]["source_interval"].__setitem__("end_us", "0"),
        "package.interval-order",
        "/request/filters/source_interval/end_us",
    ),
    (
        "context-question",
        lambda d: d["context"].__setitem__("question", "When is the launch"),
        "package.context-question",
        "/context/question",
    ),
    (
        "context-omitted",
        lambda d: d["context"].__setitem__("omitted", 4),
        "package.context-omitted",
        "/context/omitted",
    ),
    (
        "item-budget",
        lambda d: d["request"]["budget"].__setitem__("items", 2),
        "package.item-budget",
        "/items",
    ),
    (
        "independent-families",
        lambda d: d.__setitem__("independent_families", 3),
        "package.independent-families",
        "/independent_families",
    ),
    ("revision-conflict", _revision_conflict, "package.revision-conflict", "/items/1/reference"),
    (
        "revision-conflict-uuid-case",
        _revision_conflict_uuid_case,
        "package.revision-conflict",
        "/items/1/reference",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "code", "pointer"),
    [c[1:] for c in PACKAGE_CASES],
    ids=[c[0] for c in PACKAGE_CASES],
)
def test_package_rule(mutate: Mutation, code: str, pointer: str) -> None:
    doc = rich_package()
    mutate(doc)
    finish(doc)  # keep context.bytes right so only the rule under test can fire
    errors, warnings = pair(R.validate_package(doc))
    assert codes(errors) == [(code, pointer)]
    assert warnings == []
    err = errors[0]
    assert err.rule.startswith(R.CONTRACT + "#/")
    assert err.code in E.CODES
    assert err.rule == E.CODES[err.code].rule
    expected_cls = E.PackageBindingError if code == "package.revision-conflict" else E.PackageError
    assert type(err) is expected_cls


def test_exclusions_are_not_checked_against_items() -> None:
    doc = rich_package()
    assert doc["exclusions"][0]["evidence_id"] not in {i["id"] for i in doc["items"]}
    assert R.validate_package(doc).errors == []


def test_big_integer_strings_compare_as_integers() -> None:
    # 2**53 and 2**53 + 1 are one float; the rich package's ev-3 interval is
    # [9007199254740992, 9007199254740993): valid only under exact integer compare.
    doc = rich_package()
    src = doc["items"][2]["reference"]["source"]
    assert float(src["start_us"]) == float(src["end_us"])
    assert R.validate_package(doc).errors == []
    # Widest values the pattern allows (19 digits, beyond 2**63).
    src.update(start_us="9999999999999999998", end_us="9999999999999999999")
    assert R.validate_package(finish(doc)).errors == []
    src.update(start_us="9999999999999999999", end_us="9999999999999999998")
    assert codes(R.validate_package(finish(doc)).errors) == [
        ("package.interval-order", "/items/2/reference/source/end_us")
    ]


def test_item_budget_default_applies_when_zero_or_absent() -> None:
    assert S.budget_default("items") == 128
    doc = rich_package()
    base = doc["items"][1]
    doc["items"] = [dict(copy.deepcopy(base), id=f"ev-{n}") for n in range(128)]
    doc["conflicts"] = []
    doc["independent_families"] = 1
    doc["context"]["nodes"] = []
    for budget in ({"items": 0}, {}, None):
        if budget is None:
            doc["request"].pop("budget", None)
        else:
            doc["request"]["budget"] = budget
        assert R.effective_item_budget(doc["request"]) == 128
        assert R.validate_package(finish(doc)).errors == []
        doc["items"].append(dict(copy.deepcopy(base), id="ev-extra"))
        assert codes(R.validate_package(finish(doc)).errors) == [("package.item-budget", "/items")]
        doc["items"].pop()


# --------------------------------------------------------------------------- context size


def test_context_bytes_is_a_warning_by_default_and_an_error_when_strict() -> None:
    doc = rich_package()
    right = doc["context"]["bytes"]
    doc["context"]["bytes"] = doc["context"]["tokens"] = right + 1
    errors, warnings = pair(R.validate_package(doc))
    assert errors == []
    assert codes(warnings) == [("package.context-bytes", "/context/bytes")]
    assert warnings[0].details["fixed_point"] == right
    errors, warnings = pair(R.validate_package(doc, {R.STRICT_CONTEXT_BYTES: True}))
    assert codes(errors) == [("package.context-bytes", "/context/bytes")]
    assert warnings == []
    # Settings are typed (evstore.core.settings.setting): only the bool True is on, never a
    # string that merely looks true.
    for text in ("true", "1", "yes", "on"):
        errors, warnings = pair(R.validate_package(doc, {R.STRICT_CONTEXT_BYTES: text}))
        assert errors == []
        assert codes(warnings) == [("package.context-bytes", "/context/bytes")]
    assert R.validate_package(doc, {R.STRICT_CONTEXT_BYTES: False}).errors == []


def test_context_tokens_must_equal_bytes() -> None:
    doc = rich_package()
    right = doc["context"]["bytes"]
    # Same digit count, so bytes stays right and only tokens is off.
    doc["context"]["tokens"] = right + 1 if (right + 1) % 10 else right - 1
    errors, warnings = pair(R.validate_package(doc))
    assert errors == []
    assert codes(warnings) == [("package.context-tokens", "/context/tokens")]
    errors, _ = pair(R.validate_package(doc, {R.STRICT_CONTEXT_BYTES: True}))
    assert codes(errors) == [("package.context-tokens", "/context/tokens")]


def test_context_bytes_counts_utf8_bytes_not_characters() -> None:
    doc = rich_package()
    ctx = doc["context"]
    text = json.dumps(ctx, ensure_ascii=False, separators=(",", ":"))
    assert len(text.encode("utf-8")) == ctx["bytes"] > len(text)
    # An ASCII-escaped serialization would be longer still; it is not the measure.
    assert len(json.dumps(ctx, separators=(",", ":"))) > ctx["bytes"]


# --------------------------------------------------------------------------- ordering, shape


def test_schema_faults_come_first_then_semantic_faults() -> None:
    doc = rich_package()
    doc["items"][2]["id"] = 7  # schema: not a string
    doc["items"][0]["lineage"] = "x" * 257  # schema: too long
    doc["independent_families"] = 3  # semantic
    doc["context"]["question"] = "other"  # semantic
    errors, _ = pair(R.validate_package(finish(doc)))
    got = codes(errors)
    assert got[:2] == [("package.schema", "/items/0/lineage"), ("package.schema", "/items/2/id")]
    assert set(got[2:]) >= {
        ("package.context-question", "/context/question"),
        ("package.independent-families", "/independent_families"),
    }
    assert all(c != "package.schema" for c, _ in got[2:])


def test_schema_faults_are_ordered_by_numeric_index() -> None:
    doc = rich_package()
    base = doc["items"][1]
    doc["items"] = [dict(copy.deepcopy(base), id=f"ev-{n}") for n in range(12)]
    doc["request"].pop("budget")
    doc["context"]["nodes"] = []
    doc["conflicts"] = []
    doc["independent_families"] = 1
    doc["items"][10]["date_known"] = "yes"
    doc["items"][2]["date_known"] = "no"
    errors, _ = pair(R.validate_package(finish(doc)))
    assert codes(errors) == [
        ("package.schema", "/items/2/date_known"),
        ("package.schema", "/items/10/date_known"),
    ]
    assert errors[0].details["keyword"] == "type"


@pytest.mark.parametrize(
    ("path", "value", "pointer"),
    [
        (("id",), "not-a-uuid", "/id"),
        (("workspace_id",), "20000000-0000-4000-8000-00000000000", "/workspace_id"),
        (
            ("request", "filters", "recording_dates"),
            {"from": "2023-02-29"},
            "/request/filters/recording_dates/from",
        ),
    ],
    ids=["uuid", "uuid-short", "date"],
)
def test_formats_are_asserted(path: tuple[str, ...], value: Any, pointer: str) -> None:
    doc = rich_package()
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    errors, _ = pair(R.validate_package(finish(doc)))
    assert codes(errors) == [("package.schema", pointer)]
    assert errors[0].details["keyword"] == "format"


def test_structural_faults_are_bounded() -> None:
    doc = rich_package()
    doc["exclusions"] = [None] * 5000
    errors, _ = pair(R.validate_package(doc))
    assert len(errors) == S.MAX_SCHEMA_FAULTS + 1
    assert [e.pointer for e in errors[:2]] == ["/exclusions/0", "/exclusions/1"]
    assert (errors[-1].code, errors[-1].pointer) == ("package.schema", "")
    assert errors[-1].details == {"truncated": True, "limit": S.MAX_SCHEMA_FAULTS}


def test_garbage_never_crashes() -> None:
    for doc in (None, [], "x", 3, {}, {"items": "x", "context": []}, {"items": [None, 3]}):
        errors, _ = pair(R.validate_package(doc))
        assert errors and all(e.code == "package.schema" for e in errors)
        assert R.validate_envelope(doc, rich_package()).errors
        assert R.validate_request(doc).errors


def test_error_classes_and_code_table() -> None:
    assert issubclass(E.PackageError, ContractError)
    assert issubclass(E.PackageBindingError, BindingConflict)
    for code in ("package.revision-conflict", "package.id-reuse", "envelope.unknown-package"):
        err = E.error(code, "bound elsewhere", "/id", stored="blake3:...")
        assert isinstance(err, E.PackageBindingError)
        assert (err.code, err.pointer, err.family) == (code, "/id", "binding")
        assert err.rule.startswith(R.CONTRACT + "#/")
    assert not isinstance(E.error("package.schema", "nope"), BindingConflict)
    ours = [c for c in E.CODES.values() if c.code.split(".")[0] in R.DOCUMENT_KINDS]
    assert len(ours) == 30
    for c in ours:
        assert c.rule.startswith(R.CONTRACT + "#"), c
        assert c.family in ("contract", "binding", "corruption"), c
    # The store module re-exports nothing of the rules: its __all__ lists only its own names.
    for name in P.__all__:
        obj = getattr(P, name)
        assert getattr(obj, "__module__", P.__name__) == P.__name__, name
        assert not any(hasattr(m, name) for m in (R, C, S)), name


# --------------------------------------------------------------------------- bindings


def test_revision_bindings() -> None:
    got = R.revision_bindings(rich_package())
    key_a = (WS, REC_A, "7")
    value_a = (_hex("a"), _hex("1"), _hex("2"), _hex("3"))
    assert got == [
        ("/items/0/reference", key_a, value_a),
        ("/items/1/reference", key_a, value_a),
        (
            "/items/2/reference",
            (WS, REC_B, "9007199254740993"),
            (_hex("b"), _hex("1"), _hex("2"), _hex("3")),
        ),
    ]
    doc = rich_package()
    doc["items"][0]["reference"]["workspace_id"] = WS.upper()
    assert R.revision_bindings(doc)[0][1] == key_a
    assert R.revision_conflicts(rich_package()) == []
    doc = rich_package()
    _revision_conflict(doc)
    (err,) = R.revision_conflicts(doc)
    assert isinstance(err, E.PackageBindingError)
    assert (err.code, err.pointer) == ("package.revision-conflict", "/items/1/reference")
    assert err.details["differs"] == ["identity_digest"]
    assert err.details["bound_by"] == "/items/0/reference"


# --------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("doc", "kind"),
    [
        ({"kind": "answer-evidence-context"}, "package"),
        ({"kind": "answer-evidence-context", "schema_version": "1.4.0"}, "package"),
        ({"version": "1.3.0", "question": "q"}, "request"),
        ({"version": "1.3.0", "package_id": PKG_ID}, "envelope"),
        ({"version": "1.3.0", "claims": []}, "envelope"),
        ({"version": "1.2.0", "question": "q"}, None),
        ({"version": "1.3.0"}, None),
        ({"kind": "other", "version": "1.3.0", "question": "q"}, None),
        ({"schema_version": "1.3.0", "question": "q", "version": "1.3.0"}, None),
        ({"fragments": []}, None),
        ([], None),
        ("answer-evidence-context", None),
    ],
)
def test_detect(doc: Any, kind: str | None) -> None:
    assert R.detect(doc) == kind


# --------------------------------------------------------------------------- requests


def test_request_rules() -> None:
    req = rich_package()["request"]
    assert pair(R.validate_request(req)) == ([], [])
    bad = copy.deepcopy(req)
    bad["filters"]["source_interval"] = {"start_us": "5", "end_us": "5"}
    assert codes(R.validate_request(bad).errors) == [
        ("request.interval-order", "/filters/source_interval/end_us")
    ]
    bad = dict(req, question="")
    assert codes(R.validate_request(bad).errors) == [("request.schema", "/question")]


# --------------------------------------------------------------------------- envelopes


def _claim0_cite(n: int) -> Callable[[dict], dict]:
    return lambda e: e["claims"][0]["citations"][n]


ENVELOPE_CASES: list[tuple[str, Mutation, str, str]] = [
    (
        "package-mismatch",
        lambda e: e.__setitem__("package_id", "20000000-0000-4000-8000-000000000098"),
        "envelope.package-mismatch",
        "/package_id",
    ),
    (
        "citation-unknown-evidence",
        lambda e: _claim0_cite(1)(e).__setitem__("evidence_id", "ev-404"),
        "envelope.citation-unknown-evidence",
        "/claims/0/citations/1/evidence_id",
    ),
    (
        "citation-quote-other-item",
        # In ev-2's text, not in ev-1's.
        lambda e: _claim0_cite(0)(e).__setitem__("quote", "moved to June"),
        "envelope.citation-quote",
        "/claims/0/citations/0/quote",
    ),
    (
        "citation-quote-case",
        lambda e: _claim0_cite(0)(e).__setitem__("quote", "Repoussé à juin"),
        "envelope.citation-quote",
        "/claims/0/citations/0/quote",
    ),
    (
        "citation-reference-ordinal",
        lambda e: _claim0_cite(0)(e)["reference"].__setitem__("ordinal", "1"),
        "envelope.citation-reference",
        "/claims/0/citations/0/reference",
    ),
    (
        "citation-reference-other-item",
        lambda e: _claim0_cite(1)(e).__setitem__(
            "reference", copy.deepcopy(_claim0_cite(0)(e)["reference"])
        ),
        "envelope.citation-reference",
        "/claims/0/citations/1/reference",
    ),
    (
        "citation-reference-missing-optional",
        lambda e: _claim0_cite(0)(e)["reference"].pop("channel"),
        "envelope.citation-reference",
        "/claims/0/citations/0/reference",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "code", "pointer"),
    [c[1:] for c in ENVELOPE_CASES],
    ids=[c[0] for c in ENVELOPE_CASES],
)
def test_envelope_rule_against_package(mutate: Mutation, code: str, pointer: str) -> None:
    env = rich_envelope()
    mutate(env)
    assert pair(R.validate_envelope(env)) == ([], [])  # alone, the envelope is fine
    errors, warnings = pair(R.validate_envelope(env, rich_package()))
    assert codes(errors) == [(code, pointer)]
    assert warnings == []
    assert type(errors[0]) is E.PackageError


def test_envelope_reference_equality_is_json_equality() -> None:
    env = rich_envelope()
    ref = env["claims"][0]["citations"][0]["reference"]
    # Member order does not matter; an integral float is the same JSON number.
    env["claims"][0]["citations"][0]["reference"] = dict(reversed(list(ref.items())))
    env["claims"][0]["citations"][0]["reference"]["channel"] = 1.0
    assert pair(R.validate_envelope(env, rich_package())) == ([], [])
    env["claims"][0]["citations"][0]["reference"]["channel"] = True  # not the number 1
    errors, _ = pair(R.validate_envelope(env, rich_package()))
    assert ("envelope.citation-reference", "/claims/0/citations/0/reference") in codes(errors)


def test_envelope_package_id_compares_as_uuid() -> None:
    env = rich_envelope()
    env["package_id"] = PKG_ID.upper()
    assert pair(R.validate_envelope(env, rich_package())) == ([], [])


def test_envelope_interval_order() -> None:
    env = rich_envelope()
    env["claims"][0]["citations"][0]["reference"]["source"]["end_us"] = "999999"
    assert codes(R.validate_envelope(env).errors) == [
        ("envelope.interval-order", "/claims/0/citations/0/reference/source/end_us")
    ]


@pytest.mark.parametrize(
    ("mutate", "pointer"),
    [
        (lambda e: e.__setitem__("state", "complete"), "/claims/1/support"),
        (lambda e: e.update(state="complete", claims=[]), "/claims"),
        (lambda e: e["claims"][0].pop("citations"), "/claims/0"),
        (lambda e: e["claims"][0].__setitem__("citations", []), "/claims/0/citations"),
        (lambda e: e["claims"][1].pop("uncertainty"), "/claims/1"),
        (lambda e: e["claims"][1].__setitem__("uncertainty", ""), "/claims/1/uncertainty"),
    ],
    ids=[
        "complete-unsupported",
        "complete-empty",
        "supported-no-citations",
        "supported-empty-citations",
        "uncertain-no-reason",
        "uncertain-empty-reason",
    ],
)
def test_envelope_claim_conditionals(mutate: Mutation, pointer: str) -> None:
    env = rich_envelope()
    mutate(env)
    errors, _ = pair(R.validate_envelope(env, rich_package()))
    assert codes(errors) == [("envelope.schema", pointer)]


# --------------------------------------------------------------------------- the contract shape


def test_validate_dispatches_by_kind_and_detection() -> None:
    assert (R.CONTRACT, R.CONTRACT_VERSION) == ("insonic-answer-evidence-1.3.0", "1.3.0")
    assert R.DOCUMENT_KINDS == ("package", "request", "envelope")
    pkg, env = rich_package(), rich_envelope()
    assert pair(R.validate(pkg)) == ([], [])
    assert pair(R.validate(pkg["request"])) == ([], [])
    assert pair(R.validate(env)) == ([], [])  # alone: citations need the package
    bad = copy.deepcopy(pkg)
    bad["context"]["bytes"] = bad["context"]["tokens"] = bad["context"]["bytes"] + 1
    assert codes(R.validate(bad).warnings) == [("package.context-bytes", "/context/bytes")]
    assert codes(R.validate(bad, {R.STRICT_CONTEXT_BYTES: True}).errors) == [
        ("package.context-bytes", "/context/bytes")
    ]
    # kind wins over detection; a document no kind claims is judged as a package.
    assert {e.code for e in R.validate(pkg, kind="request").errors} == {"request.schema"}
    assert {e.code for e in R.validate({"fragments": []}).errors} == {"package.schema"}
    with pytest.raises(ValueError):
        R.validate(pkg, kind="manifest")


def test_validate_returns_faults_in_order() -> None:
    doc = rich_package()
    doc["schema_version"] = "9"  # shape
    doc["items"].append(copy.deepcopy(doc["items"][0]))  # rule
    doc["context"]["bytes"] = doc["context"]["tokens"] = doc["context"]["bytes"] + 1  # size
    faults = R.validate(doc, {R.STRICT_CONTEXT_BYTES: True})
    assert isinstance(faults, E.Faults)
    assert [e.code for e in faults.errors] == [
        "package.schema",
        "package.item-id-duplicate",
        "package.context-bytes",
    ]
    assert faults.first() is faults.errors[0]


def test_normalize_uuid() -> None:
    assert R.normalize_uuid(PKG_ID.upper()) == PKG_ID
    assert R.normalize_uuid(PKG_ID) == PKG_ID


def test_context_size_verdict() -> None:
    doc = rich_package()
    right = doc["context"]["bytes"]
    verdict = C.context_size(json.dumps(doc, ensure_ascii=False).encode())
    assert verdict.ok and (verdict.measured, verdict.fixed_point) == (right, right)
    doc["context"]["tokens"] = 7
    verdict = C.context_size(json.dumps(doc).encode(), "p.json")
    assert list(verdict.to_dict().items()) == [
        ("claimed_bytes", right),
        ("claimed_tokens", 7),
        ("measured", C.measure_context(doc["context"])),
        ("fixed_point", right),
        ("ok", False),
    ]
    with pytest.raises(E.InputError) as info:
        C.context_size(b'{"context": []}', "p.json")
    assert (info.value.code, info.value.path) == ("input.invalid", "p.json")
    with pytest.raises(E.JSONFormError):
        C.context_size(b'{"context": {}, "context": {}}')


def _imported(path: Path) -> set[str]:
    """First segment of every module ``path`` imports, function-level included."""
    import ast

    out = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom):
            names = [node.module] if node.module else [a.name for a in node.names]
            out |= {n.split(".")[0] for n in names}
            if node.module and node.module.startswith("evstore."):
                out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
            out |= {a.name.split(".")[1] for a in node.names if a.name.startswith("evstore.")}
    return out
