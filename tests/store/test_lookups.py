"""Lookups are exact for every identifier the contracts allow, with one answer on both
backends (issue 17): long values, digest spellings, U+0000, digest column checks, and the
migration (revision 0003) that carries existing stores over.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
import sqlalchemy as sa

import evstore
from evstore import Document
from evstore.core.canonical import dumps
from evstore.db.engine import Database, head_revision

LONG_SOURCE = "S" * 700
LONG_DOC = "D" * 600


def units(source_id: str, n: int = 1) -> list[dict[str, Any]]:
    return [
        {
            "id": i,
            "kind": "p",
            "text": f"t{i}",
            "ref": {"source_id": source_id, "start_unit_id": i, "end_unit_id": i},
        }
        for i in range(1, n + 1)
    ]


def source_document(store: evstore.Store, source_id: str) -> str:
    doc = Document(dumps(units(source_id)), "src.json", "source-document")
    return store.ingest([doc]).results[0].digest.address


def fragment_with_source(store: evstore.Store, document_id: str) -> Any:
    content = b"hello world"
    frag = {
        "document_id": document_id,
        "fragment_id": "F",
        "start_offset": 0,
        "end_offset": 5,
        "quote_sha256": hashlib.sha256(content[:5]).hexdigest(),
    }
    return store.fragments.ingest(dumps(frag), sources=[(document_id, "F", content)])


# ------------------------------------------------------------------------------- long values


def test_long_source_id_is_found_by_its_full_value_only(store):
    address = source_document(store, LONG_SOURCE)
    other = source_document(store, LONG_SOURCE[:512] + "X" * 100)  # same 512-char prefix
    assert [a.address for a in store.find("source_id", LONG_SOURCE)] == [address]
    assert [a.address for a in store.find("source_id", LONG_SOURCE[:512] + "X" * 100)] == [other]
    assert store.find("source_id", LONG_SOURCE[:512]) == []


def test_long_document_id_is_found_by_fragments_by_document(store):
    report = fragment_with_source(store, LONG_DOC)
    address = report.results[0].digest.address
    assert [a.address for a in store.fragments.by_document(LONG_DOC)] == [address]
    assert store.find("document_id", LONG_DOC[:512]) == []
    assert store.fragments.by_document(LONG_DOC[:512]) == []


def test_long_identifier_attr_row_holds_the_whole_value(store):
    source_document(store, LONG_SOURCE)
    with store.db.engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT value, value_digest FROM attrs WHERE name = 'source_id'")
        ).all()
    assert [(r.value, r.value_digest) for r in rows] == [
        (LONG_SOURCE, hashlib.sha256(LONG_SOURCE.encode()).hexdigest())
    ]


# ----------------------------------------------------------------------------- digest spellings


def test_quote_sha256_lookup_accepts_every_unambiguous_spelling(store):
    report = fragment_with_source(store, "D")
    address = report.results[0].digest.address
    hex_ = hashlib.sha256(b"hello").hexdigest()
    b64 = base64.urlsafe_b64encode(bytes.fromhex(hex_)).rstrip(b"=").decode()
    for spelling in (
        hex_,
        hex_.upper(),
        "sha256:" + hex_,
        "SHA256:" + hex_.upper(),
        b64,
        "sha256:" + b64,
    ):
        assert [a.address for a in store.find("quote_sha256", spelling)] == [address], spelling


@pytest.mark.parametrize(
    "bad",
    [
        "a" * 63,
        "a" * 65,
        "g" * 64,
        "sha256:" + "a" * 63,
        "sha512:" + "a" * 64,
        "",
        "q" * 43,
        "A" * 44,
    ],
)
def test_malformed_quote_sha256_is_refused_with_its_format_code(store, bad):
    with pytest.raises(evstore.EvstoreError) as info:
        store.find("quote_sha256", bad)
    assert info.value.code == "fragment.digest-format"


def test_cli_find_malformed_digest_is_not_not_found(store_url):
    from click.testing import CliRunner

    from evstore.cli.main import cli

    r = CliRunner().invoke(
        cli, ["--store", store_url, "--json", "find", "--quote-sha256", "a" * 63]
    )
    assert r.exit_code == 1
    assert json.loads(r.stdout)["error"]["code"] == "fragment.digest-format"
    r = CliRunner().invoke(
        cli, ["--store", store_url, "--json", "find", "--quote-sha256", "A" * 64]
    )
    assert json.loads(r.stdout)["error"]["code"] == "not-found.artifact"


def test_cli_find_takes_every_spelling_of_a_stored_quote_sha256(store, store_url):
    """Issue 23's report: an uppercase digest must find what its lowercase spelling finds."""
    from click.testing import CliRunner

    from evstore.cli.main import cli

    address = fragment_with_source(store, "D").results[0].digest.address
    hex_ = hashlib.sha256(b"hello").hexdigest()
    b64 = base64.urlsafe_b64encode(bytes.fromhex(hex_)).rstrip(b"=").decode()
    for spelling in (hex_, hex_.upper(), "SHA256:" + hex_.upper(), "Sha256:" + b64):
        for args in (["--quote-sha256", spelling], ["--attr", f"quote_sha256={spelling}"]):
            r = CliRunner().invoke(cli, ["--store", store_url, "--json", "find", *args])
            assert r.exit_code == 0, (spelling, r.output)
            assert [a["address"] for a in json.loads(r.stdout)["artifacts"]] == [address]


def test_run_lookup_normalises_the_address_case(store):
    with pytest.raises(evstore.EvstoreError) as info:
        store.find("run", "blake3:" + "a" * 63)
    assert info.value.code == "ref.syntax"
    assert store.find("run", "BLAKE3:" + "A" * 64) == []


# ------------------------------------------------------------------------------------ U+0000

NUL = "a\x00b"


def _rejected(store, snapshot, fn) -> evstore.EvstoreError:
    before = snapshot(store)
    with pytest.raises(evstore.EvstoreError) as info:
        fn()
    assert snapshot(store) == before
    return info.value


def test_nul_in_document_id_is_a_fragment_shape_fault(store, snapshot):
    err = _rejected(store, snapshot, lambda: fragment_with_source(store, NUL))
    assert (err.code, err.pointer) == ("fragment.shape", "/document_id")


def test_nul_in_source_registration_is_a_fragment_shape_fault(store, snapshot):
    err = _rejected(store, snapshot, lambda: store.fragments.ingest_source(b"x", NUL, "F"))
    assert (err.code, err.pointer) == ("fragment.shape", "/document_id")


def test_nul_in_scope_value_is_a_scope_fault(store, snapshot):
    frag = {
        "document_id": "D",
        "fragment_id": "F",
        "start_offset": 0,
        "end_offset": 1,
        "quote_sha256": hashlib.sha256(b"h").hexdigest(),
        "scope": {"host_id": NUL, "tenant_id": "t", "authorization_scope_id": "a"},
    }
    err = _rejected(
        store, snapshot, lambda: store.fragments.ingest(dumps(frag), sources=[("D", "F", b"h")])
    )
    assert (err.code, err.pointer) == ("fragment.scope-incomplete", "/scope/host_id")


@pytest.mark.parametrize("kind", ["source-document", "evidence-context"])
def test_nul_in_source_id_is_a_context_fault(store, snapshot, kind):
    doc = Document(dumps(units(NUL)), "u.json", kind)
    err = _rejected(store, snapshot, lambda: store.ingest([doc]))
    assert (err.code, err.pointer) == ("context.ref-source-id", "/0/ref/source_id")


@pytest.mark.parametrize("name", ["document_id", "source_id", "quote_sha256", "key", "run"])
def test_nul_in_a_lookup_value_is_refused_alike(store, name):
    with pytest.raises(evstore.EvstoreError) as info:
        store.find(name, NUL)
    assert info.value.code == "input.invalid"


@pytest.mark.parametrize("name", ["a\x00", "\x00", "run\x00", "a\udcff"])
def test_nul_or_surrogate_in_a_lookup_name_is_refused_alike(store, name):
    # PostgreSQL answered store.database (HTTP 500) and SQLite an empty list.
    with pytest.raises(evstore.EvstoreError) as info:
        store.find(name, "b")
    assert info.value.code == "input.invalid"


def test_nul_in_an_attribute_write_is_refused_alike(store, snapshot):
    def write() -> None:
        store.transaction(
            lambda txn: txn.put_artifact("json", "rfc8785", b"{}", attrs=[("x", NUL)])
        )

    assert _rejected(store, snapshot, write).code == "input.invalid"


# ------------------------------------------------------------------------- digest column checks


@pytest.mark.parametrize(
    ("table", "row"),
    [
        ("edges", {"src": "A" * 64, "role": "r", "dst": "0" * 64}),
        ("edges", {"src": "0" * 64, "role": "r", "dst": "0" * 63}),
        (
            "attrs",
            {
                "name": "n",
                "value_digest": "x" * 64,
                "value": "v",
                "address": "0" * 64,
                "kind": "json",
            },
        ),
        ("warnings", {"address": "0" * 63 + "G", "code": "c", "pointer": "", "message": "m"}),
        (
            "bindings",
            {"namespace": "n", "key_digest": "Z" * 64, "key": "k", "value": "v", "origin": ""},
        ),
    ],
)
def test_digest_columns_refuse_anything_but_lowercase_hex(store, table, row):
    cols = ", ".join(row)
    params = ", ".join(f":{c}" for c in row)
    with pytest.raises(sa.exc.IntegrityError), store.db.engine.begin() as conn:
        conn.execute(sa.text(f"INSERT INTO {table} ({cols}) VALUES ({params})"), row)


def test_blob_sha256_column_refuses_uppercase(store):
    store.put(b"x")
    with pytest.raises(sa.exc.IntegrityError), store.db.engine.begin() as conn:
        conn.execute(sa.text("UPDATE blobs SET sha256 = upper(sha256)"))


# ------------------------------------------------------------------------------- migration


def _store_at(url: str, revision: str) -> Database:
    from alembic import command

    from evstore.db.engine import _alembic_config

    db = Database(url)
    if db.sqlite_path is not None:
        db.sqlite_path.parent.mkdir(parents=True, exist_ok=True)
    cfg = _alembic_config()
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
    return db


def _alembic(db: Database, verb: str, revision: str) -> None:
    from alembic import command

    from evstore.db.engine import _alembic_config

    cfg = _alembic_config()
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        getattr(command, verb)(cfg, revision)


def _old_blob(conn: Any, data: bytes) -> str:
    """Store ``data`` inline in a store at an old revision, as that revision's code did (a
    plain row: today's put relies on columns later revisions added, such as ``blobs.id``);
    its BLAKE3 hex.
    """
    from evstore.core.digests import digest_bytes

    dg = digest_bytes(data)
    conn.execute(
        sa.text("INSERT INTO blobs (address, sha256, size, data) VALUES (:a, :s, :n, :d)"),
        {"a": dg.blake3, "s": dg.sha256, "n": dg.size, "d": data},
    )
    return dg.blake3


def _old_artifact(conn: Any, kind: str, doc: Any, attrs: list[tuple[str, str]]) -> str:
    """Write an artifact the way revision 0002's code did: attribute values cut to 512."""
    address = _old_blob(conn, dumps(doc))
    conn.execute(
        sa.text("INSERT INTO artifacts (address, kind, contract_version) VALUES (:a, :k, 'v1')"),
        {"a": address, "k": kind},
    )
    for name, value in attrs:
        conn.execute(
            sa.text("INSERT INTO attrs (name, value, address, kind) VALUES (:n, :v, :a, :k)"),
            {"n": name, "v": value[:512], "a": address, "k": kind},
        )
    return "blake3:" + address


def test_migration_makes_cut_lookups_exact(empty_url):
    db = _store_at(empty_url, "0002")
    short = units("short-id")
    with db.engine.begin() as conn:
        long_addr = _old_artifact(
            conn, "source-document", units(LONG_SOURCE), [("source_id", LONG_SOURCE)]
        )
        short_addr = _old_artifact(conn, "source-document", short, [("source_id", "short-id")])
    assert db.migrate() == ("0002", head_revision())
    with evstore.open(empty_url) as s:
        assert [a.address for a in s.find("source_id", LONG_SOURCE)] == [long_addr]
        assert s.find("source_id", LONG_SOURCE[:512]) == []
        assert [a.address for a in s.find("source_id", "short-id")] == [short_addr]
        assert list(s.check()) == []
    db.dispose()


def test_migration_0003_downgrades_and_upgrades_again(empty_url):
    db = _store_at(empty_url, "head")
    with evstore.open(empty_url) as s:
        address = source_document(s, LONG_SOURCE)
    _alembic(db, "downgrade", "0002")
    with db.engine.connect() as conn:
        values = conn.execute(sa.text("SELECT value FROM attrs")).scalars().all()
    assert values == [LONG_SOURCE[:512]]
    _alembic(db, "upgrade", "head")
    with evstore.open(empty_url) as s:
        assert [a.address for a in s.find("source_id", LONG_SOURCE)] == [address]
        assert list(s.check()) == []
    db.dispose()


def test_store_with_a_damaged_digest_row_still_migrates_and_check_reports_it(empty_url):
    db = _store_at(empty_url, "0002")
    with db.engine.begin() as conn:
        address = _old_blob(conn, b"damaged later")
        conn.execute(sa.text("UPDATE blobs SET sha256 = upper(sha256)"))
    assert db.migrate() == ("0002", head_revision())
    with evstore.open(empty_url) as s:
        faults = list(s.check())
    assert [f.details.get("address") for f in faults] == ["blake3:" + address]
    assert faults[0].code.startswith("corruption.")
    with pytest.raises(sa.exc.IntegrityError), db.engine.begin() as conn:  # new rows are checked
        conn.execute(
            sa.text("INSERT INTO edges (src, role, dst) VALUES (:s, 'r', :d)"),
            {"s": "B" * 64, "d": "0" * 64},
        )
    db.dispose()


# ----------------------------------------------------------- one byte string, several kinds


def _kinds_found(store: evstore.Store, source_id: str) -> dict[str, list[str]]:
    return {
        kind: [a.kind for a in store.find("source_id", source_id, kind=kind)]
        for kind in (None, "evidence-context", "source-document")
    }


def test_one_byte_string_stored_as_two_kinds_is_found_as_each(store, backend, request, tmp_path):
    from archive_helpers import fresh_url

    data = dumps(units("S-two"))
    for kind in ("evidence-context", "source-document"):  # the context first
        store.ingest([Document(data, "u.json", kind)])
    want = {
        None: ["evidence-context", "source-document"],
        "evidence-context": ["evidence-context"],
        "source-document": ["source-document"],
    }
    got = _kinds_found(store, "S-two")
    assert {k: sorted(v) for k, v in got.items()} == want
    # an archive imported into another store (source documents go first there) answers alike
    address = evstore.digest_bytes(data).address
    evstore.export_archive(store, [address], tmp_path / "a")
    with evstore.open(fresh_url(backend, request, tmp_path)) as b:
        evstore.import_archive(b, tmp_path / "a")
        assert {k: sorted(v) for k, v in _kinds_found(b, "S-two").items()} == want


def test_migration_0008_gives_each_kind_its_lookup_rows(empty_url):
    db = _store_at(empty_url, "0007")
    data = dumps(units("S-old"))
    with db.engine.begin() as conn:  # as revision 0007 kept it: one row, of the first kind
        address = _old_blob(conn, data)
        for kind in ("evidence-context", "source-document"):
            conn.execute(
                sa.text(
                    "INSERT INTO artifacts (address, kind, contract_version) VALUES (:a, :k, 'v1')"
                ),
                {"a": address, "k": kind},
            )
        conn.execute(
            sa.text(
                "INSERT INTO attrs (name, value_digest, value, address, kind) "
                "VALUES ('source_id', :d, 'S-old', :a, 'evidence-context')"
            ),
            {"d": hashlib.sha256(b"S-old").hexdigest(), "a": address},
        )
    assert db.migrate() == ("0007", head_revision())
    want = ["evidence-context", "source-document"]
    with evstore.open(empty_url) as s:
        assert sorted(_kinds_found(s, "S-old")[None]) == want
        assert _kinds_found(s, "S-old")["source-document"] == ["source-document"]
        assert list(s.check()) == []
    _alembic(db, "downgrade", "0007")  # one row per (name, value, address) again
    with db.engine.connect() as conn:
        kinds = conn.execute(sa.text("SELECT kind FROM attrs")).scalars().all()
    assert kinds == ["evidence-context"]
    _alembic(db, "upgrade", "head")
    with evstore.open(empty_url) as s:
        assert sorted(_kinds_found(s, "S-old")[None]) == want
    db.dispose()
