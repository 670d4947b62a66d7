"""``evstore check`` for the log's queue: entries accepted but not yet in the tree (issue 26).

Each queued entry (``log_queue``, store/log/integrate.py) must be well formed
(store/objects/log_entries.py ``parse_entry``) and name the object of its row, as a tree
entry must: the integrator copies it into the tree unchanged. A queued batch whose positions
are not dense from 0 lost an entry. Faults: ``check.log-entry`` (``details["address"]`` the
entry's object, ``batch`` and ``pos``).
"""

from __future__ import annotations

from collections.abc import Iterator

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.errors import EvstoreError, InputError, error
from ..db.tables import log_queue
from ..objects.log_entries import parse_entry

__all__ = ["check_log_queue"]

_PAGE = 5000


def check_log_queue(conn: Connection) -> Iterator[EvstoreError]:
    """Yield a ``check.log-entry`` fault per malformed queued entry or gap in a batch.

    Reads the queue in ``(batch, pos)`` order, a page at a time, on ``conn``'s snapshot.
    """
    last: tuple[int, int] = (-1, -1)
    expect: tuple[int, int] = (-1, 0)  # (batch, next pos)
    while True:
        rows = conn.execute(
            sa.select(log_queue.c.batch, log_queue.c.pos, log_queue.c.address, log_queue.c.entry)
            .where(
                sa.or_(
                    log_queue.c.batch > last[0],
                    sa.and_(log_queue.c.batch == last[0], log_queue.c.pos > last[1]),
                )
            )
            .order_by(log_queue.c.batch, log_queue.c.pos)
            .limit(_PAGE)
        ).all()
        if not rows:
            return
        for r in rows:
            batch, pos, address = int(r.batch), int(r.pos), "blake3:" + str(r.address)
            want = expect[1] if batch == expect[0] else 0
            if pos != want:
                yield error(
                    "check.log-entry",
                    f"queued log batch {batch} lacks positions {want}..{pos - 1}",
                    address=address,
                    batch=batch,
                    pos=want,
                )
            expect = (batch, pos + 1)
            try:
                if parse_entry(bytes(r.entry))["address"] != address:
                    raise error("log.entry-malformed", "names another object than its row")
            except InputError as err:
                yield error(
                    "check.log-entry",
                    f"queued log entry (batch {batch}, position {pos}): {err.message}",
                    address=address,
                    batch=batch,
                    pos=pos,
                )
        last = (int(rows[-1].batch), int(rows[-1].pos))
