"""The garbage collector: delete exactly what no root reaches and no lease protects.

An object is *live* when a root entry holds it (no ``until``, or ``until`` still ahead on
the database's clock), its lease has not expired, or a live artifact's edge refers to it
(transitively: a root keeps its whole closure). Everything else is garbage.

A run (:func:`collect`) first finds the garbage in one read (a recursive query over roots,
leases and edges), then deletes it in small batches, one short write transaction each, so
ingests go on meanwhile. Safety does not rest on that first read: inside each batch's
transaction every row is re-checked on the row itself ("no edge refers to it, no live root
holds it, its lease expired") after it is locked, and deleted only then:

* PostgreSQL (READ COMMITTED): the batch locks its blob rows ``FOR UPDATE SKIP LOCKED``. A
  write that found or referred to a row holds it ``FOR KEY SHARE`` until its commit
  (evstore.objects.leases), so the collector skips it; a write that comes later waits for the
  collector's commit and then finds the row gone (a typed ``not-found``). The re-check runs
  in a statement that starts after the lock was granted, so it sees every commit before it.
  The foreign keys on ``edges``, ``artifacts``, ``roots`` and ``leases`` make a dangling
  reference impossible whatever happens.
* SQLite: one writer at a time (``BEGIN IMMEDIATE``), foreign keys on: the batch's re-check
  and delete see every committed write and no write runs in between.

An object's own rows go with it: its artifact rows (every kind), outgoing edges, lookup
attributes, warnings, ``verified`` rows, lease, expired root entries and chunks. Bindings
are facts and are never deleted. Deleting an artifact can make what it referred to garbage:
a run repeats until a round deletes nothing (bounded by :data:`MAX_ROUNDS`).
"""

from __future__ import annotations

import datetime as _dt
import functools
import time
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.errors import error
from ..core.results import GcReport
from ..core.times import utc_text
from ..db.transactions import Transactions
from ..objects.external import EXTERNAL, drain_deletions, queue_deletions
from ..objects.leases import db_now, record, sql_time

__all__ = ["BATCH", "GcReport", "MAX_ROUNDS", "collect", "garbage", "leased", "vacuum"]

#: Objects deleted per transaction.
BATCH = 200
#: Rounds of a run at most (an artifact's garbage targets go in the round after it).
MAX_ROUNDS = 64
_IN = 400  # SQLite bound parameters per IN list (with the time parameters)

#: ``progress(deleted so far, garbage found)``.
Progress = Callable[[int, int], None]

_GARBAGE = """
WITH RECURSIVE live(address) AS (
    SELECT b.address FROM roots r JOIN blobs b ON b.id = r.blob
    WHERE r.until IS NULL OR r.until > {now}
    UNION
    SELECT b.address FROM leases l JOIN blobs b ON b.id = l.blob WHERE l.expires_at > {now}
    UNION
    SELECT e.dst FROM edges e JOIN live l ON e.src = l.address
)
SELECT b.address, b.size FROM blobs b
WHERE {unreached}
ORDER BY b.address
"""
#: Objects that no root reaches but a lease holds (their own, or a leased artifact's that
#: refers to them), with the latest expiry holding each: what ``gc --dry-run`` says it keeps.
_HELD = """
WITH RECURSIVE rooted(address) AS (
    SELECT b.address FROM roots r JOIN blobs b ON b.id = r.blob
    WHERE r.until IS NULL OR r.until > {now}
    UNION
    SELECT e.dst FROM edges e JOIN rooted r ON e.src = r.address
),
held(address, until) AS (
    SELECT b.address, l.expires_at FROM leases l JOIN blobs b ON b.id = l.blob
    WHERE l.expires_at > {now}
    UNION
    SELECT e.dst, h.until FROM edges e JOIN held h ON e.src = h.address
)
SELECT b.address, b.size, max(h.until) FROM held h JOIN blobs b ON b.address = h.address
WHERE {unrooted}
GROUP BY b.address, b.size
ORDER BY b.address
"""
#: "Not in the live set": PostgreSQL plans NOT EXISTS as a hash anti-join (NOT IN over a
#: large subquery becomes a linear search per row); SQLite hashes NOT IN (it runs a
#: correlated NOT EXISTS over the recursive result once per row).
_UNREACHED = {
    "postgresql": "NOT EXISTS (SELECT 1 FROM live WHERE live.address = b.address)",
    "sqlite": "b.address NOT IN (SELECT address FROM live)",
}

#: The re-check on one ``blobs`` row: nothing refers to it, no live root, no live lease.
_COLLECTABLE = (
    "NOT EXISTS (SELECT 1 FROM edges e WHERE e.dst = blobs.address)"
    " AND NOT EXISTS (SELECT 1 FROM roots r WHERE r.blob = blobs.id"
    " AND (r.until IS NULL OR r.until > {now}))"
    " AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.blob = blobs.id"
    " AND l.expires_at > {now})"
)


def garbage(conn: Connection, now: _dt.datetime | None = None) -> list[tuple[str, int]]:
    """``(address hex, size in bytes)`` of every object no root reaches and no lease holds.

    One recursive query over roots, leases and edges, on the caller's snapshot.
    """
    when = now or db_now(conn)
    unreached = _UNREACHED[conn.dialect.name]
    if conn.dialect.name == "postgresql":
        sql = _GARBAGE.format(now="%(now)s", unreached=unreached)
        rows = conn.exec_driver_sql(sql, {"now": when})
    else:
        sql = _GARBAGE.format(now=":now", unreached=unreached)
        rows = conn.execute(sa.text(sql), {"now": sql_time(conn, when)})
    return [(r[0], int(r[1])) for r in rows]


def leased(conn: Connection, now: _dt.datetime | None = None) -> list[dict[str, Any]]:
    """``{"address", "size", "until"}`` of every object no root reaches that a lease holds.

    ``until`` (ISO 8601 UTC) is the latest end among the leases holding it: its own, and
    those of the leased artifacts whose edges reach it. One recursive query, on the caller's
    snapshot; by address.
    """
    when = now or db_now(conn)
    if conn.dialect.name == "postgresql":
        unrooted = "NOT EXISTS (SELECT 1 FROM rooted r WHERE r.address = b.address)"
        rows = conn.exec_driver_sql(
            _HELD.format(now="%(now)s", unrooted=unrooted), {"now": when}
        ).all()
    else:
        unrooted = "b.address NOT IN (SELECT address FROM rooted)"
        rows = conn.execute(
            sa.text(_HELD.format(now=":now", unrooted=unrooted)), {"now": sql_time(conn, when)}
        ).all()
    return [{"address": "blake3:" + r[0], "size": int(r[1]), "until": _iso(r[2])} for r in rows]


def _iso(value: Any) -> str:
    """A lease's end as ISO 8601 UTC (SQLite keeps naive UTC text, PostgreSQL an aware time)."""
    when = value if isinstance(value, _dt.datetime) else _dt.datetime.fromisoformat(str(value))
    return utc_text(when)


def _lock(conn: Connection, addresses: Sequence[str]) -> list[str]:
    """The candidate rows this batch may delete: locked (PostgreSQL), or all (SQLite)."""
    if conn.dialect.name == "postgresql":
        return [
            r[0]
            for r in conn.exec_driver_sql(
                "SELECT address FROM blobs WHERE address = ANY(%b) ORDER BY address"
                " FOR UPDATE SKIP LOCKED",
                (list(addresses),),
            )
        ]
    return list(addresses)


def _run(conn: Connection, sql: str, addresses: Sequence[str], params: dict[str, Any]) -> list[Any]:
    """Run ``sql`` over ``addresses`` (``{in}`` in ``sql`` takes the list), in parts on SQLite.

    ``sql`` names the time ``%(now)s``; rows are returned when it yields any.
    """
    out: list[Any] = []
    if conn.dialect.name == "postgresql":
        result = conn.exec_driver_sql(
            sql.replace("{in}", "= ANY(%(ids)s)"), {**params, "ids": list(addresses)}
        )
        return list(result) if result.returns_rows else []
    for i in range(0, len(addresses), _IN):
        part = list(addresses[i : i + _IN])
        head, _, tail = sql.partition("{in}")
        text = head + "IN (" + ",".join("?" * len(part)) + ")" + tail
        # Positional: the address list, then the time once per use in the rest of the text.
        args = (*part, *([params.get("now")] * tail.count("%(now)s")))
        result = conn.exec_driver_sql(text.replace("%(now)s", "?"), args)
        if result.returns_rows:
            out.extend(result)
    return out


_DEPENDENTS = (
    ("edges", "src"),
    ("attrs", "address"),
    ("warnings", "address"),
    ("verified", "address"),
    ("artifacts", "address"),
)
#: Rows that refer to a blob by its id (revision 0012).
_DEPENDENTS_BY_ID = ("leases", "roots")


def _delete_batch(conn: Connection, candidates: Sequence[str]) -> list[tuple[str, int]]:
    """Delete the collectable rows among ``candidates`` (re-checked, locked) and their rows.

    Returns:
        ``(address, size)`` of each object deleted.
    """
    locked = _lock(conn, candidates)
    if not locked:
        return []
    now = db_now(conn)
    params = {"now": sql_time(conn, now)}
    check = _COLLECTABLE.format(now="%(now)s")
    doomed = _run(
        conn,
        "SELECT address, size, chunk_set, stored_in FROM blobs WHERE address {in} AND " + check,
        locked,
        params,
    )
    if not doomed:
        return []
    ids = sorted(r[0] for r in doomed)
    record(
        conn,
        "collect",
        addresses=ids,
        details=[{"size": int(r[1])} for r in sorted(doomed, key=lambda r: r[0])],
        now=now,
    )
    for table, column in _DEPENDENTS:
        _run(conn, f"DELETE FROM {table} WHERE {column} {{in}}", ids, {})
    # The ids go on naming the objects' log entries (store/objects/log_entries.py).
    _run(
        conn,
        "INSERT INTO retired_blob_ids (address, id) SELECT address, id FROM blobs"
        " WHERE address {in} ON CONFLICT DO NOTHING",
        ids,
        {},
    )
    for table in _DEPENDENTS_BY_ID:
        _run(
            conn,
            f"DELETE FROM {table} WHERE blob IN (SELECT id FROM blobs WHERE address {{in}})",
            ids,
            {},
        )
    chunk_sets = [int(r[2]) for r in doomed if r[2] is not None and int(r[2]) != EXTERNAL]
    queue_deletions(conn, [(str(r[0]), str(r[3])) for r in doomed if r[3] is not None])
    if chunk_sets:
        conn.execute(
            sa.text("DELETE FROM blob_chunks WHERE chunk_set IN :c").bindparams(
                sa.bindparam("c", expanding=True)
            ),
            {"c": chunk_sets},
        )
    gone = _run(
        conn,
        "DELETE FROM blobs WHERE address {in} AND " + check + " RETURNING address",
        ids,
        params,
    )
    if len(gone) != len(ids):  # cannot happen while the rows are locked: undo the batch
        raise error("store.busy", "gc: a locked row changed under the collector; retrying")
    return sorted((str(r[0]), int(r[1])) for r in doomed)


def collect(
    db: Transactions,
    *,
    dry_run: bool = False,
    batch: int = BATCH,
    progress: Progress | None = None,
) -> GcReport:
    """Delete every object no root reaches and whose lease expired (``evstore gc``).

    Args:
        db: the store's database.
        dry_run: list what would go (and the bytes it would free) without deleting, and
            what leases still hold (:attr:`GcReport.leased`).
        batch: objects per delete transaction.
        progress: called as ``progress(deleted so far, garbage found)`` after each batch.

    Returns:
        A :class:`GcReport`.

    Raises:
        InputError: ``input.invalid`` for ``batch`` < 1. StoreStateError: as any write.
    """
    if batch < 1:
        raise error("input.invalid", f"gc batch size must be at least 1, not {batch}")
    started = time.monotonic()
    report = GcReport(dry_run=dry_run)
    sizes: dict[str, int] = {}
    for _ in range(MAX_ROUNDS):
        with db.read() as conn:
            now = db_now(conn)
            found = garbage(conn, now)
            if dry_run:
                report.leased = leased(conn, now)
        report.rounds += 1
        if dry_run:
            report.objects = [{"address": "blake3:" + a, "size": s} for a, s in found]
            break
        sizes.update(found)
        deleted_before = report.count
        for i in range(0, len(found), batch):
            part = [a for a, _ in found[i : i + batch]]
            done: list[tuple[str, int]] = db.run_transaction(
                functools.partial(_delete_batch, candidates=part)
            )
            if done:
                report.batches += 1
                report.objects.extend({"address": "blake3:" + a, "size": s} for a, s in done)
            if progress is not None:
                progress(report.count, len(found))
        if report.count == deleted_before:
            report.skipped = len(found)
            break
    if not dry_run:
        # Bytes in a blob backend whose rows went earlier, once their delay has passed.
        # Objects no row names (abandoned uploads) are reported by `check`, never deleted
        # here: a concurrent put may be reusing one (docs/design.md).
        settled, deleted = drain_deletions(db)
        report.backend_deleted = deleted
        report.backend_kept = settled - deleted
    report.seconds = time.monotonic() - started
    return report


def vacuum(db: Transactions) -> bool:
    """SQLite: run ``VACUUM`` to return freed pages to the file system (True when it ran).

    PostgreSQL reclaims space with autovacuum (docs/design.md); nothing runs there.
    """
    return db.vacuum()
