"""The narrow database interface the services take (``Store.transactions``).

The services (the log, retention, tokens, archives, descriptions) need four things of a
store's database: a read snapshot, a retried write transaction, a one-statement point read
(also awaited on an event loop: :meth:`LiveTransactions.loop_reads`) and the backend's
name. :class:`Transactions` names exactly those (restic's checker takes its own
``checkerRepository`` the same way), so no service reaches into the facade's
:class:`~evstore.db.engine.Database` or its private state. :class:`LiveTransactions` is what
:attr:`evstore.Store.transactions` returns: the store's database behind a check that the
store is still open.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol, TypeVar

from sqlalchemy.engine import Connection

from .engine import Database
from .loopread import LOOP_CONNECTIONS, LoopReads

__all__ = ["LiveTransactions", "Transactions"]

T = TypeVar("T")


class Transactions(Protocol):
    """What a service may do with a store's database.

    Attributes:
        backend: ``"sqlite"`` or ``"postgresql"``.
        read_only: True when the store was opened read-only (a read-only SQLite file).
    """

    backend: str
    read_only: bool

    def read(self) -> AbstractContextManager[Connection]:
        """A read-only connection over one consistent snapshot (:meth:`Database.read`)."""
        ...

    def run_transaction(self, work: Callable[[Connection], T], *, serialize: bool = False) -> T:
        """``work(conn)`` in one write transaction, retried on contention
        (:meth:`Database.run_transaction`).
        """  # noqa: D205
        ...

    def point_row(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """The first row of one read-only statement (:meth:`Database.point_row`)."""
        ...

    def check_identity(self) -> None:
        """Raise ``store.replaced`` when the SQLite file is not the one opened."""
        ...

    def vacuum(self) -> bool:
        """SQLite: return freed pages to the file system (True when it ran)."""
        ...

    def loop_reads(self, connections: int = LOOP_CONNECTIONS) -> LoopReads:
        """Point reads awaited on the running event loop (store/db/loopread.py)."""
        ...


class LiveTransactions:
    """A :class:`Transactions` over ``db`` that first calls ``live()`` (raises when closed).

    Args:
        db: the store's database.
        live: raises when the store was closed (``RuntimeError``, as every Store method).
    """

    def __init__(self, db: Database, live: Callable[[], None]) -> None:
        self._db = db
        self._live = live
        self.backend = db.backend
        self.read_only = db.read_only

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """As :meth:`Database.read`, on an open store."""
        self._live()
        with self._db.read() as conn:
            yield conn

    def run_transaction(self, work: Callable[[Connection], T], *, serialize: bool = False) -> T:
        """As :meth:`Database.run_transaction`, on an open store."""
        self._live()
        return self._db.run_transaction(work, serialize=serialize)

    def point_row(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """As :meth:`Database.point_row`, on an open store."""
        self._live()
        return self._db.point_row(sql, params)

    def check_identity(self) -> None:
        """As :meth:`Database.check_identity`."""
        self._db.check_identity()

    def loop_reads(self, connections: int = LOOP_CONNECTIONS) -> LoopReads:
        """Point reads of this store awaited on the running event loop, without a worker
        thread (:class:`~evstore.db.loopread.LoopReads`; close it with ``aclose``).
        """  # noqa: D205
        self._live()
        return LoopReads(self._db, connections)

    def vacuum(self) -> bool:
        """SQLite: run ``VACUUM`` to return freed pages to the file system (True when it ran).

        PostgreSQL reclaims space with autovacuum (docs/design.md); nothing runs there.
        """
        self._live()
        if self.backend != "sqlite":
            return False
        with self._db.engine.connect() as conn:
            raw = conn.connection.dbapi_connection
            assert raw is not None
            raw.execute("VACUUM")
        return True
