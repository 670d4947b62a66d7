"""The log's integrator: queued entries get their indices and join the tree (issue 26).

A write transaction records its entries in ``log_queue`` (one *batch* per transaction,
store/objects/log_entries.py ``enqueue_entries``) and takes no log lock. The integrator moves
them into the RFC 9162 tree, one transaction per round:

1. take the log's lock: the PostgreSQL advisory lock ``LOG_LOCK`` (held to the commit, so
   one integrator at a time across every process and server on the database; checkpoint
   signing takes the same lock), SQLite's one writer (``BEGIN IMMEDIATE``);
2. read up to about ``limit`` queued entries, whole batches only, in ``(batch, pos)`` order;
3. append them after the log's last index (``append_entries``: entries and the complete
   subtrees they complete) and delete exactly the batches it read.

Steps 2 and 3 commit together or not at all: an integrator killed at any point leaves the
queue and the tree as they were, and the next round does the work (idempotent after a
crash). No index is issued twice (``log_entries.idx`` is the primary key, and only the lock
holder appends) and none is skipped (each round starts at the stored size).

Ordering (docs/log.md, "Sequencing and integration"): indices follow batch order within a
round and rounds follow each other, so a write whose commit returned before another write
began to commit gets the lower indices, and a transaction's entries are consecutive, in
recording order.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from ..db.engine import driver_rows
from ..objects.log_entries import LOG_LOCK, append_entries, log_size

__all__ = ["DEFAULT_LIMIT", "integrate_round", "pending_count"]

#: Entries one integration round takes at most (whole batches: one large batch may exceed it).
DEFAULT_LIMIT = 20_000


def pending_count(conn: Connection) -> int:
    """The number of queued entries on ``conn``'s snapshot (not yet in the tree)."""
    return int(driver_rows(conn, "SELECT count(*) FROM log_queue")[0][0])


def integrate_round(conn: Connection, limit: int = DEFAULT_LIMIT) -> dict[str, Any]:
    """One integration round in the write transaction on ``conn`` (the module docstring).

    Args:
        conn: an open write transaction (``Transactions.run_transaction``).
        limit: about how many entries to take (whole batches; at least one batch), >= 1.

    Returns:
        ``{"integrated": entries added, "first": index of the first or None, "size": the
        tree size after the round}``.

    Raises:
        CorruptionError: ``corruption.log`` (a stored frontier subtree is missing).
    """
    pg = conn.dialect.name == "postgresql"
    if pg:
        driver_rows(conn, f"SELECT pg_advisory_xact_lock({LOG_LOCK})")
    mark = "%s" if pg else "?"
    rows = driver_rows(
        conn,
        "SELECT batch, address, entry FROM log_queue WHERE batch <= (SELECT max(batch) FROM"
        f" (SELECT batch FROM log_queue ORDER BY batch LIMIT {mark}) AS head)"
        " ORDER BY batch, pos",
        (max(1, int(limit)),),
    )
    if not rows:
        return {"integrated": 0, "first": None, "size": log_size(conn)}
    first = append_entries(conn, [(str(a), bytes(e)) for _, a, e in rows])
    batches = sorted({int(b) for b, _, _ in rows})
    if pg:
        # Exactly the batches read: a lower batch number may commit meanwhile (its number
        # was taken before its commit); it stays queued for the next round.
        driver_rows(conn, "DELETE FROM log_queue WHERE batch = ANY(%b::bigint[])", (batches,))
    else:
        # SQLite: this transaction is the one writer; the read saw every batch up to the last.
        driver_rows(conn, "DELETE FROM log_queue WHERE batch <= ?", (batches[-1],))
    return {"integrated": len(rows), "first": first, "size": first + len(rows)}
