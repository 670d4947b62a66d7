"""The database error boundary: every driver fault becomes a typed ``store.*`` error.

Faults are produced for real where the backend can (a held SQLite write lock, a PostgreSQL
``lock_timeout`` and ``statement_timeout``, a closed port, a terminated backend, a full or
read-only SQLite file); the table test covers every driver code the boundary names.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
import time
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from sqlalchemy import event

import evstore
from evstore.cli.main import cli
from evstore.core.errors import CODES, EvstoreError, NotFound, StoreStateError
from evstore.db import engine as dbmod
from evstore.db.engine import FAULTS, Database, classify, normalize_url, raw_driver, translate

PG_ONLY = pytest.mark.parametrize("backend", ["postgresql"])
SQLITE_ONLY = pytest.mark.parametrize("backend", ["sqlite"])

#: What the boundary must answer, as the issue states it: (driver, code) -> (code, retryable).
EXPECTED = {
    ("sqlite", sqlite3.SQLITE_BUSY): ("store.busy", True),
    ("sqlite", sqlite3.SQLITE_LOCKED): ("store.busy", True),
    ("sqlite", sqlite3.SQLITE_FULL): ("store.full", False),
    ("sqlite", sqlite3.SQLITE_READONLY): ("store.read-only", False),
    ("postgresql", "40001"): ("store.busy", True),
    ("postgresql", "40P01"): ("store.busy", True),
    ("postgresql", "55P03"): ("store.busy", True),
    ("postgresql", "57014"): ("store.timeout", False),
    ("postgresql", "53100"): ("store.full", False),
    ("postgresql", "25006"): ("store.read-only", False),
    ("postgresql", "57P01"): ("store.unreachable", False),
    ("postgresql", "08"): ("store.unreachable", False),
    ("psycopg", "OperationalError"): ("store.unreachable", False),
}


def _sqlite_exc(code: int, cls: type[sqlite3.Error] = sqlite3.OperationalError) -> sqlite3.Error:
    exc = cls("sqlite says no")
    exc.sqlite_errorcode = code  # type: ignore[attr-defined]
    return exc


def _driver_examples(key: tuple[str, int | str]) -> list[BaseException]:
    """Raw driver exceptions that the table row ``key`` must catch."""
    driver, code = key
    if driver == "sqlite":
        assert isinstance(code, int)
        # the primary code and two extended codes built on it (extended = primary | n << 8)
        return [_sqlite_exc(code), _sqlite_exc(code | 1 << 8), _sqlite_exc(code | 2 << 8)]
    if driver == "postgresql":
        assert isinstance(code, str)
        state = code if len(code) == 5 else code + "000"
        cls = psycopg.errors.lookup(state)
        assert cls.sqlstate == state
        return [cls("postgres says no")]
    if driver == "psycopg":
        return [getattr(psycopg, str(code))("connection failed")]
    assert driver == "sqlalchemy"
    cls = getattr(sa.exc, str(code))
    assert issubclass(cls, sa.exc.SQLAlchemyError)
    return [cls("sqlalchemy says no")]


def _chain(exc: BaseException) -> list[BaseException]:
    out = []
    cur: BaseException | None = exc
    while cur is not None:
        out.append(cur)
        cur = cur.__cause__ or getattr(cur, "orig", None)
    return out


# ---------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------


def test_the_table_holds_what_the_issue_names():
    for key, (code, retryable) in EXPECTED.items():
        assert FAULTS[key].code == code, key
        assert FAULTS[key].retryable is retryable, key


@pytest.mark.parametrize("key", sorted(FAULTS, key=repr), ids=repr)
def test_every_table_row_maps_to_a_store_code(key):
    fault = FAULTS[key]
    assert fault.code in CODES and CODES[fault.code].family == "store"
    for raw in _driver_examples(key):
        assert classify(raw) == fault, raw
        err = translate(raw, "sqlite:///x.db")
        assert isinstance(err, StoreStateError) and err.code == fault.code
        assert err.family == "store"
        if not isinstance(raw, sa.exc.SQLAlchemyError):
            wrapped = sa.exc.OperationalError("SELECT 1", {}, raw)
            assert classify(wrapped) == fault
            assert translate(wrapped).code == fault.code


def test_only_contention_is_retryable():
    for key, fault in FAULTS.items():
        if fault.retryable:
            assert fault.code == "store.busy", key


def test_what_the_table_does_not_name():
    assert classify(_sqlite_exc(sqlite3.SQLITE_CORRUPT, sqlite3.DatabaseError)).code == (
        "store.database"
    )
    assert classify(_sqlite_exc(sqlite3.SQLITE_ERROR)).code == "store.database"
    assert classify(sqlite3.OperationalError("no code")).code == "store.database"
    assert classify(psycopg.errors.UniqueViolation("dup")).code == "store.database"
    assert classify(psycopg.errors.lookup("XX000")("internal")).code == "store.database"
    assert classify(psycopg.InterfaceError("no sqlstate")).code == "store.database"
    assert classify(sa.exc.ResourceClosedError("closed")).code == "store.database"
    # a connection SQLAlchemy saw die, whatever the driver said
    lost = sa.exc.DBAPIError("SELECT 1", {}, Exception("gone"), connection_invalidated=True)
    assert classify(lost).code == "store.unreachable"
    assert classify(sa.exc.DBAPIError("SELECT 1", {}, Exception("?"))).code == "store.database"
    # not database errors at all: the boundary leaves them alone
    assert classify(ValueError("bug")) is None
    assert classify(NotFound("nothing", code="not-found.blob")) is None


def test_translate_messages_keep_their_shape():
    busy = translate(sa.exc.OperationalError("x", {}, _sqlite_exc(5)), "sqlite:///s.db")
    assert busy.message == "store busy: sqlite says no"
    down = translate(psycopg.OperationalError("refused\nmore"), "postgresql://h/db")
    assert down.message == "cannot reach the store postgresql://h/db: refused"
    other = translate(psycopg.errors.UniqueViolation(""))
    assert other.message == "database error: UniqueViolation"
    ro = translate(_sqlite_exc(sqlite3.SQLITE_READONLY))
    assert ro.message == "the store is read-only: sqlite says no"


# ---------------------------------------------------------------------------------------
# The retry loop
# ---------------------------------------------------------------------------------------


@pytest.fixture
def sqlite_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    sleeps: list[float] = []
    monkeypatch.setattr(dbmod.time, "sleep", sleeps.append)
    d = Database(f"sqlite:///{tmp_path / 'retry.db'}")
    d.sleeps = sleeps  # type: ignore[attr-defined]
    yield d
    d.dispose()


def _failing(times: int, exc_factory):
    calls = []

    def work(conn):
        calls.append(1)
        conn.exec_driver_sql("SELECT 1")
        if len(calls) <= times:
            raise exc_factory()
        return "done"

    return work, calls


@pytest.mark.parametrize(
    "factory",
    [
        lambda: _sqlite_exc(sqlite3.SQLITE_BUSY),  # raw driver error (a raw cursor)
        lambda: sa.exc.OperationalError("x", {}, _sqlite_exc(sqlite3.SQLITE_LOCKED)),
        lambda: psycopg.errors.DeadlockDetected("deadlock"),
        lambda: psycopg.errors.SerializationFailure("serialize"),
    ],
)
def test_retryable_faults_are_retried_with_backoff(sqlite_db, factory):
    work, calls = _failing(3, factory)
    assert sqlite_db.run_transaction(work) == "done"
    assert len(calls) == 4
    assert len(sqlite_db.sleeps) == 3
    # 10 ms doubling, each jittered by up to x2, capped at 2 s
    assert all(0.01 * 2**i <= s <= 0.02 * 2**i for i, s in enumerate(sqlite_db.sleeps))


def test_backoff_is_bounded():
    assert all(0.01 <= dbmod._backoff(n) <= 2.0 for n in range(1, 60))
    assert dbmod._backoff(40) >= 1.0


def test_retries_end_in_store_busy(sqlite_db, monkeypatch):
    monkeypatch.setattr(dbmod, "RETRIES", 5)
    work, calls = _failing(100, lambda: _sqlite_exc(sqlite3.SQLITE_BUSY))
    with pytest.raises(StoreStateError) as info:
        sqlite_db.run_transaction(work)
    assert info.value.code == "store.busy"
    assert isinstance(info.value.__cause__, sqlite3.OperationalError)
    assert len(calls) == 5 and len(sqlite_db.sleeps) == 4


def test_retries_stop_at_the_time_budget(sqlite_db, monkeypatch):
    monkeypatch.setattr(dbmod, "RETRY_BUDGET_S", 0.0)
    work, calls = _failing(100, lambda: psycopg.errors.LockNotAvailable("lock"))
    with pytest.raises(StoreStateError) as info:
        sqlite_db.run_transaction(work)
    assert info.value.code == "store.busy" and len(calls) == 1


@pytest.mark.parametrize(
    ("factory", "code"),
    [
        (lambda: psycopg.errors.QueryCanceled("timeout"), "store.timeout"),
        (lambda: psycopg.errors.AdminShutdown("terminated"), "store.unreachable"),
        (lambda: _sqlite_exc(sqlite3.SQLITE_FULL), "store.full"),
        (lambda: psycopg.errors.ReadOnlySqlTransaction("ro"), "store.read-only"),
        (lambda: psycopg.errors.UniqueViolation("dup"), "store.database"),
    ],
)
def test_other_faults_are_not_retried(sqlite_db, factory, code):
    work, calls = _failing(100, factory)
    with pytest.raises(StoreStateError) as info:
        sqlite_db.run_transaction(work)
    assert info.value.code == code and len(calls) == 1 and sqlite_db.sleeps == []
    assert info.value.__cause__ is not None


def test_non_database_errors_pass_through(sqlite_db):
    for exc in (ValueError("bug"), NotFound("none", code="not-found.blob")):
        work, calls = _failing(100, lambda exc=exc: exc)
        with pytest.raises(type(exc)) as info:
            sqlite_db.run_transaction(work)
        assert info.value is exc and len(calls) == 1


def test_read_translates_driver_errors(sqlite_db):
    with pytest.raises(StoreStateError) as info, sqlite_db.read() as conn:
        conn.exec_driver_sql("SELECT * FROM no_such_table")
    assert info.value.code == "store.database"
    with pytest.raises(StoreStateError) as info, sqlite_db.read():
        raise psycopg.errors.QueryCanceled("canceled")
    assert info.value.code == "store.timeout"
    with pytest.raises(NotFound), sqlite_db.read():
        raise NotFound("none", code="not-found.blob")


# ---------------------------------------------------------------------------------------
# Real faults, both backends
# ---------------------------------------------------------------------------------------


def test_generic_database_error(store):
    with pytest.raises(StoreStateError) as info:
        store.db.run_transaction(lambda c: c.exec_driver_sql("SELECT * FROM no_such_table"))
    assert info.value.code == "store.database"
    assert isinstance(info.value.__cause__, sa.exc.DBAPIError)


@SQLITE_ONLY
def test_sqlite_held_write_lock_is_store_busy(store_url, snapshot, monkeypatch):
    monkeypatch.setattr(dbmod, "BUSY_TIMEOUT_MS", 50)
    monkeypatch.setattr(dbmod, "RETRIES", 3)
    path = store_url.removeprefix("sqlite:///")
    with evstore.open(store_url) as s:
        kept = s.put(b"before the lock").digest.address
        before = snapshot(s)
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            started = time.monotonic()
            with pytest.raises(StoreStateError) as info:
                s.put(b"while locked")
            assert time.monotonic() - started < 20
            assert info.value.code == "store.busy"
            assert any(
                getattr(e, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_BUSY
                for e in _chain(info.value)
            )
            # readers do not wait for the writer: open, get and has answer meanwhile
            with evstore.open(store_url) as reader:
                assert reader.get(kept) == b"before the lock"
                assert reader.has([kept]) == []
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert snapshot(s) == before
        assert s.put(b"after the lock").new is True


@SQLITE_ONLY
def test_sqlite_full_and_read_only(store_url, snapshot):
    with evstore.open(store_url) as s:
        before = snapshot(s)
        pages = {}

        def limit(dbapi_conn, _record):
            if "count" not in pages:
                pages["count"] = dbapi_conn.execute("PRAGMA page_count").fetchone()[0]
            dbapi_conn.execute(f"PRAGMA max_page_count = {pages['count'] + 1}")

        event.listen(s.db.engine, "connect", limit)
        s.db.engine.dispose()
        with pytest.raises(StoreStateError) as info:
            s.put(b"x" * 200_000)
        assert info.value.code == "store.full"
        event.remove(s.db.engine, "connect", limit)

        def query_only(dbapi_conn, _record):
            dbapi_conn.execute("PRAGMA query_only = 1")

        event.listen(s.db.engine, "connect", query_only)
        s.db.engine.dispose()
        with pytest.raises(StoreStateError) as info:
            s.put(b"not written")
        assert info.value.code == "store.read-only"
        event.remove(s.db.engine, "connect", query_only)
        s.db.engine.dispose()
        assert snapshot(s) == before


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_closed_port_is_unreachable(tmp_path):
    url = f"postgresql://postgres@127.0.0.1:{_closed_port()}/test"
    with pytest.raises(StoreStateError) as info:
        evstore.open(url)
    assert info.value.code == "store.unreachable"
    assert isinstance(info.value.__cause__, sa.exc.OperationalError)
    r = CliRunner().invoke(cli, ["--store", url, "--json", "ls"])
    assert r.exit_code == 1
    assert json.loads(r.stdout)["error"]["code"] == "store.unreachable"


# ---------------------------------------------------------------------------------------
# PostgreSQL: lock and statement timeouts, COPY, a terminated backend
# ---------------------------------------------------------------------------------------


def _dbname(url: str) -> str:
    return url.rsplit("/", 1)[1]


class _TableLock:
    """Another session holding an EXCLUSIVE lock on ``blobs`` (reads pass, writes wait)."""

    def __init__(self, url: str) -> None:
        self.conn = psycopg.connect(url)
        self.conn.execute("LOCK TABLE blobs IN EXCLUSIVE MODE")

    def release(self) -> None:
        self.conn.rollback()
        self.conn.close()


def _small_blobs(n: int, tag: str) -> list[bytes]:
    return [f"{tag} blob {i}".encode() for i in range(n)]


@PG_ONLY
def test_pg_lock_timeout_is_store_busy(store_url, snapshot, monkeypatch):
    monkeypatch.setattr(dbmod, "RETRIES", 3)
    monkeypatch.setenv("PGOPTIONS", "-c lock_timeout=100")
    with evstore.open(store_url) as s:
        before = snapshot(s)
        lock = _TableLock(store_url)
        try:
            with pytest.raises(StoreStateError) as info:
                s.put(b"one new blob")
            assert info.value.code == "store.busy"
            # the COPY path (1,000+ new blobs) goes through the same boundary
            with pytest.raises(StoreStateError) as info:
                s.put_many(_small_blobs(1200, "locked"))
            assert info.value.code == "store.busy"
            chain = _chain(info.value)
            assert any(isinstance(e, psycopg.errors.LockNotAvailable) for e in chain)
        finally:
            lock.release()
        assert snapshot(s) == before


@PG_ONLY
def test_pg_statement_timeout_is_store_timeout(store_url, snapshot, tmp_path, monkeypatch):
    monkeypatch.setenv("PGOPTIONS", "-c statement_timeout=300")
    with evstore.open(store_url) as s:
        with pytest.raises(StoreStateError) as info:
            s.db.run_transaction(lambda c: c.exec_driver_sql("SELECT pg_sleep(2)"))
        assert info.value.code == "store.timeout"
        before = snapshot(s)
        lock = _TableLock(store_url)
        try:
            started = time.monotonic()
            with pytest.raises(StoreStateError) as info:
                s.put_many(_small_blobs(1200, "timed out"))  # COPY waits, then is canceled
            assert info.value.code == "store.timeout"
            assert time.monotonic() - started < 10  # not retried
            assert any(isinstance(e, psycopg.errors.QueryCanceled) for e in _chain(info.value))
            # the CLI: exit 1, the typed error under --json, no traceback
            blob = tmp_path / "blob.bin"
            blob.write_bytes(b"cli put while locked")
            r = CliRunner().invoke(cli, ["--store", store_url, "--json", "put", str(blob)])
            assert r.exit_code == 1, r.output
            assert json.loads(r.stdout)["error"]["code"] == "store.timeout"
            assert "Traceback" not in r.output
        finally:
            lock.release()
        assert snapshot(s) == before


@PG_ONLY
def test_pg_read_only_transaction_is_store_read_only(store_url, monkeypatch):
    monkeypatch.setenv("PGOPTIONS", "-c default_transaction_read_only=on")
    with evstore.open(store_url) as s:
        with pytest.raises(StoreStateError) as info:
            s.put(b"refused")
        assert info.value.code == "store.read-only"
        assert s.has(["blake3:" + "0" * 64]) == ["blake3:" + "0" * 64]


@PG_ONLY
def test_pg_copy_path_with_1200_new_blobs(store):
    items = _small_blobs(1200, "copy")
    results = store.put_many(items)
    assert [r.new for r in results] == [True] * 1200
    for data, r in zip(items, results, strict=True):
        assert store.get(r.digest.address) == data
    for data, r in list(zip(items, results, strict=True))[::100]:
        assert store.get("sha256:" + r.digest.sha256) == data
    again = store.put_many(items)
    assert [r.new for r in again] == [False] * 1200


@PG_ONLY
def test_pg_copy_meeting_stored_rows_takes_the_staging_path(store, monkeypatch):
    from evstore.objects import blobs as blobs_mod

    first = _small_blobs(600, "stage")
    store.put_many(first)
    # as if a concurrent writer had stored the first 600 after we looked
    monkeypatch.setattr(blobs_mod, "existing_rows", lambda conn, addresses: {})
    items = first + _small_blobs(600, "fresh")
    results = store.put_many(items)
    assert len(results) == 1200
    # "new" comes from the staging insert's RETURNING: only the 600 this call wrote
    assert [r.new for r in results] == [False] * 600 + [True] * 600
    for data, r in zip(items, results, strict=True):
        assert store.get(r.digest.address) == data


@PG_ONLY
def test_pg_backend_terminated_during_a_call_is_unreachable(store_url):
    with evstore.open(store_url) as s:
        s.put(b"warm the pool")
        lock = _TableLock(store_url)
        outcome: dict[str, BaseException | None] = {}

        def blocked_put() -> None:
            try:
                s.put(b"blocked then cut off")
                outcome["err"] = None
            except BaseException as exc:
                outcome["err"] = exc

        worker = threading.Thread(target=blocked_put)
        worker.start()
        try:
            with psycopg.connect(store_url, autocommit=True) as admin:
                pid = None
                for _ in range(200):
                    row = admin.execute(
                        "SELECT pid FROM pg_stat_activity WHERE datname = %s"
                        " AND wait_event_type = 'Lock'",
                        (_dbname(store_url),),
                    ).fetchone()
                    if row:
                        pid = row[0]
                        break
                    time.sleep(0.05)
                assert pid is not None, "the put never waited on the lock"
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            worker.join(30)
        finally:
            lock.release()
        err = outcome["err"]
        assert isinstance(err, EvstoreError) and err.code == "store.unreachable", err
        assert err.__cause__ is not None
        # the pool drops the dead connection: the next call works
        assert s.put(b"after the termination").new is True


def test_raw_driver_wraps_driver_errors(sqlite_db):
    def work(conn):
        with raw_driver(conn) as raw:
            raw.execute("SELECT 1")
            raise _sqlite_exc(sqlite3.SQLITE_BUSY)

    with sqlite_db.engine.begin() as conn, pytest.raises(sa.exc.OperationalError) as info:
        work(conn)
    assert isinstance(info.value.orig, sqlite3.OperationalError)
    assert info.value.__cause__ is info.value.orig
    assert classify(info.value).code == "store.busy"
    # SQLAlchemy's own errors and evstore's pass through unchanged
    for exc in (sa.exc.ResourceClosedError("closed"), NotFound("x", code="not-found.blob")):
        with sqlite_db.engine.begin() as conn, pytest.raises(type(exc)) as info:
            with raw_driver(conn):
                raise exc
        assert info.value is exc


def test_a_plain_path_is_a_sqlite_store(tmp_path):
    assert normalize_url(str(tmp_path / "s.db")) == f"sqlite:///{tmp_path / 's.db'}"
    assert normalize_url("postgres://u@h/d") == "postgresql+psycopg://u@h/d"


@PG_ONLY
def test_pg_init_on_a_read_only_database_is_store_read_only(empty_url, monkeypatch):
    monkeypatch.setenv("PGOPTIONS", "-c default_transaction_read_only=on")
    with pytest.raises(StoreStateError) as info:
        evstore.open(empty_url, create=True)
    assert info.value.code == "store.read-only"
    assert isinstance(info.value.__cause__, sa.exc.DBAPIError)
