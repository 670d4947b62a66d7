"""templiqx evidence fragments in the store (both backends): sources, selection, bindings.

Every rejection asserts its code, its pointer and an unchanged store (every row and byte).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import evstore
from evstore import Document
from evstore.contracts.fragments import rules as fr
from evstore.core import errors
from evstore.core.canonical import dumps
from evstore.db.tables import bindings, edges

TEMPLIQX = Path("fixtures/templiqx/examples")
TEXT_FIELDS = ("document_text", "intake_text", "timesheet_text")
OWN = "evstore.document_revision"
EXAMPLE = "example.document_revision"

MIXED = "aé€𝄞z".encode()  # boundaries 0, 1, 3, 6, 10, 11
OTHER = "xyzabc€".encode()  # [3, 6) is "abc" here, "€" in MIXED
S1 = {"host_id": "H1", "tenant_id": "T1", "authorization_scope_id": "A1"}
S2 = {"host_id": "H1", "tenant_id": "T2", "authorization_scope_id": "A1"}
R1 = "a1" * 32
R2 = "b2" * 32


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make(content: bytes, start: int, end: int, d: str = "D", f: str = "F", **over: Any) -> dict:
    frag = {
        "document_id": d,
        "fragment_id": f,
        "start_offset": start,
        "end_offset": end,
        "quote_sha256": sha(content[start:end]),
    }
    frag.update(over)
    return frag


def rev(checksum: str, key: str = OWN) -> dict:
    return {key: {"revision_checksum": checksum}}


def ingest(store: evstore.Store, doc: Any, **kw: Any) -> Any:
    return store.fragments.ingest(dumps(doc), **kw)


def rejected(store: evstore.Store, snapshot: Any, code: str, pointer: str, fn: Any) -> Any:
    """Run fn; it must raise ``code`` at ``pointer`` and leave every row and byte as it was."""
    before = snapshot(store)
    with pytest.raises(evstore.EvstoreError) as info:
        fn()
    assert (info.value.code, info.value.pointer) == (code, pointer), info.value
    assert info.value.rule == errors.CODES[code].rule
    assert snapshot(store) == before
    return info.value


def source_edges(store: evstore.Store, address: str) -> list[str]:
    with store.db.engine.connect() as conn:
        rows = conn.execute(
            sa.select(edges.c.dst).where(
                edges.c.src == address.removeprefix("blake3:"), edges.c.role == "source"
            )
        ).all()
    return [r.dst for r in rows]


def blob_sha(store: evstore.Store, address: str) -> str:
    return store.stat("blake3:" + address)["sha256"].removeprefix("sha256:")


# ---------------------------------------------------------------------------------------------
# upstream vectors


def _upstream(shared_dir: Path) -> list[tuple[Path, str, str, bytes]]:
    root = shared_dir / TEMPLIQX
    out = []
    for output in sorted(
        [root / "crm3/evals/bli-61-output.json", *root.glob("packages/*/evals/*-output.json")]
    ):
        request = output.with_name(output.name.replace("-output.json", "-request.json"))
        inputs = json.loads(request.read_text(encoding="utf-8"))["inputs"]
        (field,) = [k for k in TEXT_FIELDS if k in inputs]
        out.append((output, inputs["document_id"], inputs["fragment_id"], inputs[field].encode()))
    return out


@pytest.mark.shared
def test_upstream_outputs_ingest_with_sources(store: evstore.Store, shared_dir: Path) -> None:
    total = 0
    for output, d, f, text in _upstream(shared_dir):
        report = store.fragments.ingest(
            output.read_bytes(), sources=[(d, f, text)], name=str(output)
        )
        (res,) = report.results
        assert res.kind == "fragment-batch" and res.new
        total += res.info["fragments"]
        for frag in json.loads(output.read_bytes())["evidence"]:
            (found,) = store.fragments.find(frag["quote_sha256"])
            assert found.kind == "fragment"
            assert store.load(found.address) == frag  # assertion field `field` preserved
            assert (
                store.fragments.quote(found.address)
                == text[frag["start_offset"] : frag["end_offset"]]
            )
            (src,) = source_edges(store, found.address)
            assert blob_sha(store, src) == sha(text)
        assert len(store.fragments.by_document(d)) == res.info["fragments"]
        assert len(store.fragments.sources(d, f)) == 1
    assert total == 17
    assert len(store.ls("fragment")) == 17
    assert list(store.check()) == []
    # again: identical evidence is stored once and reported as not new
    for output, d, f, text in _upstream(shared_dir):
        (res,) = store.fragments.ingest(output.read_bytes(), sources=[(d, f, text)]).results
        assert not res.new and res.info["new_fragments"] == 0


@pytest.mark.shared
def test_upstream_outputs_ingest_after_ingest_source(
    store: evstore.Store, shared_dir: Path
) -> None:
    for output, d, f, text in _upstream(shared_dir):
        src = store.fragments.ingest_source(text, d, f)
        assert src.kind == "fragment-source" and src.info["content_sha256"] == sha(text)
        # the exact bytes are stored
        assert store.get("sha256:" + sha(text)) == text
        store.ingest([Document(output.read_bytes(), name=output.name)])
    assert len(store.ls("fragment")) == 17
    assert list(store.check()) == []


def _contract_example(shared_dir: Path) -> dict:
    import re

    text = (shared_dir / "contracts/templiqx-evidence-fragment-v1alpha1.md").read_text("utf-8")
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", text, re.DOTALL)]
    (example,) = [b for b in blocks if "document_id" in b]
    return example


@pytest.mark.shared
def test_contract_example_with_revision_and_scope(
    store: evstore.Store, shared_dir: Path, snapshot: Any
) -> None:
    example = _contract_example(shared_dir)
    (_, d, f, text), *_ = [u for u in _upstream(shared_dir) if u[0].name == "bli-61-output.json"]
    checksum = example["extensions"][EXAMPLE]["revision_checksum"]
    store.fragments.ingest_source(text, d, f, checksum)
    # the illustrative key is read only when configured: then the revision must be known
    store.set_config(fr.REVISION_KEYS_SETTING, [EXAMPLE])
    (res,) = ingest(store, example).results
    assert res.kind == "fragment" and res.info["scoped"]
    assert list(store.check()) == []
    # same identity (bli-61's first fragment) unscoped: refused now
    bli61 = json.loads((shared_dir / TEMPLIQX / "crm3/evals/bli-61-output.json").read_text())
    rejected(
        store,
        snapshot,
        "fragment.scope-reuse",
        "/evidence/0",
        lambda: store.ingest([Document(dumps(bli61))]),
    )


@pytest.mark.shared
def test_contract_example_unknown_revision_when_configured(
    store: evstore.Store, shared_dir: Path, snapshot: Any
) -> None:
    example = _contract_example(shared_dir)
    (_, d, f, text), *_ = [u for u in _upstream(shared_dir) if u[0].name == "bli-61-output.json"]
    store.fragments.ingest_source(text, d, f)  # no revision registered
    store.set_config(fr.REVISION_KEYS_SETTING, [EXAMPLE])
    rejected(
        store,
        snapshot,
        "fragment.unknown-revision",
        "/extensions/example.document_revision/revision_checksum",
        lambda: ingest(store, example),
    )
    # default setting: the example key is preserved but not interpreted
    store.set_config(fr.REVISION_KEYS_SETTING, [OWN])
    (res,) = ingest(store, example).results
    assert store.load(res.digest.address)["extensions"] == example["extensions"]


# ---------------------------------------------------------------------------------------------
# rules at write time


@pytest.fixture
def mixed(store: evstore.Store) -> evstore.Store:
    store.fragments.ingest_source(MIXED, "D", "F")
    return store


# (id, fragment, code, pointer)
WRITE_RULES = [
    ("unknown-content", make(MIXED, 1, 3, f="G"), "fragment.unknown-content", "/fragment_id"),
    ("unknown-document", make(MIXED, 1, 3, d="E"), "fragment.unknown-content", "/fragment_id"),
    ("boundary", make(MIXED, 2, 3), "fragment.boundary", "/start_offset"),
    ("boundary-4-byte", make(MIXED, 6, 8), "fragment.boundary", "/end_offset"),
    ("range-beyond", make(MIXED, 6, 12), "fragment.range", "/end_offset"),
    ("range-empty", make(MIXED, 3, 3), "fragment.range", "/end_offset"),
    (
        "quote-mismatch",
        make(MIXED, 1, 3, quote_sha256=sha(b"x")),
        "fragment.quote-mismatch",
        "/quote_sha256",
    ),
    (
        "content-mismatch",
        make(MIXED, 1, 3, content_sha256=sha(OTHER)),
        "fragment.content-mismatch",
        "/content_sha256",
    ),
    (
        "digest-uppercase",
        make(MIXED, 1, 3, quote_sha256=sha(b"x").upper()),
        "fragment.digest-format",
        "/quote_sha256",
    ),
    (
        "digest-prefixed",
        make(MIXED, 1, 3, content_sha256="sha256:" + sha(MIXED)),
        "fragment.digest-format",
        "/content_sha256",
    ),
    (
        "scope-partial",
        make(MIXED, 1, 3, scope={"host_id": "H"}),
        "fragment.scope-incomplete",
        "/scope/tenant_id",
    ),
    (
        "scope-extra",
        make(MIXED, 1, 3, scope={**S1, "user": "u"}),
        "fragment.scope-incomplete",
        "/scope/user",
    ),
    ("offset-bool", make(MIXED, 1, 3, start_offset=True), "fragment.shape", "/start_offset"),
    (
        "revision-format",
        make(MIXED, 1, 3, extensions=rev("X")),
        "fragment.revision-format",
        "/extensions/evstore.document_revision/revision_checksum",
    ),
    (
        "revision-unknown",
        make(MIXED, 1, 3, extensions=rev(R1)),
        "fragment.unknown-revision",
        "/extensions/evstore.document_revision/revision_checksum",
    ),
]


@pytest.mark.parametrize(
    ("frag", "code", "pointer"), [pytest.param(f, c, p, id=i) for i, f, c, p in WRITE_RULES]
)
def test_write_rules(
    mixed: evstore.Store, snapshot: Any, frag: dict, code: str, pointer: str
) -> None:
    err = rejected(mixed, snapshot, code, pointer, lambda: ingest(mixed, frag))
    assert isinstance(
        err,
        errors.FragmentBindingError
        if errors.CODES[code].family == "binding"
        else errors.FragmentError,
    )
    # in a batch the pointer is prefixed, and the good fragment before it is not written
    batch = {"facts": 1, "evidence": [make(MIXED, 3, 6), frag]}
    rejected(mixed, snapshot, code, "/evidence/1" + pointer, lambda: ingest(mixed, batch))


@pytest.mark.parametrize(
    ("start", "end"), [(0, 1), (1, 3), (3, 6), (6, 10), (10, 11), (0, 11), (1.0, 3.0)]
)
def test_multibyte_fragments_verify(mixed: evstore.Store, start: Any, end: Any) -> None:
    frag = make(MIXED, int(start), int(end), field="x")
    frag["start_offset"], frag["end_offset"] = start, end
    (res,) = ingest(mixed, frag).results
    assert mixed.fragments.quote(res.digest.address) == MIXED[int(start) : int(end)]


def test_validate_lists_faults_and_writes_nothing(mixed: evstore.Store, snapshot: Any) -> None:
    before = snapshot(mixed)
    batch = {"evidence": [make(MIXED, 2, 3), make(MIXED, 1, 3, f="G"), make(MIXED, 1, 3)]}
    report = mixed.validate([Document(dumps(batch), name="b.json")])
    assert [(f.code, f.pointer) for f in report.faults] == [
        ("fragment.boundary", "/evidence/0/start_offset"),
        ("fragment.unknown-content", "/evidence/1/fragment_id"),
    ]
    ok = mixed.validate([Document(dumps(make(MIXED, 1, 3)))])
    assert ok.ok
    assert snapshot(mixed) == before


# ---------------------------------------------------------------------------------------------
# source content versions


def test_sources_are_stored_raw(store: evstore.Store) -> None:
    for data in (b"line one\r\nline two\r\n", b"\xef\xbb\xbfHallo", "e\u0301 \u00e9".encode()):
        res = store.fragments.ingest_source(data, "D", "F")
        assert store.get("sha256:" + sha(data)) == data
        assert res.info["size"] == len(data)
    assert len(store.fragments.sources("D", "F")) == 3


def test_crlf_and_bom_sources(store: evstore.Store, snapshot: Any) -> None:
    crlf = b"Eerste regel\r\nTweede regel\r\n"
    store.fragments.ingest_source(crlf, "D", "CRLF")
    i = crlf.index(b"regel\r\nTweede")
    ingest(store, make(crlf, i, i + 13, f="CRLF"))
    normalised = make(crlf, i, i + 13, f="CRLF", quote_sha256=sha(b"regel\nTweede"))
    rejected(
        store,
        snapshot,
        "fragment.quote-mismatch",
        "/quote_sha256",
        lambda: ingest(store, normalised),
    )
    bommed = b"\xef\xbb\xbfHallo wereld"
    store.fragments.ingest_source(bommed, "D", "BOM")
    ingest(store, make(bommed, 3, 8, f="BOM"))
    no_bom = make(bommed, 0, 5, f="BOM", quote_sha256=sha(b"Hallo"))
    rejected(
        store, snapshot, "fragment.quote-mismatch", "/quote_sha256", lambda: ingest(store, no_bom)
    )
    stripped = make(bommed, 3, 8, f="BOM", content_sha256=sha(bommed[3:]))
    rejected(
        store,
        snapshot,
        "fragment.content-mismatch",
        "/content_sha256",
        lambda: ingest(store, stripped),
    )


@pytest.mark.parametrize(
    ("args", "code", "pointer"),
    [
        pytest.param((b"ab\xe9", "D", "F"), "fragment.source-encoding", "", id="latin-1"),
        pytest.param((b"a\xed\xa0\x80", "D", "F"), "fragment.source-encoding", "", id="surrogate"),
        pytest.param((b"ok", "", "F"), "fragment.shape", "/document_id", id="empty-document-id"),
        pytest.param(
            (b"ok", "D", "F", "ABC"),
            "fragment.revision-format",
            "/revision_checksum",
            id="bad-revision",
        ),
        pytest.param(
            (b"ok", "D", "F", R1.upper()),
            "fragment.revision-format",
            "/revision_checksum",
            id="uppercase-revision",
        ),
    ],
)
def test_ingest_source_rejects(
    store: evstore.Store, snapshot: Any, args: tuple, code: str, pointer: str
) -> None:
    rejected(store, snapshot, code, pointer, lambda: store.fragments.ingest_source(*args))


def test_ambiguous_and_pinned_versions(mixed: evstore.Store, snapshot: Any) -> None:
    mixed.fragments.ingest_source(OTHER, "D", "F")
    frag = make(MIXED, 3, 6)
    err = rejected(
        mixed, snapshot, "fragment.ambiguous-content", "/fragment_id", lambda: ingest(mixed, frag)
    )
    assert err.details["versions"] == sorted([sha(MIXED), sha(OTHER)])
    # pinned by content_sha256: verified against that version, recorded with it
    (res,) = ingest(mixed, dict(frag, content_sha256=sha(MIXED))).results
    assert [blob_sha(mixed, a) for a in source_edges(mixed, res.digest.address)] == [sha(MIXED)]
    # pinned to the other version, where [3, 6) is not the same quote
    rejected(
        mixed,
        snapshot,
        "fragment.quote-mismatch",
        "/quote_sha256",
        lambda: ingest(mixed, dict(frag, content_sha256=sha(OTHER))),
    )
    rejected(
        mixed,
        snapshot,
        "fragment.content-mismatch",
        "/content_sha256",
        lambda: ingest(mixed, dict(frag, content_sha256=sha(b"third"))),
    )
    assert list(mixed.check()) == []


def test_batch_with_sources_is_one_transaction(store: evstore.Store, snapshot: Any) -> None:
    batch = {"evidence": [make(MIXED, 1, 3), make(MIXED, 3, 6), make(MIXED, 5, 6)]}
    err = rejected(
        store,
        snapshot,
        "fragment.boundary",
        "/evidence/2/start_offset",
        lambda: ingest(store, batch, sources=[("D", "F", MIXED)]),
    )
    assert err.path == "-"
    batch["evidence"].pop()
    (res,) = ingest(store, batch, sources=[("D", "F", MIXED)]).results
    assert res.info == {"fragments": 2, "new_fragments": 2}
    assert len(store.fragments.sources("D", "F")) == 1


def test_command_source_must_be_utf8(store: evstore.Store, snapshot: Any) -> None:
    bad = b"ab\xe9cd"
    rejected(
        store,
        snapshot,
        "fragment.source-encoding",
        "",
        lambda: ingest(store, make(bad, 3, 5), sources=[("D", "F", bad)]),
    )


# ---------------------------------------------------------------------------------------------
# scope reuse


def test_scope_then_other_scope_or_none(mixed: evstore.Store, snapshot: Any) -> None:
    ingest(mixed, make(MIXED, 1, 3, scope=S1))
    rejected(
        mixed,
        snapshot,
        "fragment.scope-reuse",
        "/scope",
        lambda: ingest(mixed, make(MIXED, 1, 3, scope=S2)),
    )
    rejected(mixed, snapshot, "fragment.scope-reuse", "", lambda: ingest(mixed, make(MIXED, 1, 3)))
    rejected(
        mixed,
        snapshot,
        "fragment.scope-reuse",
        "",
        lambda: ingest(mixed, make(MIXED, 1, 3), scope=S2),
    )
    # the same scope again: accepted; another identity: free
    assert not ingest(mixed, make(MIXED, 1, 3, scope=S1)).results[0].new
    ingest(mixed, make(MIXED, 3, 6, scope=S2))
    ingest(mixed, make(MIXED, 1, 3), scope=S1)  # envelope scope equal to the binding


def test_unscoped_first_then_scoped_binds(mixed: evstore.Store, snapshot: Any) -> None:
    ingest(mixed, make(MIXED, 1, 3))
    ingest(mixed, make(MIXED, 1, 3))  # never scoped: unscoped writes are fine
    ingest(mixed, make(MIXED, 1, 3, scope=S1))
    rejected(mixed, snapshot, "fragment.scope-reuse", "", lambda: ingest(mixed, make(MIXED, 1, 3)))
    assert list(mixed.check()) == []  # the earlier unscoped artifact is not a fault


def test_envelope_scope_binds_without_changing_fragment(
    mixed: evstore.Store, snapshot: Any
) -> None:
    frag = make(MIXED, 1, 3)
    (res,) = ingest(mixed, frag, scope=S1).results
    assert mixed.load(res.digest.address) == frag  # no scope member added
    rejected(
        mixed,
        snapshot,
        "fragment.scope-reuse",
        "/scope",
        lambda: ingest(mixed, make(MIXED, 1, 3, scope=S2)),
    )
    rejected(mixed, snapshot, "fragment.scope-reuse", "", lambda: ingest(mixed, frag))
    rejected(mixed, snapshot, "fragment.scope-reuse", "", lambda: ingest(mixed, frag, scope=S2))
    ingest(mixed, make(MIXED, 1, 3, scope=S1))


def test_fragment_scope_and_envelope_scope_must_agree(mixed: evstore.Store, snapshot: Any) -> None:
    rejected(
        mixed,
        snapshot,
        "fragment.scope-reuse",
        "/scope",
        lambda: ingest(mixed, make(MIXED, 1, 3, scope=S1), scope=S2),
    )
    ingest(mixed, make(MIXED, 1, 3, scope=S1), scope=S1)


def test_envelope_scope_incomplete(mixed: evstore.Store, snapshot: Any) -> None:
    rejected(
        mixed,
        snapshot,
        "fragment.scope-incomplete",
        "",
        lambda: ingest(mixed, make(MIXED, 1, 3), scope={"host_id": "H", "tenant_id": "T"}),
    )
    rejected(
        mixed,
        snapshot,
        "fragment.scope-incomplete",
        "",
        lambda: ingest(mixed, make(MIXED, 1, 3), scope={**S1, "tenant_id": ""}),
    )


def test_scope_incomplete_is_a_contract_fault_everywhere(
    mixed: evstore.Store, snapshot: Any
) -> None:
    """fragment.scope-incomplete has family contract from every raise site of the library."""
    sites = [
        lambda: ingest(mixed, make(MIXED, 1, 3, scope={"host_id": "H"})),
        lambda: ingest(mixed, make(MIXED, 1, 3), scope={"host_id": "H", "tenant_id": "T"}),
        lambda: mixed.fragments.scope("H", None, "A"),
        lambda: fr.scope_from_parts(None, "T", None),
    ]
    for site in sites:
        before = snapshot(mixed)
        with pytest.raises(errors.FragmentError) as info:
            site()
        err = info.value
        assert err.code == "fragment.scope-incomplete"
        assert (err.family, err.to_dict()["family"]) == ("contract", "contract")
        assert isinstance(err, evstore.ContractError)
        assert err.rule == "templiqx-evidence-fragment-v1alpha1#host-scope-metadata"
        assert snapshot(mixed) == before
    assert mixed.fragments.scope(None, None, None) is None
    assert mixed.fragments.scope("H", "T", "A") == {
        "host_id": "H",
        "tenant_id": "T",
        "authorization_scope_id": "A",
    }


def test_ops_validate_uses_the_store_setting(mixed: evstore.Store) -> None:
    """store.fragments.validate: the store-free faults, revision keys from the store."""
    frag = make(MIXED, 1, 3, extensions=rev("XX", EXAMPLE))
    assert mixed.fragments.validate(frag).ok
    mixed.set_config(fr.REVISION_KEYS_SETTING, [EXAMPLE])
    faults = mixed.fragments.validate(frag)
    assert [(e.code, e.pointer) for e in faults.errors] == [
        ("fragment.revision-format", f"/extensions/{EXAMPLE}/revision_checksum")
    ]
    assert faults.warnings == []


def test_kind_check_and_audit_return_faults(mixed: evstore.Store) -> None:
    """The handlers' check returns Faults; store.validate lists them in order."""
    from evstore.contracts.fragments.store import (
        FragmentBatchKind,
        FragmentKind,
        FragmentSourceKind,
    )

    batch = {"evidence": [make(MIXED, 1, 2), make(MIXED, 1, 3, quote_sha256="0" * 64)]}
    report = mixed.validate([Document(dumps(batch))])
    assert [(f.code, f.pointer) for f in report.faults] == [
        ("fragment.boundary", "/evidence/0/end_offset"),
        ("fragment.quote-mismatch", "/evidence/1/quote_sha256"),
    ]
    with mixed.reading() as txn:
        for handler, doc in (
            (FragmentKind(), make(MIXED, 1, 3)),
            (FragmentBatchKind(), batch),
            (FragmentSourceKind(), {"document_id": "D"}),
        ):
            assert isinstance(handler.check(doc, txn), errors.Faults)


def test_two_assertions_one_identity_one_binding(mixed: evstore.Store, snapshot: Any) -> None:
    a = ingest(mixed, make(MIXED, 1, 3, field="a", scope=S1)).results[0]
    b = ingest(mixed, make(MIXED, 1, 3, field="b", scope=S1)).results[0]
    assert a.digest != b.digest and a.new and b.new
    ident = hashlib.sha256(fr.identity_key(make(MIXED, 1, 3)).encode()).hexdigest()
    assert {x.address for x in mixed.find("fragment_identity", ident)} == {
        a.digest.address,
        b.digest.address,
    }
    with mixed.db.engine.connect() as conn:
        n = conn.execute(
            sa.select(sa.func.count())
            .select_from(bindings)
            .where(bindings.c.namespace == "fragment.scope")
        ).scalar_one()
    assert n == 1
    rejected(
        mixed,
        snapshot,
        "fragment.scope-reuse",
        "/scope",
        lambda: ingest(mixed, make(MIXED, 1, 3, field="c", scope=S2)),
    )


def test_scope_reuse_inside_one_batch(store: evstore.Store, snapshot: Any) -> None:
    batch = {
        "evidence": [make(MIXED, 1, 3, field="a", scope=S1), make(MIXED, 1, 3, field="b", scope=S2)]
    }
    rejected(
        store,
        snapshot,
        "fragment.scope-reuse",
        "/evidence/1/scope",
        lambda: ingest(store, batch, sources=[("D", "F", MIXED)]),
    )
    batch = {"evidence": [make(MIXED, 1, 3, field="a", scope=S1), make(MIXED, 1, 3, field="b")]}
    rejected(
        store,
        snapshot,
        "fragment.scope-reuse",
        "/evidence/1",
        lambda: ingest(store, batch, sources=[("D", "F", MIXED)]),
    )


# ---------------------------------------------------------------------------------------------
# revisions


def test_revision_binds_one_document_and_one_version(store: evstore.Store, snapshot: Any) -> None:
    store.fragments.ingest_source(MIXED, "D", "F", R1)
    assert not store.fragments.ingest_source(MIXED, "D", "F", R1).new
    rejected(
        store,
        snapshot,
        "fragment.revision-mismatch",
        "/revision_checksum",
        lambda: store.fragments.ingest_source(MIXED, "D2", "F", R1),
    )
    rejected(
        store,
        snapshot,
        "fragment.revision-mismatch",
        "/revision_checksum",
        lambda: store.fragments.ingest_source(OTHER, "D", "F", R1),
    )
    store.fragments.ingest_source(OTHER, "D", "G", R1)  # another fragment of that revision
    store.fragments.ingest_source(OTHER, "D", "F", R2)  # a later revision of the pair
    assert list(store.check()) == []


def test_fragment_revision_rules(store: evstore.Store, snapshot: Any) -> None:
    store.fragments.ingest_source(MIXED, "D", "F", R1)
    store.fragments.ingest_source(OTHER, "D", "F", R2)
    store.fragments.ingest_source(MIXED, "D2", "F")
    ptr = "/extensions/evstore.document_revision/revision_checksum"
    # the revision selects the version among two
    (res,) = ingest(store, make(MIXED, 3, 6, extensions=rev(R1))).results
    assert [blob_sha(store, a) for a in source_edges(store, res.digest.address)] == [sha(MIXED)]
    ingest(store, make(OTHER, 0, 4, extensions=rev(R2)))
    # selected version, wrong bytes for it
    rejected(
        store,
        snapshot,
        "fragment.quote-mismatch",
        "/quote_sha256",
        lambda: ingest(store, make(MIXED, 3, 6, extensions=rev(R2))),
    )
    rejected(
        store,
        snapshot,
        "fragment.unknown-revision",
        ptr,
        lambda: ingest(store, make(MIXED, 3, 6, extensions=rev("3" * 64))),
    )
    rejected(
        store,
        snapshot,
        "fragment.revision-mismatch",
        ptr,
        lambda: ingest(store, make(MIXED, 3, 6, d="D2", extensions=rev(R1))),
    )
    rejected(
        store,
        snapshot,
        "fragment.unknown-revision",
        ptr,
        lambda: ingest(store, make(MIXED, 3, 6, f="G", extensions=rev(R1))),
    )
    rejected(
        store,
        snapshot,
        "fragment.revision-mismatch",
        ptr,
        lambda: ingest(store, make(MIXED, 3, 6, content_sha256=sha(OTHER), extensions=rev(R1))),
    )
    ingest(store, make(MIXED, 3, 6, content_sha256=sha(MIXED), extensions=rev(R1)))
    # not configured: another extension key is preserved, uninterpreted
    (res,) = ingest(
        store, make(MIXED, 1, 3, content_sha256=sha(MIXED), extensions=rev("9" * 64, EXAMPLE))
    ).results
    assert store.load(res.digest.address)["extensions"] == rev("9" * 64, EXAMPLE)
    store.set_config(fr.REVISION_KEYS_SETTING, [OWN, EXAMPLE])
    rejected(
        store,
        snapshot,
        "fragment.unknown-revision",
        "/extensions/example.document_revision/revision_checksum",
        lambda: ingest(
            store,
            make(
                MIXED, 1, 3, field="x", content_sha256=sha(MIXED), extensions=rev("9" * 64, EXAMPLE)
            ),
        ),
    )
    rejected(
        store,
        snapshot,
        "fragment.revision-mismatch",
        "/extensions/example.document_revision/revision_checksum",  # the later key disagrees
        lambda: ingest(store, make(MIXED, 3, 6, extensions={**rev(R2, EXAMPLE), **rev(R1)})),
    )


# ---------------------------------------------------------------------------------------------
# check and quote


def test_check_reverifies_against_recorded_source(mixed: evstore.Store) -> None:
    (res,) = ingest(mixed, make(MIXED, 1, 3)).results
    assert list(mixed.check()) == []
    with mixed.db.engine.begin() as conn:
        conn.execute(
            sa.delete(edges).where(edges.c.src == res.digest.blake3, edges.c.role == "source")
        )
    faults = list(mixed.check())
    assert [(f.code, f.details["address"]) for f in faults] == [
        ("fragment.unknown-content", res.digest.address)
    ]


def test_check_reports_tampered_scope_binding(mixed: evstore.Store) -> None:
    (res,) = ingest(mixed, make(MIXED, 1, 3, scope=S1)).results
    with mixed.db.engine.begin() as conn:
        conn.execute(
            sa.update(bindings)
            .where(bindings.c.namespace == "fragment.scope")
            .values(value=dumps(S2).decode())
        )
    assert [(f.code, f.pointer, f.details["address"]) for f in mixed.check()] == [
        ("fragment.scope-reuse", "/scope", res.digest.address)
    ]


def test_quote_errors(mixed: evstore.Store) -> None:
    put = mixed.put(b"not a fragment")
    with pytest.raises(evstore.NotFound) as info:
        mixed.fragments.quote(put.digest.address)
    assert info.value.code == "not-found.fragment"
    with pytest.raises(evstore.NotFound) as info:
        mixed.fragments.quote("sha256:" + "0" * 64)
    assert info.value.code == "not-found.blob"
    with pytest.raises(evstore.RefSyntaxError):
        mixed.fragments.quote("SHA256:00")


def test_explicit_source_kind_document(store: evstore.Store, snapshot: Any) -> None:
    record = {"document_id": "D", "fragment_id": "F", "content_sha256": sha(MIXED)}
    rejected(
        store,
        snapshot,
        "fragment.unknown-content",
        "/content_sha256",
        lambda: store.ingest([Document(dumps(record), kind="fragment-source")]),
    )
    rejected(
        store,
        snapshot,
        "fragment.shape",
        "/extra",
        lambda: store.ingest(
            [Document(dumps({**record, "extra": 1}), kind="fragment-source")], supplied=[MIXED]
        ),
    )
    # a source record and a fragment in one ingest: the fragment sees the new version
    store.ingest(
        [Document(dumps(record), kind="fragment-source"), Document(dumps(make(MIXED, 1, 3)))],
        supplied=[MIXED],
    )
    assert len(store.ls("fragment")) == 1


def test_examples_fragments(store: evstore.Store) -> None:
    """examples/fragments (the README main job) ingests, re-ingests as not new, and checks clean."""
    here = Path(__file__).resolve().parents[2] / "examples" / "fragments"
    text = (here / "clause-3.txt").read_bytes()
    assert b"\r\n" in text  # the CRLF line ends are part of the offsets (no checkout conversion)
    revision = "d4dfd3fad5456c856258ee789f3b69c938346814d31896c19374b76af230b9d0"
    assert revision in (here / "ingest.sh").read_text()
    scope = {
        "host_id": "EX-HOST-001",
        "tenant_id": "EX-TENANT-001",
        "authorization_scope_id": "EX-AUTH-SCOPE-001",
    }
    for new in (True, False):
        assert store.fragments.ingest_source(text, "EX-DOC-0001", "clause-3", revision).new is new
        output = (here / "fee-extraction-output.json").read_bytes()
        (res,) = store.fragments.ingest(output, scope=scope).results
        assert res.info == {"fragments": 4, "new_fragments": 4 if new else 0}
    quotes = {
        store.fragments.quote(a.address).decode()
        for a in store.fragments.by_document("EX-DOC-0001")
    }
    assert quotes == {
        "€ 1.250,00 per maand",
        "vóór de 5e van de maand",
        "Café “De Hoek” B.V.",
        "Ødegaard Consultancy 🏛",
    }
    assert list(store.check()) == []
