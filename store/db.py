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
import functools
import logging
import os
import random
import re
import sqlite3
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError

from .errors import CorruptionError, StoreStateError, error

__all__ = [
    "BUSY_TIMEOUT_MS",
    "Database",
    "DbFault",
    "FAULTS",
    "RETRIES",
    "RETRY_BUDGET_S",
    "SchemaState",
    "classify",
    "commit_hook",
    "database_errors",
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
#: No retry starts after this many seconds since the first attempt (then ``store.busy``).
RETRY_BUDGET_S = 120.0

T = TypeVar("T")

#: Key in ``Connection.info`` of the hooks :func:`commit_hook` registered for a transaction.
_BEFORE_COMMIT = "evstore.before_commit"

#: The URL options a SQLite store accepts: each opens the file read-only (SQLite URI
#: parameters). ``immutable=1`` also reads a store in a read-only folder or mount.
_SQLITE_READ_ONLY = ({"mode": "ro"}, {"immutable": "1"}, {"mode": "ro", "immutable": "1"})


class _OneLinePoolLog(logging.Filter):
    """Turn the connection pool's error-with-traceback records into one warning line.

    When a pooled connection breaks (a terminated PostgreSQL backend), SQLAlchemy's pool
    logs "Exception during reset or similar" at error level with a full traceback, although
    the call itself is answered (a typed ``store.*`` error, or success on a fresh connection).
    A long-running process then prints a traceback to stderr for a fault already handled.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            record.msg = "evstore: a database connection broke and was dropped (%s: %s)"
            record.args = (type(exc).__name__, _first_line(exc))
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


for _pool in ("QueuePool", "NullPool", "SingletonThreadPool", "StaticPool"):
    logging.getLogger(f"sqlalchemy.pool.impl.{_pool}").addFilter(_OneLinePoolLog())


def normalize_url(url: str) -> str:
    """Map user-facing URL spellings to the drivers evstore uses.

    ``postgresql://`` and ``postgres://`` become ``postgresql+psycopg://``; a plain file path
    (no ``://``) becomes ``sqlite:///PATH``.
    """
    if "://" not in url:
        return "sqlite:///" + str(Path(url))
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


@dataclass(frozen=True)
class DbFault:
    """What a database error means to evstore.

    Attributes:
        code: the evstore code raised (a ``store.*`` row of :data:`evstore.errors.CODES`).
        retryable: True when running the transaction again may succeed (contention);
            :meth:`Database.run_transaction` retries exactly these, with bounded backoff.
        message: the message head; ``{url}`` is replaced by the store's display URL.
    """

    code: str
    retryable: bool
    message: str


_BUSY = DbFault("store.busy", True, "store busy")
_UNREACHABLE = DbFault("store.unreachable", False, "cannot reach the store {url}")
_TIMEOUT = DbFault("store.timeout", False, "a statement ran past its time limit")
_FULL = DbFault("store.full", False, "the store's disk is full")
_READ_ONLY = DbFault("store.read-only", False, "the store {url} is read-only")
_POOL = DbFault("store.busy", False, "no free database connection")
_OTHER = DbFault("store.database", False, "database error")

#: The one error table: (driver, driver code) -> :class:`DbFault`. Keys:
#: ``("sqlite", N)``: a SQLite primary result code (``sqlite_errorcode & 0xFF``, so every
#: extended code such as ``SQLITE_BUSY_SNAPSHOT`` maps with its primary code);
#: ``("postgresql", "SQLSTATE")``: a five-character SQLSTATE, or its two-character class;
#: ``("psycopg", "OperationalError")``: a psycopg OperationalError without SQLSTATE (the
#: connection could not be made, or was lost); ``("sqlalchemy", "ClassName")``: a
#: SQLAlchemy error with no driver cause. Anything else is ``store.database``.
FAULTS: dict[tuple[str, int | str], DbFault] = {
    ("sqlite", sqlite3.SQLITE_BUSY): _BUSY,
    ("sqlite", sqlite3.SQLITE_LOCKED): _BUSY,
    ("sqlite", sqlite3.SQLITE_PROTOCOL): _BUSY,  # WAL lock race
    ("sqlite", sqlite3.SQLITE_FULL): _FULL,
    ("sqlite", sqlite3.SQLITE_READONLY): _READ_ONLY,
    ("sqlite", sqlite3.SQLITE_CANTOPEN): _UNREACHABLE,
    ("sqlite", sqlite3.SQLITE_IOERR): _UNREACHABLE,
    ("postgresql", "40001"): _BUSY,  # serialization_failure
    ("postgresql", "40P01"): _BUSY,  # deadlock_detected
    ("postgresql", "55P03"): _BUSY,  # lock_not_available (lock_timeout, NOWAIT)
    ("postgresql", "57014"): _TIMEOUT,  # query_canceled (statement_timeout)
    ("postgresql", "53100"): _FULL,  # disk_full
    ("postgresql", "25006"): _READ_ONLY,  # read_only_sql_transaction
    ("postgresql", "57P01"): _UNREACHABLE,  # admin_shutdown (pg_terminate_backend)
    ("postgresql", "57P02"): _UNREACHABLE,  # crash_shutdown
    ("postgresql", "57P03"): _UNREACHABLE,  # cannot_connect_now
    ("postgresql", "08"): _UNREACHABLE,  # connection_exception (class)
    ("psycopg", "OperationalError"): _UNREACHABLE,
    ("sqlalchemy", "DisconnectionError"): _UNREACHABLE,
    ("sqlalchemy", "TimeoutError"): _POOL,  # the connection pool stayed exhausted
}


def database_errors() -> tuple[type[BaseException], ...]:
    """The exception classes :func:`classify` understands: SQLAlchemy's, sqlite3's, psycopg's.

    psycopg is named only once something imported it (a SQLite-only process never does).
    """
    found: list[type[BaseException]] = [SQLAlchemyError, sqlite3.Error]
    pg = sys.modules.get("psycopg")
    if pg is not None:
        found.append(pg.Error)
    return tuple(found)


def _driver_fault(cause: BaseException | None) -> DbFault | None:
    """The table row for a raw driver exception, by its type and error code (None: no row)."""
    if isinstance(cause, sqlite3.Error):
        code = getattr(cause, "sqlite_errorcode", None)
        return FAULTS.get(("sqlite", code & 0xFF)) if isinstance(code, int) else None
    pg = sys.modules.get("psycopg")
    if pg is None or not isinstance(cause, pg.Error):
        return None
    state = cause.sqlstate
    if state:
        return FAULTS.get(("postgresql", state)) or FAULTS.get(("postgresql", state[:2]))
    if isinstance(cause, pg.OperationalError):
        return FAULTS[("psycopg", "OperationalError")]
    return None


def classify(exc: BaseException) -> DbFault | None:
    """What a database exception means, from its type and driver error code (never its text).

    ``exc`` may be a SQLAlchemy exception (its driver cause, ``exc.orig``, decides) or a raw
    sqlite3 / psycopg exception (raised on a raw driver connection, e.g. the COPY path).

    Returns:
        The :data:`FAULTS` row; ``store.database`` for a database error the table does not
        name; None when ``exc`` is not a database error at all (a bug, or an evstore error).
    """
    if isinstance(exc, DBAPIError):
        found = _driver_fault(exc.orig)
        if found is not None:
            return found
        return _UNREACHABLE if exc.connection_invalidated else _OTHER
    if isinstance(exc, SQLAlchemyError):
        return FAULTS.get(("sqlalchemy", type(exc).__name__), _OTHER)
    if isinstance(exc, database_errors()):
        return _driver_fault(exc) or _OTHER
    return None


def _first_line(exc: BaseException) -> str:
    cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    lines = str(cause).strip().splitlines()
    return lines[0] if lines else type(cause).__name__


def translate(exc: BaseException, url: str = "") -> StoreStateError:
    """Turn a SQLAlchemy or driver exception into an evstore :class:`StoreStateError`.

    The code comes from :func:`classify` (``store.database`` for anything it does not
    name); raise the result ``from exc`` so the driver's error stays the cause.
    """
    fault = classify(exc) or _OTHER
    head = fault.message.replace("{url}", url).replace("  ", " ").strip()
    err = error(fault.code, f"{head}: {_first_line(exc)}")
    assert isinstance(err, StoreStateError)
    return err


def commit_hook(conn: Connection, key: str, factory: Callable[[], Any]) -> Any:
    """The hook registered under ``key`` for the transaction on ``conn`` (made by ``factory``).

    :meth:`Database.run_transaction` calls every registered hook as ``hook(conn)`` after its
    work returned and before it commits, inside the same transaction (the tamper-evident log
    appends the transaction's entries this way, store/log_entries.py). A transaction that
    rolls back never runs its hooks, and every attempt starts with none. Returns the hook
    object so the caller can hand it more work (``factory`` is called once per transaction).
    """
    hooks = conn.info.setdefault(_BEFORE_COMMIT, {})
    if key not in hooks:
        hooks[key] = factory()
    return hooks[key]


def _backoff(attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (1, 2, ...): 10 ms doubling to 1 s, jittered."""
    return min(0.01 * 2 ** (attempt - 1), 1.0) * (1 + random.random())


@contextlib.contextmanager
def raw_driver(conn: Connection) -> Iterator[Any]:
    """The DBAPI (driver) connection under ``conn``, for driver-only features (COPY).

    A driver exception raised inside is re-raised as SQLAlchemy's ``DBAPIError`` wrapper
    (``from`` the cause), so callers and :meth:`Database.run_transaction` see one kind of
    database error and classify it like any statement's.
    """
    raw = conn.connection.dbapi_connection
    assert raw is not None
    dialect = conn.dialect
    try:
        yield raw
    except database_errors() as exc:
        if isinstance(exc, SQLAlchemyError):
            raise
        base = dialect.loaded_dbapi.Error
        wrapped = DBAPIError.instance(
            None,
            None,
            exc,
            base,
            connection_invalidated=isinstance(exc, base) and dialect.is_disconnect(exc, raw, None),
            dialect=dialect,
        )
        raise wrapped from exc


_REVISION = re.compile(r"^revision\s*(?::[^=]*)?=\s*[\"']([^\"']+)[\"']", re.M)
_DOWN = re.compile(r"^down_revision\s*(?::[^=]*)?=\s*(?:None|[\"']([^\"']*)[\"'])", re.M)


@functools.cache
def schema_revisions() -> tuple[str, ...]:
    """The schema revisions shipped with this evstore, oldest first (the last is the head).

    Read from the text of migrations/versions/*.py (``revision`` and ``down_revision``), so
    checking a store's schema does not import Alembic.
    """
    parents: dict[str, str | None] = {}
    for entry in (resources.files("evstore.migrations") / "versions").iterdir():
        if not entry.name.endswith(".py") or entry.name.startswith("_"):
            continue
        text = entry.read_text(encoding="utf-8")
        rev, down = _REVISION.search(text), _DOWN.search(text)
        if rev is not None:
            parents[rev.group(1)] = down.group(1) if down is not None else None
    chain: list[str] = []
    children = {v: k for k, v in parents.items()}
    node = children.get(None)
    while node is not None:
        chain.append(node)
        node = children.get(node)
    return tuple(chain)


def head_revision() -> str:
    """The newest schema revision shipped with this code (no Alembic import)."""
    return schema_revisions()[-1]


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
            backend.
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
        options = dict(parsed.query)
        self.read_only = False
        if options and (self.backend != "sqlite" or options not in _SQLITE_READ_ONLY):
            raise StoreStateError(
                f"store URL options are not supported: {sorted(parsed.query)} (a SQLite store"
                " takes only ?mode=ro or ?immutable=1, to read it without writing)",
                code="store.url",
            )
        self.display_url = parsed.render_as_string(hide_password=True)
        self.sqlite_path: Path | None = None
        if self.backend == "sqlite":
            db = parsed.database or ""
            if db in ("", ":memory:") or db.startswith("file:"):
                raise StoreStateError(
                    "an evstore SQLite store is a file: use sqlite:///PATH", code="store.url"
                )
            self.sqlite_path = Path(db)
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
            _sqlite_events(self.engine, self)
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
        if self.sqlite_path is None:
            return
        try:
            st = os.stat(self.sqlite_path)
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
            with self.engine.begin() as conn:
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
                with self.engine.begin() as conn:
                    conn.info.pop(_BEFORE_COMMIT, None)  # nothing left by an earlier attempt
                    if serialize:
                        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_RETRY_LOCK})")
                    result = work(conn)
                    for hook in conn.info.pop(_BEFORE_COMMIT, {}).values():
                        hook(conn)
                    return result
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

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


def _sqlite_events(engine: Engine, db: Database) -> None:
    """WAL, synchronous=NORMAL, busy timeout, and BEGIN IMMEDIATE for every transaction.

    pysqlite's own transaction handling is turned off (isolation_level=None) so the BEGIN we
    emit is the one that runs; this is the SQLAlchemy documented recipe for SQLite locking.
    Every new connection, every BEGIN and every COMMIT first checks that the store file is
    still the one this process opened (:meth:`Database.check_identity`).
    """

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        db.check_identity()
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if not db.read_only:  # a read-only connection keeps the file's journal mode (WAL)
            cur.execute("PRAGMA journal_mode = WAL")
        cur.execute("PRAGMA synchronous = NORMAL")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        try:
            db.check_identity()
        except StoreStateError:
            _salvage_wal(conn)
            raise
        # Readers take a deferred (snapshot) transaction: under WAL they never block writers.
        if conn.get_execution_options().get("evstore_read"):
            conn.exec_driver_sql("BEGIN")
        else:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    @event.listens_for(engine, "commit")
    def _on_commit(_conn: Connection) -> None:
        # Before anything is acknowledged: a write into a deleted or replaced file is lost.
        db.check_identity()


def _salvage_wal(conn: Connection) -> None:
    """Move this connection's WAL frames into the file it opened, and empty the ``-wal`` file.

    After the store file was replaced, the ``-wal`` file beside the path still holds this
    process's frames, and SQLite would apply them to whatever file now has the name (another
    store's content would vanish). A ``TRUNCATE`` checkpoint on a connection opened before
    the replacement writes them into the old file and truncates the ``-wal`` file. Best
    effort: a failure leaves the ``store.replaced`` error to speak.
    """
    raw = conn.connection.dbapi_connection
    try:
        if raw is not None:
            raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except sqlite3.Error:
        pass
