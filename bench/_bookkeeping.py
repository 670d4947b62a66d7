"""The rows every accepted write adds besides its content, written by a raw ceiling.

Since issue 12 (retention) and issue 13 (the log), a write that stores a blob or accepts an
artifact also writes, in the same transaction:

* ``leases``: one row per blob it stored, expiring ``gc.lease-seconds`` (3600) from now;
* ``roots``: one row per object it roots under ``default`` (the artifacts an ingest
  accepted, or the blobs a put stored);
* ``log_entries``: one RFC 8785 entry per accepted write (``put`` or ``ingest``, docs/log.md);
* ``log_nodes``: the complete subtrees those leaves complete (RFC 9162 section 2.1).

Issue 16 asks that a ceiling write the same rows as the store, so a ratio compares the same
work. :func:`write_bookkeeping` does that on a raw driver connection, inside the caller's open
transaction: it reads the log's size and frontier (PostgreSQL: after the log's advisory lock,
which keeps indices dense under concurrent writers, exactly as the store does), builds the
entries with ``json.dumps`` (for these ASCII strings and one integer the same bytes as RFC
8785), hashes leaves and nodes with ``hashlib`` (SHA-256, RFC 9162 2.1.1) and inserts each
table with one ``executemany`` (SQLite) or one binary ``COPY`` (PostgreSQL). It does no
existence lookups: every row is new on a fresh store. Since schema revision 0011 the root,
lease and log rows name each blob by its ``blobs.id``, which it reads by address in one
statement (per 500 on SQLite), as the store does.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Sequence
from typing import Any

__all__ = ["LEASE_SECONDS", "LOG_LOCK", "Write", "write_bookkeeping"]

#: The store's default ``gc.lease-seconds``.
LEASE_SECONDS = 3600
#: The advisory lock the store's log append takes on PostgreSQL (store/objects/log_entries.py).
LOG_LOCK = 7403012513

#: One accepted write: (op, address hex, sha256 hex, size in bytes, kind or None).
Write = tuple[str, str, str, int, "str | None"]

_COPY_TYPES = {
    "roots": ["varchar", "int8"],
    "leases": ["int8", "timestamptz"],
    "log_entries": ["int8", "varchar", "bytea", "int8"],
    "log_nodes": ["int4", "int8", "bytea"],
}
#: Since schema revision 0011 roots, leases and log entries name a blob by its ``blobs.id``.
_COLUMNS = {
    "roots": "name, blob",
    "leases": "blob, expires_at",
    "log_entries": "idx, address, entry, blob",
    "log_nodes": "level, idx, hash",
}


def _ids(conn: Any, pg: bool, addresses: Sequence[str]) -> dict[str, int]:
    """``address -> blobs.id`` of ``addresses`` (stored in this transaction), by driver."""
    cur = conn.cursor()
    out: dict[str, int] = {}
    if pg:
        cur.execute("SELECT address, id FROM blobs WHERE address = ANY(%s)", (list(addresses),))
        out.update(cur.fetchall())
        return out
    for i in range(0, len(addresses), 500):
        part = list(addresses[i : i + 500])
        cur.execute(
            f"SELECT address, id FROM blobs WHERE address IN ({','.join('?' * len(part))})", part
        )
        out.update(cur.fetchall())
    return out


def _entry(op: str, address: str, sha256: str, size: int, kind: str | None, at: str) -> bytes:
    obj: dict[str, Any] = {
        "v": 1,
        "op": op,
        "address": "blake3:" + address,
        "sha256": "sha256:" + sha256,
        "size": size,
        "accepted_at": at,
    }
    if kind is not None:
        obj["kind"] = kind
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _head(conn: Any, pg: bool) -> tuple[int, dict[tuple[int, int], bytes]]:
    """The log's size and the stored hashes of its frontier subtrees."""
    mark = "%s" if pg else "?"
    cur = conn.cursor()
    cur.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM log_entries")
    size = int(cur.fetchone()[0])
    keys = [(level, (size >> level) - 1) for level in range(size.bit_length()) if size >> level & 1]
    if not keys:
        return size, {}
    term = f"(level = {mark} AND idx = {mark})"
    cur.execute(
        "SELECT level, idx, hash FROM log_nodes WHERE " + " OR ".join([term] * len(keys)),
        tuple(v for k in keys for v in k),
    )
    return size, {(int(lv), int(i)): bytes(h) for lv, i, h in cur.fetchall()}


def _nodes(
    size: int, found: dict[tuple[int, int], bytes], entries: Sequence[bytes]
) -> list[tuple[int, int, bytes]]:
    """The complete subtrees the new leaves complete: ``(level, idx, SHA-256)`` rows."""
    rows = []
    for offset, data in enumerate(entries):
        index, level = size + offset, 0
        digest = hashlib.sha256(b"\x00" + data).digest()
        found[(0, index)] = digest
        rows.append((0, index, digest))
        while index & 1:
            digest = hashlib.sha256(b"\x01" + found[(level, index - 1)] + digest).digest()
            level, index = level + 1, index >> 1
            found[(level, index)] = digest
            rows.append((level, index, digest))
    return rows


def _insert(conn: Any, pg: bool, table: str, rows: list[tuple[Any, ...]]) -> None:
    if not rows:
        return
    if not pg:
        marks = ", ".join("?" * len(rows[0]))
        conn.executemany(f"INSERT INTO {table} ({_COLUMNS[table]}) VALUES ({marks})", rows)
        return
    with (
        conn.cursor() as cur,
        cur.copy(f"COPY {table} ({_COLUMNS[table]}) FROM STDIN (FORMAT BINARY)") as copy,
    ):
        copy.set_types(_COPY_TYPES[table])
        for r in rows:
            copy.write_row(r)


def write_bookkeeping(
    conn: Any,
    backend: str,
    writes: Sequence[Write],
    *,
    leased: Sequence[str] | None = None,
    rooted: Sequence[str] | None = None,
    root: str = "default",
) -> None:
    """Write the leases, roots, log entries and log nodes of ``writes`` in the open transaction.

    Args:
        conn: a ``sqlite3`` connection inside ``BEGIN IMMEDIATE``, or a psycopg connection
            inside its transaction.
        backend: ``"sqlite"`` or ``"postgresql"``.
        writes: the accepted writes, in the order the store appends them: ``("put", address,
            sha256, size, None)`` per stored blob, ``("ingest", address, sha256, size, kind)``
            per accepted artifact (addresses and digests as 64 hex).
        leased: the blob addresses leased (default: every address in ``writes``); the blobs an
            ingest stores without a log entry of their own (an artifact's bytes) are leased too.
        rooted: the addresses rooted (default: the ingested ones, else the put ones).
        root: the root name.
    """
    pg = backend == "postgresql"
    now = _dt.datetime.now(_dt.UTC)
    expires = now + _dt.timedelta(seconds=LEASE_SECONDS)
    stamp = now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if rooted is None:
        ingested = [w[1] for w in writes if w[0] == "ingest"]
        rooted = ingested or [w[1] for w in writes]
    if leased is None:
        leased = [w[1] for w in writes]
    when: Any = expires if pg else expires.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")
    ids = _ids(conn, pg, sorted(set(rooted) | set(leased) | {w[1] for w in writes}))
    _insert(conn, pg, "roots", [(root, ids[a]) for a in sorted(set(rooted))])
    _insert(conn, pg, "leases", [(ids[a], when) for a in sorted(set(leased))])
    if pg:
        conn.execute(f"SELECT pg_advisory_xact_lock({LOG_LOCK})")
    size, found = _head(conn, pg)
    entries = [_entry(op, a, s, n, k, stamp) for op, a, s, n, k in writes]
    _insert(
        conn,
        pg,
        "log_entries",
        [
            (size + i, w[1], e, ids[w[1]])
            for i, (w, e) in enumerate(zip(writes, entries, strict=True))
        ],
    )
    _insert(conn, pg, "log_nodes", _nodes(size, found, entries))
