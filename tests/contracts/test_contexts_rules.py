"""notarius-evidence-context-v1: descriptor, payload, source-document and selection rules.

Pure functions only; no database. The contract's own example payload and descriptor table are
read from ../shared through the `shared_dir` fixture.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evstore.contracts.contexts.rules import (
    DESCRIPTOR_KEYS,
    EVIDENCE_CONTEXT_DESCRIPTOR,
    SOURCE_DOCUMENT_DESCRIPTOR,
    check_against_source,
    check_descriptor,
    check_index,
    detect,
    looks_like_units,
    select_excerpt,
    validate_payload,
    validate_source_document,
)
from evstore.core.errors import CODES as ALL_CODES
from evstore.core.errors import ContextError, ContractError

CONTRACT = "contracts/notarius-evidence-context-v1.md"

# This contract's rows of the one code table: every code whose rule is a notarius section or
# evstore's source-document section, and the lookup miss of store.contexts.
CODES = {
    code
    for code, c in ALL_CODES.items()
    if c.rule.startswith(("notarius-evidence-context-v1#", "docs/bundle.md#generic-source"))
    or code == "not-found.source-document"
}

# The contract's table labels -> our key names (DESCRIPTOR_KEYS is the one definition).
TABLE_LABELS = {
    "Artifact kind": "artifact_kind",
    "Media type": "media_type",
    "Schema ID": "schema_id",
    "Schema name": "schema_name",
    "Schema version": "schema_version",
    "Logical file": "logical_file",
}


def _contract_lines(shared_dir: Path) -> list[str]:
    return (shared_dir / CONTRACT).read_text(encoding="utf-8").splitlines()


def _contract_example(shared_dir: Path) -> list[dict[str, Any]]:
    """The example payload: the lines from a bare "[" to the next bare "]"."""
    import json

    lines = _contract_lines(shared_dir)
    start = lines.index("[")
    end = lines.index("]", start)
    return json.loads("\n".join(lines[start : end + 1]))


@pytest.fixture(scope="module")
def example(shared_dir: Path) -> list[dict[str, Any]]:
    return _contract_example(shared_dir)


def faults(errors: list[ContextError]) -> list[tuple[str, str]]:
    for e in errors:
        assert isinstance(e, ContextError) and isinstance(e, ContractError)
        assert e.code in CODES, e.code
        assert e.rule, e.code
    return [(e.code, e.pointer) for e in errors]


# --------------------------------------------------------------------------- the contract


@pytest.mark.shared
def test_contract_example_payload_validates(example: list[dict[str, Any]]) -> None:
    assert len(example) == 2 and example[0]["id"] == 10
    assert validate_payload(example) == []


@pytest.mark.shared
def test_descriptor_values_are_the_contracts_table(shared_dir: Path) -> None:
    table = {}
    for line in _contract_lines(shared_dir):
        label, _, value = line.partition("\t")
        if label in TABLE_LABELS:
            table[TABLE_LABELS[label]] = value
    assert set(table) == set(DESCRIPTOR_KEYS)
    assert dict(EVIDENCE_CONTEXT_DESCRIPTOR) == table
    assert check_descriptor(table) == []


def test_empty_payload_is_valid() -> None:
    assert validate_payload([]) == []


def test_codes_are_unique_and_namespaced() -> None:
    assert all(code.startswith(("context.", "not-found.")) for code in CODES)
    assert len(set(CODES)) == len(CODES)


# --------------------------------------------------------------------------- payload rules

Mutation = Callable[[list[Any]], Any]


def _set(path: tuple[Any, ...], value: Any) -> Mutation:
    def mutate(p: list[Any]) -> Any:
        target: Any = p
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        return p

    return mutate


def _delete(path: tuple[Any, ...]) -> Mutation:
    def mutate(p: list[Any]) -> Any:
        target: Any = p
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
        return p

    return mutate


def _unit_id(value: Any) -> Mutation:
    """Give unit 0 a new id and a matching self ref, so only the id rule can fire."""

    def mutate(p: list[Any]) -> Any:
        p[0]["id"] = value
        p[0]["ref"]["start_unit_id"] = value
        p[0]["ref"]["end_unit_id"] = value
        return p

    return mutate


def _append_copy_of(i: int) -> Mutation:
    def mutate(p: list[Any]) -> Any:
        p.append(copy.deepcopy(p[i]))
        return p

    return mutate


PAYLOAD_CASES: list[tuple[str, Mutation, str, str]] = [
    ("object-wrapper", lambda p: {"units": p}, "context.payload-not-array", ""),
    ("null", lambda p: None, "context.payload-not-array", ""),
    ("unit-not-object", _set((0,), "Aria casts Cure Wounds."), "context.unit-shape", "/0"),
    ("unit-array", _set((1,), [10]), "context.unit-shape", "/1"),
    ("missing-id", _delete((0, "id")), "context.unit-shape", "/0/id"),
    ("missing-kind", _delete((0, "kind")), "context.unit-shape", "/0/kind"),
    ("missing-text", _delete((1, "text")), "context.unit-shape", "/1/text"),
    ("missing-ref", _delete((1, "ref")), "context.unit-shape", "/1/ref"),
    ("unknown-field", _set((0, "lane"), "combat"), "context.unit-shape", "/0/lane"),
    ("annotation-field", _set((1, "evidence_ref"), {}), "context.unit-shape", "/1/evidence_ref"),
    ("id-bool", _unit_id(True), "context.unit-id", "/0/id"),
    ("id-fraction", _unit_id(10.0), "context.unit-id", "/0/id"),
    ("id-string", _unit_id("10"), "context.unit-id", "/0/id"),
    ("id-null", _unit_id(None), "context.unit-id", "/0/id"),
    ("id-beyond-2^53", _unit_id(2**53), "context.unit-id", "/0/id"),
    ("kind-empty", _set((0, "kind"), ""), "context.unit-kind", "/0/kind"),
    ("kind-number", _set((1, "kind"), 3), "context.unit-kind", "/1/kind"),
    ("text-null", _set((0, "text"), None), "context.unit-text", "/0/text"),
    ("text-array", _set((1, "text"), ["a"]), "context.unit-text", "/1/text"),
    ("metadata-array", _set((0, "metadata"), []), "context.unit-metadata", "/0/metadata"),
    ("metadata-null", _set((1, "metadata"), None), "context.unit-metadata", "/1/metadata"),
    ("ref-string", _set((0, "ref"), "session-alpha:10"), "context.ref-shape", "/0/ref"),
    (
        "ref-missing-source",
        _delete((0, "ref", "source_id")),
        "context.ref-shape",
        "/0/ref/source_id",
    ),
    (
        "ref-missing-end",
        _delete((1, "ref", "end_unit_id")),
        "context.ref-shape",
        "/1/ref/end_unit_id",
    ),
    ("ref-unknown-field", _set((0, "ref", "lane"), "x"), "context.ref-shape", "/0/ref/lane"),
    (
        "source-id-empty",
        _set((0, "ref", "source_id"), ""),
        "context.ref-source-id",
        "/0/ref/source_id",
    ),
    (
        "source-id-number",
        _set((1, "ref", "source_id"), 7),
        "context.ref-source-id",
        "/1/ref/source_id",
    ),
    (
        "self-ref-start",
        _set((0, "ref", "start_unit_id"), 11),
        "context.self-ref",
        "/0/ref/start_unit_id",
    ),
    (
        "self-ref-end-range",
        _set((0, "ref", "end_unit_id"), 20),
        "context.self-ref",
        "/0/ref/end_unit_id",
    ),
    # 10.0 == 10 in Python: the rule must compare JSON types, not Python equality.
    (
        "self-ref-fraction",
        _set((1, "ref", "end_unit_id"), 20.0),
        "context.self-ref",
        "/1/ref/end_unit_id",
    ),
    (
        "self-ref-string",
        _set((1, "ref", "start_unit_id"), "20"),
        "context.self-ref",
        "/1/ref/start_unit_id",
    ),
    (
        "source-mixed",
        _set((1, "ref", "source_id"), "session-beta"),
        "context.source-mixed",
        "/1/ref/source_id",
    ),
    ("unit-twice", _append_copy_of(0), "context.unit-duplicate", "/2/id"),
]


@pytest.mark.shared
@pytest.mark.parametrize(
    ("mutate", "code", "pointer"),
    [pytest.param(m, c, p, id=i) for i, m, c, p in PAYLOAD_CASES],
)
def test_payload_rule(example: list[Any], mutate: Mutation, code: str, pointer: str) -> None:
    payload = mutate(copy.deepcopy(example))
    assert faults(validate_payload(payload)) == [(code, pointer)]


def test_payload_rule_table_covers_every_payload_code() -> None:
    payload_codes = {
        c for c in CODES if c.startswith(("context.unit", "context.ref", "context.self"))
    } | {"context.payload-not-array", "context.source-mixed"}
    payload_codes -= {"context.unit-unknown"}  # needs a source document
    assert payload_codes == {code for _, _, code, _ in PAYLOAD_CASES}


@pytest.mark.shared
def test_metadata_object_is_source_owned_and_open(example: list[Any]) -> None:
    payload = copy.deepcopy(example)
    payload[0]["metadata"] = {"speaker": "Aria", "t": [1.5, None, {"x": True}], "": {}}
    assert validate_payload(payload) == []


def test_every_fault_is_reported_with_its_pointer() -> None:
    payload = [
        {
            "id": 1,
            "kind": "k",
            "text": "a",
            "ref": {"source_id": "s", "start_unit_id": 1, "end_unit_id": 1},
        },
        {
            "id": 2,
            "kind": "",
            "text": "b",
            "x/y": 0,
            "ref": {"source_id": "t", "start_unit_id": 2, "end_unit_id": 3},
        },
        7,
        {
            "id": 1,
            "kind": "k",
            "text": "c",
            "ref": {"source_id": "s", "start_unit_id": 2, "end_unit_id": 1},
        },
    ]
    assert faults(validate_payload(payload)) == [
        ("context.unit-shape", "/1/x~1y"),
        ("context.unit-kind", "/1/kind"),
        ("context.source-mixed", "/1/ref/source_id"),
        ("context.self-ref", "/1/ref/end_unit_id"),
        ("context.unit-shape", "/2"),
        ("context.self-ref", "/3/ref/start_unit_id"),
        ("context.unit-duplicate", "/3/id"),
    ]


def test_error_carries_code_rule_pointer_and_serialises() -> None:
    (err,) = validate_payload([{"id": 1, "kind": "k", "text": "", "ref": []}])
    assert err.to_dict()["code"] == "context.ref-shape"
    assert err.to_dict()["pointer"] == "/0/ref"
    assert err.rule == "notarius-evidence-context-v1#payload"
    assert err.family == "contract"


# --------------------------------------------------------------------------- descriptor


def _good_descriptor() -> dict[str, Any]:
    return dict(EVIDENCE_CONTEXT_DESCRIPTOR)


DESCRIPTOR_CASES: list[tuple[str, str, Any, str]] = [
    # (id, key, wrong value, code)
    ("kind", "artifact_kind", "source/evidence", "context.descriptor-kind"),
    ("media-type", "media_type", "application/x-ndjson", "context.descriptor-media-type"),
    ("schema-id", "schema_id", "notarius.source.evidence-context", "context.descriptor-schema-id"),
    (
        "schema-name",
        "schema_name",
        "notarius_source_evidence_context_v2",
        "context.descriptor-schema-name",
    ),
    ("schema-version", "schema_version", "v2", "context.unsupported-version"),
    ("logical-file", "logical_file", "context.json", "context.descriptor-logical-file"),
    ("version-case", "schema_version", "V1", "context.unsupported-version"),
    ("version-number", "schema_version", 1, "context.unsupported-version"),
    ("kind-not-string", "artifact_kind", ["source/evidence-context"], "context.descriptor-kind"),
    ("file-path", "logical_file", "./evidence-context.json", "context.descriptor-logical-file"),
]


@pytest.mark.parametrize(
    ("key", "value", "code"), [pytest.param(k, v, c, id=i) for i, k, v, c in DESCRIPTOR_CASES]
)
def test_descriptor_value_differs(key: str, value: Any, code: str) -> None:
    desc = _good_descriptor()
    desc[key] = value
    assert faults(check_descriptor(desc)) == [(code, f"/evidence_context/{key}")]


@pytest.mark.parametrize("key", DESCRIPTOR_KEYS)
def test_descriptor_value_missing(key: str) -> None:
    desc = _good_descriptor()
    del desc[key]
    (err,) = check_descriptor(desc, "/ctx")
    assert err.pointer == f"/ctx/{key}"
    assert err.code != "context.descriptor-shape"


def test_descriptor_shape() -> None:
    assert faults(check_descriptor(["source/evidence-context"])) == [
        ("context.descriptor-shape", "/evidence_context")
    ]
    desc = _good_descriptor() | {"artifactKind": "source/evidence-context"}
    assert faults(check_descriptor(desc)) == [
        ("context.descriptor-shape", "/evidence_context/artifactKind")
    ]


def test_unsupported_version_is_not_judged_further() -> None:
    desc = _good_descriptor() | {
        "schema_version": "v2",
        "schema_name": "notarius_source_evidence_context_v2",
    }
    assert faults(check_descriptor(desc)) == [
        ("context.unsupported-version", "/evidence_context/schema_version")
    ]


def test_source_document_descriptor() -> None:
    desc = dict(SOURCE_DOCUMENT_DESCRIPTOR) | {"logical_file": "sources/session-alpha.json"}
    assert check_descriptor(desc, "/s", expected=SOURCE_DOCUMENT_DESCRIPTOR) == []
    desc["logical_file"] = ""
    assert faults(check_descriptor(desc, "/s", expected=SOURCE_DOCUMENT_DESCRIPTOR)) == [
        ("context.descriptor-logical-file", "/s/logical_file")
    ]
    # A source document is not an evidence context, whatever its file name.
    assert "context.descriptor-kind" in {e.code for e in check_descriptor(desc)}


def test_index_without_descriptor_means_publication_disabled() -> None:
    assert check_index({}, set()) == []
    assert check_index({"fragment_0": {"artifact_kind": "x"}}, {"f.json"}) == []


def test_index_logical_file() -> None:
    index = {"evidence_context": _good_descriptor()}
    assert check_index(index, {"evidence-context.json", "index.json"}) == []
    assert faults(check_index(index, {"index.json"})) == [
        ("context.logical-file-missing", "/evidence_context/logical_file")
    ]
    # A bad descriptor rejects the bundle without looking for the file.
    index["evidence_context"]["media_type"] = "text/plain"
    assert faults(check_index(index, set())) == [
        ("context.descriptor-media-type", "/evidence_context/media_type")
    ]


# --------------------------------------------------------------------------- source documents


def unit(uid: int, text: str, source: str = "session-alpha", **metadata: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": uid,
        "kind": "transcript_segment",
        "text": text,
        "ref": {"source_id": source, "start_unit_id": uid, "end_unit_id": uid},
    }
    if metadata:
        out["metadata"] = metadata
    return out


# Position order is the array order; the numeric ids deliberately do not increase with it.
SOURCE = [
    unit(30, "Session opens.", speaker="GM", t=0),
    unit(10, "Aria casts Cure Wounds.", speaker="Aria", t=1.5),
    unit(20, "The party regroups.", speaker="GM", t=3),
    unit(5, "Bram keeps watch.", speaker="Bram", t=4, flags={"aside": True}),
    unit(40, "The session ends."),
]


def src() -> list[dict[str, Any]]:
    return copy.deepcopy(SOURCE)


def test_source_document_valid_with_non_monotonic_ids() -> None:
    assert validate_source_document(src()) == []
    assert validate_source_document([]) == []


SOURCE_DOCUMENT_CASES: list[tuple[str, Mutation, str, str]] = [
    ("object", lambda d: {"units": d}, "context.payload-not-array", ""),
    ("id-twice", lambda d: d + [copy.deepcopy(d[1])], "context.unit-duplicate", "/5/id"),
    (
        "two-sources",
        _set((2, "ref", "source_id"), "session-beta"),
        "context.source-mixed",
        "/2/ref/source_id",
    ),
    ("self-ref", _set((3, "ref", "end_unit_id"), 40), "context.self-ref", "/3/ref/end_unit_id"),
    ("unknown-field", _set((4, "speaker"), "GM"), "context.unit-shape", "/4/speaker"),
]


@pytest.mark.parametrize(
    ("mutate", "code", "pointer"),
    [pytest.param(m, c, p, id=i) for i, m, c, p in SOURCE_DOCUMENT_CASES],
)
def test_source_document_rule(mutate: Mutation, code: str, pointer: str) -> None:
    errors = validate_source_document(mutate(src()))
    assert faults(errors) == [(code, pointer)]
    assert errors[0].rule == "docs/bundle.md#generic-source-documents"


def test_source_consistent_excerpt() -> None:
    doc = src()
    assert check_against_source([doc[0], doc[2], doc[3]], doc) == []
    assert check_against_source(doc, doc) == []  # the excerpt may be the whole document
    assert check_against_source([], doc) == []
    # Member order inside a unit is irrelevant (JSON objects, canonical form sorts them).
    reordered = {k: doc[1][k] for k in reversed(list(doc[1]))}
    assert check_against_source([reordered], doc) == []
    # 1.5 vs 1.5 and 3 vs 3.0: numbers compare by value, as their canonical form does.
    as_float = copy.deepcopy(doc[2])
    as_float["metadata"]["t"] = 3.0
    assert check_against_source([as_float], doc) == []


def _payload(*positions: int) -> Callable[[], list[dict[str, Any]]]:
    return lambda: [copy.deepcopy(SOURCE[p]) for p in positions]


CONSISTENCY_CASES: list[tuple[str, Callable[[], list[Any]], list[tuple[str, str]]]] = [
    (
        "metadata-value",
        lambda: [SOURCE[0], {**SOURCE[1], "metadata": {"speaker": "Bram", "t": 1.5}}],
        [("context.source-mismatch", "/1/metadata/speaker")],
    ),
    (
        "metadata-dropped",
        lambda: [{k: v for k, v in SOURCE[1].items() if k != "metadata"}],
        [("context.source-mismatch", "/0/metadata")],
    ),
    (
        "metadata-added",
        lambda: [{**SOURCE[4], "metadata": {"lane": "combat"}}],
        [("context.source-mismatch", "/0/metadata")],
    ),
    (
        "metadata-nested",
        lambda: [{**SOURCE[3], "metadata": {**SOURCE[3]["metadata"], "flags": {"aside": 1}}}],
        [("context.source-mismatch", "/0/metadata/flags/aside")],
    ),
    (
        "text",
        lambda: [{**SOURCE[2], "text": "The party regroups"}],
        [("context.source-mismatch", "/0/text")],
    ),
    (
        "kind",
        lambda: [{**SOURCE[2], "kind": "narration"}],
        [("context.source-mismatch", "/0/kind")],
    ),
    (
        "other-source",
        lambda: [unit(10, "Aria casts Cure Wounds.", "session-beta")],
        [("context.source-mismatch", "/0/ref/source_id")],
    ),
    ("swapped", _payload(2, 1), [("context.source-order", "/1")]),
    # Numeric id order (5, 10, 20, 30) is not position order (3, 1, 2, 0).
    (
        "numeric-id-order",
        _payload(3, 1, 2, 0),
        [("context.source-order", "/1"), ("context.source-order", "/3")],
    ),
    (
        "unknown-unit",
        lambda: [SOURCE[0], unit(99, "Never said.")],
        [("context.unit-unknown", "/1/id")],
    ),
    (
        "unknown-and-order",
        lambda: [SOURCE[2], unit(99, "x"), SOURCE[1]],
        [("context.unit-unknown", "/1/id"), ("context.source-order", "/2")],
    ),
]


@pytest.mark.parametrize(
    ("build", "expected"), [pytest.param(b, e, id=i) for i, b, e in CONSISTENCY_CASES]
)
def test_source_consistency(build: Callable[[], list[Any]], expected: list[Any]) -> None:
    payload = build()
    assert validate_payload(payload) == []  # only the source can tell these apart
    assert faults(check_against_source(payload, src())) == expected


def test_source_consistency_types_are_json_types() -> None:
    doc = src()
    doc[1]["metadata"]["flag"] = 1
    bad = copy.deepcopy(doc[1])
    bad["metadata"]["flag"] = True  # True == 1 in Python, not in JSON
    assert faults(check_against_source([bad], doc)) == [
        ("context.source-mismatch", "/0/metadata/flag")
    ]


def test_source_consistency_never_raises_on_malformed_input() -> None:
    doc = src()
    for payload in ({}, [1, None, {"id": "x"}], [{"id": True}]):
        assert check_against_source(payload, doc) == []
    assert faults(check_against_source([SOURCE[0]], None)) == [("context.unit-unknown", "/0/id")]


# --------------------------------------------------------------------------- producer


@pytest.mark.parametrize(
    ("ranges", "window", "ids"),
    [
        pytest.param([], 3, [], id="no-refs"),
        pytest.param([(10, 10)], 0, [10], id="single"),
        pytest.param([(10, 20)], 0, [10, 20], id="range"),
        pytest.param([(30, 5)], 0, [30, 10, 20, 5], id="non-monotonic-ids"),
        pytest.param([(10, 10)], 1, [30, 10, 20], id="window"),
        pytest.param([(30, 30)], 2, [30, 10, 20], id="clamp-start"),
        pytest.param([(40, 40)], 1000, [30, 10, 20, 5, 40], id="clamp-both"),
        pytest.param([(5, 5), (10, 10), (10, 10)], 0, [10, 5], id="union-position-order"),
        pytest.param([(30, 10), (10, 20)], 1, [30, 10, 20, 5], id="overlap-once"),
        pytest.param([(30, 30), (40, 40)], 0, [30, 40], id="gap"),
    ],
)
def test_select_excerpt(ranges: list[tuple[int, int]], window: int, ids: list[int]) -> None:
    out = select_excerpt(src(), ranges, window)
    assert [u["id"] for u in out] == ids
    assert validate_payload(out) == []
    assert check_against_source(out, src()) == []


SELECTION_ERRORS: list[tuple[str, list[Any], str, str]] = [
    ("start-unknown", [(10, 10), (99, 20)], "context.range-unknown", "/1/0"),
    ("end-unknown", [(10, 11)], "context.range-unknown", "/0/1"),
    # 20 > 10 numerically is irrelevant; 10 comes after 30 in position.
    ("start-after-end", [(10, 30)], "context.range-order", "/0"),
    ("start-after-end-ids-ascending", [(20, 5), (5, 10)], "context.range-order", "/1"),
]


@pytest.mark.parametrize(
    ("ranges", "code", "pointer"), [pytest.param(r, c, p, id=i) for i, r, c, p in SELECTION_ERRORS]
)
def test_select_excerpt_rejects_bad_range(ranges: list[Any], code: str, pointer: str) -> None:
    with pytest.raises(ContextError) as info:
        select_excerpt(src(), ranges, 1)
    assert (info.value.code, info.value.pointer) == (code, pointer)
    assert info.value.rule == "notarius-evidence-context-v1#selection-and-citations"


def test_select_excerpt_rejects_bad_source_document() -> None:
    doc = src() + [copy.deepcopy(SOURCE[0])]
    with pytest.raises(ContextError) as info:
        select_excerpt(doc, [(10, 10)], 0)
    assert (info.value.code, info.value.pointer) == ("context.unit-duplicate", "/5/id")


@pytest.mark.parametrize(
    ("ranges", "window", "exc"),
    [
        pytest.param([(10, 10)], -1, ValueError, id="negative-window"),
        pytest.param([(10, 10)], True, TypeError, id="bool-window"),
        pytest.param([(10, 10)], 1.0, TypeError, id="float-window"),
        pytest.param([(10,)], 0, TypeError, id="not-a-pair"),
        pytest.param([(True, 10)], 0, TypeError, id="bool-id"),
    ],
)
def test_select_excerpt_api_misuse(ranges: list[Any], window: Any, exc: type[Exception]) -> None:
    with pytest.raises(exc):
        select_excerpt(src(), ranges, window)


# --------------------------------------------------------------------------- detection


def test_detect_never_guesses_between_excerpt_and_source() -> None:
    for doc in (SOURCE, [], [SOURCE[0]], {"id": 1}, "x", None):
        assert detect(doc) is None
    assert looks_like_units(SOURCE) and looks_like_units(
        [{"id": "x", "kind": 1, "text": None, "ref": 0}]
    )
    # [] says nothing about its role: it stays plain JSON unless a kind is given.
    assert not looks_like_units([]) and not looks_like_units({"id": 1})
    assert not looks_like_units([{"id": 1}]) and not looks_like_units([SOURCE[0], 1])
