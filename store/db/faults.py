"""Database faults: what a SQLAlchemy or driver exception means to evstore.

One table (:data:`FAULTS`) maps driver error codes (SQLite result codes, PostgreSQL SQLSTATE)
to evstore codes, never message text: contention is ``store.busy`` and retried; a lost or
refused connection ``store.unreachable``; a statement timeout ``store.timeout``; a full disk
``store.full``; a read-only store ``store.read-only``; anything else ``store.database``.
:func:`classify` reads the table and :func:`translate` builds the typed error. store/db/engine.py,
the one database boundary, applies them to every statement; split from it for size.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from ..core.errors import StoreStateError, error

__all__ = [
    "DbFault",
    "FALLBACK",
    "FAULTS",
    "OTHER",
    "UNREACHABLE",
    "classify",
    "database_errors",
    "first_line",
    "normalize_url",
    "raw_driver",
    "translate",
]


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
            record.args = (type(exc).__name__, first_line(exc))
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
        code: the evstore code raised (a ``store.*`` row of :data:`evstore.core.errors.CODES`).
        retryable: True when running the transaction again may succeed (contention);
            :meth:`Database.run_transaction` retries exactly these, with bounded backoff.
        message: the message head; ``{url}`` is replaced by the store's display URL.
    """

    code: str
    retryable: bool
    message: str


_BUSY = DbFault("store.busy", True, "store busy")
UNREACHABLE = DbFault("store.unreachable", False, "cannot reach the store {url}")
_TIMEOUT = DbFault("store.timeout", False, "a statement ran past its time limit")
_FULL = DbFault("store.full", False, "the store's disk is full")
_READ_ONLY = DbFault("store.read-only", False, "the store {url} is read-only")
_POOL = DbFault("store.busy", False, "no free database connection")
OTHER = DbFault("store.database", False, "database error")

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
    ("sqlite", sqlite3.SQLITE_CANTOPEN): UNREACHABLE,
    ("sqlite", sqlite3.SQLITE_IOERR): UNREACHABLE,
    ("postgresql", "40001"): _BUSY,  # serialization_failure
    ("postgresql", "40P01"): _BUSY,  # deadlock_detected
    ("postgresql", "55P03"): _BUSY,  # lock_not_available (lock_timeout, NOWAIT)
    ("postgresql", "57014"): _TIMEOUT,  # query_canceled (statement_timeout)
    ("postgresql", "53100"): _FULL,  # disk_full
    ("postgresql", "25006"): _READ_ONLY,  # read_only_sql_transaction
    ("postgresql", "57P01"): UNREACHABLE,  # admin_shutdown (pg_terminate_backend)
    ("postgresql", "57P02"): UNREACHABLE,  # crash_shutdown
    ("postgresql", "57P03"): UNREACHABLE,  # cannot_connect_now
    ("postgresql", "08"): UNREACHABLE,  # connection_exception (class)
    ("psycopg", "OperationalError"): UNREACHABLE,
    ("sqlalchemy", "DisconnectionError"): UNREACHABLE,
    ("sqlalchemy", "TimeoutError"): _POOL,  # the connection pool stayed exhausted
}


#: Returned by the point reads instead of a row when the statement could not run (the
#: caller takes its general path, which reports the fault: store/db/rawread.py, loopread.py).
FALLBACK: Any = object()


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
        return UNREACHABLE if exc.connection_invalidated else OTHER
    if isinstance(exc, SQLAlchemyError):
        return FAULTS.get(("sqlalchemy", type(exc).__name__), OTHER)
    if isinstance(exc, database_errors()):
        return _driver_fault(exc) or OTHER
    return None


def first_line(exc: BaseException) -> str:
    """The first line of a database error's message (its driver cause's, when it has one)."""
    cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    lines = str(cause).strip().splitlines()
    return lines[0] if lines else type(cause).__name__


def translate(exc: BaseException, url: str = "") -> StoreStateError:
    """Turn a SQLAlchemy or driver exception into an evstore :class:`StoreStateError`.

    The code comes from :func:`classify` (``store.database`` for anything it does not
    name); raise the result ``from exc`` so the driver's error stays the cause.
    """
    fault = classify(exc) or OTHER
    head = fault.message.replace("{url}", url).replace("  ", " ").strip()
    err = error(fault.code, f"{head}: {first_line(exc)}")
    assert isinstance(err, StoreStateError)
    return err


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
