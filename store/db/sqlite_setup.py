"""SQLite connection setup: WAL, the busy timeout, BEGIN IMMEDIATE, and the store file's identity.

Registered by :class:`~evstore.db.engine.Database` on a SQLite engine (``sqlite_events``);
kept apart from the engine module so that each stays readable.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Protocol

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from ..core.errors import StoreStateError


class _Store(Protocol):
    """What the listeners need of :class:`~evstore.db.engine.Database`."""

    read_only: bool

    def check_identity(self) -> None: ...


__all__ = ["foreign_keys_pragma_off", "sqlite_events"]


def sqlite_events(engine: Engine, db: _Store, busy_timeout_ms: int) -> None:
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
        cur.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
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


def foreign_keys_pragma_off(dbapi_conn: Any, _record: Any) -> None:
    """A ``connect`` listener turning SQLite's foreign-key checks off (migrations use it)."""
    dbapi_conn.execute("PRAGMA foreign_keys = OFF")


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
