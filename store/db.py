"""The database layer: engines from URLs, SQLite pragmas, transactions, schema versions.

This is the one place where SQLAlchemy and driver exceptions become evstore errors
(:func:`translate`), and the one place that knows which backend is in use.

SQLite (the embedded default) runs in WAL mode with ``synchronous=NORMAL`` and a busy
timeout; every transaction starts with ``BEGIN IMMEDIATE`` so two writers never deadlock by
upgrading read locks, and a transaction that still meets a lock after the busy timeout is
retried (see :func:`run_transaction`) before ``store.busy`` is raised. PostgreSQL is reached
through psycopg 3 (``postgresql+psycopg://``; a bare ``postgresql://`` URL is mapped to it).
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError, SQLAlchemyError

from .errors import CorruptionError, StoreStateError

__all__ = [
    "BUSY_TIMEOUT_MS",
    "Database",
    "SchemaState",
    "head_revision",
    "normalize_url",
    "translate",
]

#: How long SQLite waits on a lock before a statement gives up (then the transaction retries).
BUSY_TIMEOUT_MS = 30_000
_RETRIES = 20

T = TypeVar("T")


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


def translate(exc: BaseException, url: str = "") -> StoreStateError:
    """Turn a SQLAlchemy or driver exception into an evstore :class:`StoreStateError`."""
    text = (
        str(getattr(exc, "orig", exc)).strip().splitlines()[0] if str(exc) else type(exc).__name__
    )
    if "database is locked" in text or "could not serialize" in text or "deadlock" in text:
        return StoreStateError(f"store busy: {text}", code="store.busy")
    if isinstance(exc, OperationalError):
        return StoreStateError(f"cannot reach the store {url}: {text}", code="store.unreachable")
    return StoreStateError(f"database error: {text}", code="store.database")


def _is_retryable(exc: BaseException) -> bool:
    text = str(getattr(exc, "orig", exc))
    return (
        "database is locked" in text
        or "database table is locked" in text
        or "could not serialize access" in text
        or "deadlock detected" in text
    )


def head_revision() -> str:
    """The newest Alembic revision shipped with this code."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_alembic_config()).get_current_head() or ""


def _alembic_config() -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("evstore.migrations")))
    return cfg


@dataclass(frozen=True)
class SchemaState:
    """Where a store's schema stands: ``current`` revision ('' when none) and the code's ``head``."""

    current: str
    head: str

    @property
    def initialised(self) -> bool:
        """True when the store has an evstore schema at all."""
        return bool(self.current)


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
        if parsed.query:
            raise StoreStateError(
                f"store URL options are not supported: {sorted(parsed.query)}", code="store.url"
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
            self.engine: Engine = sa.create_engine(
                self.url,
                connect_args={"timeout": BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
            )
            _sqlite_events(self.engine)
        else:
            # No server-side prepared statements: after five runs psycopg would prepare a
            # statement and PostgreSQL would keep a generic plan made while the tables were
            # nearly empty, turning batched key lookups into scans (measured 3.6x slower
            # manifest ingest, bench/manifests.py).
            self.engine = sa.create_engine(
                self.url, pool_pre_ping=False, connect_args={"prepare_threshold": None}
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
                if not sa.inspect(conn).has_table("alembic_version"):
                    return SchemaState("", head_revision())
                rows = conn.execute(sa.text("SELECT version_num FROM alembic_version")).all()
        except SQLAlchemyError as exc:
            raise translate(exc, self.display_url) from None
        current = rows[0][0] if rows else ""
        return SchemaState(current, head_revision())

    def migrate(self) -> tuple[str, str]:
        """Upgrade the schema to the code's head revision. Returns ``(before, after)``.

        Raises:
            StoreStateError: ``store.schema-ahead`` when the store is newer than the code;
                ``store.unreachable``.
        """
        from alembic import command
        from alembic.script import ScriptDirectory

        cfg = _alembic_config()
        before = self.schema_state().current
        script = ScriptDirectory.from_config(cfg)
        if before and before not in {r.revision for r in script.walk_revisions()}:
            raise StoreStateError(
                f"the store's schema revision {before} is newer than this evstore; upgrade evstore",
                code="store.schema-ahead",
            )
        if self.sqlite_path is not None:
            try:
                self.sqlite_path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreStateError(
                    f"cannot create the store's folder {self.sqlite_path.parent}: {exc.strerror}",
                    code="store.unreachable",
                ) from None
        try:
            with self.engine.begin() as conn:
                if self.backend == "postgresql":
                    # Several processes may create one store at once: one migrates, the others
                    # wait here and then find the schema current (alembic's upgrade is a no-op).
                    conn.exec_driver_sql("SELECT pg_advisory_xact_lock(7403012511)")
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
        except SQLAlchemyError as exc:
            raise translate(exc, self.display_url) from None
        except Exception as exc:  # alembic's own errors (e.g. an alembic_version with two rows)
            if isinstance(exc, StoreStateError):
                raise
            raise StoreStateError(
                f"cannot migrate {self.display_url}: {exc}", code="store.database"
            ) from None
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
            from alembic.script import ScriptDirectory

            known = {
                r.revision for r in ScriptDirectory.from_config(_alembic_config()).walk_revisions()
            }
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
    def run_transaction(self, work: Callable[[Connection], T]) -> T:
        """Run ``work(conn)`` in one transaction, retrying when the backend reports contention.

        ``work`` must be repeatable: it is called again from the start after a rollback.
        evstore errors raised by ``work`` roll back and propagate unchanged.

        Raises:
            StoreStateError: ``store.busy`` after the retries, ``store.unreachable``,
                ``store.database``.
        """
        delay = 0.01
        for attempt in range(_RETRIES):
            try:
                with self.engine.begin() as conn:
                    return work(conn)
            except DBAPIError as exc:
                if _is_retryable(exc) and attempt < _RETRIES - 1:
                    time.sleep(delay * (1 + random.random()))
                    delay = min(delay * 2, 1.0)
                    continue
                raise translate(exc, self.display_url) from None
            except SQLAlchemyError as exc:
                raise translate(exc, self.display_url) from None
        raise AssertionError("unreachable")  # pragma: no cover

    @contextlib.contextmanager
    def read(self) -> Iterator[Connection]:
        """A read-only connection in one transaction (a consistent snapshot on both backends).

        Raises:
            StoreStateError: as :func:`translate`.
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
        except DBAPIError as exc:
            raise translate(exc, self.display_url) from None
        except SQLAlchemyError as exc:
            raise translate(exc, self.display_url) from None

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


def _sqlite_events(engine: Engine) -> None:
    """WAL, synchronous=NORMAL, busy timeout, and BEGIN IMMEDIATE for every transaction.

    pysqlite's own transaction handling is turned off (isolation_level=None) so the BEGIN we
    emit is the one that runs; this is the SQLAlchemy documented recipe for SQLite locking.
    """

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA journal_mode = WAL")
        cur.execute("PRAGMA synchronous = NORMAL")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # Readers take a deferred (snapshot) transaction: under WAL they never block writers.
        if conn.get_execution_options().get("evstore_read"):
            conn.exec_driver_sql("BEGIN")
        else:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
