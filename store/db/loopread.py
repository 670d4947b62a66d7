"""Point reads on an asyncio event loop's own thread: no hop to a worker thread (issue 29).

A server that hands each one-statement read to a worker thread pays for the hop far more
than for the read: the request's coroutine waits on a queue, a worker thread wakes, and the
two threads pass the GIL back and forth (profiled: ~150 us of CPU a request against ~20 us
for the statement itself on SQLite, bench/server.py part a). :class:`LoopReads` runs the same
statements as :meth:`~evstore.db.engine.Database.point_row` without leaving the loop:

- **SQLite**: one connection of the loop's own, opened through the engine (the store's
  pragmas), then ``PRAGMA busy_timeout = 0`` and ``PRAGMA query_only = 1``. A statement
  runs on the loop's thread: it never waits on a lock (a WAL reader takes none; a
  ``SQLITE_BUSY`` answers :data:`FALLBACK` at once, and the caller takes its worker-thread
  path, which waits as every read does). What it may wait for is the page cache: a point
  read of a few B-tree pages.
- **PostgreSQL**: up to ``connections`` psycopg ``AsyncConnection`` of its own (autocommit,
  each statement prepared, custom plans as the point reads' connections), awaited on the
  loop: the loop serves other requests while the server answers. More concurrent reads
  wait for one of them.

Each statement is its own snapshot: nothing is cached between two reads, so every read sees
the latest commit (a revoked token is refused from the next request on). A database error
closes the connection involved and answers :data:`FALLBACK`; the caller's general path meets
the error again inside the error boundary and reports it with its ``store.*`` code.

A :class:`LoopReads` belongs to one event loop (the server's app makes it at startup and
closes it at shutdown, :meth:`aclose`); it is not for threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from .engine import Database, database_errors
from .faults import FALLBACK

__all__ = ["LOOP_CONNECTIONS", "LoopReads"]

#: PostgreSQL connections of one loop's reads unless told otherwise.
LOOP_CONNECTIONS = 4
#: Seconds a PostgreSQL connection may take to open before the read falls back.
CONNECT_TIMEOUT_S = 10
#: Seconds after a failed PostgreSQL connect during which reads fall back without trying.
RECONNECT_AFTER_S = 5.0


class LoopReads:
    """One-statement reads of a store's database awaited on the running event loop.

    Args:
        db: the store's database.
        connections: PostgreSQL connections at most (>= 1); SQLite uses one.
    """

    def __init__(self, db: Database, connections: int = LOOP_CONNECTIONS) -> None:
        self._db = db
        self._sqlite: Any = None
        self._pg_idle: list[Any] = []
        self._pg_slots = asyncio.Semaphore(max(1, connections)) if db.backend != "sqlite" else None
        self._closed = False
        self._pg_retry_at = 0.0  # after a failed connect, none is tried before this time

    async def row(self, sql: str, params: tuple[Any, ...]) -> Any:
        """The first row of ``sql`` (``?`` placeholders) as a tuple, None, or FALLBACK.

        FALLBACK when the statement could not run (busy, a database error, this object
        closed): the caller answers by its worker-thread path.

        Raises:
            StoreStateError: ``store.replaced`` (the SQLite file is not the one opened).
        """
        if self._closed:
            return FALLBACK
        self._db.check_identity()
        if self._pg_slots is None:
            return self._sqlite_row(sql, params)
        return await self._pg_row(sql.replace("?", "%s"), params)

    def _sqlite_row(self, sql: str, params: tuple[Any, ...]) -> Any:
        try:
            if self._sqlite is None:
                raw = self._db.engine.raw_connection()
                raw.detach()  # the loop's own from now on; closed by aclose()
                conn = raw.dbapi_connection
                assert conn is not None
                conn.execute("PRAGMA busy_timeout = 0")  # never wait on the loop
                conn.execute("PRAGMA query_only = 1")
                self._sqlite = conn
            cur = self._sqlite.execute(sql, params)
            try:
                found = cur.fetchone()
            finally:
                cur.close()  # the statement reset: no read snapshot held between reads
        except database_errors():
            self._close_sqlite()
            return FALLBACK
        return None if found is None else tuple(found)

    def _close_sqlite(self) -> None:
        conn, self._sqlite = self._sqlite, None
        if conn is not None:
            with contextlib.suppress(*database_errors()):
                conn.close()

    async def _pg_row(self, sql: str, params: tuple[Any, ...]) -> Any:
        import psycopg

        assert self._pg_slots is not None
        async with self._pg_slots:
            conn = self._pg_idle.pop() if self._pg_idle else None
            if conn is None and time.monotonic() < self._pg_retry_at:
                return FALLBACK
            try:
                if conn is None:
                    self._pg_retry_at = time.monotonic() + RECONNECT_AFTER_S
                    conn = await self._pg_connect()
                    self._pg_retry_at = 0.0
                async with conn.cursor() as cur:
                    await cur.execute(sql, params, prepare=True)
                    found = await cur.fetchone()
            except (TimeoutError, psycopg.Error, OSError):
                _drop(conn)
                return FALLBACK
            except BaseException:  # cancelled mid-statement: the connection's state is unknown
                _drop(conn)
                raise
            if self._closed or conn.info.transaction_status != _IDLE:
                _drop(conn)
            else:
                self._pg_idle.append(conn)
        return None if found is None else tuple(found)

    async def _pg_connect(self) -> Any:
        import psycopg

        url = self._db.engine.url.set(drivername="postgresql")
        conn = await psycopg.AsyncConnection.connect(
            url.render_as_string(hide_password=False),
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_S,
        )
        # planned for each execution's value, as the point reads' connections (engine.py)
        await conn.execute("SET plan_cache_mode = force_custom_plan")
        await conn.execute("SET default_transaction_read_only = on")
        return conn

    async def aclose(self) -> None:
        """Close every connection; later reads answer FALLBACK."""
        self._closed = True
        self._close_sqlite()
        idle, self._pg_idle = self._pg_idle, []
        for conn in idle:
            with contextlib.suppress(Exception):
                await conn.close()


#: libpq's transaction status of a connection with no statement or transaction open.
_IDLE = 0


def _drop(conn: Any) -> None:
    """Close a PostgreSQL connection now, without awaiting (libpq's ``PQfinish``): also
    from a task being cancelled, whose awaits would be cancelled in turn.
    """  # noqa: D205
    if conn is not None:
        with contextlib.suppress(Exception):
            conn.pgconn.finish()
