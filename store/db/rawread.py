"""One-statement reads on the thread's driver connection, for the hot paths of the HTTP server.

A read transaction through SQLAlchemy costs far more than the point lookup it wraps (BEGIN,
COMMIT and the store-file identity checks around both); one SELECT needs no explicit
transaction. :func:`point_row` runs one statement the way ``Store.get``'s inline fast path
does, and answers :data:`FALLBACK` on any database error so the caller takes the general
path, which meets the error again inside the error boundary (store/db/engine.py) and reports it
with its ``store.*`` code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .engine import database_errors
from .faults import FALLBACK

if TYPE_CHECKING:
    from .transactions import Transactions

__all__ = ["FALLBACK", "point_row"]


def point_row(db: Transactions, sql: str, params: tuple[Any, ...]) -> Any:
    """The first row of ``sql`` (``?`` placeholders), None when there is none, or FALLBACK.

    One statement on this thread's point-read connection
    (:meth:`~evstore.db.engine.Database.point_row`).

    Raises:
        StoreStateError: ``store.replaced`` (the SQLite file is not the one opened).
    """
    db.check_identity()
    if db.backend != "sqlite":
        sql = sql.replace("?", "%s")
    try:
        row = db.point_row(sql, params)
    except database_errors():
        return FALLBACK
    return None if row is None else tuple(row)
