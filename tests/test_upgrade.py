"""A store made by an older evstore opens, passes `evstore check` and reads back byte for byte.

tests/data/store-0002.json holds every row of a store that the code of main before issue 9
(commit aacb405, schema revision 0002) made from examples/ (every kind), plus a chunked
blob, two recorded warnings and a changed setting (tools/make_upgrade_fixture.py). Each test
creates an empty store at that dump's Alembic revision, inserts the rows as they were, and
then uses the current code on it.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from click.testing import CliRunner

import evstore
from evstore.cli.main import cli
from evstore.db.revisions import head_revision

DATA = Path(__file__).resolve().parent / "data"
FIXTURES = sorted(DATA.glob("store-*.json"))
KINDS_MADE_BY_EXAMPLES = {
    "envelope",
    "evidence-context",
    "fragment",
    "fragment-batch",
    "fragment-source",
    "json",
    "manifest",
    "package",
    "request",
    "run",
    "source-document",
}


def _cell(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"base64"}:
        return base64.b64decode(value["base64"])
    if isinstance(value, dict) and set(value) == {"datetime"}:
        return dt.datetime.fromisoformat(value["datetime"])
    return value


def _engine_url(url: str) -> str:
    return url.replace("postgresql://", "postgresql+psycopg://", 1)


def _make_old_store(url: str, dump: dict[str, Any]) -> None:
    """An empty store at the dump's revision (the old migrations), then the dump's rows."""
    engine = sa.create_engine(_engine_url(url))
    try:
        with engine.begin() as conn:
            cfg = Config()
            cfg.set_main_option("script_location", str(resources.files("evstore.migrations")))
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, dump["revision"])
        meta = sa.MetaData()
        meta.reflect(engine)
        with engine.begin() as conn:
            # Referenced tables first (revision 0006 and later have foreign keys).
            order = [t.name for t in meta.sorted_tables if t.name in dump["tables"]]
            for name in order:
                table = dump["tables"][name]
                rows = [
                    dict(zip(table["columns"], map(_cell, row), strict=True))
                    for row in table["rows"]
                ]
                if rows:
                    conn.execute(sa.insert(meta.tables[name]), rows)
    finally:
        engine.dispose()


def _blob_bytes(dump: dict[str, Any]) -> dict[str, bytes]:
    """address -> the stored bytes of every blob (inline, or its chunks in order)."""
    tables = dump["tables"]
    chunk_cols = tables["blob_chunks"]["columns"]
    chunks: dict[int, list[tuple[int, bytes]]] = {}
    for row in tables["blob_chunks"]["rows"]:
        r = dict(zip(chunk_cols, map(_cell, row), strict=True))
        chunks.setdefault(int(r["chunk_set"]), []).append((int(r["seq"]), r["data"]))
    out = {}
    for row in tables["blobs"]["rows"]:
        r = dict(zip(tables["blobs"]["columns"], map(_cell, row), strict=True))
        if r["data"] is not None:
            out[r["address"]] = r["data"]
        else:
            out[r["address"]] = b"".join(d for _, d in sorted(chunks[int(r["chunk_set"])]))
    return out


def _rows(dump: dict[str, Any], name: str) -> list[dict[str, Any]]:
    table = dump["tables"][name]
    return [dict(zip(table["columns"], map(_cell, row), strict=True)) for row in table["rows"]]


@pytest.fixture(params=FIXTURES, ids=[p.stem for p in FIXTURES])
def dump(request: pytest.FixtureRequest) -> dict[str, Any]:
    return json.loads(request.param.read_text())


def test_the_fixture_covers_every_kind_chunks_warnings_and_settings(dump):
    kinds = {r["kind"] for r in _rows(dump, "artifacts")}
    assert kinds == KINDS_MADE_BY_EXAMPLES
    assert dump["tables"]["blob_chunks"]["rows"], "a chunked blob"
    assert dump["tables"]["warnings"]["rows"], "recorded warnings"
    assert dump["tables"]["settings"]["rows"], "a changed setting"


def test_an_old_store_opens_checks_and_reads_back(dump, empty_url):
    _make_old_store(empty_url, dump)

    runner = CliRunner()
    migrated = runner.invoke(cli, ["--store", empty_url, "migrate"], catch_exceptions=False)
    assert migrated.exit_code == 0, migrated.output
    checked = runner.invoke(cli, ["--store", empty_url, "check"], catch_exceptions=False)
    assert checked.exit_code == 0, checked.output

    blobs = _blob_bytes(dump)
    artifacts = _rows(dump, "artifacts")
    with evstore.open(empty_url) as store:
        assert list(store.check()) == []
        # Every blob: the same bytes, verified on read, and the same SHA-256 index.
        for row in _rows(dump, "blobs"):
            ref = "blake3:" + row["address"]
            assert store.get(ref) == blobs[row["address"]], ref
            assert store.get("sha256:" + row["sha256"]) == blobs[row["address"]], ref
        # Every artifact: listed with its kind and contract version, its JSON loads as stored.
        listed = {(i.address, i.kind, i.contract_version) for i in store.ls()}
        assert listed == {
            ("blake3:" + r["address"], r["kind"], r["contract_version"]) for r in artifacts
        }
        for r in artifacts:
            ref = "blake3:" + r["address"]
            assert store.load(ref) == json.loads(blobs[r["address"]]), ref
            assert {i.address for i in store.ls(r["kind"])} >= {ref}
        # Recorded warnings and settings survive.
        for w in _rows(dump, "warnings"):
            got = store.warnings("blake3:" + w["address"])
            assert {"code": w["code"], "message": w["message"], "pointer": w["pointer"]} in got
        config = store.config()
        for s in _rows(dump, "settings"):
            assert config[s["name"]] == json.loads(s["value"]), s["name"]


def test_an_old_store_stores_the_same_evidence_at_the_same_addresses(dump, empty_url):
    """Ingesting an example again into the old store finds it already there: same bytes."""
    _make_old_store(empty_url, dump)
    runner = CliRunner()
    assert runner.invoke(cli, ["--store", empty_url, "migrate"]).exit_code == 0
    examples = Path(__file__).resolve().parents[1] / "examples"
    for path in [
        *sorted((examples / "json").glob("*.json")),
        *sorted((examples / "packages").glob("*.json")),
    ]:
        r = runner.invoke(
            cli, ["--store", empty_url, "--json", "ingest", str(path)], catch_exceptions=False
        )
        assert r.exit_code == 0, r.output
        out = json.loads(r.stdout)
        assert out["artifacts"] and not any(a["new"] for a in out["artifacts"]), (path, out)


def test_an_old_store_finds_every_lookup_and_a_cut_long_identifier_whole(dump, empty_url):
    """Revision 0003: every old lookup still finds its artifact; a value the old code cut to
    512 characters is found by its whole value (restored from the document), never by the cut.
    """
    from evstore.core.canonical import dumps
    from evstore.core.digests import digest_bytes

    long_id = "S" * 700
    doc = [
        {
            "id": 1,
            "kind": "p",
            "text": "t",
            "ref": {"source_id": long_id, "start_unit_id": 1, "end_unit_id": 1},
        }
    ]
    data = dumps(doc)
    dg = digest_bytes(data)
    extra = {
        "blobs": {
            "address": dg.blake3,
            "sha256": dg.sha256,
            "size": len(data),
            "data": {"base64": base64.b64encode(data).decode()},
            "chunk_set": None,
        },
        "artifacts": {
            "address": dg.blake3,
            "kind": "source-document",
            "contract_version": "v1",
            "accepted_at": {"datetime": "2026-01-01T00:00:00+00:00"},
        },
        "attrs": {
            "name": "source_id",
            "value": long_id[:512],
            "address": dg.blake3,
            "kind": "source-document",
        },
    }
    old_cut = dump["revision"] < "0003"  # a store whose code cut long values (before 0003)
    grown = json.loads(json.dumps(dump))
    for name, row in extra.items() if old_cut else ():
        table = grown["tables"][name]
        table["rows"].append([row.get(c) for c in table["columns"]])
    _make_old_store(empty_url, grown)
    assert CliRunner().invoke(cli, ["--store", empty_url, "migrate"]).exit_code == 0
    with evstore.open(empty_url) as store:
        assert list(store.check()) == []
        for r in _rows(dump, "attrs"):
            found = {i.address for i in store.find(r["name"], r["value"], kind=r["kind"])}
            assert "blake3:" + r["address"] in found, r
        if old_cut:
            found = [i.address for i in store.find("source_id", long_id)]
            assert found == ["blake3:" + dg.blake3]
            assert store.find("source_id", long_id[:512]) == []


def test_an_old_store_is_checked_in_full_then_incrementally(dump, empty_url):
    """Revision 0004: nothing of an old store counts as verified until a check records it."""
    if dump["revision"] >= "0004":
        pytest.skip("the store was made with revision 0004's verified times")
    _make_old_store(empty_url, dump)
    assert evstore.migrate(empty_url)["to"] >= "0003"
    objects = len(dump["tables"]["blobs"]["rows"]) + len(dump["tables"]["artifacts"]["rows"])
    with evstore.open(empty_url) as store:
        first = store.check(since="1h")
        assert list(first) == [] and first.checked == objects and first.recorded == objects
        again = store.check(since="1h")
        assert list(again) == [] and again.checked == 0


def test_an_old_store_keeps_every_object_rooted_under_default_and_passes_audit(dump, empty_url):
    """Revision 0006: every object of the old store is reachable from the root `default`, so
    gc (even with no lease at all) collects nothing; check and audit pass."""
    if dump["revision"] >= "0006":
        pytest.skip("the store was made with revision 0006's roots")
    _make_old_store(empty_url, dump)
    runner = CliRunner()
    assert runner.invoke(cli, ["--store", empty_url, "migrate"]).exit_code == 0
    blobs = _blob_bytes(dump)
    with evstore.open(empty_url) as store:
        store.set_config("gc.lease-seconds", 0)
        assert [r["root"] for r in store.retention.roots()] == ["default"]
        audit = store.retention.audit(["default"])
        assert audit.verdict == "pass", audit.faults
        assert audit.objects == len(blobs)  # every object is in a closure of `default`
        assert store.retention.gc(dry_run=True).count == 0
        assert store.retention.gc().count == 0
        assert {b["address"][7:] for b in store.iter_blobs()} == set(blobs)
        assert list(store.check()) == []
    checked = runner.invoke(cli, ["--store", empty_url, "audit"], catch_exceptions=False)
    assert checked.exit_code == 0, checked.output


def _when(value: Any) -> str | None:
    """A stored time as UTC text (SQLite keeps naive UTC text, PostgreSQL an aware time)."""
    if value is None:
        return None
    when = value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(str(value))
    return (when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when).isoformat()


def _keyed(store: evstore.Store) -> dict[str, Any]:
    """Roots, leases and the log as the migrated store holds them, named by address."""
    sql = {
        "roots": "SELECT r.name, b.address, r.until FROM roots r JOIN blobs b ON b.id = r.blob",
        "leases": "SELECT b.address, l.expires_at FROM leases l JOIN blobs b ON b.id = l.blob",
        "log_entries": "SELECT idx, address, entry FROM log_entries",
        "log_nodes": "SELECT level, idx, hash FROM log_nodes",
        "log_checkpoints": "SELECT size, note FROM log_checkpoints",
    }
    with store.db.engine.connect() as conn:
        return {
            name: {_row(r, _TIMES.get(name)) for r in conn.execute(sa.text(q))}
            for name, q in sql.items()
        }


#: The column holding a time, per table of :func:`_keyed`.
_TIMES = {"roots": 2, "leases": 1}


def _row(values: Any, time_at: int | None = None) -> tuple[Any, ...]:
    return tuple(
        _when(v) if i == time_at else bytes(v) if isinstance(v, memoryview | bytes) else v
        for i, v in enumerate(values)
    )


def test_an_old_store_keeps_every_root_lease_entry_and_proof_through_the_rekeying(dump, empty_url):
    """Revision 0012 rekeys roots, leases and log entries by blob id: every root and lease
    names the same object until the same time, every entry, subtree and checkpoint is the
    same, each object's proof picks the same entry (a collected object's too), and the entry
    still queued joins the tree after them."""
    if "log_entries" not in dump["tables"]:
        pytest.skip("a store made before revision 0007 has no roots or log of its own")
    _make_old_store(empty_url, dump)
    old = {
        name: {_row(map(_cell, row), _TIMES.get(name)) for row in dump["tables"][name]["rows"]}
        for name in ("roots", "leases", "log_entries", "log_nodes", "log_checkpoints")
    }
    cols = {n: dump["tables"][n]["columns"] for n in old}
    assert cols["roots"] == ["name", "address", "until"] and cols["leases"][0] == "address"
    old["log_checkpoints"] = {r[:2] for r in old["log_checkpoints"]}  # size, note
    blobs = _blob_bytes(dump)
    named = {r[1] for r in old["log_entries"]}
    assert named - set(blobs), "the fixture logs an object gc collected"
    assert dump["tables"]["log_queue"]["rows"], "and an entry still queued"

    migrated = CliRunner().invoke(cli, ["--store", empty_url, "migrate"], catch_exceptions=False)
    assert migrated.exit_code == 0, migrated.output
    with evstore.open(empty_url) as store:
        assert store.db.schema_state().current == head_revision()
        assert _keyed(store) == old
        assert list(store.check()) == []
        (size,) = {r[0] for r in old["log_checkpoints"]}
        vkey = store.log.key()
        for address in sorted(named):
            latest = max((r[0] for r in old["log_entries"] if r[1] == address), default=None)
            proof = store.log.prove("blake3:" + address)
            assert proof["index"] == latest and proof["size"] == size, address
            checked = evstore.verify_log_proof(proof["text"], vkey, blobs.get(address))
            assert checked["index"] == latest
        # The queued entry joins the tree after the carried ones, with its bytes unchanged.
        (queued,) = _rows(dump, "log_queue")
        store.log.integrate()
        entries = store.log.entries()
        assert len(entries) == len(old["log_entries"]) + 1
        with store.db.engine.connect() as conn:
            last = conn.execute(
                sa.text("SELECT address, entry FROM log_entries WHERE idx = :i"),
                {"i": len(entries) - 1},
            ).one()
        assert (last.address, bytes(last.entry)) == (queued["address"], queued["entry"])
        assert list(store.check()) == []
