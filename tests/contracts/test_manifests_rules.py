"""orbidocs corpus passage evidence manifest v1: contract rules, self-address, pure bindings.

Pure functions only; no database. Upstream fixtures are read from ../shared through the
`shared_dir` fixture; every other manifest is built here, with rendered content made by the test
and manifest/ref recomputed after each mutation, so only the intended rule fails.
"""

from __future__ import annotations

import copy
import hashlib
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evstore.contracts.manifests import rules as m
from evstore.contracts.manifests import store as ms
from evstore.core.canonical import dumps, loads
from evstore.core.digests import sha256_b64u
from evstore.core.errors import (
    CODES,
    BindingConflict,
    ContractError,
    CorruptionError,
    EvstoreError,
    Faults,
    JSONFormError,
    ManifestBindingError,
    ManifestError,
    error_class,
)

FIXTURES = "fixtures/orbidocs"
VALID_FIXTURES = (
    "fixture.corpus-passage-evidence-manifest.json",
    "at-8c55b85/fixture.corpus-passage-evidence-manifest.json",
)
INVALID_FIXTURE = "invalid/omitted-required.corpus-passage-evidence-manifest.json"
ACCEPT = {m.SETTING_ACCEPT_UNVERIFIED_PHASE: True}

CONTENT = ("# evidence\n" + "passage line, with ünïcode\n" * 40).encode("utf-8")


def _d(tag: str) -> str:
    """A deterministic ``sha256:<43>`` digest for a tag."""
    return "sha256:" + sha256_b64u(tag.encode())


def _exec_ref(tag: str) -> str:
    return "corpus-task-pack-execution:" + _d(tag)


def _pair(faults: Faults) -> tuple[list[EvstoreError], list[EvstoreError]]:
    """A validate() answer as (errors, warnings)."""
    assert isinstance(faults, Faults)
    return faults.errors, faults.warnings


def seal(doc: dict[str, Any]) -> dict[str, Any]:
    """Recompute manifest/ref in place (and return the document)."""
    doc["manifest/ref"] = m.compute_manifest_ref(doc)
    return doc


def build(content: bytes = CONTENT) -> dict[str, Any]:
    """A valid revision-1 manifest with every item kind, an omitted item and a review target."""
    digest = "sha256:" + sha256_b64u(content)
    ex = _exec_ref("execution-1")
    doc = {
        "schema": "corpus-passage-evidence-manifest.v1",
        "query/id": "query:q-17",
        "room/id": "room:r-3",
        "reader": {"kind": "participant", "id": "participant:reviewer"},
        "inference-flow-binding/ref": "corpus-inference-flow-binding:b-9",
        "projection": {"id": "corpus-task-pack-evidence", "revision": 1},
        "bytes/max": 16384,
        "items": [
            {
                "kind": "execution",
                "ref": ex,
                "digest": _d("execution-1"),
                "required": True,
                "included": True,
                "execution/ref": ex,
                "source/instance": "environment:e-1",
            },
            {
                "kind": "artifact",
                "ref": "object-store:" + _d("artifact-1"),
                "digest": _d("artifact-1"),
                "required": False,
                "included": True,
                "execution/ref": ex,
                "step/id": "inspect-mail",
                "source/instance": "environment:e-1",
            },
            {
                "kind": "candidate",
                "ref": "corpus-candidate:" + _d("candidate-1"),
                "digest": _d("candidate-1"),
                "required": True,
                "included": True,
            },
            {
                "kind": "proposal",
                "ref": "corpus-experiment:" + _d("proposal-1"),
                "digest": _d("proposal-1"),
                "required": False,
                "included": True,
            },
            {
                "kind": "review",
                "ref": "corpus-review:" + _d("review-1"),
                "digest": _d("review-1"),
                "required": False,
                "included": False,
                "omitted/reason": "exceeds-limit",
            },
            {
                "kind": "decision",
                "ref": "corpus-decision:" + _d("decision-1"),
                "digest": _d("decision-1"),
                "required": False,
                "included": True,
            },
        ],
        "class/key": "Community",
        "content/ref": "object-store:" + digest,
        "content/digest": digest,
        "content/size-bytes": len(content),
        "review/target": {
            "proposal/ref": "corpus-experiment:" + _d("proposal-1"),
            "proposal/digest": _d("proposal-1"),
            "candidate/digest": _d("candidate-1"),
        },
    }
    return seal(doc)


def codes(errors: list[Any]) -> list[str]:
    return [e.code for e in errors]


def _fixture(shared_dir: Path, name: str) -> dict[str, Any]:
    return loads((shared_dir / FIXTURES / name).read_bytes())


# --- upstream fixtures ---------------------------------------------------------------------


@pytest.mark.shared
@pytest.mark.parametrize("name", VALID_FIXTURES)
def test_valid_fixtures_pass(shared_dir: Path, name: str) -> None:
    doc = _fixture(shared_dir, name)
    assert m.detect(doc)
    assert m.validate(doc) == Faults()
    assert m.compute_manifest_ref(doc) == doc["manifest/ref"]
    assert m.check_ref_self_digest(doc).errors == []


@pytest.mark.shared
def test_invalid_fixture_fails_item_rule_first_then_self_address(shared_dir: Path) -> None:
    doc = _fixture(shared_dir, INVALID_FIXTURE)
    errors, warnings = _pair(m.validate(doc))
    assert warnings == []
    assert [(e.code, e.pointer) for e in errors] == [
        (m.REQUIRED_EXCLUDED, "/items/0/required"),
        (m.SELF_ADDRESS, "/manifest~1ref"),
    ]
    assert all(isinstance(e, ManifestError) for e in errors)
    assert errors[1].details["expected"] == m.compute_manifest_ref(doc)


@pytest.mark.shared
@pytest.mark.parametrize(
    "name",
    [
        "fixture.corpus-passage-evidence-binding.json",
        "fixture.corpus-passage-evidence.prepare.request.json",
    ],
)
def test_other_orbidocs_documents_are_not_manifests(shared_dir: Path, name: str) -> None:
    assert not m.detect(_fixture(shared_dir, name))


@pytest.mark.shared
def test_fixture_bindings_are_extracted(shared_dir: Path) -> None:
    doc = _fixture(shared_dir, VALID_FIXTURES[0])
    expect = m.content_expectations(doc)
    assert expect["size"] == 3435 and expect["bytes_max"] == 16384
    assert expect["content_ref"] == "object-store:" + expect["content_digest"]
    assert "sha256:" + sha256_b64u(bytes(0)) != expect["content_digest"]
    assert len(expect["sha256"]) == 64
    assert [p for p, _, _ in m.item_ref_digests(doc)] == ["/items/0/digest", "/items/1/digest"]
    assert [r for _, r, _ in m.item_ref_digests(doc)] == [it["ref"] for it in doc["items"]]


# --- detection ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, expected",
    [
        ({"schema": "corpus-passage-evidence-manifest.v1"}, "manifest"),
        # A near miss is claimed, so validation rejects it at /schema (docs/kinds.md).
        ({"schema": "corpus-passage-evidence-manifest.v2"}, "manifest"),
        ({"Schema": "Corpus-Passage-Evidence-Manifest.V1"}, "manifest"),
        ({"schema": "corpus-passage-evidence.prepare.request.v1"}, None),
        ({"manifest/ref": "corpus-evidence-manifest:sha256:" + "A" * 43}, None),
        ([{"schema": "corpus-passage-evidence-manifest.v1"}], None),
        ("corpus-passage-evidence-manifest.v1", None),
    ],
)
def test_detect(value: Any, expected: str | None) -> None:
    assert m.detect(value) == expected
    assert ms.ManifestKind().detect(value) is (expected is not None)


# --- one failing case per rule ----------------------------------------------------------------


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(doc: dict[str, Any]) -> None:
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return apply


def _del(path: tuple[Any, ...]) -> Callable[[dict[str, Any]], None]:
    def apply(doc: dict[str, Any]) -> None:
        node = doc
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return apply


def _all(*steps: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def apply(doc: dict[str, Any]) -> None:
        for step in steps:
            step(doc)

    return apply


# (id, mutation, expected code, expected pointer); each leaves exactly one fault.
CASES: list[tuple[str, Callable[[dict[str, Any]], None], str, str]] = [
    ("schema-missing-member", _del(("class/key",)), m.SCHEMA, ""),
    ("schema-unexpected-member", _set(("x-note",), "hi"), m.SCHEMA, "/x-note"),
    ("schema-unexpected-item-member", _set(("items", 1, "note"), 1), m.SCHEMA, "/items/1/note"),
    ("schema-pattern", _set(("query/id",), "query:has space"), m.SCHEMA, "/query~1id"),
    ("schema-bound", _set(("bytes/max",), 262145), m.SCHEMA, "/bytes~1max"),
    ("schema-enum", _set(("items", 0, "kind"), "note"), m.SCHEMA, "/items/0/kind"),
    ("schema-reader", _set(("reader", "kind"), "robot"), m.SCHEMA, "/reader/kind"),
    ("schema-revision", _set(("projection", "revision"), 3), m.SCHEMA, "/projection/revision"),
    (
        "schema-phase-type",
        _all(_set(("projection", "revision"), 2), _set(("phase",), [])),
        m.SCHEMA,
        "/phase",
    ),
    ("rule-1-no-item", _all(_set(("items",), []), _del(("review/target",))), m.RULE_1, "/items"),
    ("rule-1-phase", _set(("phase",), {"id": "p"}), m.RULE_1, "/phase"),
    ("revision-2-without-phase", _set(("projection", "revision"), 2), m.PHASE_MISSING, ""),
    (
        "revision-2-phase-unverifiable",
        _all(_set(("projection", "revision"), 2), _set(("phase",), {"id": "p"})),
        m.PHASE_UNVERIFIABLE,
        "/phase",
    ),
    (
        "required-excluded",
        _all(
            _set(("items", 2, "included"), False),
            _set(("items", 2, "omitted/reason"), "exceeds-limit"),
            _del(("review/target",)),
        ),
        m.REQUIRED_EXCLUDED,
        "/items/2/required",
    ),
    ("omitted-without-reason", _del(("items", 4, "omitted/reason")), m.OMITTED_REASON, "/items/4"),
    (
        "included-with-reason",
        _set(("items", 3, "omitted/reason"), "exceeds-limit"),
        m.INCLUDED_REASON,
        "/items/3/omitted~1reason",
    ),
    (
        "artifact-without-execution",
        _del(("items", 1, "execution/ref")),
        m.ARTIFACT_EXECUTION,
        "/items/1",
    ),
    (
        "item-ref-latest",
        _set(("items", 5, "ref"), "corpus-decision:latest"),
        m.REF_NOT_EXACT,
        "/items/5/ref",
    ),
    (
        "item-ref-latest-inner-segment",
        _set(("items", 5, "ref"), "corpus-decision:latest:d-1"),
        m.REF_NOT_EXACT,
        "/items/5/ref",
    ),
    (
        "binding-ref-latest",
        _set(("inference-flow-binding/ref",), "corpus-inference-flow-binding:latest"),
        m.REF_NOT_EXACT,
        "/inference-flow-binding~1ref",
    ),
    (
        "review-target-unknown-candidate",
        _set(("review/target", "candidate/digest"), _d("other")),
        m.REVIEW_TARGET,
        "/review~1target/candidate~1digest",
    ),
    (
        "review-target-names-a-decision",
        _set(("review/target", "candidate/digest"), _d("decision-1")),
        m.REVIEW_TARGET,
        "/review~1target/candidate~1digest",
    ),
    (
        "review-target-candidate-optional",
        _set(("items", 2, "required"), False),
        m.REVIEW_TARGET,
        "/review~1target/candidate~1digest",
    ),
    (
        "review-target-candidate-excluded",
        _all(
            _set(("items", 2, "required"), False),
            _set(("items", 2, "included"), False),
            _set(("items", 2, "omitted/reason"), "exceeds-limit"),
        ),
        m.REVIEW_TARGET,
        "/review~1target/candidate~1digest",
    ),
]


@pytest.mark.parametrize("mutate, code, pointer", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_one_rule_fails(mutate: Callable[[dict[str, Any]], None], code: str, pointer: str) -> None:
    doc = build()
    mutate(doc)
    seal(doc)
    errors, warnings = _pair(m.validate(doc))
    assert [(e.code, e.pointer) for e in errors] == [(code, pointer)]
    assert warnings == []
    (error,) = errors
    assert isinstance(error, ManifestError) and isinstance(error, ContractError)
    assert error.rule == CODES[code].rule and error.rule.startswith(m.CONTRACT)


def test_built_manifest_is_valid() -> None:
    # The base every case mutates must itself pass, or the cases prove nothing.
    doc = build()
    assert m.validate(doc) == Faults()
    assert m.check_ref_self_digest(doc).errors == []
    assert m.check_content(doc, hashlib.sha256(CONTENT).hexdigest(), len(CONTENT)).errors == []


def test_every_contract_code_has_a_case() -> None:
    covered = {c[2] for c in CASES} | {m.SELF_ADDRESS}
    contract_codes = {
        code
        for code, row in CODES.items()
        if code.startswith("manifest.") and row.family == "contract"
    }
    assert covered == contract_codes


def test_self_address_mismatch() -> None:
    doc = build()
    doc["room/id"] = "room:r-4"  # changed after sealing
    errors, _ = _pair(m.validate(doc))
    assert [(e.code, e.pointer) for e in errors] == [(m.SELF_ADDRESS, "/manifest~1ref")]
    assert errors[0].details == {
        "expected": m.compute_manifest_ref(doc),
        "actual": doc["manifest/ref"],
    }


def test_self_address_ignores_member_order_and_own_value() -> None:
    doc = build()
    reordered = dict(reversed(list(doc.items())))
    reordered["manifest/ref"] = "anything"
    assert m.compute_manifest_ref(reordered) == doc["manifest/ref"]
    assert doc["manifest/ref"].startswith(m.MANIFEST_REF_PREFIX)
    assert len(doc["manifest/ref"]) == len(m.MANIFEST_REF_PREFIX) + 43


def test_compute_manifest_ref_misuse() -> None:
    with pytest.raises(TypeError):
        m.compute_manifest_ref([])  # type: ignore[arg-type]


def test_no_canonical_form_is_reported_not_raised() -> None:
    doc = build()
    doc["phase"] = {"n": 2**60}  # beyond I-JSON; also a Rule 1 fault
    errors, _ = _pair(m.validate(doc))
    assert codes(errors) == [m.RULE_1, "json.int-range"]
    assert isinstance(errors[1], JSONFormError)


# --- refs that are not checked for `latest` -------------------------------------------------


@pytest.mark.parametrize(
    "path, value",
    [
        (("items", 0, "source/instance"), "environment:latest"),
        (("query/id",), "query:latest"),
        (("room/id",), "room:latest"),
        (("reader", "id"), "participant:latest"),
        (("items", 5, "ref"), "corpus-decision:latest-1"),
        (("items", 5, "ref"), "corpus-decision:Latest"),
        (("items", 5, "ref"), "corpus-decision:x/latest"),
    ],
)
def test_latest_only_as_a_whole_ref_segment(path: tuple[Any, ...], value: str) -> None:
    doc = build()
    _set(path, value)(doc)
    assert m.validate(seal(doc)) == Faults()


@pytest.mark.parametrize(
    "path, value",
    [
        (("items", 0, "execution/ref"), "corpus-task-pack-execution:latest"),
        (("content/ref",), "object-store:latest"),
        (("review/target", "proposal/ref"), "corpus-experiment:latest"),
        (("manifest/ref",), "corpus-evidence-manifest:latest"),
    ],
)
def test_latest_in_digest_shaped_refs_is_both_faults(path: tuple[Any, ...], value: str) -> None:
    doc = build()
    _set(path, value)(doc)
    if path != ("manifest/ref",):
        seal(doc)
    errors, _ = _pair(m.validate(doc))
    pointer = "/" + "/".join(str(p).replace("/", "~1") for p in path)
    got = [(e.code, e.pointer) for e in errors]
    assert got[:2] == [(m.SCHEMA, pointer), (m.REF_NOT_EXACT, pointer)]


# --- revision 2 and the phase setting --------------------------------------------------------


def _revision_2(items: bool = True) -> dict[str, Any]:
    doc = build()
    doc["projection"]["revision"] = 2
    doc["phase"] = {"schema": "corpus-task-pack-phase.v1", "basis": []}
    if not items:
        doc["items"] = []
        del doc["review/target"]
    return seal(doc)


@pytest.mark.parametrize("items", [True, False], ids=["with-items", "no-items"])
def test_revision_2_rejected_by_default(items: bool) -> None:
    doc = _revision_2(items)
    for settings in (None, {}, {m.SETTING_ACCEPT_UNVERIFIED_PHASE: False}):
        errors, warnings = _pair(m.validate(doc, settings))
        assert [(e.code, e.pointer) for e in errors] == [(m.PHASE_UNVERIFIABLE, "/phase")]
        assert warnings == []


@pytest.mark.parametrize("items", [True, False], ids=["with-items", "no-items"])
def test_revision_2_accepted_with_warning_when_setting_on(items: bool) -> None:
    errors, warnings = _pair(m.validate(_revision_2(items), ACCEPT))
    assert errors == []
    assert [(w.code, w.pointer, w.rule) for w in warnings] == [
        (m.PHASE_UNVERIFIABLE, "/phase", f"{m.CONTRACT}#phase")
    ]
    # A warning is an error object that did not refuse the manifest.
    assert all(isinstance(w, ManifestError) for w in warnings)
    assert "(accepted: manifests.accept_unverified_phase is on)" in warnings[0].message


def test_setting_must_be_a_true_bool() -> None:
    errors, warnings = _pair(
        m.validate(_revision_2(), {m.SETTING_ACCEPT_UNVERIFIED_PHASE: "false"})
    )
    assert codes(errors) == [m.PHASE_UNVERIFIABLE] and warnings == []


def test_setting_does_not_excuse_other_faults() -> None:
    doc = _revision_2()
    doc["items"][4]["required"] = True  # excluded and required
    errors, warnings = _pair(m.validate(seal(doc), ACCEPT))
    assert codes(errors) == [m.REQUIRED_EXCLUDED]
    assert [w.code for w in warnings] == [m.PHASE_UNVERIFIABLE]


def test_revision_2_without_phase_is_missing_even_with_setting() -> None:
    doc = build()
    doc["projection"]["revision"] = 2
    errors, warnings = _pair(m.validate(seal(doc), ACCEPT))
    assert codes(errors) == [m.PHASE_MISSING] and warnings == []


def test_revision_1_with_phase_is_rule_1_even_with_setting() -> None:
    doc = build()
    doc["phase"] = {}
    errors, warnings = _pair(m.validate(seal(doc), ACCEPT))
    assert [(e.code, e.pointer) for e in errors] == [(m.RULE_1, "/phase")] and warnings == []


# --- order and completeness ----------------------------------------------------------------


def test_all_faults_in_order_schema_rules_self_address() -> None:
    doc = build()
    doc["items"][1]["kind"] = "artifact"
    del doc["items"][1]["execution/ref"]  # item rule
    doc["items"][5]["ref"] = "corpus-decision:latest"  # exact refs
    doc["class/key"] = "public"  # schema
    doc["items"][2]["required"] = False  # review target
    doc["items"][0]["included"] = False  # required excluded (+ omitted reason missing)
    doc["room/id"] = "room:changed"  # not resealed: self-address
    errors, _ = _pair(m.validate(doc))
    assert [(e.code, e.pointer) for e in errors] == [
        (m.SCHEMA, "/class~1key"),
        (m.REQUIRED_EXCLUDED, "/items/0/required"),
        (m.OMITTED_REASON, "/items/0"),
        (m.ARTIFACT_EXECUTION, "/items/1"),
        (m.REF_NOT_EXACT, "/items/5/ref"),
        (m.REVIEW_TARGET, "/review~1target/candidate~1digest"),
        (m.SELF_ADDRESS, "/manifest~1ref"),
    ]


@pytest.mark.parametrize("value", [None, [], "manifest", 3])
def test_non_object_is_one_schema_fault(value: Any) -> None:
    errors, warnings = _pair(m.validate(value))
    assert [(e.code, e.pointer) for e in errors] == [(m.SCHEMA, "")] and warnings == []


def test_rules_read_malformed_documents_defensively() -> None:
    doc = build()
    doc["items"] = [1, "x", None, {"kind": "artifact"}]
    doc["review/target"] = {"candidate/digest": 7}
    doc["projection"] = "one"
    errors, _ = _pair(m.validate(seal(doc)))
    assert m.SCHEMA in codes(errors)
    assert m.ARTIFACT_EXECUTION in codes(errors)  # the one object item is still checked


# --- write-time bindings (pure parts) --------------------------------------------------------


def test_content_expectations() -> None:
    doc = build()
    assert m.content_expectations(doc) == {
        "sha256": hashlib.sha256(CONTENT).hexdigest(),
        "content_digest": "sha256:" + sha256_b64u(CONTENT),
        "content_ref": "object-store:sha256:" + sha256_b64u(CONTENT),
        "size": len(CONTENT),
        "bytes_max": 16384,
    }


def test_content_expectations_non_canonical_digest() -> None:
    doc = build()
    b64u = doc["content/digest"][len("sha256:") :]
    # Flip the last character's unused low bits: same 32 bytes, non-canonical spelling.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet[alphabet.index(b64u[-1]) | 1]
    doc["content/digest"] = "sha256:" + b64u[:-1] + last
    with pytest.raises(ManifestBindingError) as info:
        m.content_expectations(doc)
    assert (info.value.code, info.value.pointer) == (m.CONTENT_DIGEST, "/content~1digest")


@pytest.mark.parametrize(
    "member, value", [("content/digest", "md5:x"), ("bytes/max", "16"), ("content/ref", None)]
)
def test_content_expectations_needs_a_valid_manifest(member: str, value: Any) -> None:
    doc = build()
    doc[member] = value
    with pytest.raises(ManifestError) as info:
        m.content_expectations(doc)
    assert info.value.code == m.SCHEMA
    assert info.value.pointer == "/" + member.replace("/", "~1")


def _hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(
    "case, content, bytes_max, expected",
    [
        ("binds", CONTENT, 16384, []),
        ("missing", None, 16384, [(m.CONTENT_MISSING, "/content~1ref")]),
        (
            "other-bytes-same-size",
            CONTENT[:-1] + b"?",
            16384,
            [(m.CONTENT_DIGEST, "/content~1digest")],
        ),
        (
            "shorter",
            CONTENT[:-1],
            16384,
            [(m.CONTENT_DIGEST, "/content~1digest"), (m.CONTENT_SIZE, "/content~1size-bytes")],
        ),
        ("over-limit", CONTENT, len(CONTENT) - 1, [(m.CONTENT_OVER_LIMIT, "/bytes~1max")]),
        ("at-limit", CONTENT, len(CONTENT), []),
    ],
)
def test_check_content(
    case: str, content: bytes | None, bytes_max: int, expected: list[tuple[str, str]]
) -> None:
    doc = build()
    doc["bytes/max"] = bytes_max
    seal(doc)
    assert m.validate(doc) == Faults()  # size > bytes/max is a binding fault, not a shape one
    faults = m.check_content(
        doc, None if content is None else _hex(content), None if content is None else len(content)
    )
    assert [(f.code, f.pointer) for f in faults] == expected
    assert all(
        isinstance(f, ManifestBindingError) and isinstance(f, BindingConflict) for f in faults
    )


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda d: None, []),
        (_set(("items", 1, "digest"), _d("artifact-2")), [(m.REF_DIGEST, "/items/1/digest")]),
        (
            _set(("items", 0, "ref"), "corpus-task-pack-execution:" + _d("execution-2")),
            [(m.REF_DIGEST, "/items/0/digest")],
        ),
        (_set(("items", 5, "ref"), "corpus-decision:d-1"), []),  # carries no sha256:X
        (
            _set(("items", 5, "ref"), "corpus-decision:sha256:abc"),
            [(m.REF_DIGEST, "/items/5/digest")],
        ),
        (
            _set(("content/ref",), "object-store:" + _d("something else")),
            [(m.REF_DIGEST, "/content~1ref")],
        ),
    ],
    ids=["agree", "item-digest", "item-ref", "no-carried-digest", "short-carried", "content-ref"],
)
def test_check_ref_self_digest(
    mutate: Callable[[dict[str, Any]], None], expected: list[tuple[str, str]]
) -> None:
    doc = build()
    mutate(doc)
    faults = m.check_ref_self_digest(seal(doc))
    assert [(f.code, f.pointer) for f in faults] == expected
    assert all(isinstance(f, ManifestBindingError) for f in faults)


def test_item_ref_digests() -> None:
    doc = build()
    pairs = m.item_ref_digests(doc)
    assert pairs == [
        (f"/items/{i}/digest", item["ref"], item["digest"]) for i, item in enumerate(doc["items"])
    ]


def test_codes_and_classes() -> None:
    manifest_codes = {code for code in CODES if code.startswith("manifest.")}
    binding_codes = {code for code in manifest_codes if CODES[code].family == "binding"}
    assert binding_codes == {
        m.CONTENT_MISSING,
        m.CONTENT_DIGEST,
        m.CONTENT_SIZE,
        m.CONTENT_OVER_LIMIT,
        m.REF_DIGEST,
        m.REF_REBOUND,
    }
    # Every code the module names is a row of the table, and every manifest row is named.
    named = {getattr(m, n) for n in m.__all__ if isinstance(getattr(m, n), str)}
    assert manifest_codes == {c for c in named if c.startswith("manifest.")}
    for code in manifest_codes:
        assert CODES[code].rule.startswith(
            (f"{m.CONTRACT}#", "contracts/README#corpus-passage-evidence-manifests-orbidocs")
        ), code
        if code in binding_codes:
            assert error_class(code) is ManifestBindingError
        elif code == m.CONTENT_EDGE_MISSING:
            assert error_class(code) is CorruptionError
        else:
            assert error_class(code) is ManifestError
    assert issubclass(ManifestError, ContractError)
    assert issubclass(ManifestBindingError, BindingConflict)
    assert m.__all__ == sorted(m.__all__)
    assert ms.__all__ == sorted(ms.__all__)


def test_copy_is_not_mutated() -> None:
    doc = build()
    before = copy.deepcopy(doc)
    m.validate(doc, ACCEPT)
    m.compute_manifest_ref(doc)
    m.check_ref_self_digest(doc)
    m.content_expectations(doc)
    assert doc == before


# --- the self-address on the store's fast paths ----------------------------------------------


def _no_ref(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "manifest/ref"}


REF = "corpus-evidence-manifest:sha256:" + "A" * 43

# (id, document, whether the member can be cut: False means a nested member of the same name)
CUT_CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("built-manifest", build(), True),
    ("only-member", {"manifest/ref": REF}, True),
    ("first-member", {"manifest/ref": REF, "z": 1}, True),
    ("last-member", {"a": [1, {"b": None}], "manifest/ref": REF}, True),
    ("escaped-value", {"a": 1, "manifest/ref": 'x"y\\z\u00e9\u2028\x01', "z": 2}, True),
    # A name ending in `"manifest/ref` is escaped (\") in canonical form: not a second name.
    ("decoy-name", {'x"manifest/ref': REF, "manifest/ref": REF, "y": 0}, True),
    ("decoy-text", {"a": ',"manifest/ref":"' + REF + '"', "manifest/ref": REF}, True),
    ("non-ascii-neighbours", {"ä": "ü", "manifest/ref": REF, "€": ["日本"]}, True),
    ("nested-member", {"a": {"manifest/ref": REF}, "manifest/ref": REF}, False),
    ("nested-in-item", {**build(), "items": [{"manifest/ref": REF}]}, False),
]


@pytest.mark.parametrize("doc, cuttable", [c[1:] for c in CUT_CASES], ids=[c[0] for c in CUT_CASES])
def test_body_cut_from_canonical_equals_the_canonical_body(
    doc: dict[str, Any], cuttable: bool
) -> None:
    cut = m._body_from_canonical(dumps(doc), doc["manifest/ref"])
    if cuttable:
        assert cut == dumps(_no_ref(doc))
    else:
        assert cut is None  # the caller canonicalises instead


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: None,
        lambda d: d.update({"room/id": "room:changed-after-sealing"}),
        lambda d: d.update({"x-extra": {"manifest/ref": REF}}),  # nested name: fallback path
        lambda d: d["items"][5].update({"ref": "corpus-decision:latest"}),
    ],
    ids=["valid", "self-address", "nested-name", "rule-fault"],
)
def test_kind_check_with_canonical_bytes_gives_the_same_faults(
    mutate: Callable[[dict[str, Any]], None],
) -> None:
    doc = build()
    mutate(doc)
    txn: Any = types.SimpleNamespace(settings={})
    kind = ms.ManifestKind()
    plain = [(e.code, e.pointer, e.details) for e in m.validate(doc).errors]
    assert [(e.code, e.pointer, e.details) for e in kind.check(doc, txn)] == plain
    with_bytes = kind.check(doc, txn, canonical=dumps(loads(dumps(doc))))
    assert [(e.code, e.pointer, e.details) for e in with_bytes] == plain


# --- the shared contract shape ----------------------------------------------------------------


def test_validate_names_its_one_kind() -> None:
    doc = build()
    assert m.validate(doc, kind="manifest") == Faults()
    with pytest.raises(ValueError):
        m.validate(doc, kind="package")
    assert (m.CONTRACT, m.CONTRACT_VERSION, m.KIND) == (
        "orbidocs-corpus-passage-evidence-manifest-v1",
        "v1",
        "manifest",
    )
    assert (ms.ManifestKind.name, ms.ManifestKind.contract_version) == (m.KIND, m.CONTRACT_VERSION)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: None,
        lambda d: d.update({"room/id": "room:changed-after-sealing"}),
        lambda d: d.update({"x-extra": {"manifest/ref": REF}}),
        lambda d: (d["projection"].update({"revision": 2}), d.update({"phase": {}})),
    ],
    ids=["valid", "self-address", "nested-name", "phase"],
)
def test_validate_canonical_equals_validate(mutate: Callable[[dict[str, Any]], None]) -> None:
    doc = build()
    mutate(doc)
    for settings in (None, ACCEPT):
        plain = m.validate(doc, settings)
        fast = m.validate_canonical(doc, dumps(doc), settings)
        for a, b in ((plain.errors, fast.errors), (plain.warnings, fast.warnings)):
            assert [(e.code, e.pointer, e.details) for e in a] == [
                (e.code, e.pointer, e.details) for e in b
            ]


def test_phase_faults_reads_the_setting_as_a_bool() -> None:
    doc = _revision_2()
    assert codes(m.phase_faults(doc).errors) == [m.PHASE_UNVERIFIABLE]
    on = m.phase_faults(doc, ACCEPT)
    assert on.errors == [] and [w.code for w in on.warnings] == [m.PHASE_UNVERIFIABLE]
    for value in ("true", 1, "on"):
        off = m.phase_faults(doc, {m.SETTING_ACCEPT_UNVERIFIED_PHASE: value})
        assert codes(off.errors) == [m.PHASE_UNVERIFIABLE] and off.warnings == []
    assert m.phase_faults(build(), ACCEPT) == Faults()


def test_manifest_address() -> None:
    doc = build()
    data = dumps(doc)
    assert m.manifest_address(data) == {
        "computed": doc["manifest/ref"],
        "claimed": doc["manifest/ref"],
        "matches": True,
    }
    del doc["manifest/ref"]
    assert m.manifest_address(dumps(doc))["matches"] is True
    doc["manifest/ref"] = REF
    out = m.manifest_address(dumps(doc))
    assert (out["claimed"], out["matches"]) == (REF, False)
    with pytest.raises(EvstoreError) as info:
        m.manifest_address(b"[1]", path="x.json")
    assert (info.value.code, info.value.family, info.value.path) == (
        "input.invalid",
        "input",
        "x.json",
    )
    with pytest.raises(JSONFormError):
        m.manifest_address(b'{"a": 1, "a": 2}')


# --- layering: what the manifest modules may import -----------------------------------------

REPO = Path(__file__).resolve().parents[2]


def _all_imports(path: Path) -> set[str]:
    """Every module ``path`` imports, function-level and TYPE_CHECKING included, as
    absolute names (``evstore.x`` for ``from .x import``)."""
    import ast

    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = "evstore.cli" if path.parent.name == "cli" else "evstore"
                base = f"{package}.{base}" if base else package
                if not node.module:
                    out |= {f"{base}.{a.name}" for a in node.names}
                    continue
            out.add(base)
    return out


def test_cli_imports_only_the_public_surface() -> None:
    path = REPO / "cli" / "manifests.py"
    # Pending names for evstore.__all__ are marked "# TODO(public)" for the merge.
    pending = {
        line.split()[1]
        for line in path.read_text().splitlines()
        if line.startswith("from evstore.") and line.endswith("# TODO(public)")
    }
    assert pending <= {"evstore.contracts.manifests.rules"}
    for name in _all_imports(path) - pending:
        assert name in {"evstore", "sys", "click", "__future__"} or name.startswith(
            "evstore.cli."
        ), name
