"""Blobs: bytes stored by address, read back only after verification.

A blob row holds the size in bytes, the BLAKE3 address and the SHA-256. Blobs of at most
:data:`INLINE_MAX` bytes are stored inline in the row; larger ones are written in
:data:`CHUNK_SIZE` chunks while they are hashed (one pass over exactly the bytes stored, so a
256 MiB blob never has to be held in memory).

Every read verifies size and BLAKE3 before any byte is returned; a mismatch raises
:class:`~evstore.core.errors.CorruptionError` and the bytes are never served. Nothing modifies
stored bytes, except that putting the same content again over a corrupt copy repairs it.

Functions here take an open SQLAlchemy ``Connection`` inside the caller's transaction.
"""

from __future__ import annotations

import operator
import secrets
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.digests import Digest, Hasher, digest_bytes
from ..core.errors import CorruptionError, NotFound
from ..core.refs import ContentRef
from ..core.results import PutResult
from ..db.engine import copy_rows, driver_rows, executemany_all_or_none
from ..db.tables import blob_chunks, blobs
from .leases import note_blobs
from .log_entries import append_entry, append_puts

__all__ = [
    "BlobRow",
    "CHUNK_SIZE",
    "INLINE_MAX",
    "PutResult",
    "as_bytes",
    "compare_digest",
    "existing_rows",
    "insert_ignore",
    "insert_returning",
    "iter_checked",
    "iter_verified",
    "lookup",
    "lookup_sha256_all",
    "put_bytes",
    "put_many",
    "put_stream",
    "read_verified",
    "row_from",
    "verify_stored",
]

#: Largest blob stored inline in its row, in bytes.
INLINE_MAX = 1 << 20
#: Chunk size for larger blobs, in bytes.
CHUNK_SIZE = 1 << 20
_IN_BATCH = 500


@dataclass(frozen=True, slots=True)
class BlobRow:
    """A blob's index row (no bytes): its :class:`Digest` and where its bytes live."""

    digest: Digest
    chunk_set: int | None


def _in_key_order(table: sa.Table, rows: Sequence[dict[str, Any]]) -> list[str]:
    """The primary-key columns of ``table`` present in ``rows``."""
    cols = rows[0]
    return [c.name for c in table.primary_key.columns if c.name in cols]


def _sorted_rows(table: sa.Table, rows: Sequence[dict[str, Any]]) -> Sequence[dict[str, Any]]:
    # A stable sort: among rows of one key the first still wins.
    keys = _in_key_order(table, rows)
    if len(rows) > 1 and keys:
        return sorted(rows, key=operator.itemgetter(*keys))
    return rows


def insert_ignore(conn: Connection, table: sa.Table, rows: Sequence[dict[str, Any]]) -> None:
    """INSERT rows, skipping those whose primary key already exists (both backends).

    Concurrent writers of the same key both succeed: the loser's row is skipped, so no
    IntegrityError reaches the caller. Every row must have the same keys. The statement is
    compiled once per (table, columns, dialect) and run through the driver's executemany:
    per-row parameter processing in SQLAlchemy cost more than the insert itself (measured
    with bench/fragments.py).

    Rows are written in primary-key order (a stable sort: among rows of one key the first
    still wins), so concurrent writers of overlapping batches take their key locks in the
    same order and never deadlock on each other.
    """
    if not rows:
        return
    cols = tuple(rows[0])
    if conn.dialect.name == "postgresql" and _pg_types(table, cols) is not None:
        rows = _sorted_rows(table, rows)
        for part in _pg_parts(rows):
            driver_rows(conn, _pg_unnest_sql(table, cols, ()), _pg_arrays(part, cols))
        return
    sql = _insert_sql(conn.dialect.name, table.name, cols)
    driver_rows(conn, sql, _sorted_tuples(table, cols, rows), many=True)


def _sorted_tuples(
    table: sa.Table, cols: tuple[str, ...], rows: Sequence[dict[str, Any]]
) -> list[tuple[Any, ...]]:
    """``rows`` as parameter tuples in ``cols`` order, stably sorted by the primary key."""
    if len(cols) == 1:
        return [(r[cols[0]],) for r in rows]
    params = list(map(operator.itemgetter(*cols), rows))
    at = [cols.index(k) for k in _in_key_order(table, rows)]
    if len(params) > 1 and at:
        params.sort(key=operator.itemgetter(*at))
    return params


# PostgreSQL: one INSERT ... SELECT FROM unnest(arrays) per batch instead of one statement per
# row (psycopg's executemany pipelines a statement per row; measured by bench/fragments.py and
# bench/manifests.py, issue 16). Same rows, same order, same ON CONFLICT DO NOTHING.
_PG_TYPES: tuple[tuple[type[Any], str | None], ...] = (
    (sa.Enum, None),  # no text-to-enum assignment cast: such tables take executemany
    (sa.LargeBinary, "bytea"),
    (sa.BigInteger, "int8"),
    (sa.Integer, "int4"),
    (sa.Boolean, "bool"),
    (sa.String, "text"),  # Text and String(n) alike
)
#: Most rows, and about the most bytes, in one unnest statement.
_PG_ROWS, _PG_BYTES = 20_000, 32 << 20


def _pg_types(table: sa.Table, cols: tuple[str, ...]) -> tuple[str, ...] | None:
    """The PostgreSQL array element type of each column, or None if one is not mapped."""
    out = []
    for name in cols:
        col_type = table.c[name].type
        if isinstance(col_type, sa.DateTime):
            out.append("timestamptz" if col_type.timezone else "timestamp")
            continue
        pg = next((t for cls, t in _PG_TYPES if isinstance(col_type, cls)), None)
        if pg is None:
            return None
        out.append(pg)
    return tuple(out)


def _pg_unnest_sql(table: sa.Table, cols: tuple[str, ...], returning: Sequence[str]) -> str:
    key = ("postgresql-unnest", table.name, cols + ("->",) + tuple(returning))
    sql = _SQL_CACHE.get(key)
    if sql is None:
        types = _pg_types(table, cols)
        assert types is not None
        # Arrays travel in binary (%b): psycopg's text form of an array escapes every
        # element in Python (7-10x slower for 100k text, int8 or bytea elements) and, for
        # bytea, doubles the bytes as hex for the server to parse back (bench/core.py a).
        arrays = ", ".join(f"%b::{t}[]" for t in types)
        sql = (
            f"INSERT INTO {table.name} ({', '.join(cols)})"
            f" SELECT * FROM unnest({arrays}) ON CONFLICT DO NOTHING"
        )
        if returning:
            sql += f" RETURNING {', '.join(returning)}"
        _SQL_CACHE[key] = sql
    return sql


def _pg_parts(rows: Sequence[dict[str, Any]]) -> Iterator[Sequence[dict[str, Any]]]:
    """``rows`` in consecutive parts of at most :data:`_PG_ROWS` rows and ~_PG_BYTES bytes."""
    start, size = 0, 0
    for i, r in enumerate(rows):
        size += sum(len(v) for v in r.values() if isinstance(v, bytes))
        if i + 1 - start >= _PG_ROWS or size >= _PG_BYTES:
            yield rows[start : i + 1]
            start, size = i + 1, 0
    if start < len(rows):
        yield rows[start:]


def _pg_arrays(rows: Sequence[dict[str, Any]], cols: tuple[str, ...]) -> tuple[list[Any], ...]:
    return tuple([r[c] for r in rows] for c in cols)


_SQL_CACHE: dict[tuple[str, str, tuple[str, ...]], str] = {}  # statement texts only


def _insert_sql(dialect: str, table: str, cols: tuple[str, ...]) -> str:
    key = (dialect, table, cols)
    sql = _SQL_CACHE.get(key)
    if sql is None:
        mark = "?" if dialect == "sqlite" else "%s"
        sql = (
            f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join([mark] * len(cols))})"
            " ON CONFLICT DO NOTHING"
        )
        _SQL_CACHE[key] = sql
    return sql


#: Most bound parameters in one multi-row INSERT ... RETURNING (SQLite allows 32,766).
_MAX_PARAMS = 30_000


def insert_returning(
    conn: Connection, table: sa.Table, rows: Sequence[dict[str, Any]]
) -> set[tuple[Any, ...]]:
    """INSERT rows, skipping existing keys, and return the primary keys this call inserted.

    ``INSERT ... ON CONFLICT DO NOTHING RETURNING <key>`` on both backends (SQLite 3.35+):
    a row is "new" only when this statement wrote it, never because an earlier SELECT did
    not see it. Under concurrency exactly one writer of a key is told it is new: SQLite
    serialises writers, and PostgreSQL makes the second inserter of a key wait for the first
    to commit and then skip the row (or insert it, if the first rolled back).

    Rows are written in primary-key order (as :func:`insert_ignore`), in multi-row
    statements of at most :data:`_MAX_PARAMS` parameters. Duplicate keys within ``rows``:
    the first wins.

    Returns:
        The primary-key tuples (in the table's key-column order) of the rows written.
    """
    if not rows:
        return set()
    cols = tuple(rows[0])
    keys = _in_key_order(table, rows)
    assert keys, f"{table.name}: rows lack the primary key"
    if conn.dialect.name == "sqlite":
        found_all = _sqlite_insert_all_or_none(conn, table, cols, keys, rows)
        if found_all is not None:
            return found_all
    rows = _sorted_rows(table, rows)
    if conn.dialect.name == "postgresql" and _pg_types(table, cols) is not None:
        found: set[tuple[Any, ...]] = set()
        for chunk in _pg_parts(rows):
            sql = _pg_unnest_sql(table, cols, keys)
            found.update(driver_rows(conn, sql, _pg_arrays(chunk, cols)))
        return found
    mark = "?" if conn.dialect.name == "sqlite" else "%s"
    one = "(" + ", ".join([mark] * len(cols)) + ")"
    per = max(1, _MAX_PARAMS // len(cols))
    written: set[tuple[Any, ...]] = set()
    for i in range(0, len(rows), per):
        part = rows[i : i + per]
        sql = (
            f"INSERT INTO {table.name} ({', '.join(cols)}) VALUES "
            + ", ".join([one] * len(part))
            + f" ON CONFLICT DO NOTHING RETURNING {', '.join(keys)}"
        )
        params = tuple(r[c] for r in part for c in cols)
        written.update(driver_rows(conn, sql, params))
    return written


def _sqlite_insert_all_or_none(
    conn: Connection,
    table: sa.Table,
    cols: tuple[str, ...],
    keys: list[str],
    rows: Sequence[dict[str, Any]],
) -> set[tuple[Any, ...]] | None:
    """SQLite: the keys ``rows`` wrote when one ``executemany`` writes all or none of them.

    None (nothing written) for any other outcome (some stored, or a key repeated within
    ``rows``): the caller then asks ``RETURNING``
    (:func:`evstore.db.engine.executemany_all_or_none`).
    """
    params = _sorted_tuples(table, cols, rows)
    done = executemany_all_or_none(conn, _insert_sql("sqlite", table.name, cols), params)
    if done is None:
        return None
    if not done:
        return set()
    at = [cols.index(k) for k in keys]
    return set(zip(*[[p[i] for p in params] for i in at], strict=True))  # tuples built in C


def row_from(r: Any) -> BlobRow:
    """A :class:`BlobRow` from a selected ``blobs`` row, its types checked.

    Raises:
        CorruptionError: ``corruption.row`` for a row edited outside evstore.
    """
    try:
        if isinstance(r.size, bool) or not isinstance(r.size, int):
            raise TypeError("size is not an integer")
        size = r.size
        chunk_set = None if r.chunk_set is None else int(r.chunk_set)
    except (TypeError, ValueError):
        raise CorruptionError(
            f"the index row of blake3:{r.address} is malformed (size {r.size!r}); not served",
            code="corruption.row",
            details={"address": f"blake3:{r.address}"},
        ) from None
    return BlobRow(Digest(r.address, r.sha256, size), chunk_set)


def as_bytes(value: Any, address: str) -> bytes:
    """A stored byte column as ``bytes`` (TEXT where bytes belong is ``corruption.row``)."""
    # A row edited outside evstore may hold TEXT where bytes belong: that is corruption.
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise CorruptionError(
        f"stored bytes of blake3:{address} are not bytes ({type(value).__name__}); not served",
        code="corruption.row",
        details={"address": f"blake3:{address}"},
    )


def lookup(conn: Connection, ref: ContentRef) -> BlobRow | None:
    """The blob a content ref names, or None. A SHA-256 ref picks the blob with that digest."""
    cols = (blobs.c.address, blobs.c.sha256, blobs.c.size, blobs.c.chunk_set)
    if ref.algorithm == "blake3":
        r = conn.execute(sa.select(*cols).where(blobs.c.address == ref.hex)).first()
    else:
        r = conn.execute(sa.select(*cols).where(blobs.c.sha256 == ref.hex).limit(1)).first()
    return row_from(r) if r is not None else None


def lookup_sha256_all(conn: Connection, sha256_hex: str) -> list[BlobRow]:
    """Every blob row whose recorded SHA-256 is ``sha256_hex`` (normally zero or one)."""
    cols = (blobs.c.address, blobs.c.sha256, blobs.c.size, blobs.c.chunk_set)
    return [row_from(r) for r in conn.execute(sa.select(*cols).where(blobs.c.sha256 == sha256_hex))]


def _iter_raw(conn: Connection, address: str) -> Iterator[bytes]:
    r = conn.execute(
        sa.select(blobs.c.data, blobs.c.chunk_set).where(blobs.c.address == address)
    ).first()
    if r is None:
        raise NotFound(f"no blob blake3:{address}", code="not-found.blob")
    if r.chunk_set is None:
        yield b"" if r.data is None else as_bytes(r.data, address)
        return
    seq = 0
    while True:
        # One chunk per query keeps memory at one chunk, on both drivers.
        c = conn.execute(
            sa.select(blob_chunks.c.data).where(
                blob_chunks.c.chunk_set == r.chunk_set, blob_chunks.c.seq == seq
            )
        ).first()
        if c is None:
            return
        yield as_bytes(c.data, address)
        seq += 1


def verify_stored(conn: Connection, row: BlobRow) -> CorruptionError | None:
    """Re-hash a stored blob; the :class:`CorruptionError` describing a mismatch, or None."""
    h = Hasher()
    for chunk in _iter_raw(conn, row.digest.blake3):
        h.update(chunk)
    return compare_digest(row, h.digest())


def compare_digest(row: BlobRow, got: Digest) -> CorruptionError | None:
    """Size, BLAKE3 and SHA-256 of the bytes read against the row.

    The SHA-256 is checked too because lookups by ``sha256:`` refs go through the indexed
    column: a tampered column must not make other bytes answer for that digest.

    The error's details name both sides: ``address``, ``expected_sha256`` and
    ``expected_size`` (the index row), ``found_blake3``, ``found_sha256`` and ``found_size``
    (the bytes actually stored: size in bytes, digests as ``blake3:``/``sha256:`` refs).
    """
    want = row.digest
    if got == want:
        return None
    details = {
        "address": want.address,
        "expected_sha256": "sha256:" + want.sha256,
        "expected_size": want.size,
        "found_blake3": got.address,
        "found_sha256": "sha256:" + got.sha256,
        "found_size": got.size,
    }
    if got.size != want.size:
        code, why = "corruption.size", f"size {got.size} != {want.size}"
    elif got.blake3 != want.blake3:
        code, why = "corruption.digest", f"digest mismatch: the bytes found hash to {got.address}"
    else:
        return CorruptionError(
            f"the SHA-256 recorded for {want.address} does not match its bytes"
            f" (they hash to sha256:{got.sha256}); not served",
            code="corruption.sha256-index",
            details=details,
        )
    return CorruptionError(
        f"stored bytes of {want.address} do not match their address ({why}); not served",
        code=code,
        details=details,
    )


def read_verified(conn: Connection, row: BlobRow) -> bytes:
    """All bytes of a blob, after checking size, BLAKE3 and SHA-256.

    Raises:
        CorruptionError: ``corruption.size``, ``corruption.digest``,
            ``corruption.sha256-index`` or ``corruption.row``; no byte is returned.
    """
    parts = list(_iter_raw(conn, row.digest.blake3))
    data = parts[0] if len(parts) == 1 else b"".join(parts)
    err = compare_digest(row, digest_bytes(data))
    if err is not None:
        raise err
    return data


def iter_verified(conn: Connection, row: BlobRow) -> Iterator[bytes]:
    """Stream a blob in chunks: a full verification pass first, then the bytes.

    Memory stays at one chunk. Both passes run in the caller's snapshot transaction.

    Raises:
        CorruptionError: before the first chunk is yielded.
    """
    if row.chunk_set is None:
        yield read_verified(conn, row)
        return
    err = verify_stored(conn, row)
    if err is not None:
        raise err
    yield from _iter_raw(conn, row.digest.blake3)


def iter_checked(conn: Connection, row: BlobRow) -> Iterator[bytes]:
    """Stream a blob in one read: chunks as read, hashed on the way, checked at the end.

    The caller MUST treat what it received as unverified until the iterator is exhausted.

    Raises:
        CorruptionError: after the last chunk, when size, BLAKE3 or SHA-256 do not match.
    """
    h = Hasher()
    for chunk in _iter_raw(conn, row.digest.blake3):
        h.update(chunk)
        yield chunk
    err = compare_digest(row, h.digest())
    if err is not None:
        raise err


def existing_rows(conn: Connection, addresses: Sequence[str]) -> dict[str, BlobRow]:
    """Index rows of the stored blobs among ``addresses``, locked until the commit.

    PostgreSQL takes the whole list as one array parameter (one round trip) and locks the
    rows found ``FOR KEY SHARE``: the collector cannot delete a blob a write found stored
    (evstore.objects.leases). SQLite takes lists of :data:`_IN_BATCH` (its bound-parameter limit);
    its single writer needs no row lock.
    """
    found: dict[str, BlobRow] = {}
    if not addresses:
        return found
    if conn.dialect.name == "postgresql":
        result = conn.exec_driver_sql(
            "SELECT address, sha256, size, chunk_set FROM blobs WHERE address = ANY(%b)"
            " ORDER BY address FOR KEY SHARE",
            (sorted(addresses),),
        )
        for r in result:
            found[r.address] = row_from(r)
        return found
    for i in range(0, len(addresses), _IN_BATCH):
        part = tuple(addresses[i : i + _IN_BATCH])
        sql = (
            "SELECT address, sha256, size, chunk_set FROM blobs WHERE address IN ("
            + ",".join("?" * len(part))
            + ")"
        )
        for r in conn.exec_driver_sql(sql, part):
            found[r.address] = row_from(r)
    return found


def _repair_if_corrupt(conn: Connection, row: BlobRow, data: bytes) -> None:
    if verify_stored(conn, row) is None:
        return
    _replace(conn, row, data)


def _replace(conn: Connection, row: BlobRow, data: bytes) -> None:
    if row.chunk_set is not None:
        conn.execute(sa.delete(blob_chunks).where(blob_chunks.c.chunk_set == row.chunk_set))
    values = _storage_values(conn, data)
    conn.execute(sa.update(blobs).where(blobs.c.address == row.digest.blake3).values(**values))


def _storage_values(conn: Connection, data: bytes) -> dict[str, Any]:
    if len(data) <= INLINE_MAX:
        return {"data": data, "chunk_set": None}
    chunk_set = secrets.randbits(62)
    view = memoryview(data)
    conn.execute(
        sa.insert(blob_chunks),
        [
            {"chunk_set": chunk_set, "seq": i, "data": bytes(view[off : off + CHUNK_SIZE])}
            for i, off in enumerate(range(0, len(data), CHUNK_SIZE))
        ],
    )
    return {"data": None, "chunk_set": chunk_set}


def put_many(
    conn: Connection, items: Sequence[bytes], *, unlogged_from: int | None = None
) -> list[PutResult]:
    """Store many byte strings (each at most a few MiB) in one batch.

    Each new blob records a ``put`` entry of the tamper-evident log (appended when the
    transaction commits, store/objects/log_entries.py), except the items from index
    ``unlogged_from`` on (an artifact's bytes: its ``ingest`` entry names them).

    Already-stored content is not written again; a stored copy found corrupt is repaired.
    Duplicates within ``items`` are stored once.

    ``new`` is decided by the insert itself (:func:`insert_returning`, or a COPY that
    succeeded), never by an earlier SELECT: among any number of concurrent writers of the
    same new bytes, exactly one is told ``new: True``, on both backends, inline or chunked.

    Returns:
        One :class:`PutResult` per item, in order.
    """
    digests = [digest_bytes(d) for d in items]
    unique = list(dict.fromkeys(d.blake3 for d in digests))
    # Looked up first: large items (their chunks are written before the row), and every item
    # of a batch bound for PostgreSQL's COPY (which cannot skip stored rows). Other inline
    # items go straight to INSERT ... ON CONFLICT DO NOTHING RETURNING, and only those it did
    # not write are looked up (and repaired if corrupt) afterwards: new bytes cost no lookup
    # (issue 16, bench/core.py part a).
    copy_bound = conn.dialect.name == "postgresql" and len(unique) >= 1000
    if copy_bound:
        first = unique
    else:
        large = zip(items, digests, strict=True)
        first = list({dg.blake3 for d, dg in large if len(d) > INLINE_MAX})
    existing = existing_rows(conn, first)
    rows: list[dict[str, Any]] = []
    unlooked: dict[str, bytes] = {}
    seen: set[str] = set()
    for data, dg in zip(items, digests, strict=True):
        if dg.blake3 in seen:
            continue
        seen.add(dg.blake3)
        if dg.blake3 in existing:
            _repair_if_corrupt(conn, existing[dg.blake3], data)
            continue
        if len(data) <= INLINE_MAX:  # inline: the common case, without a helper call
            row = {"address": dg.blake3, "sha256": dg.sha256, "size": dg.size, "data": data}
            row["chunk_set"] = None
        else:
            row = {"address": dg.blake3, "sha256": dg.sha256, "size": dg.size}
            row.update(_storage_values(conn, data))
        rows.append(row)
        if not copy_bound and row["chunk_set"] is None:
            unlooked[dg.blake3] = data
    written: set[str] = set()
    if rows:
        rows.sort(key=operator.itemgetter("address"))  # one lock order for every writer
        if conn.dialect.name == "postgresql" and len(rows) >= 1000:
            written = _copy_blobs(conn, rows)
        else:
            written = {k[0] for k in insert_returning(conn, blobs, rows)}
        for r in rows:
            if r["chunk_set"] is not None and r["address"] not in written:
                # A concurrent writer stored this large blob first: keep the row that
                # landed and delete our spare chunks (as put_stream does).
                conn.execute(
                    sa.delete(blob_chunks).where(blob_chunks.c.chunk_set == r["chunk_set"])
                )
    _settle_skipped(conn, rows, unlooked, written)
    note_blobs(conn, seen, fresh=written)
    results: list[PutResult] = []
    logged: list[Digest] = []
    for i, dg in enumerate(digests):
        new = dg.blake3 in written
        written.discard(dg.blake3)  # only the first occurrence within items is new
        results.append(PutResult(dg, new))
        if new and (unlogged_from is None or i < unlogged_from):
            logged.append(dg)
    append_puts(conn, logged)
    return results


def _settle_skipped(
    conn: Connection, rows: list[dict[str, Any]], unlooked: dict[str, bytes], written: set[str]
) -> None:
    """Lock (and repair) the stored copies of inline bytes the insert skipped as present.

    ``INSERT ... ON CONFLICT DO NOTHING`` locks nothing it skips: between it and this lookup
    the collector may delete a copy that was unrooted with its lease expired. The lookup
    locks what it finds (``FOR KEY SHARE`` on PostgreSQL, see :func:`existing`), and a copy
    gone in between is written again (added to ``written``), so the write never relies on a
    row it neither locked nor wrote (docs/design.md, retention and garbage collection).
    """
    stored = [a for a in unlooked if a not in written]
    for _ in range(3):  # each round needs a collection racing it; three is plenty
        if not stored:
            return
        found = existing_rows(conn, stored)
        for address, row_found in found.items():
            _repair_if_corrupt(conn, row_found, unlooked[address])
        gone = {a for a in stored if a not in found}
        if not gone:
            return
        again = [r for r in rows if r["address"] in gone]
        written |= {k[0] for k in insert_returning(conn, blobs, again)}
        stored = [a for a in gone if a not in written]


_BLOB_COLUMNS = ("address", "sha256", "size", "data", "chunk_set")
_BLOB_TYPES = ("varchar", "varchar", "int8", "bytea", "int8")


def _copy_blobs(conn: Connection, rows: list[dict[str, Any]]) -> set[str]:
    """PostgreSQL bulk path: binary COPY straight into ``blobs`` inside a savepoint.

    COPY cannot skip duplicates, and a concurrent writer may have stored some of the same
    blobs since we looked: on a unique-key violation the savepoint is rolled back and the rows
    go through a staging table and ``INSERT ... ON CONFLICT DO NOTHING`` instead.

    Both COPYs go through :func:`evstore.db.engine.copy_rows`: any other driver error (deadlock,
    lock or statement timeout, lost connection) leaves as SQLAlchemy's wrapper of it, which
    the transaction's error boundary classifies, retries or translates like any statement's
    (:meth:`evstore.db.engine.Database.run_transaction`).

    Returns:
        The addresses this call inserted (all of them when the direct COPY succeeded).
    """
    import psycopg

    tuples = [tuple(r[c] for c in _BLOB_COLUMNS) for r in rows]
    try:
        with conn.begin_nested():
            copy_rows(conn, "blobs", _BLOB_COLUMNS, _BLOB_TYPES, tuples)
        return {r["address"] for r in rows}
    except sa.exc.IntegrityError as exc:
        if not isinstance(exc.orig, psycopg.errors.UniqueViolation):
            raise
    driver_rows(
        conn,
        "CREATE TEMP TABLE IF NOT EXISTS evstore_blob_stage (address varchar(64),"
        " sha256 varchar(64), size bigint, data bytea, chunk_set bigint)"
        " ON COMMIT DELETE ROWS",
    )
    copy_rows(conn, "evstore_blob_stage", _BLOB_COLUMNS, _BLOB_TYPES, tuples)
    columns = ", ".join(_BLOB_COLUMNS)
    written = {
        r[0]
        for r in driver_rows(
            conn,
            f"INSERT INTO blobs ({columns}) SELECT {columns} FROM evstore_blob_stage"
            " ORDER BY address ON CONFLICT DO NOTHING RETURNING address",
        )
    }
    driver_rows(conn, "DELETE FROM evstore_blob_stage")
    return written


def put_bytes(conn: Connection, data: bytes) -> PutResult:
    """Store one byte string; see :func:`put_many`."""
    return put_many(conn, [data])[0]


def put_stream(conn: Connection, stream: BinaryIO | Iterable[bytes]) -> PutResult:
    """Store bytes read from a binary stream (a file or stdin), up to any size.

    The bytes are hashed and written in one pass, :data:`CHUNK_SIZE` at a time, so memory
    stays at about one chunk whatever the size; exactly the bytes hashed are the bytes stored.
    """
    chunks: Iterable[bytes]
    if hasattr(stream, "read"):
        reader: Any = stream

        def _gen() -> Iterator[bytes]:
            while True:
                b = reader.read(CHUNK_SIZE)
                if not b:
                    return
                yield b

        chunks = _gen()
    else:
        chunks = stream
    h = Hasher()
    buf = bytearray()
    chunk_set: int | None = None
    seq = 0
    for piece in chunks:
        h.update(piece)
        buf += piece
        while len(buf) > INLINE_MAX or (chunk_set is not None and len(buf) >= CHUNK_SIZE):
            if chunk_set is None:
                chunk_set = secrets.randbits(62)
            conn.execute(
                sa.insert(blob_chunks),
                {"chunk_set": chunk_set, "seq": seq, "data": bytes(buf[:CHUNK_SIZE])},
            )
            del buf[:CHUNK_SIZE]
            seq += 1
    dg = h.digest()
    if chunk_set is None:
        return put_bytes(conn, bytes(buf))
    if buf:
        conn.execute(
            sa.insert(blob_chunks), {"chunk_set": chunk_set, "seq": seq, "data": bytes(buf)}
        )
    existing = existing_rows(conn, [dg.blake3]).get(dg.blake3)
    note_blobs(conn, [dg.blake3])
    if existing is None:
        row = {
            "address": dg.blake3,
            "sha256": dg.sha256,
            "size": dg.size,
            "data": None,
            "chunk_set": chunk_set,
        }
        if insert_returning(conn, blobs, [row]):
            append_entry(conn, op="put", address=dg.blake3, sha256=dg.sha256, size=dg.size)
            return PutResult(dg, True)
        # A concurrent writer won: keep its row (locked now, as a found one is: note_blobs)
        # and drop our spare chunks.
        existing_rows(conn, [dg.blake3])
        conn.execute(sa.delete(blob_chunks).where(blob_chunks.c.chunk_set == chunk_set))
        return PutResult(dg, False)
    if verify_stored(conn, existing) is None:
        conn.execute(sa.delete(blob_chunks).where(blob_chunks.c.chunk_set == chunk_set))
    else:  # repair: point the row at the fresh chunks
        if existing.chunk_set is not None:
            conn.execute(
                sa.delete(blob_chunks).where(blob_chunks.c.chunk_set == existing.chunk_set)
            )
        conn.execute(
            sa.update(blobs)
            .where(blobs.c.address == dg.blake3)
            .values(data=None, chunk_set=chunk_set)
        )
    return PutResult(dg, False)
