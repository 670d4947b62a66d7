"""notarius v1 evidence contexts and source documents in the store, on both backends.

Kinds evidence-context and source-document: the source check at ingest (--source-document),
the edge it leaves, the excerpt producer over a stored document, audit by `check`, and
rejections that leave the store unchanged (rows and bytes).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import sqlalchemy as sa

from evstore import Document
from evstore.contracts.contexts.rules import select_excerpt
from evstore.contracts.contexts.store import EvidenceContextKind
from evstore.core.canonical import dumps
from evstore.core.errors import EvstoreError, InputError, NotFound
from evstore.db.tables import edges


def unit(uid: int, text: str, **metadata: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": uid,
        "kind": "transcript_segment",
        "text": text,
        "ref": {"source_id": "session-alpha", "start_unit_id": uid, "end_unit_id": uid},
    }
    if metadata:
        out["metadata"] = metadata
    return out


SOURCE = [
    unit(30, "Session opens.", speaker="GM"),
    unit(10, "Aria casts Cure Wounds.", speaker="Aria"),
    unit(20, "The party regroups.", speaker="GM"),
    unit(5, "Bram keeps watch."),
    unit(40, "The session ends."),
]


def doc(value: Any, kind: str, name: str = "doc.json") -> Document:
    return Document(json.dumps(value).encode(), name, kind)


def ingest(store: Any, value: Any, kind: str, **options: Any) -> Any:
    return store.ingest([doc(value, kind)], options=options).results[0]


@pytest.fixture
def source_ref(store: Any) -> str:
    return ingest(store, SOURCE, "source-document").digest.address


def test_source_document_is_stored_with_its_source_id(store: Any, source_ref: str) -> None:
    res = ingest(store, SOURCE, "source-document")
    assert res.digest.address == source_ref and res.new is False
    assert res.info == {"units": 5}
    found = store.find("source_id", "session-alpha", kind="source-document")
    assert [f.address for f in found] == [source_ref]
    assert store.get(source_ref) == dumps(SOURCE)


def test_evidence_context_unchecked_without_a_source(store: Any) -> None:
    res = ingest(store, [SOURCE[1], SOURCE[2]], "evidence-context")
    assert res.info == {"source_check": "unchecked"}
    with store.reading() as txn:
        assert txn.edges_from(res.digest.blake3) == []


def test_evidence_context_checked_against_the_named_source(store: Any, source_ref: str) -> None:
    payload = select_excerpt(SOURCE, [(10, 10)], 1)
    # Any accepted ref form names the document: here its SHA-256.
    sha_ref = "sha256:" + store.stat(source_ref)["sha256"].removeprefix("sha256:")
    res = ingest(store, payload, "evidence-context", source_document=sha_ref)
    assert res.info == {"source_check": "checked", "source_document": source_ref}
    with store.reading() as txn:
        assert txn.edges_from(res.digest.blake3) == [
            ("source-document", source_ref.removeprefix("blake3:"))
        ]
    assert list(store.check()) == []


def test_empty_excerpt_and_whole_document(store: Any, source_ref: str) -> None:
    assert ingest(store, [], "evidence-context", source_document=source_ref).new
    # The excerpt may equal its whole source document: same bytes, two kinds.
    res = ingest(store, SOURCE, "evidence-context", source_document=source_ref)
    assert res.digest.address == source_ref
    kinds = {a["kind"] for a in store.stat(source_ref)["artifacts"]}
    assert kinds == {"evidence-context", "source-document"}
    assert list(store.check()) == []


def _mutated(mutate: Any) -> list[dict[str, Any]]:
    payload = copy.deepcopy([SOURCE[0], SOURCE[1], SOURCE[3]])
    mutate(payload)
    return payload


REJECTIONS = [
    ("unit-id", lambda p: p[0].update(id=True), None, "context.unit-id", "/0/id"),
    ("metadata", lambda p: p[1]["metadata"].update(speaker="Bram"), True,
     "context.source-mismatch", "/1/metadata/speaker"),
    ("order", lambda p: p.reverse(), True, "context.source-order", "/1"),
    ("unknown", lambda p: p.append(unit(99, "never said")), True, "context.unit-unknown",
     "/3/id"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutate", "with_source", "code", "pointer"),
    [pytest.param(m, w, c, p, id=i) for i, m, w, c, p in REJECTIONS],
)
def test_rejections_leave_the_store_unchanged(
    store: Any,
    source_ref: str,
    snapshot: Any,
    mutate: Any,
    with_source: Any,
    code: str,
    pointer: str,
) -> None:
    before = snapshot(store)
    options = {"source_document": source_ref} if with_source else {}
    with pytest.raises(EvstoreError) as info:
        store.ingest([doc(_mutated(mutate), "evidence-context", "ctx.json")], options=options)
    assert (info.value.code, info.value.pointer, info.value.path) == (code, pointer, "ctx.json")
    assert snapshot(store) == before


@pytest.mark.parametrize(
    "ref_of",
    [
        pytest.param(lambda s: "blake3:" + "0" * 64, id="absent"),
        # Stored bytes, but not as a source document.
        pytest.param(lambda s: s.put(b"not a source").digest.address, id="plain-blob"),
        pytest.param(
            lambda s: ingest(s, [SOURCE[0]], "evidence-context").digest.address, id="other-kind"
        ),
    ],
)
def test_source_document_ref_must_name_a_stored_source_document(
    store: Any, snapshot: Any, ref_of: Any
) -> None:
    ref = ref_of(store)
    before = snapshot(store)
    with pytest.raises(NotFound) as info:
        ingest(store, [SOURCE[1]], "evidence-context", source_document=ref)
    assert info.value.code == "not-found.source-document"
    assert snapshot(store) == before


def test_bad_source_document_ref_syntax(store: Any) -> None:
    with pytest.raises(InputError) as info:
        ingest(store, [SOURCE[1]], "evidence-context", source_document="sha256:XYZ")
    assert info.value.code == "ref.syntax"


def test_source_document_rules_at_ingest(store: Any, snapshot: Any) -> None:
    before = snapshot(store)
    bad = copy.deepcopy(SOURCE) + [copy.deepcopy(SOURCE[0])]
    with pytest.raises(EvstoreError) as info:
        ingest(store, bad, "source-document")
    assert (info.value.code, info.value.pointer) == ("context.unit-duplicate", "/5/id")
    assert snapshot(store) == before


def test_validate_lists_every_fault_and_writes_nothing(
    store: Any, source_ref: str, snapshot: Any
) -> None:
    before = snapshot(store)
    payload = [copy.deepcopy(SOURCE[2]), copy.deepcopy(SOURCE[1])]
    payload[0]["text"] = "The party regroups!"
    report = store.validate(
        [doc(payload, "evidence-context", "ctx.json")], options={"source_document": source_ref}
    )
    assert [(f.code, f.pointer) for f in report.faults] == [
        ("context.source-mismatch", "/0/text"),
        ("context.source-order", "/1"),
    ]
    assert snapshot(store) == before


def test_unit_arrays_are_never_guessed() -> None:
    with pytest.raises(InputError) as info:
        EvidenceContextKind().detect(SOURCE)
    assert info.value.code == "context.kind-ambiguous"
    assert EvidenceContextKind().detect([]) is False
    assert EvidenceContextKind().detect({"id": 1}) is False


# --------------------------------------------------------------------------- producer


def test_excerpt_from_the_stored_document(store: Any, source_ref: str) -> None:
    got = store.contexts.excerpt(source_ref, [(10, 10), (5, 5)], 1)
    assert got == select_excerpt(SOURCE, [(10, 10), (5, 5)], 1)
    assert [u["id"] for u in got] == [30, 10, 20, 5, 40]
    assert store.contexts.excerpt(source_ref, [], 3) == []


def test_excerpt_bytes_are_the_canonical_form(store: Any, source_ref: str) -> None:
    got = store.contexts.excerpt_bytes(source_ref, [(10, 10)], 1)
    assert got.units == store.contexts.excerpt(source_ref, [(10, 10)], 1)
    assert got.data == dumps(got.units)
    assert got.digest.address == store.put(got.data).digest.address
    assert got.digest.size == len(got.data)


@pytest.mark.parametrize(
    ("ranges", "code"),
    [([(10, 99)], "context.range-unknown"), ([(20, 10)], "context.range-order")],
)
def test_excerpt_rejects_bad_ranges(store: Any, source_ref: str, ranges: Any, code: str) -> None:
    with pytest.raises(EvstoreError) as info:
        store.contexts.excerpt(source_ref, ranges, 0)
    assert info.value.code == code


def test_excerpt_needs_a_source_document(store: Any) -> None:
    ref = ingest(store, SOURCE, "evidence-context").digest.address
    with pytest.raises(NotFound) as info:
        store.contexts.excerpt(ref, [(10, 10)], 0)
    assert info.value.code == "not-found.source-document"


# --------------------------------------------------------------------------- audit


def test_check_recheck_an_excerpt_against_its_source(store: Any, source_ref: str) -> None:
    # An excerpt stored unchecked, then (by a bug or a hand edit) linked to a source it does not
    # match: `check` must report it with the excerpt's address.
    changed = copy.deepcopy(SOURCE[1])
    changed["metadata"]["speaker"] = "Bram"
    ctx = ingest(store, [changed], "evidence-context").digest.blake3
    with store.db.engine.begin() as conn:
        conn.execute(
            sa.insert(edges).values(
                src=ctx, role="source-document", dst=source_ref.removeprefix("blake3:")
            )
        )
    faults = [f for f in store.check() if f.details.get("kind") == "evidence-context"]
    assert [(f.code, f.pointer) for f in faults] == [
        ("context.source-mismatch", "/0/metadata/speaker")
    ]
    assert faults[0].details["address"] == "blake3:" + ctx
