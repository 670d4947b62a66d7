"""`check` and `audit` reach their verdict when the store's disk is full (issue 23).

Both used to record as they went (check: the objects it verified, after each page; audit: its
run and the objects verified, after the verdict) and ended in ``store.full`` with no verdict.

The full disk is simulated per backend (no tmpfs of a given size is available to the tests):

* SQLite: ``PRAGMA max_page_count`` set to the file's current size on every new connection
  (an engine ``connect`` listener; the pooled connections are closed first): reads work, a
  write that needs a new page fails with ``SQLITE_FULL``, as on a full file system.
* PostgreSQL: statement triggers on ``verified`` and ``audits`` raise SQLSTATE 53100
  (``disk_full``), the error a full disk gives; every other table stays writable.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from sqlalchemy import event
from sqlalchemy.engine import Engine

import evstore
from evstore.cli.main import cli
from evstore.db.tables import blobs

_PG_FULL = """
CREATE FUNCTION evstore_test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = '53100';
END $$;
CREATE TRIGGER evstore_test_full_verified BEFORE INSERT OR UPDATE ON verified
    FOR EACH STATEMENT EXECUTE FUNCTION evstore_test_disk_full();
CREATE TRIGGER evstore_test_full_audits BEFORE INSERT ON audits
    FOR EACH STATEMENT EXECUTE FUNCTION evstore_test_disk_full();
"""
_PG_ROOMY = """
DROP TRIGGER evstore_test_full_verified ON verified;
DROP TRIGGER evstore_test_full_audits ON audits;
DROP FUNCTION evstore_test_disk_full();
"""


@contextlib.contextmanager
def full_disk(store: evstore.Store) -> Iterator[None]:
    """Every engine's new connections to ``store`` (the CLI's too) find its disk full."""
    if store.db.backend == "postgresql":
        with store.db.engine.begin() as conn:
            conn.exec_driver_sql(_PG_FULL)
        try:
            yield
        finally:
            with store.db.engine.begin() as conn:
                conn.exec_driver_sql(_PG_ROOMY)
        return
    with store.db.engine.connect() as conn:
        pages = conn.exec_driver_sql("PRAGMA page_count").scalar_one()

    def limit(dbapi_conn, _record):
        dbapi_conn.execute(f"PRAGMA max_page_count = {pages}")

    event.listen(Engine, "connect", limit)
    store.db.engine.dispose()
    try:
        yield
    finally:
        event.remove(Engine, "connect", limit)
        store.db.engine.dispose()


@pytest.fixture
def filled(store):
    """A store with enough objects that recording them needs new pages, one blob damaged."""
    with store.retention.rooting("run-1"):
        puts = store.put_many([f"object {i} ".encode() * 20 for i in range(400)])
    damaged = puts[0].digest.address
    with store.db.engine.begin() as conn:
        conn.execute(sa.update(blobs).where(blobs.c.address == damaged[7:]).values(data=b"damaged"))
    return store, damaged


def test_check_reaches_its_verdict_on_a_full_disk(filled, snapshot):
    store, damaged = filled
    before = snapshot(store)
    with full_disk(store):
        run = store.check()
        faults = list(run)
        assert [(f.code, f.details["address"]) for f in faults] == [("corruption.size", damaged)]
        assert run.recorded == 0
        assert run.not_recorded is not None and run.not_recorded.startswith("the store is full")
        assert snapshot(store) == before
        # with --no-record nothing is even tried
        assert [f.code for f in store.check(record=False)] == ["corruption.size"]
    run = store.check()  # room again: the clean objects are recorded
    assert [f.code for f in run] == ["corruption.size"] and run.recorded > 0


def test_audit_reaches_its_verdict_on_a_full_disk(filled, snapshot):
    store, damaged = filled
    before = snapshot(store)
    with full_disk(store):
        run = store.retention.audit()
        assert run.verdict == "fail"
        assert [f["code"] for f in run.faults] == ["corruption.size"]
        assert run.id is None and run.finished_at
        assert run.not_recorded.startswith("the store is full")
        assert run.to_dict()["not_recorded"] == run.not_recorded
        assert snapshot(store) == before
    unrecorded = store.retention.audit(record=False)  # writes nothing, and says nothing
    assert (unrecorded.verdict, unrecorded.id, unrecorded.not_recorded) == ("fail", None, None)
    assert "not_recorded" not in unrecorded.to_dict()
    assert snapshot(store) == before
    recorded = store.retention.audit()
    assert recorded.id is not None and recorded.not_recorded is None
    assert [r["id"] for r in store.retention.audits()] == [recorded.id]


def test_cli_audit_and_check_on_a_full_disk(filled, store_url, snapshot):
    store, _ = filled
    runner = CliRunner()
    before = snapshot(store)
    with full_disk(store):
        r = runner.invoke(cli, ["--store", store_url, "audit"])
        assert r.exit_code == 1, r.output  # the verdict: a damaged blob
        assert "audit (not recorded): fail" in r.stdout
        assert "note: this audit run was not recorded: the store is full" in r.stderr
        r = runner.invoke(cli, ["--store", store_url, "--json", "audit"])
        out = json.loads(r.stdout)
        assert (r.exit_code, out["verdict"], out["id"]) == (1, "fail", None)
        assert out["not_recorded"].startswith("the store is full")
        r = runner.invoke(cli, ["--store", store_url, "audit", "--no-record"])
        assert r.exit_code == 1 and "audit (not recorded): fail" in r.stdout
        assert "note:" not in r.stderr
        r = runner.invoke(cli, ["--store", store_url, "check"])
        assert r.exit_code == 1 and "corruption.size" in r.stdout
        assert "note: verified objects not recorded: the store is full" in r.stderr
        r = runner.invoke(cli, ["--store", store_url, "--json", "check"])
        assert json.loads(r.stdout)["not_recorded"].startswith("the store is full")
        assert snapshot(store) == before
