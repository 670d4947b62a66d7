"""Leases, implicit roots and the retention clock: what every write does for the collector.

The collector (store/retention/gc.py) deletes an object only when no edge refers to it, no root
holds
it and its lease has expired, re-checked on the row inside the delete. This module gives
writers their side of that agreement (docs/design.md#retention-and-garbage-collection):

* :func:`hold` locks the blob rows a write is about to refer to (PostgreSQL ``FOR KEY SHARE``
  until the commit; SQLite has one writer at a time), reports those that are gone and extends
  their leases: a write never commits an edge to an object collected in between.
* Every blob a write stores or finds stored is locked by the write's own lookup
  (evstore.objects.blobs) and leased; at the commit the write roots what it wrote under the root of
  the calling context (:func:`rooting`; ``default`` unless told otherwise): the artifacts an
  ingest accepted, or the blobs a put stored. The task runs once per transaction, just before
  the commit (evstore.db.engine ``BEFORE_COMMIT``): one statement per table.
* :func:`record` writes the retention history (retain, release, collect) and calls the
  functions in :data:`HISTORY_HOOKS` inside the same transaction (a tamper-evident log hooks
  in here).
* :func:`db_now` is the database's clock plus :data:`CLOCK`'s offset (tests move time).

:data:`STEP_HOOK` lets tests run a collection at each step of a write: ``"bytes stored"``,
``"lease extended"``, ``"edges written"`` and ``"commit"``.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.roots import ACTOR, DEFAULT_ROOT, ROOT, check_root_name, current_root, rooting
from ..core.settings import setting
from ..db.engine import (
    BEFORE_COMMIT,
    COPY_MIN_ROWS,
    copy_rows,
    driver_rows,
    executemany_all_or_none,
)
from ..db.settings import load_settings
from ..db.tables import retention_history

__all__ = [
    "ACTOR",
    "CLOCK",
    "Clock",
    "DEFAULT_ROOT",
    "HISTORY_HOOKS",
    "LEASE_SETTING",
    "Pending",
    "ROOT",
    "ROOTED_HOOKS",
    "STEP_HOOK",
    "blob_ids",
    "cap_leases",
    "check_root_name",
    "current_root",
    "db_now",
    "hold",
    "note_artifacts",
    "note_blobs",
    "pending",
    "record",
    "rooting",
    "settle_blobs",
    "sql_time",
    "step",
]

#: The setting that says how long a lease lasts (seconds; store/core/settings.py).
LEASE_SETTING = "gc.lease-seconds"
#: ``hook(step)`` called at each step of a write (tests only); see the module docstring.
STEP_HOOK: list[Callable[[str], None]] = []
#: ``hook(conn, events)`` called inside the transaction that records history ``events``.
HISTORY_HOOKS: list[Callable[[Connection, list[dict[str, Any]]], None]] = []
#: ``hook(conn, root, addresses)`` called when a write roots objects under a root that did not
#: hold them yet, inside its transaction (the tamper-evident log appends retain entries).
ROOTED_HOOKS: list[Callable[[Connection, str, list[str]], None]] = []

_IN = 500  # SQLite bound parameters per IN list


@dataclass
class Clock:
    """The retention clock: the database's time plus :attr:`offset` (tests advance it)."""

    offset: _dt.timedelta = _dt.timedelta(0)


#: The one clock offset of this process.
CLOCK = Clock()


def step(name: str) -> None:
    """Run the test hooks for write step ``name`` (no-op in normal use)."""
    for hook in STEP_HOOK:
        hook(name)


def db_now(conn: Connection) -> _dt.datetime:
    """The database's current time (UTC, aware) plus the clock offset.

    PostgreSQL: ``now()`` (the transaction's start). SQLite: the clock of this process,
    which is the database's (SQLite runs in it), to the millisecond as SQLite's
    ``strftime('%f', 'now')`` gives it, without a statement (issue 16).
    """
    if conn.dialect.name == "postgresql":
        value = driver_rows(conn, "SELECT now()")[0][0]
    else:
        value = _dt.datetime.now(_dt.UTC)
        value = value.replace(microsecond=value.microsecond // 1000 * 1000)
    return value.astimezone(_dt.UTC) + CLOCK.offset  # type: ignore[no-any-return]


def sql_time(conn: Connection, when: _dt.datetime) -> Any:
    """A driver parameter for ``when`` in a DateTime column (SQLite keeps naive UTC text)."""
    if conn.dialect.name == "postgresql":
        return when
    return when.astimezone(_dt.UTC).replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")


@dataclass
class Pending:
    """What the current write transaction stored, for its before-commit task.

    Attributes:
        root: the root its artifacts (or, without artifacts, its blobs) are rooted under.
        blobs: addresses of every blob it stored or found stored.
        artifacts: addresses of every artifact it stored or found stored.
        leased: addresses whose lease it already extended.
        fresh: addresses of the blobs it inserted: no root or lease row can exist for them
            yet (both refer to the blob row), so theirs are written without a conflict check
            (PostgreSQL: binary COPY, in a savepoint that falls back to the checked insert).
        ids: ``address -> blobs.id`` looked up so far (:func:`blob_ids`), which the root and
            lease rows name (revision 0012).
    """

    root: str
    now: _dt.datetime
    lease_seconds: int
    blobs: set[str] = field(default_factory=set)
    artifacts: set[str] = field(default_factory=set)
    leased: set[str] = field(default_factory=set)
    fresh: set[str] = field(default_factory=set)
    ids: dict[str, int] = field(default_factory=dict)

    @property
    def expires(self) -> _dt.datetime:
        """When a lease taken now expires."""
        return self.now + _dt.timedelta(seconds=self.lease_seconds)

    def __call__(self, conn: Connection) -> None:
        """Root and lease what the transaction wrote (one statement per table), then commit."""
        self.write(conn)
        step("commit")

    def write(self, conn: Connection) -> None:
        """Root and lease what was noted (one statement per table; see :meth:`__call__`)."""
        rooted = sorted(self.artifacts or self.blobs)
        if rooted:
            new = _insert_roots(conn, self.root, rooted, self.fresh, self.ids)
            for hook in ROOTED_HOOKS if new else ():
                hook(conn, self.root, new)
        if not self.artifacts and not self.leased:
            leasing = rooted  # a put: the blobs, already sorted (100k: one sort less)
        else:
            leasing = sorted((self.blobs | self.artifacts) - self.leased)
        _extend(conn, self, leasing)


def pending(conn: Connection) -> Pending:
    """The current transaction's :class:`Pending` (made on first use, settings read once)."""
    task = conn.info.get(BEFORE_COMMIT)
    if isinstance(task, Pending):
        return task
    seconds = setting(load_settings(conn), LEASE_SETTING)
    task = Pending(ROOT.get(), db_now(conn), max(0, int(seconds)))
    conn.info[BEFORE_COMMIT] = task
    return task


def note_blobs(
    conn: Connection,
    addresses: Iterable[str],
    fresh: Iterable[str] = (),
    ids: dict[str, int] | None = None,
) -> None:
    """Record blobs a write stored or found stored (rooted at commit when no artifact is).

    Only rows this transaction wrote or locked when it found them (evstore.objects.blobs) may be
    noted: :func:`hold` takes a noted blob as present and held without looking again.
    ``fresh`` names those among them that this transaction inserted; ``ids`` (``address ->
    blobs.id``) the ids its insert gave them, when known, so :func:`blob_ids` need not look
    them up by address.
    """
    task = pending(conn)
    task.blobs.update(addresses)
    task.fresh.update(fresh)
    if ids:
        task.ids.update(ids)


def settle_blobs(conn: Connection) -> None:
    """Root and lease the blobs noted so far now, and forget them (a put of many blobs).

    A put of many blobs in one transaction calls this between its chunks, so what the
    transaction keeps for its commit is one chunk's addresses, not every blob's (issue 28).
    The rows are the ones the commit would write (roots ``ON CONFLICT DO NOTHING``, leases
    only lengthened), inside the same transaction: a rollback takes them back with the
    blobs. A blob noted again later (the same bytes in a later chunk) finds its root and
    lease written and adds nothing. No-op when the transaction noted artifacts (then the
    artifacts are rooted at the commit, not the blobs).
    """
    task = conn.info.get(BEFORE_COMMIT)
    if not isinstance(task, Pending) or task.artifacts or not task.blobs:
        return
    task.write(conn)
    task.blobs.clear()
    task.fresh.clear()
    task.leased.clear()
    task.ids.clear()


def note_artifacts(conn: Connection, addresses: Iterable[str]) -> None:
    """Record artifacts a write stored or found stored (rooted at commit)."""
    pending(conn).artifacts.update(addresses)


def blob_ids(
    conn: Connection, addresses: Sequence[str], known: dict[str, int] | None = None
) -> dict[str, int]:
    """``address -> blobs.id`` for the stored ones among ``addresses`` (64 hex).

    Roots and leases refer to a blob by its id (revision 0012). ``known`` (updated in place
    and returned) holds ids looked up before in the transaction: only the others are asked
    for, one statement (PostgreSQL) or one per 500 addresses (SQLite).
    """
    ids = {} if known is None else known
    wanted = [a for a in addresses if a not in ids]
    if not wanted:
        return ids
    if conn.dialect.name == "postgresql":
        rows = driver_rows(
            conn, "SELECT address, id FROM blobs WHERE address = ANY(%b::text[])", (wanted,)
        )
        ids.update((str(a), int(i)) for a, i in rows)
        return ids
    for i in range(0, len(wanted), _IN):
        part = tuple(wanted[i : i + _IN])
        sql = f"SELECT address, id FROM blobs WHERE address IN ({','.join('?' * len(part))})"
        ids.update((str(a), int(n)) for a, n in driver_rows(conn, sql, part))
    return ids


#: The id of a blob that is not stored: it fails the foreign key, as its address did.
_NO_ID = -1


def _insert_roots(
    conn: Connection,
    root: str,
    addresses: Sequence[str],
    fresh: set[str] | frozenset[str] = frozenset(),
    ids: dict[str, int] | None = None,
) -> list[str]:
    """Root ``addresses`` under ``root``; return those the root did not hold (sorted).

    Addresses in ``fresh`` (blobs this transaction inserted) cannot be rooted yet: on
    PostgreSQL many of them go by COPY (:func:`_fresh_copy`). The rows name the blobs' ids
    (:func:`blob_ids`; ``ids`` caches them for the transaction).
    """
    ids = blob_ids(conn, addresses, ids)
    names = {ids[a]: a for a in addresses if a in ids}
    if conn.dialect.name == "postgresql":
        bulk = [a for a in addresses if a in fresh]
        if len(bulk) >= COPY_MIN_ROWS and _fresh_copy(
            conn, "roots", ("name", "blob"), [(root, ids.get(a, _NO_ID)) for a in bulk]
        ):
            rest = [a for a in addresses if a not in fresh]
            return sorted(bulk + (_insert_roots(conn, root, rest, ids=ids) if rest else []))
        rows = driver_rows(
            conn,
            "INSERT INTO roots (name, blob) SELECT %s, b FROM unnest(%b::bigint[]) AS t(b)"
            " ON CONFLICT DO NOTHING RETURNING blob",
            (root, [ids.get(a, _NO_ID) for a in addresses]),
        )
        return sorted(names[int(r[0])] for r in rows)
    new: list[str] = []
    bulk = [a for a in addresses if a in fresh]
    if len(bulk) >= _IN and _sqlite_fresh_roots(conn, root, [ids.get(a, _NO_ID) for a in bulk]):
        new, addresses = bulk, [a for a in addresses if a not in fresh]
    for i in range(0, len(addresses), _IN):
        part = addresses[i : i + _IN]
        sql = (
            "INSERT INTO roots (name, blob) VALUES "
            + ", ".join(["(?, ?)"] * len(part))
            + " ON CONFLICT DO NOTHING RETURNING blob"
        )
        params = tuple(v for a in part for v in (root, ids.get(a, _NO_ID)))
        new += [names[int(r[0])] for r in driver_rows(conn, sql, params)]
    return sorted(new)


def _sqlite_fresh_roots(conn: Connection, root: str, blob_ids: list[int]) -> bool:
    """SQLite: root fresh blobs by one ``executemany``; False (nothing written) unless all new.

    See :func:`evstore.db.engine.executemany_all_or_none`.
    """
    sql = "INSERT INTO roots (name, blob) VALUES (?, ?) ON CONFLICT DO NOTHING"
    return executemany_all_or_none(conn, sql, [(root, i) for i in blob_ids]) is True


def _fresh_copy(
    conn: Connection, table: str, columns: tuple[str, str], rows: list[tuple[Any, Any]]
) -> bool:
    """PostgreSQL: COPY the root or lease rows of fresh blobs inside a savepoint.

    Returns False, the savepoint rolled back, on a duplicate key (which a fresh blob cannot
    have; the caller then takes the checked path): never a wrong row, never a failed write.
    """
    import psycopg

    types = ("varchar", "int8") if table == "roots" else ("int8", "timestamptz")
    try:
        with conn.begin_nested():
            copy_rows(conn, table, columns, types, rows)
        return True
    except sa.exc.IntegrityError as exc:
        if isinstance(exc.orig, psycopg.errors.UniqueViolation):
            return False
        raise


def _extend(conn: Connection, task: Pending, addresses: Sequence[str]) -> None:
    """Extend the leases of ``addresses`` to ``task.expires`` (one statement).

    A lease is only ever lengthened, and only rewritten when less than half of it remains:
    every write leaves at least half a lease ahead of what it found or stored, and an
    object written again and again (a shared source) costs no row update each time.
    """
    task.leased.update(addresses)
    if not addresses or task.lease_seconds <= 0:
        return  # a zero lease protects nothing: no row needed
    half = task.now + _dt.timedelta(seconds=task.lease_seconds / 2)
    ids = blob_ids(conn, addresses, task.ids)
    if conn.dialect.name == "postgresql":
        bulk = [a for a in addresses if a in task.fresh]
        if len(bulk) >= COPY_MIN_ROWS and _fresh_copy(
            conn,
            "leases",
            ("blob", "expires_at"),
            [(ids.get(a, _NO_ID), task.expires) for a in bulk],
        ):
            addresses = [a for a in addresses if a not in task.fresh]
            if not addresses:
                return
        driver_rows(
            conn,
            "INSERT INTO leases (blob, expires_at) SELECT b, %s FROM unnest(%b::bigint[])"
            " AS t(b) ON CONFLICT (blob) DO UPDATE SET expires_at = excluded.expires_at"
            " WHERE leases.expires_at < %s",
            (task.expires, [ids.get(a, _NO_ID) for a in addresses], half),
        )
        return
    stamp, when = sql_time(conn, task.expires), sql_time(conn, half)
    driver_rows(
        conn,
        "INSERT INTO leases (blob, expires_at) VALUES (?, ?) ON CONFLICT (blob)"
        " DO UPDATE SET expires_at = excluded.expires_at WHERE leases.expires_at < ?",
        [(ids.get(a, _NO_ID), stamp, when) for a in addresses],
        many=True,
    )


def cap_leases(conn: Connection, seconds: int) -> int:
    """End every lease at most ``seconds`` from now: ``gc.lease-seconds`` was set to it.

    Called in the transaction that writes the setting, so the setting means what it says
    for leases taken before it too: with 0, everything only a lease protected is collectable
    at once (README, docs/design.md#retention-and-garbage-collection). A write that found or
    stored an object and has not committed still holds its row (:func:`hold`), so shortening
    a lease never lets the collector take an object under a write.

    Returns:
        How many leases were shortened.
    """
    until = db_now(conn) + _dt.timedelta(seconds=max(0, int(seconds)))
    stamp = sql_time(conn, until)
    mark = "%s" if conn.dialect.name == "postgresql" else "?"
    result = conn.exec_driver_sql(
        f"UPDATE leases SET expires_at = {mark} WHERE expires_at > {mark}", (stamp, stamp)
    )
    return int(result.rowcount or 0)


def _present_locked(conn: Connection, addresses: Sequence[str], ids: dict[str, int]) -> set[str]:
    """Which of ``addresses`` are stored, each row locked against deletion until the commit.

    Their ids go into ``ids`` (the same lookup).
    """
    if conn.dialect.name == "postgresql":
        rows = driver_rows(
            conn,
            "SELECT address, id FROM blobs WHERE address = ANY(%b) ORDER BY address FOR KEY SHARE",
            (list(addresses),),
        )
    else:
        rows = []
        for i in range(0, len(addresses), _IN):
            part = tuple(addresses[i : i + _IN])
            sql = f"SELECT address, id FROM blobs WHERE address IN ({','.join('?' * len(part))})"
            rows += driver_rows(conn, sql, part)
    ids.update((str(a), int(n)) for a, n in rows)
    return {str(r[0]) for r in rows}


def hold(conn: Connection, addresses: Iterable[str]) -> list[str]:
    """Lock the stored blobs among ``addresses``, extend their leases; return the absent ones.

    Called by a write before it refers to objects (edges), and by an upload's existence check
    (evstore.retention.ops ``missing``). PostgreSQL: ``SELECT ... FOR KEY SHARE`` holds each row
    until the commit, so the collector (``FOR UPDATE SKIP LOCKED``) cannot delete it; a row
    the collector deleted first is not returned. SQLite: one writer at a time, so the rows
    found stay until the commit.

    Returns:
        The addresses (64 hex) not stored, sorted.
    """
    wanted = sorted(set(addresses))
    if not wanted:
        return []
    task = pending(conn)
    # A blob this transaction stored or found stored is present and held already (its row
    # is this transaction's, or locked by the lookup that found it: :func:`note_blobs`);
    # its lease is taken at the commit with the rest. Only the others are looked up.
    rest = [a for a in wanted if a not in task.blobs]
    present = _present_locked(conn, rest, task.ids) if rest else set()
    _extend(conn, task, sorted(present - task.leased))
    return [a for a in rest if a not in present]


def record(
    conn: Connection,
    action: str,
    *,
    root: str | None = None,
    addresses: Sequence[str] = (),
    detail: dict[str, Any] | None = None,
    details: Sequence[dict[str, Any]] | None = None,
    now: _dt.datetime | None = None,
) -> list[dict[str, Any]]:
    """Write retention history rows (the one place retain, release and collection record).

    One row per address (or one row without address when ``addresses`` is empty), with the
    actor of the current context (:data:`ACTOR`) and the database's time; then every
    function in :data:`HISTORY_HOOKS` is called with the same events, in this transaction.

    Args:
        conn: the write transaction of the operation recorded.
        action: ``retain``, ``release`` or ``collect``.
        root: the root acted on (None for a collection).
        addresses: the objects (64 hex).
        detail: JSON-ready facts shared by every row.
        details: JSON-ready facts per address (instead of ``detail``).
        now: the event time (default: :func:`db_now`).

    Returns:
        The events written: ``{"at", "actor", "action", "root", "address", "detail"}``.
    """
    at = now or db_now(conn)
    actor = ACTOR.get()
    per = list(details) if details is not None else [detail or {}] * max(1, len(addresses))
    rows = [
        {
            "at": at,
            "actor": actor,
            "action": action,
            "root": root,
            "address": a,
            "detail": json.dumps(d, sort_keys=True),
        }
        for a, d in zip(list(addresses) or [None], per, strict=True)  # type: ignore[list-item]
    ]
    conn.execute(sa.insert(retention_history), rows)
    events = [{**r, "detail": d} for r, d in zip(rows, per, strict=True)]
    for hook in HISTORY_HOOKS:
        hook(conn, events)
    return events
