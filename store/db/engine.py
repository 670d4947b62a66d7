"""The database layer: engines from URLs, SQLite pragmas, transactions, schema versions.

This is the one place where SQLAlchemy and driver exceptions become evstore errors, and the
one place that knows which backend is in use. Errors are classified by exception type and
driver error code (SQLite result code, PostgreSQL SQLSTATE), never by message text, through
one table (:data:`FAULTS`): contention is ``store.busy`` and retried; a lost or refused
connection ``store.unreachable``; a statement timeout ``store.timeout``; a full disk
``store.full``; a read-only store ``store.read-only``; anything else ``store.database``
(:func:`classify`, :func:`translate`). Raw driver work (PostgreSQL COPY) runs inside
:func:`raw_driver` so its errors take the same path.

SQLite (the embedded default) runs in WAL mode with ``synchronous=NORMAL`` and a busy
timeout; every transaction starts with ``BEGIN IMMEDIATE`` so two writers never deadlock by
upgrading read locks, and a transaction that still meets a lock after the busy timeout is
retried (see :func:`run_transaction`) before ``store.busy`` is raised. PostgreSQL is reached
through psycopg 3 (``postgresql+psycopg://``; a bare ``postgresql://`` URL is mapped to it).
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import threading
import time
import urllib.parse
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from ..core.errors import CorruptionError, StoreStateError
from ..core.extras import require
from .faults import (
    FAULTS,
    DbFault,
    classify,
    database_errors,
    normalize_url,
    raw_driver,
    translate,
)
from .revisions import head_revision, schema_revisions
from .sqlite_setup import foreign_keys_pragma_off, sqlite_events

__all__ = [
    "BEFORE_COMMIT",
    "BUSY_TIMEOUT_MS",
    "Database",
    "DbFault",
    "FAULTS",
    "RETRIES",
    "RETRY_BUDGET_S",
    "SchemaState",
    "classify",
    "commit_hook",
    "copy_rows",
    "database_errors",
    "driver_rows",
    "executemany_all_or_none",
    "head_revision",
    "normalize_url",
    "raw_driver",
    "schema_revisions",
    "translate",
]

#: How long SQLite waits on a lock before a statement gives up (then the transaction retries).
BUSY_TIMEOUT_MS = 30_000
#: How many times :meth:`Database.run_transaction` runs a transaction that meets contention.
RETRIES = 20
#: The PostgreSQL advisory lock a retried write transaction holds (see run_transaction).
_RETRY_LOCK = 7403012512
#: ``conn.info`` key of the task a write transaction runs before its commit (a callable).
BEFORE_COMMIT = "evstore.before_commit"
#: No retry starts after this many seconds since the first attempt (then ``store.busy``).
RETRY_BUDGET_S = 120.0

T = TypeVar("T")

#: Key in ``Connection.info`` of the hooks :func:`commit_hook` registered for a transaction.
_COMMIT_HOOKS = "evstore.commit_hooks"

#: The URL options a SQLite store accepts: each opens the file read-only (SQLite URI
#: parameters). ``immutable=1`` also reads a store in a read-only folder or mount.
_SQLITE_READ_ONLY = ({"mode": "ro"}, {"immutable": "1"}, {"mode": "ro", "immutable": "1"})


def commit_hook(conn: Connection, key: str, factory: Callable[[], Any]) -> Any:
    """The hook registered under ``key`` for the transaction on ``conn`` (made by ``factory``).

    :meth:`Database.run_transaction` calls every registered hook as ``hook(conn)`` after its
    work returned and before it commits, inside the same transaction (the tamper-evident log
    appends the transaction's entries this way, store/objects/log_entries.py). A transaction that
    rolls back never runs its hooks, and every attempt starts with none. Returns the hook
    object so the caller can hand it more work (``factory`` is called once per transaction).
    """
    hooks = conn.info.setdefault(_COMMIT_HOOKS, {})
    if key not in hooks:
        hooks[key] = factory()
    return hooks[key]


def _backoff(attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (1, 2, ...): 10 ms doubling to 1 s, jittered."""
    return min(0.01 * 2 ** (attempt - 1), 1.0) * (1 + random.random())


def driver_rows(
    conn: Connection, sql: str, params: Any = (), *, many: bool = False, binary: bool = False
) -> list[tuple[Any, ...]]:
    """Run one statement of the driver's dialect on ``conn``'s driver cursor; return its rows.

    The hot statements of a write (blob, artifact, binding, root, lease and log rows, the
    settings read) go through here instead of ``conn.exec_driver_sql``: the same SQL text and
    parameters (``?`` on SQLite, ``%s``/``%b`` on PostgreSQL) on the same connection and
    transaction, without SQLAlchemy's result machinery, which cost 20-25 us a statement
    against 1-3 us for the driver (issue 16, docs/benchmarks.md). ``many`` runs
    ``executemany`` over a sequence of parameter tuples (no rows come back). ``binary``
    asks PostgreSQL for results in its binary format (a ``bytea`` column comes as its bytes,
    not as hex text twice its size to decode: a 256 MiB read, issue 29); SQLite ignores it.

    Returns:
        The rows as tuples (empty for a statement without a result).

    Raises:
        sqlalchemy.exc.DBAPIError: the driver's error, wrapped as by :func:`raw_driver`, so
            :meth:`Database.run_transaction` classifies, retries or translates it like any
            statement's.
    """
    with raw_driver(conn) as raw:
        cur = (
            raw.cursor(binary=True)
            if binary and conn.dialect.name == "postgresql"
            else raw.cursor()
        )
        try:
            if many:
                cur.executemany(sql, params)
                return []
            cur.execute(sql, params)
            return cur.fetchall() if cur.description is not None else []
        finally:
            cur.close()


def executemany_all_or_none(
    conn: Connection, sql: str, params: list[tuple[Any, ...]]
) -> bool | None:
    """SQLite: ``INSERT ... ON CONFLICT DO NOTHING`` of ``params`` by one ``executemany``.

    About 1.5x faster than multi-row ``VALUES ... RETURNING`` (bench/core.py part a), and its
    row count says how many rows it wrote; SQLite has one writer at a time, so nothing
    changes between the statement and the count. Returns True (every row written), False
    (none), or None: some were, the statement is undone (a savepoint) and the caller asks
    ``RETURNING`` which.

    Raises:
        sqlalchemy.exc.DBAPIError: the driver's error, wrapped as by :func:`raw_driver`.
    """
    with raw_driver(conn) as raw:
        cur = raw.cursor()
        try:
            cur.execute("SAVEPOINT evstore_insert")
            cur.executemany(sql, params)
            count = cur.rowcount
            if 0 < count < len(params) or count > len(params):
                cur.execute("ROLLBACK TO evstore_insert")
            cur.execute("RELEASE evstore_insert")
        finally:
            cur.close()
    return True if count == len(params) else False if count == 0 else None


#: Most point-read connections one PostgreSQL store keeps (one per calling thread).
POINT_CONNECTIONS = 16
#: Fewest rows a PostgreSQL write sends by binary COPY rather than one INSERT of arrays.
COPY_MIN_ROWS = 256


def copy_rows(
    conn: Connection,
    table: str,
    columns: Sequence[str],
    types: Sequence[str],
    rows: Sequence[tuple[Any, ...]],
) -> None:
    """PostgreSQL: write ``rows`` (tuples in ``columns`` order) into ``table`` by binary COPY.

    For rows that cannot exist yet (log entries under the log's lock; the roots and leases
    of blobs this transaction inserted): COPY skips nothing, so a duplicate key is an error
    like any statement's. About 1.5x faster on the server than ``INSERT ... SELECT FROM
    unnest`` for 100k rows (issue 16, bench/core.py part a). ``types`` are PostgreSQL type
    names for the binary format.

    Raises:
        sqlalchemy.exc.DBAPIError: the driver's error, wrapped as by :func:`raw_driver`.
    """
    sql = f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)"
    with raw_driver(conn) as raw, raw.cursor() as cur, cur.copy(sql) as copy:
        copy.set_types(list(types))
        for row in rows:
            copy.write_row(row)


def _alembic_config() -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("evstore.migrations")))
    return cfg


@dataclass(frozen=True)
class SchemaState:
    """Where a store's schema stands: ``current`` revision ('' when none), the code's ``head``."""

    current: str
    head: str

    @property
    def initialised(self) -> bool:
        """True when the store has an evstore schema at all."""
        return bool(self.current)


def _read_only_options(path: Path) -> dict[str, str]:
    """URI options that let this process read a SQLite store it cannot write ({} if it can).

    A store file this process cannot write, or whose folder (or mount) it cannot write while
    the WAL files are absent, is opened read-only: ``mode=ro`` when the ``-shm`` file exists
    (a writer may have the store open: reads stay WAL snapshot reads), else ``immutable=1``
    (no writer has it open in WAL mode; SQLite then needs no ``-shm`` file at all).
    """
    try:
        if not path.is_file():
            return {}
        side = [Path(f"{path}-wal"), Path(f"{path}-shm")]
        writable = os.access(path, os.W_OK) and (
            os.access(path.parent, os.W_OK) or all(os.access(p, os.W_OK) for p in side)
        )
        if writable:
            return {}
        return {"mode": "ro"} if side[1].exists() else {"immutable": "1"}
    except OSError:
        return {}  # the connection reports what is wrong


class Database:
    """An engine for one store URL plus the transaction helper.

    Args:
        url: a SQLAlchemy URL (``sqlite:///evstore.db``, ``postgresql://user@host/db``).

    Raises:
        StoreStateError: ``store.url`` when the URL cannot be parsed or names no supported
            backend; ``install.extra-missing`` for PostgreSQL without psycopg (the
            ``postgresql`` extra).
    """

    def __init__(self, url: str) -> None:
        if not url.strip():
            raise StoreStateError("the store URL is empty", code="store.url")
        self.url = normalize_url(url)
        try:
            parsed = make_url(self.url)
            _ = parsed.port  # a malformed port raises here, not later
        except (ArgumentError, ValueError) as exc:
            raise StoreStateError(f"not a store URL: {url!r} ({exc})", code="store.url") from None
        self.backend = parsed.get_backend_name()
        driver = parsed.get_driver_name()
        if (self.backend, driver) not in (("sqlite", "pysqlite"), ("postgresql", "psycopg")):
            raise StoreStateError(
                f"unsupported store URL {parsed.drivername!r}: use sqlite:///PATH or"
                " postgresql://USER@HOST/DB (psycopg 3)",
                code="store.url",
            )
        if self.backend == "postgresql":
            require("postgresql")  # psycopg, the driver of postgresql+psycopg: typed if missing
        options = dict(parsed.query)
        self.read_only = False
        if options and (self.backend != "sqlite" or options not in _SQLITE_READ_ONLY):
            raise StoreStateError(
                f"store URL options are not supported: {sorted(parsed.query)} (a SQLite store"
                " takes only ?mode=ro or ?immutable=1, to read it without writing)",
                code="store.url",
            )
        self.display_url = parsed.render_as_string(hide_password=True)
        # Point reads: one connection per thread (point_row), closed by dispose().
        self._point = threading.local()
        self._point_lock = threading.Lock()
        # SQLite's writers of this process queue here (see run_transaction).
        self._writer = threading.RLock()
        self._point_raws: list[tuple[Any, threading.Thread]] = []
        # A Database dropped without dispose() still closes its point-read connections: the
        # finalizer holds only their driver connections (never anything that refers back to
        # this object, which would keep it alive), in a set changed in place.
        self._point_drivers: set[Any] = set()
        weakref.finalize(self, _close_points, self._point_drivers)
        self.sqlite_path: Path | None = None
        self._sqlite_name: str | None = None
        if self.backend == "sqlite":
            db = parsed.database or ""
            if db in ("", ":memory:") or db.startswith("file:"):
                raise StoreStateError(
                    "an evstore SQLite store is a file: use sqlite:///PATH", code="store.url"
                )
            self.sqlite_path = Path(db)
            self._sqlite_name = db  # os.stat on every check_identity: no Path conversion
            if not options or options == {"mode": "ro"}:
                # a store this process cannot write is still read (every read command works)
                options = {**options, **_read_only_options(self.sqlite_path)}
            self.read_only = bool(options)
            self._identity: tuple[int, int] | None = None
            connect_args: dict[str, Any] = {
                "timeout": BUSY_TIMEOUT_MS / 1000,
                "check_same_thread": False,
            }
            if options:  # ?mode=ro / ?immutable=1: an SQLite URI filename, opened read-only
                query = "&".join(f"{k}={v}" for k, v in sorted(options.items()))
                uri = f"file:{urllib.parse.quote(str(self.sqlite_path.absolute()))}?{query}"
                connect_args["uri"] = True
                self.engine: Engine = sa.create_engine(
                    "sqlite://",
                    creator=lambda: sqlite3.connect(uri, **connect_args),
                )
            else:
                self.engine = sa.create_engine(self.url, connect_args=connect_args)
            sqlite_events(self.engine, self, BUSY_TIMEOUT_MS)
        else:
            # No server-side prepared statements: after five runs psycopg would prepare a
            # statement and PostgreSQL would keep a generic plan made while the tables were
            # nearly empty, turning batched key lookups into scans (measured 3.6x slower
            # manifest ingest, bench/manifests.py).
            # pool_pre_ping: a pooled connection whose backend was terminated (an admin, a
            # server restart) is replaced at checkout instead of failing the next call.
            self.engine = sa.create_engine(
                self.url, pool_pre_ping=True, connect_args={"prepare_threshold": None}
            )

    # -- the store file's identity (SQLite) ------------------------------------------------
    def check_identity(self) -> None:
        """Refuse a SQLite store file deleted or replaced since this process first opened it.

        The file's device and inode are recorded at the first connection; every later
        connection, transaction start and commit compares them (one ``stat``), so a write
        into a file that is no longer the store is refused before it is acknowledged. A
        no-op on PostgreSQL.

        Raises:
            StoreStateError: ``store.replaced``.
        """
        if self._sqlite_name is None:
            return
        try:
            st = os.stat(self._sqlite_name)
        except FileNotFoundError:
            if self._identity is None:
                return  # not created yet: opening reports store.missing, init creates it
            raise StoreStateError(
                f"the store file {self.sqlite_path} was deleted while this process had it"
                " open; nothing more is written (open the store again)",
                code="store.replaced",
            ) from None
        except OSError:
            return  # unreadable metadata: the connection itself reports the fault
        found = (st.st_dev, st.st_ino)
        if self._identity is None:
            self._identity = found
        elif found != self._identity:
            raise StoreStateError(
                f"the store file {self.sqlite_path} was replaced by another file while this"
                " process had it open; nothing more is written (open the store again)",
                code="store.replaced",
            )

    # -- existence and schema -------------------------------------------------------------
    def _sqlite_file_exists(self) -> bool:
        assert self.sqlite_path is not None
        try:
            return self.sqlite_path.exists()
        except OSError as exc:  # e.g. a name longer than the file system allows
            raise StoreStateError(
                f"cannot use {self.sqlite_path} as a store file: {exc.strerror}", code="store.url"
            ) from None

    def exists(self) -> bool:
        """True when the store has been initialised (an evstore schema is present).

        For SQLite this never creates the file: a missing file is a missing store.
        """
        if self.sqlite_path is not None and not self._sqlite_file_exists():
            return False
        return self.schema_state().initialised

    def schema_state(self) -> SchemaState:
        """Read the store's Alembic revision (``''`` when none).

        Raises:
            StoreStateError: ``store.unreachable``.
        """
        if self.sqlite_path is not None and not self._sqlite_file_exists():
            return SchemaState("", head_revision())
        try:
            with self.engine.connect() as conn:
                # A snapshot read on SQLite (deferred BEGIN): it never waits for a writer.
                conn = conn.execution_options(evstore_read=True)
                if not sa.inspect(conn).has_table("alembic_version"):
                    return SchemaState("", head_revision())
                rows = conn.execute(sa.text("SELECT version_num FROM alembic_version")).all()
        except SQLAlchemyError as exc:
            raise translate(exc, self.display_url) from exc
        current = rows[0][0] if rows else ""
        return SchemaState(current, head_revision())

    def migrate(self) -> tuple[str, str]:
        """Upgrade the schema to the code's head revision. Returns ``(before, after)``.

        Raises:
            StoreStateError: ``store.schema-ahead`` when the store is newer than the code;
                ``store.read-only`` when opened with ``?mode=ro``/``?immutable=1``;
                ``store.unreachable``.
        """
        from alembic import command
        from alembic.script import ScriptDirectory

        if self.read_only:
            raise StoreStateError(
                f"the store {self.display_url} is opened read-only (a URL option): it cannot"
                " be created or migrated",
                code="store.read-only",
            )
        cfg = _alembic_config()
        before = self.schema_state().current
        script = ScriptDirectory.from_config(cfg)
        if before and before not in {r.revision for r in script.walk_revisions()}:
            raise StoreStateError(
                f"the store's schema revision {before} is newer than this evstore; upgrade evstore",
                code="store.schema-ahead",
            )
        if self.sqlite_path is not None and not self.sqlite_path.parent.is_dir():
            # Never create folders: a mistyped path must fail, not grow a new tree.
            raise StoreStateError(
                f"the store's folder {self.sqlite_path.parent} does not exist; create it first",
                code="store.url",
            )
        try:
            with self._foreign_keys_off(), self.engine.begin() as conn:
                if self.backend == "postgresql":
                    # Several processes may create one store at once: one migrates, the others
                    # wait here and then find the schema current (alembic's upgrade is a no-op).
                    conn.exec_driver_sql("SELECT pg_advisory_xact_lock(7403012511)")
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
        except SQLAlchemyError as exc:
            raise translate(exc, self.display_url) from exc
        except Exception as exc:  # alembic's own errors (e.g. an alembic_version with two rows)
            if isinstance(exc, StoreStateError):
                raise
            raise StoreStateError(
                f"cannot migrate {self.display_url}: {exc}", code="store.database"
            ) from exc
        return before, head_revision()

    @contextlib.contextmanager
    def _foreign_keys_off(self) -> Iterator[None]:
        """SQLite: run a migration with foreign-key enforcement off (PostgreSQL: no-op).

        A migration that copies a table (SQLite cannot add a constraint in place) must keep
        a damaged row as it is, for ``check`` to report, rather than fail; the pool's
        connections get enforcement back afterwards (the connect event turns it on).
        """
        if self.backend != "sqlite":
            yield
            return
        self.engine.dispose()
        pragma = event.listens_for(self.engine, "connect")(foreign_keys_pragma_off)
        try:
            yield
        finally:
            event.remove(self.engine, "connect", pragma)
            self.engine.dispose()

    def require_current(self) -> None:
        """Refuse a store whose schema is missing, behind or ahead of the code.

        Raises:
            StoreStateError: ``store.missing`` (not initialised: run ``evstore init``),
                ``store.schema-behind`` (run ``evstore migrate``), ``store.schema-ahead``.
        """
        state = self.schema_state()
        if not state.initialised:
            raise StoreStateError(
                f"no evstore store at {self.display_url}; create one with `evstore init`",
                code="store.missing",
            )
        if state.current != state.head:
            known = set(schema_revisions())
            if state.current in known:
                raise StoreStateError(
                    f"the store's schema ({state.current}) is behind this evstore ({state.head});"
                    " run `evstore migrate`",
                    code="store.schema-behind",
                )
            raise StoreStateError(
                f"the store's schema ({state.current}) is newer than this evstore ({state.head});"
                " upgrade evstore",
                code="store.schema-ahead",
            )

    # -- transactions ---------------------------------------------------------------------
    def run_transaction(self, work: Callable[[Connection], T], *, serialize: bool = False) -> T:
        """Run ``work(conn)`` in one transaction, retrying when the backend reports contention.

        A write may leave a task in ``conn.info[BEFORE_COMMIT]`` (store/objects/leases.py: root and
        lease what the transaction wrote) and hooks (:func:`commit_hook`: the log's append):
        they run after ``work`` and before the commit, the task first, the hooks last.

        ``work`` must be repeatable: it is called again from the start after a rollback.
        evstore errors raised by ``work`` roll back and propagate unchanged. A database error
        (a SQLAlchemy one, or a raw driver one from a raw cursor) is classified by
        :func:`classify`: a retryable one runs the transaction again after a jittered
        backoff (10 ms doubling to 1 s), at most :data:`RETRIES` attempts and no new
        attempt after :data:`RETRY_BUDGET_S` seconds; any other is raised translated.

        Raises:
            StoreStateError: ``store.busy`` after the retries, ``store.unreachable``,
                ``store.timeout``, ``store.full``, ``store.read-only``, ``store.database``
                (``from`` the driver's exception).
        """
        deadline = time.monotonic() + RETRY_BUDGET_S
        attempt = 0
        serialize = serialize and self.backend == "postgresql"
        while True:
            attempt += 1
            try:
                with self._queued(), self.engine.begin() as conn:
                    conn.info.pop(BEFORE_COMMIT, None)  # a failed attempt's leftovers
                    conn.info.pop(_COMMIT_HOOKS, None)
                    if serialize:
                        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_RETRY_LOCK})")
                    out = work(conn)
                    task = conn.info.pop(BEFORE_COMMIT, None)
                    if task is not None:
                        task(conn)
                    for hook in conn.info.pop(_COMMIT_HOOKS, {}).values():
                        hook(conn)  # after the task: the log appends last
                    return out
            except Exception as exc:
                fault = classify(exc)
                if fault is None:
                    raise
                if fault.retryable and attempt < RETRIES and time.monotonic() < deadline:
                    # On PostgreSQL a transaction that met a deadlock or a serialization
                    # failure runs again holding the store's retry lock: retried writers
                    # queue behind each other instead of deadlocking again (a multi-statement
                    # ingest writes keys in document order, which no sort can make global).
                    serialize = self.backend == "postgresql"
                    time.sleep(_backoff(attempt))
                    continue
                raise translate(exc, self.display_url) from exc

    @contextlib.contextmanager
    def _queued(self) -> Iterator[None]:
        """On SQLite, hold this process's writer lock for one write transaction.

        SQLite has one writer at a time; a ``BEGIN IMMEDIATE`` that finds the file locked
        polls in its busy handler, sleeping 1 ms, then longer, up to 100 ms a time, so
        several threads of one process writing at once (a server's write pool, ``ingest``
        from threads) spent most of their time asleep while the lock was free (issue 29:
        24 % of an ingest server's samples). Writers of this process wait on a lock instead
        and start as soon as the previous one commits; other processes still meet the
        busy handler. A wait longer than the busy timeout goes on without the lock (the
        busy handler then decides, as before); a nested transaction of the same thread
        passes (re-entrant). PostgreSQL: nothing.
        """
        if self.backend != "sqlite":
            yield
            return
        held = self._writer.acquire(timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            yield
        finally:
            if held:
                self._writer.release()

    @contextlib.contextmanager
    def read(self) -> Iterator[Connection]:
        """A read-only connection in one transaction (a consistent snapshot on both backends).

        Raises:
            StoreStateError: as :func:`translate` (``from`` the driver's exception).
            CorruptionError: ``corruption.row`` when a stored value cannot be converted.
        """
        try:
            with self.engine.connect() as conn:
                if self.backend == "postgresql":
                    conn = conn.execution_options(isolation_level="REPEATABLE READ")
                else:
                    conn = conn.execution_options(evstore_read=True)
                with conn.begin():
                    yield conn
        except (ValueError, TypeError) as exc:
            # A row edited outside evstore that the driver or SQLAlchemy cannot convert
            # (a date that is no date, bytes where text belongs).
            raise CorruptionError(
                f"a stored row cannot be read: {exc}", code="corruption.row"
            ) from None
        except Exception as exc:
            if classify(exc) is None:
                raise
            raise translate(exc, self.display_url) from exc

    def point_row(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """The first row of one read-only statement, run outside any explicit transaction.

        One statement is its own snapshot on both backends, so no BEGIN/COMMIT is sent. The
        statement runs on this thread's own connection, opened once through the pool (the
        store's pragmas and connect settings) and then detached from it: a point read pays no
        pool checkout, ping or reset (issue 16, bench/core.py part d). The connection caches
        nothing between statements: each one reads the latest committed state (PostgreSQL:
        autocommit; the statement is prepared once, its plan is no data), and its cursor is
        closed before returning, so no lock is held. PostgreSQL keeps at most
        :data:`POINT_CONNECTIONS` such connections per store (threads beyond take a pooled
        one per statement). A connection that failed is closed, and a dead one (a restarted
        server) fails once: the caller's general path answers that read.

        Raises:
            Whatever the driver raises (:func:`database_errors`); the connection involved
            is then closed, never reused.
        """
        conn = self._thread_connection()
        if conn is None:
            return self._pg_point_row(sql, params)
        try:
            if self.backend != "sqlite":  # the thread's cursor: results arrive whole
                cur = self._point.cur
                cur.execute(sql, params)
                return cur.fetchone()  # type: ignore[no-any-return]
            cur = conn.execute(sql, params)
            try:
                return cur.fetchone()  # type: ignore[no-any-return]
            finally:
                cur.close()  # the statement reset: no read snapshot held between reads
        except database_errors():
            self._drop_thread_connection()
            raise

    def _thread_connection(self) -> Any:
        """This thread's point-read driver connection (None: PostgreSQL's cap is reached)."""
        local = self._point
        raw = getattr(local, "raw", None)
        if raw is None or local.forks != _FORKS[0]:  # a forked child opens its own
            # Under the lock from the count to the append, so the cap holds for any number of
            # threads; connections of threads that ended are closed first.
            with self._point_lock:
                for gone in [r for r, t in self._point_raws if not t.is_alive()]:
                    self._point_raws[:] = [(r, t) for r, t in self._point_raws if r is not gone]
                    self._point_drivers.discard(gone.dbapi_connection)
                    with contextlib.suppress(*database_errors()):
                        gone.close()
                if self.backend != "sqlite" and len(self._point_raws) >= POINT_CONNECTIONS:
                    return None
                raw = self.engine.raw_connection()
                if self.backend != "sqlite":  # autocommit; its statement prepared at once,
                    # planned for each execution's value (never a generic plan made while the
                    # table was small, the scan that disabled prepared statements elsewhere)
                    driver = raw.driver_connection
                    driver.autocommit = True  # type: ignore[union-attr]
                    driver.execute("SET plan_cache_mode = force_custom_plan")  # type: ignore[union-attr]
                    driver.prepare_threshold = 0  # type: ignore[union-attr]
                raw.detach()  # this thread's own from now on; closed by dispose()
                local.raw, local.forks = raw, _FORKS[0]
                pg = self.backend != "sqlite"
                local.cur = raw.dbapi_connection.cursor() if pg else None  # type: ignore[union-attr]
                self._point_raws.append((raw, threading.current_thread()))
                self._point_drivers.add(raw.dbapi_connection)
        return raw.dbapi_connection

    def _drop_thread_connection(self) -> None:
        raw = getattr(self._point, "raw", None)
        self._point.raw = None
        if raw is not None:
            with self._point_lock:
                self._point_raws[:] = [(r, t) for r, t in self._point_raws if r is not raw]
                self._point_drivers.discard(raw.dbapi_connection)
            with contextlib.suppress(*database_errors()):
                raw.close()

    def _pg_point_row(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        raw = self.engine.raw_connection()
        try:
            driver = raw.driver_connection
            driver.autocommit = True  # type: ignore[union-attr]
            try:
                cur = raw.cursor()
                cur.execute(sql, params)
                r = cur.fetchone()
                cur.close()
            finally:
                driver.autocommit = False  # type: ignore[union-attr]
        except database_errors():
            raw.invalidate()  # a broken driver connection never goes back to the pool
            raise
        finally:
            raw.close()
        return r  # type: ignore[no-any-return]

    def dispose(self) -> None:
        """Close every pooled connection and every thread's point-read connection."""
        with self._point_lock:
            raws = [r for r, _ in self._point_raws]
            self._point_raws.clear()
            self._point_drivers.clear()
        for raw in raws:
            with contextlib.suppress(*database_errors()):
                raw.close()
        self._point = threading.local()
        # A connection still checked out now goes back to a pool the engine no longer holds:
        # closed there, never left to the garbage collector (psycopg warns of a connection
        # deleted while open, at whatever moment the collector runs). Listened for from here
        # on only: a live store's checkins pay nothing.
        if not event.contains(self.engine.pool, "checkin", _late):
            event.listen(self.engine.pool, "checkin", _late)
        self.engine.dispose()


def _late(dbapi_connection: Any, record: Any) -> None:
    """Close a connection checked in after :meth:`Database.dispose` (the checkin event).

    Invalidated, not only closed: were its pool ever used again, it would reconnect.
    """
    if dbapi_connection is not None and record.dbapi_connection is not None:
        with contextlib.suppress(Exception):
            record.invalidate()


def _close_points(drivers: set[Any]) -> None:
    """Close point-read driver connections (the finalizer of a Database never disposed)."""
    for conn in list(drivers):
        with contextlib.suppress(Exception):
            conn.close()
    drivers.clear()


#: Forks of this process so far (a child never uses its parent's point-read connections).
_FORKS = [0]
os.register_at_fork(after_in_child=lambda: _FORKS.__setitem__(0, _FORKS[0] + 1))
