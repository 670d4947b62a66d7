"""Recording log entries in the transaction that accepted the write; reading the tree.

Every accepted write (a new blob by ``put``, a new ``(address, kind)`` by ``ingest``; later
retain, release and delete) records one *entry* with :func:`append_entry`. The entries of a
transaction are written when it is about to commit (a :func:`evstore.db.engine.commit_hook`), in one
insert into ``log_queue`` (:func:`enqueue_entries`), inside that transaction and under no
lock: no write is acknowledged without its entry, and a transaction that rolls back leaves
none. The integrator (store/log/integrate.py) later gives queued entries their dense indices
and adds them, with the complete subtrees they complete (RFC 9162 section 2.1), to
``log_entries`` and ``log_nodes`` through :func:`append_entries`, under the log's lock
(:data:`LOG_LOCK` on PostgreSQL, SQLite's one writer).

An entry is the RFC 8785 bytes of (docs/log.md)::

    {"accepted_at": "2026-12-02T01:02:03.456789Z", "address": "blake3:<hex>",
     "kind": "<kind>" (ingest), "op": "put"|"ingest"|"retain"|"release"|"delete",
     "root": "<root>" (retain, release), "sha256": "sha256:<hex>", "size": <bytes>, "v": 1}

Reading the tree (roots and proofs at any size) batches its O(log n) subtree lookups into
one query (:func:`fetch_subtrees`).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.canonical import dumps, dumps_many, loads
from ..core.digests import Digest
from ..core.errors import error
from ..core.times import utc_text
from ..db.engine import COPY_MIN_ROWS, commit_hook, copy_rows, driver_rows
from ..db.tables import blobs, log_entries, retired_blob_ids
from ..tlog import merkle
from .leases import HISTORY_HOOKS, ROOTED_HOOKS

__all__ = [
    "ENTRY_VERSION",
    "LOG_LOCK",
    "OPS",
    "append_entries",
    "append_entry",
    "append_puts",
    "consistency_at",
    "enqueue_entries",
    "entries_naming",
    "entry_bytes",
    "fetch_subtrees",
    "inclusion_at",
    "log_history",
    "log_rooted",
    "log_size",
    "parse_entry",
    "root_at",
    "spill_entries",
]

#: The operations an entry names.
OPS = ("put", "ingest", "retain", "release", "delete")
#: The entry format version (the ``v`` member).
ENTRY_VERSION = 1
#: The PostgreSQL advisory lock the integrator (and checkpoint signing) holds to its commit.
LOG_LOCK = 7403012513

_HOOK = "log"
_ENTRY_TYPES = ("int8", "varchar", "bytea", "int8")
_NODE_TYPES = ("int4", "int8", "bytea")
_FIELDS = {"accepted_at", "address", "kind", "op", "root", "sha256", "size", "v"}


def _hex(value: str) -> str:
    return value.split(":", 1)[1] if ":" in value else value


def entry_bytes(
    op: str,
    address: str,
    sha256: str,
    size: int,
    accepted_at: str,
    *,
    kind: str | None = None,
    root: str | None = None,
) -> bytes:
    """The RFC 8785 bytes of one log entry (the format is in the module docstring).

    Args:
        op: one of :data:`OPS`.
        address: the object's BLAKE3 address, 64 hex with or without ``blake3:``.
        sha256: its SHA-256, 64 hex with or without ``sha256:``.
        size: its length in bytes.
        accepted_at: the accepting time (:func:`~evstore.core.times.utc_text`); an
            operator's claim, never part of any address.
        kind: the artifact's kind (``ingest``), else None.
        root: the root name (``retain``, ``release``), else None.

    Raises:
        ValueError: an unknown ``op``.
    """
    return dumps(_entry(op, address, sha256, size, accepted_at, kind, root))


def _entry(
    op: str,
    address: str,
    sha256: str,
    size: int,
    accepted_at: str,
    kind: str | None,
    root: str | None,
) -> dict[str, Any]:
    """The entry object :func:`entry_bytes` encodes (raises ValueError for an unknown op)."""
    if op not in OPS:
        raise ValueError(f"unknown log operation {op!r}")
    obj: dict[str, Any] = {
        "v": ENTRY_VERSION,
        "op": op,
        "address": "blake3:" + _hex(address),
        "sha256": "sha256:" + _hex(sha256),
        "size": int(size),
        "accepted_at": accepted_at,
    }
    if kind is not None:
        obj["kind"] = kind
    if root is not None:
        obj["root"] = root
    return obj


def parse_entry(data: bytes) -> dict[str, Any]:
    """The entry object of ``data``, checked: canonical RFC 8785 bytes of the documented shape.

    Raises:
        InputError: ``log.entry-malformed`` naming what is wrong.
    """

    def bad(why: str) -> Exception:
        return error("log.entry-malformed", f"the log entry {why}")

    plain = _PLAIN_ENTRY.fullmatch(data)
    if plain is not None:  # canonical and well formed by construction (issue 29)
        return _plain_entry(plain)
    try:
        obj = loads(data)
    except Exception:  # any reader fault: the entry is not JSON
        raise bad("is not JSON") from None
    if not isinstance(obj, dict) or dumps(obj) != bytes(data):
        raise bad("is not a canonical (RFC 8785) JSON object")
    if set(obj) - _FIELDS or obj.get("v") != ENTRY_VERSION or obj.get("op") not in OPS:
        raise bad(f"has unknown members or version (known: {', '.join(sorted(_FIELDS))})")
    for name, prefix in (("address", "blake3:"), ("sha256", "sha256:")):
        value = obj.get(name)
        if not (isinstance(value, str) and value.startswith(prefix) and len(value) == 71):
            raise bad(f"has no valid {name}")
    if type(obj.get("size")) is not int or obj["size"] < 0:
        raise bad("has no valid size")
    if not isinstance(obj.get("accepted_at"), str):
        raise bad("has no accepted_at time")
    return obj


#: A JSON string whose canonical form is its text: printable ASCII without quote or backslash.
_PLAIN_TEXT = rb'"([ !#-\[\]-~]*)"'
#: The canonical bytes of a well-formed entry whose strings are plain and whose size has at
#: most 15 digits: what every writer of this module produces for ASCII kinds and roots. A
#: match is canonical (RFC 8785 writes such members exactly so, in this key order) and
#: passes every check of :func:`parse_entry`, so the check of the log skips the strict
#: reader and writer for it (~9 us an entry); any other bytes take the full path.
_PLAIN_ENTRY = re.compile(
    rb'\{"accepted_at":' + _PLAIN_TEXT + rb',"address":"(blake3:[0-9a-f]{64})"'
    rb'(?:,"kind":' + _PLAIN_TEXT + rb')?,"op":"(' + "|".join(OPS).encode() + rb')"'
    rb'(?:,"root":' + _PLAIN_TEXT + rb')?,"sha256":"(sha256:[0-9a-f]{64})"'
    rb',"size":(0|[1-9][0-9]{0,14}),"v":' + str(ENTRY_VERSION).encode() + rb"\}"
)


def _plain_entry(m: re.Match[bytes]) -> dict[str, Any]:
    """The entry object of a :data:`_PLAIN_ENTRY` match, as the strict reader returns it."""
    at, address, kind, op, root, sha256, size = m.groups()
    obj: dict[str, Any] = {"accepted_at": at.decode(), "address": address.decode()}
    if kind is not None:
        obj["kind"] = kind.decode()
    obj["op"] = op.decode()
    if root is not None:
        obj["root"] = root.decode()
    obj.update(sha256=sha256.decode(), size=int(size), v=ENTRY_VERSION)
    return obj


@dataclass
class _Pending:
    """The entries one transaction records, appended by its commit hook.

    ``items`` are the entries not written yet. A transaction that records many (a put of
    many blobs) writes them as it goes with :func:`spill_entries`, keeping one chunk's in
    memory: on SQLite straight into ``log_queue`` under the batch number it takes at the
    first spill (writers are serialized, so no other batch can come between); on PostgreSQL
    into a temporary table, moved into ``log_queue`` under one batch number at the commit
    (the number must be taken by the transaction's last statement: docs/log.md,
    "Sequencing and integration"). Every entry of the transaction has one accepting time.
    """

    items: list[tuple[str, str, str, int, str | None, str | None]] = field(default_factory=list)
    accepted_at: str | None = None
    written: int = 0
    batch: int | None = None
    staged: bool = False

    def __call__(self, conn: Connection) -> None:
        if self.written:
            self.spill(conn)
            if self.staged:
                driver_rows(conn, _UNSTAGE_PG)
            return
        if not self.items:
            return
        enqueue_entries(conn, list(zip(self._addresses(), self._encoded(), strict=True)))

    def spill(self, conn: Connection) -> None:
        """Write :attr:`items` now (see the class docstring) and forget them."""
        if not self.items:
            return
        rows = [
            (self.written + i, a, d)
            for i, (a, d) in enumerate(zip(self._addresses(), self._encoded(), strict=True))
        ]
        if conn.dialect.name == "postgresql":
            if not self.staged:
                driver_rows(conn, _STAGE_PG)
                self.staged = True
            if len(rows) >= COPY_MIN_ROWS:
                copy_rows(conn, _STAGE, ("pos", "address", "entry"), _QUEUE_TYPES[1:], rows)
            else:
                driver_rows(
                    conn,
                    f"INSERT INTO {_STAGE} (pos, address, entry)"
                    " SELECT * FROM unnest(%b::integer[], %b::varchar[], %b::bytea[])",
                    ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]),
                )
        else:
            if self.batch is None:
                self.batch = int(driver_rows(conn, _NEXT_BATCH_SQLITE)[0][0])
            driver_rows(
                conn,
                "INSERT INTO log_queue (batch, pos, address, entry) VALUES (?, ?, ?, ?)",
                [(self.batch, *r) for r in rows],
                many=True,
            )
        self.written += len(rows)
        self.items.clear()

    def _addresses(self) -> list[str]:
        return [_hex(it[1]) for it in self.items]

    def _encoded(self) -> list[bytes]:
        if self.accepted_at is None:
            self.accepted_at = utc_text(_dt.datetime.now(_dt.UTC))
        now = self.accepted_at
        direct = [_plain_bytes(op, a, s, n, now, k, r) for op, a, s, n, k, r in self.items]
        rest: Iterable[bytes] = ()
        if None in direct:  # one canonical form for the rest, one domain pass (dumps_many)
            objs = [
                _entry(*it[:4], now, *it[4:])
                for it, d in zip(self.items, direct, strict=True)
                if d is None
            ]
            rest = dumps_many(objs)
        others = iter(rest)
        return [next(others) if d is None else d for d in direct]


def spill_entries(conn: Connection) -> None:
    """Write the entries the transaction on ``conn`` recorded so far, and forget them.

    For a write that records many entries (a put of many blobs, between its chunks): its
    memory then holds one chunk's entries. The guarantees stay those of
    :func:`enqueue_entries`: one batch for the transaction, numbered at its commit on
    PostgreSQL, consecutive positions in recording order, nothing left by a rollback.
    """
    pending: _Pending = commit_hook(conn, _HOOK, _Pending)
    pending.spill(conn)


#: The temporary table a PostgreSQL transaction spills its entries to (emptied at commit).
_STAGE = "evstore_log_stage"
_STAGE_PG = (
    f"CREATE TEMP TABLE IF NOT EXISTS {_STAGE} (pos integer, address varchar(64),"
    " entry bytea) ON COMMIT DELETE ROWS"
)
#: The spilled entries into ``log_queue`` under one batch number, taken by this statement.
_UNSTAGE_PG = (
    "WITH b AS MATERIALIZED (SELECT nextval('log_queue_batches') AS n)"
    " INSERT INTO log_queue (batch, pos, address, entry)"
    f" SELECT b.n, s.pos, s.address, s.entry FROM b, {_STAGE} AS s"
)
_NEXT_BATCH_SQLITE = "SELECT COALESCE(MAX(batch), 0) + 1 FROM log_queue"


#: Text whose JSON string is its text between quotes (:data:`_PLAIN_TEXT`'s characters).
_PLAIN_STR = re.compile(r"[ !#-\[\]-~]*")
#: Hex digits of a digest (the lowercase form every writer gives).
_HEX64 = re.compile(r"[0-9a-f]{64}")


def _plain_bytes(
    op: str,
    address: str,
    sha256: str,
    size: int,
    accepted_at: str,
    kind: str | None,
    root: str | None,
) -> bytes | None:
    """The RFC 8785 bytes of :func:`_entry`'s object by formatting, or None (not plain).

    The members in RFC 8785 order (the key order of :data:`_PLAIN_ENTRY`) with plain
    strings (printable ASCII without quote or backslash: their JSON form is the text in
    quotes), lowercase hex digests and a size of at most 15 digits are written directly
    (about 1 us against ~8 us for the canonical writer); anything else returns None and
    goes through the writer. tests/store/test_log_integrate.py checks both agree.
    """
    a, h = _hex(address), _hex(sha256)
    if (
        op not in OPS
        or type(size) is not int
        or not 0 <= size < 10**15
        or not _HEX64.fullmatch(a)
        or not _HEX64.fullmatch(h)
        or not _PLAIN_STR.fullmatch(accepted_at)
        or (kind is not None and not _PLAIN_STR.fullmatch(kind))
        or (root is not None and not _PLAIN_STR.fullmatch(root))
    ):
        return None
    k = "" if kind is None else f',"kind":"{kind}"'
    r = "" if root is None else f',"root":"{root}"'
    return (
        f'{{"accepted_at":"{accepted_at}","address":"blake3:{a}"{k},"op":"{op}"{r},'
        f'"sha256":"sha256:{h}","size":{size},"v":{ENTRY_VERSION}}}'
    ).encode("ascii")


_QUEUE_TYPES = ("int8", "int4", "varchar", "bytea")
#: PostgreSQL, one entry (an ingest's usual case): the batch number taken in the row itself.
#: A third of the arrays statement's time (no unnest, no CTE; issue 26, docs/benchmarks.md).
_ENQUEUE_ONE_PG = (
    "INSERT INTO log_queue (batch, pos, address, entry)"
    " VALUES (nextval('log_queue_batches'), 0, %s, %b)"
)
#: PostgreSQL: one batch number for the whole insert (a materialized CTE runs nextval once).
_ENQUEUE_PG = (
    "WITH b AS MATERIALIZED (SELECT nextval('log_queue_batches') AS n)"
    " INSERT INTO log_queue (batch, pos, address, entry)"
    " SELECT b.n, u.pos, u.address, u.entry FROM b,"
    " unnest(%b::integer[], %b::varchar[], %b::bytea[]) AS u(pos, address, entry)"
)


#: SQLite: batches of at most this many entries are queued by one statement (3 variables each).
_SQLITE_ONE_STATEMENT = 100


def enqueue_entries(conn: Connection, entries: Sequence[tuple[str, bytes]]) -> None:
    """Record ``(address hex, entry bytes)`` pairs in ``log_queue`` as one batch; no lock.

    The write transaction's part of the log (docs/log.md, "Sequencing and integration"):
    the entries commit with the write or not at all, and get their indices later from the
    integrator (store/log/integrate.py), in batch order then recording order. On PostgreSQL
    the batch number is taken from the ``log_queue_batches`` sequence by this statement, the
    transaction's last before its commit; SQLite runs one writer at a time, so one more than
    the largest queued batch orders batches as their transactions commit. One statement
    (one round trip) on both backends, except PostgreSQL's COPY of 256 entries or more
    (2) and SQLite batches of over 100 entries (2).
    """
    if not entries:
        return
    if conn.dialect.name == "postgresql":
        if len(entries) == 1:
            driver_rows(conn, _ENQUEUE_ONE_PG, entries[0])
            return
        if len(entries) >= COPY_MIN_ROWS:
            batch = int(driver_rows(conn, "SELECT nextval('log_queue_batches')")[0][0])
            rows = [(batch, i, a, d) for i, (a, d) in enumerate(entries)]
            copy_rows(conn, "log_queue", ("batch", "pos", "address", "entry"), _QUEUE_TYPES, rows)
            return
        columns = (
            list(range(len(entries))),
            [a for a, _ in entries],
            [d for _, d in entries],
        )
        driver_rows(conn, _ENQUEUE_PG, columns)
        return
    if len(entries) <= _SQLITE_ONE_STATEMENT:
        # One statement: the batch number is an uncorrelated subquery, run once, and the
        # rows are read (into a temporary table: the target is read) before any is written.
        values = ", ".join(["(?, ?, ?)"] * len(entries))
        driver_rows(
            conn,
            "INSERT INTO log_queue (batch, pos, address, entry)"
            " SELECT (SELECT COALESCE(MAX(batch), 0) + 1 FROM log_queue), v.column1,"
            f" v.column2, v.column3 FROM (VALUES {values}) AS v",
            tuple(x for i, (a, d) in enumerate(entries) for x in (i, a, d)),
        )
        return
    top = driver_rows(conn, _NEXT_BATCH_SQLITE)[0][0]
    driver_rows(
        conn,
        "INSERT INTO log_queue (batch, pos, address, entry) VALUES (?, ?, ?, ?)",
        [(int(top), i, a, d) for i, (a, d) in enumerate(entries)],
        many=True,
    )


def append_entry(
    conn: Connection,
    *,
    op: str,
    address: str,
    sha256: str,
    size: int,
    kind: str | None = None,
    root: str | None = None,
) -> None:
    """Record one log entry for the write transaction on ``conn``; queued at its commit.

    Call it from inside :meth:`evstore.db.engine.Database.run_transaction` (or
    ``Store.transaction``) for every accepted write that changes what the store holds: the
    entries are queued (:func:`enqueue_entries`), in recording order, just before that
    transaction commits, with one accepting time; the integrator indexes them later. In a
    transaction that rolls back (or a validate run) nothing is recorded.

    Args:
        conn: the open write transaction.
        op: ``put``, ``ingest``, ``retain``, ``release`` or ``delete`` (:data:`OPS`).
        address: the object's address, 64 hex or ``blake3:<hex>``.
        sha256: its SHA-256, 64 hex or ``sha256:<hex>``.
        size: its size in bytes.
        kind: the kind (ingest; may be given for the others).
        root: the root name (retain, release).

    Raises:
        ValueError: an unknown ``op``.
    """
    if op not in OPS:
        raise ValueError(f"unknown log operation {op!r}")
    pending: _Pending = commit_hook(conn, _HOOK, _Pending)
    pending.items.append((op, address, sha256, int(size), kind, root))


def append_puts(conn: Connection, digests: Sequence[Digest]) -> None:
    """Record a ``put`` entry for each of ``digests`` (:func:`append_entry`, many at once).

    Args:
        conn: the open write transaction.
        digests: the :class:`~evstore.core.digests.Digest` of each blob the transaction stored
            new, in recording order.
    """
    if digests:
        pending: _Pending = commit_hook(conn, _HOOK, _Pending)
        pending.items.extend(("put", d.blake3, d.sha256, d.size, None, None) for d in digests)


#: Retention history actions and the log operation each appends.
_HISTORY_OPS = {"retain": "retain", "release": "release", "collect": "delete"}


def _facts(conn: Connection, addresses: Sequence[str]) -> dict[str, tuple[str, int]]:
    """``address -> (sha256, size)`` of the stored blobs among ``addresses`` (one query)."""
    out: dict[str, tuple[str, int]] = {}
    mark = "?" if conn.dialect.name == "sqlite" else "%s"
    for i in range(0, len(addresses), 500):
        part = list(addresses[i : i + 500])
        sql = (
            "SELECT address, sha256, size FROM blobs WHERE address IN ("
            + ", ".join([mark] * len(part))
            + ")"
        )
        out.update({a: (h, int(n)) for a, h, n in conn.exec_driver_sql(sql, tuple(part))})
    return out


def log_history(conn: Connection, events: list[dict[str, Any]]) -> None:
    """Append ``retain``/``release``/``delete`` entries for retention history events.

    Registered in ``evstore.objects.leases.HISTORY_HOOKS``: retain, release and collection record
    their events in the transaction that makes them, before a collected blob row is deleted,
    so each object's SHA-256 and size are read here. An event naming no stored blob appends
    nothing.
    """
    wanted = [e for e in events if e.get("action") in _HISTORY_OPS and e.get("address")]
    facts = _facts(conn, [str(e["address"]) for e in wanted]) if wanted else {}
    for e in wanted:
        fact = facts.get(str(e["address"]))
        if fact is not None:
            op, root = _HISTORY_OPS[str(e["action"])], e.get("root")
            append_entry(
                conn, op=op, address=str(e["address"]), sha256=fact[0], size=fact[1], root=root
            )


def log_rooted(conn: Connection, root: str, addresses: list[str]) -> None:
    """Append ``retain`` entries when a write roots already-stored objects under a new root.

    Registered in ``evstore.objects.leases.ROOTED_HOOKS``. An object this transaction stored has
    its ``put``/``ingest`` entry already, so only the others (identical content written
    again under another root) append one.
    """
    pending: _Pending = commit_hook(conn, _HOOK, _Pending)
    fresh = {_hex(item[1]) for item in pending.items}
    rest = [a for a in addresses if a not in fresh]
    facts = _facts(conn, rest) if rest else {}
    for a in rest:
        if a in facts:
            append_entry(
                conn, op="retain", address=a, sha256=facts[a][0], size=facts[a][1], root=root
            )


HISTORY_HOOKS.append(log_history)
ROOTED_HOOKS.append(log_rooted)


class _Recorder:
    """A :class:`~evstore.tlog.merkle.SubtreeSource` that records keys asked, answers zeros."""

    def __init__(self) -> None:
        self.keys: list[tuple[int, int]] = []

    def subtree_hash(self, level: int, index: int) -> bytes:
        self.keys.append((level, index))
        return bytes(merkle.HASH_SIZE)


class _Found:
    """A :class:`~evstore.tlog.merkle.SubtreeSource` over fetched rows; a missing one is damage."""

    def __init__(self, rows: dict[tuple[int, int], bytes]) -> None:
        self.rows = rows

    def subtree_hash(self, level: int, index: int) -> bytes:
        try:
            return self.rows[(level, index)]
        except KeyError:
            raise error(
                "corruption.log",
                f"the log has no stored subtree ({level}, {index})",
                level=level,
                index=index,
            ) from None


def fetch_subtrees(
    conn: Connection, keys: Iterable[tuple[int, int]]
) -> dict[tuple[int, int], bytes]:
    """The stored hashes of complete subtrees ``(level, idx)``, in one query.

    Keys missing from ``log_nodes`` are missing from the result. The query is an OR of
    primary-key equalities, which both backends answer with one index probe per key (a
    row-value ``IN`` list makes SQLite scan).
    """
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    mark = "?" if conn.dialect.name == "sqlite" else "%s"
    term = f"(level = {mark} AND idx = {mark})"
    sql = "SELECT level, idx, hash FROM log_nodes WHERE " + " OR ".join([term] * len(wanted))
    params = tuple(v for key in wanted for v in key)
    return {(int(lv), int(i)): bytes(h) for lv, i, h in conn.exec_driver_sql(sql, params)}


def _batched(conn: Connection, compute: Callable[[merkle.SubtreeSource], Any]) -> Any:
    """Run a merkle computation twice: once to learn the subtrees it reads, once on them."""
    recorder = _Recorder()
    compute(recorder)
    return compute(_Found(fetch_subtrees(conn, recorder.keys)))


def entries_naming(address: str) -> tuple[sa.ColumnElement[bool], ...]:
    """The ``WHERE`` terms selecting the ``log_entries`` rows that name ``address`` (64 hex).

    By the object's ``blobs.id`` (revision 0012's index on ``log_entries.blob``), the address
    compared as well, so an id never stands for another object. Entries added while the
    object was stored are found, and so are those naming it after gc collected it (its id
    stays in ``retired_blob_ids``).
    """
    ids = sa.union(
        sa.select(blobs.c.id).where(blobs.c.address == address),
        sa.select(retired_blob_ids.c.id).where(retired_blob_ids.c.address == address),
    )
    return (log_entries.c.blob.in_(ids), log_entries.c.address == address)


def log_size(conn: Connection) -> int:
    """The number of entries in the log (the next entry's index)."""
    top = conn.exec_driver_sql("SELECT max(idx) FROM log_entries").scalar()
    return 0 if top is None else int(top) + 1


def root_at(conn: Connection, size: int) -> bytes:
    """MTH of the first ``size`` entries from stored subtrees (RFC 9162 2.1.1), one query.

    Raises:
        LogRangeError: ``log.range``; CorruptionError: ``corruption.log`` (a missing node).
    """
    return _batched(conn, lambda nodes: merkle.root(size, nodes))


def inclusion_at(conn: Connection, index: int, size: int) -> list[bytes]:
    """The inclusion proof of entry ``index`` in the tree of ``size`` (RFC 9162 2.1.3.1).

    Raises:
        LogRangeError: ``log.range``; CorruptionError: ``corruption.log``.
    """
    return _batched(conn, lambda nodes: merkle.inclusion_proof(index, size, nodes))


def consistency_at(conn: Connection, old_size: int, new_size: int) -> list[bytes]:
    """The consistency proof from ``old_size`` to ``new_size`` (RFC 9162 2.1.4.1).

    Raises:
        LogRangeError: ``log.range``; CorruptionError: ``corruption.log``.
    """
    return _batched(conn, lambda nodes: merkle.consistency_proof(old_size, new_size, nodes))


def _frontier(size: int) -> list[tuple[int, int]]:
    """The complete subtrees whose concatenation is the tree of ``size`` (left to right)."""
    keys, start = [], 0
    for level in range(size.bit_length() - 1, -1, -1):
        if size >> level & 1:
            keys.append((level, start >> level))
            start += 1 << level
    return keys


def _head_sql(null: str, levels: int = 64) -> str:
    """One query for the log's size ``n`` and its frontier subtrees ``(l, (n >> l) - 1)``."""
    values = ", ".join(f"({lv})" for lv in range(levels))
    return (
        f"WITH lv(level) AS (VALUES {values}),"
        " s(n) AS (SELECT COALESCE(MAX(idx) + 1, 0) FROM log_entries)"
        f" SELECT n, {null} FROM s UNION ALL"
        " SELECT s.n, x.level, x.idx, x.hash FROM s JOIN lv ON ((s.n >> lv.level) & 1) = 1"
        " JOIN log_nodes x ON x.level = lv.level AND x.idx = (s.n >> lv.level) - 1"
    )


_HEAD_SQL = _head_sql("NULL, NULL, NULL")
_HEAD_SQL_PG = _head_sql("CAST(NULL AS integer), CAST(NULL AS bigint), CAST(NULL AS bytea)")


def append_entries(
    conn: Connection, entries: Sequence[tuple[str, bytes]], *, by_blob: bool = True
) -> int:
    """Append ``(address hex, entry bytes)`` pairs now, under the log lock; return the first index.

    One insert of the entries and one of the subtrees they complete. Called by the
    integrator (store/log/integrate.py) and by the migrations that create the log (0007)
    and take its queue away (0010's downgrade); a write transaction queues instead. Each
    entry row records the ``blobs.id`` of its address (or the id gc retired, NULL if it never
    had one), which `prove` looks it up by (revision 0012); the migrations before it pass
    ``by_blob=False``.

    Raises:
        CorruptionError: ``corruption.log`` when a stored frontier subtree is missing.
    """
    pg = conn.dialect.name == "postgresql"
    if pg:
        driver_rows(conn, f"SELECT pg_advisory_xact_lock({LOG_LOCK})")
    # The size and the frontier subtrees it needs, in one statement (after the lock).
    start, found = -1, {}
    for n, level, idx, digest in driver_rows(conn, _HEAD_SQL_PG if pg else _HEAD_SQL):
        start = int(n)
        if level is not None:
            found[(int(level), int(idx))] = bytes(digest)
    nodes = _Found(found)
    missing = set(_frontier(start)) - set(found)
    if missing:
        nodes.subtree_hash(*min(missing))  # corruption.log
    rows: list[tuple[int, int, bytes]] = []
    for offset, (_, data) in enumerate(entries):
        for level, idx, digest in merkle.new_subtrees(
            start + offset, merkle.leaf_hash(data), nodes
        ):
            nodes.rows[(level, idx)] = digest
            rows.append((level, idx, digest))
    if not by_blob:
        _append_address_only(conn, pg, start, entries)
    elif pg:
        ids = _blob_ids(conn, [address for address, _ in entries])
        entry_rows = [
            (start + i, address, data, ids.get(address))
            for i, (address, data) in enumerate(entries)
        ]
        if len(entry_rows) + len(rows) >= COPY_MIN_ROWS:  # no key can exist: COPY
            columns = ("idx", "address", "entry", "blob")
            copy_rows(conn, "log_entries", columns, _ENTRY_TYPES, entry_rows)
            copy_rows(conn, "log_nodes", ("level", "idx", "hash"), _NODE_TYPES, rows)
            return start
        # both inserts in one statement (a data-modifying WITH), arrays unnested
        arrays = [list(c) for c in zip(*entry_rows, strict=True)]
        arrays += [list(c) for c in zip(*rows, strict=True)]
        driver_rows(
            conn,
            "WITH e AS (INSERT INTO log_entries (idx, address, entry, blob)"
            " SELECT * FROM unnest(%b::bigint[], %b::varchar[], %b::bytea[], %b::bigint[]))"
            " INSERT INTO log_nodes (level, idx, hash)"
            " SELECT * FROM unnest(%b::integer[], %b::bigint[], %b::bytea[])",
            tuple(arrays),
        )
        return start
    else:
        driver_rows(
            conn,
            "INSERT INTO log_entries (idx, address, entry, blob) VALUES (?, ?, ?,"
            " COALESCE((SELECT id FROM blobs WHERE address = ?),"
            " (SELECT max(id) FROM retired_blob_ids WHERE address = ?)))",
            [(start + i, a, data, a, a) for i, (a, data) in enumerate(entries)],
            many=True,
        )
    if pg:
        if rows:
            driver_rows(
                conn,
                "INSERT INTO log_nodes (level, idx, hash)"
                " SELECT * FROM unnest(%b::integer[], %b::bigint[], %b::bytea[])",
                tuple(list(c) for c in zip(*rows, strict=True)),
            )
        return start
    driver_rows(conn, "INSERT INTO log_nodes (level, idx, hash) VALUES (?, ?, ?)", rows, many=True)
    return start


def _blob_ids(conn: Connection, addresses: Sequence[str]) -> dict[str, int]:
    """PostgreSQL: ``address -> blobs.id`` of ``addresses``, else the id gc retired (one query)."""
    rows = driver_rows(
        conn,
        "SELECT address, id FROM blobs WHERE address = ANY(%b::text[]) UNION ALL"
        " SELECT address, max(id) FROM retired_blob_ids WHERE address = ANY(%b::text[])"
        " GROUP BY address",
        (list(addresses), list(addresses)),
    )
    out: dict[str, int] = {}
    for a, i in rows:
        out.setdefault(str(a), int(i))  # the stored blob's id first
    return out


def _append_address_only(
    conn: Connection, pg: bool, start: int, entries: Sequence[tuple[str, bytes]]
) -> None:
    """The entry rows of the schema before revision 0012 (no ``blob`` column): its migrations."""
    mark = "%s" if pg else "?"
    driver_rows(
        conn,
        f"INSERT INTO log_entries (idx, address, entry) VALUES ({mark}, {mark}, {mark})",
        [(start + i, address, data) for i, (address, data) in enumerate(entries)],
        many=True,
    )
