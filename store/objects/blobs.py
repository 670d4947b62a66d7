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

import io
import operator
import secrets
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.digests import Digest, Hasher, digest_bytes
from ..core.errors import CorruptionError, EvstoreError, NotFound, error
from ..core.refs import ContentRef
from ..core.results import PutResult
from ..db.engine import driver_rows
from ..db.tables import blob_chunks, blobs
from . import external, file_sources
from .blob_inserts import copy_blobs, sqlite_insert_blobs
from .leases import note_blobs
from .log_entries import append_entry, append_puts
from .rows import insert_returning

__all__ = [
    "BlobRow",
    "CHUNK_SIZE",
    "INLINE_MAX",
    "PutResult",
    "as_bytes",
    "compare_digest",
    "existing_rows",
    "intact",
    "iter_checked",
    "iter_stored",
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


def iter_stored(conn: Connection, address: str) -> Iterator[bytes]:
    """The stored bytes of a blob, unverified, wherever they live: the inline row, its chunk
    rows, or its blob backend (store/objects/external.py). Memory: one chunk.

    Raises:
        NotFound: ``not-found.blob``. CorruptionError: ``corruption.row``,
            ``corruption.blob-missing``. StoreStateError: ``blobs.*`` from a backend.
    """  # noqa: D205
    return _iter_raw(conn, address)


def _iter_raw(conn: Connection, address: str, piece: int = CHUNK_SIZE) -> Iterator[bytes]:
    """:func:`iter_stored`; a backend's object in chunks of about ``piece`` bytes."""
    r = conn.execute(
        sa.select(blobs.c.data, blobs.c.chunk_set, blobs.c.stored_in).where(
            blobs.c.address == address
        )
    ).first()
    if r is None:
        raise NotFound(f"no blob blake3:{address}", code="not-found.blob")
    if r.stored_in is not None:
        yield from external.iter_external(r.stored_in, address, conn, size=piece)
        return
    if r.chunk_set is None:
        yield b"" if r.data is None else as_bytes(r.data, address)
        return
    # One chunk per statement keeps memory at one chunk on both drivers; the statement goes
    # to the driver's cursor: through SQLAlchemy's result rows a 256 MiB read cost 0.64 s
    # of CPU against 0.11 s (issue 29, docs/benchmarks.md).
    sql = _CHUNK_SQL[conn.dialect.name == "postgresql"]
    chunk_set = int(r.chunk_set)
    seq = 0
    while True:
        found = driver_rows(conn, sql, (chunk_set, seq), binary=True)
        if not found:
            return
        yield as_bytes(found[0][0], address)
        seq += 1


#: One chunk's bytes, in the driver's parameter style (SQLite, PostgreSQL).
_CHUNK_SQL = (
    "SELECT data FROM blob_chunks WHERE chunk_set = ? AND seq = ?",
    "SELECT data FROM blob_chunks WHERE chunk_set = %s AND seq = %s",
)


def verify_stored(conn: Connection, row: BlobRow) -> CorruptionError | None:
    """Re-hash a stored blob; the :class:`CorruptionError` describing a mismatch, or None."""
    h = Hasher()
    for chunk in _iter_raw(conn, row.digest.blake3):
        h.submit(chunk)  # hashed while the next chunk is read
    return compare_digest(row, h.digest())


def intact(conn: Connection, row: BlobRow) -> bool:
    """Whether a blob's stored bytes hash to its row (a missing backend object: not intact)."""
    try:
        return verify_stored(conn, row) is None
    except CorruptionError:
        return False


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
    h = Hasher()
    first: bytes | None = None
    joined: io.BytesIO | None = None
    for chunk in _iter_raw(conn, row.digest.blake3):
        h.submit(chunk)  # hashed in workers while it is copied out and the next is read
        if first is None:
            first = chunk
            continue
        if joined is None:
            joined = io.BytesIO()
            joined.write(first)
        joined.write(chunk)  # the copy overlaps the hashing (a join after it did not)
    err = compare_digest(row, h.digest())
    if err is not None:
        raise err
    if joined is not None:
        return joined.getvalue()  # the buffer itself, not a second copy
    return b"" if first is None else first


def iter_verified(conn: Connection, row: BlobRow) -> Iterator[bytes]:
    """Stream a blob in chunks: a full verification pass first, then the bytes.

    Memory stays at one chunk. Both passes run in the caller's snapshot transaction.

    Raises:
        CorruptionError: before the first chunk is yielded.
    """
    if row.chunk_set is None:
        yield read_verified(conn, row)
        return
    if row.chunk_set == external.EXTERNAL:
        yield from _iter_spooled(conn, row)
        return
    err = verify_stored(conn, row)
    if err is not None:
        raise err
    yield from _iter_raw(conn, row.digest.blake3)


def _iter_spooled(conn: Connection, row: BlobRow) -> Iterator[bytes]:
    """:func:`iter_verified` of bytes in a blob backend: one download, written to a local
    temporary file while hashed, verified, then streamed from that file.

    A backend object is outside the read's snapshot: read twice (verify, then stream), the
    second read could give other bytes than the first verified (an object overwritten in
    between), and it would cost a second download. The spool (``$TMPDIR``, removed when the
    iterator ends or is closed) holds the blob's size on disk; memory stays at one chunk
    (:data:`~.file_sources.PIECE` bytes: larger chunks halve the per-chunk cost of the
    write beside the two hashes, docs/benchmarks.md).
    """  # noqa: D205
    address = row.digest.blake3
    h = Hasher()
    try:
        spool = tempfile.TemporaryFile(prefix="evstore-read-")
    except OSError as exc:
        raise _spool_fault(row, exc) from None
    with spool:
        for chunk in _iter_raw(conn, address, file_sources.PIECE):
            h.submit(chunk)  # hashed in workers while it is written
            try:
                spool.write(chunk)
            except OSError as exc:
                raise _spool_fault(row, exc) from None
        err = compare_digest(row, h.digest())
        if err is not None:
            raise err
        spool.seek(0)
        while True:
            try:
                piece = spool.read(CHUNK_SIZE)
            except OSError as exc:
                raise _spool_fault(row, exc) from None
            if not piece:
                return
            yield piece


def _spool_fault(row: BlobRow, exc: OSError) -> EvstoreError:
    """``blobs.spool``: a verified read's local copy could not be written or read."""
    return error(
        "blobs.spool",
        f"a verified read of {row.digest.address} ({row.digest.size} bytes, kept in a blob "
        f"backend) needs a local copy in the temporary directory, which failed: "
        f"{exc.strerror or exc}; nothing was served (free space there, or set TMPDIR)",
        address=row.digest.address,
    )


def iter_checked(conn: Connection, row: BlobRow) -> Iterator[bytes]:
    """Stream a blob in one read: chunks as read, hashed on the way, checked at the end.

    The caller MUST treat what it received as unverified until the iterator is exhausted.

    Raises:
        CorruptionError: after the last chunk, when size, BLAKE3 or SHA-256 do not match.
    """
    h = Hasher()
    for chunk in _iter_raw(conn, row.digest.blake3):
        h.submit(chunk)  # hashed while the caller uses it and the next chunk is read
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
    return {a: row for a, (row, _) in _existing(conn, addresses, "NULL").items()}


#: The stored bytes of an inline row (NULL for chunked and backend blobs).
_INLINE_DATA = "CASE WHEN chunk_set IS NULL THEN data END"  # external rows: chunk_set -1


class _Found(NamedTuple):  # a driver row in the attribute shape row_from reads
    address: str
    sha256: str
    size: Any
    chunk_set: Any
    data: Any


def _existing(
    conn: Connection, addresses: Sequence[str], data: str
) -> dict[str, tuple[BlobRow, Any]]:
    """As :func:`existing_rows`, each row with the value of the SQL expression ``data``.

    The rows come from the driver's cursor (:func:`~evstore.db.engine.driver_rows`), as the
    write's other hot statements do.
    """
    found: dict[str, tuple[BlobRow, Any]] = {}
    if not addresses:
        return found
    cols = f"address, sha256, size, chunk_set, {data}"
    statements: list[tuple[str, Any]]
    if conn.dialect.name == "postgresql":
        statements = [
            (
                f"SELECT {cols} FROM blobs WHERE address = ANY(%b) ORDER BY address FOR KEY SHARE",
                (sorted(addresses),),
            )
        ]
    else:
        statements = [
            (
                f"SELECT {cols} FROM blobs WHERE address IN ({','.join('?' * len(part))})",
                part,
            )
            for part in (
                tuple(addresses[i : i + _IN_BATCH]) for i in range(0, len(addresses), _IN_BATCH)
            )
        ]
    for sql, params in statements:
        for address, sha256, size, chunk_set, value in driver_rows(conn, sql, params):
            if type(size) is int and (chunk_set is None or type(chunk_set) is int):
                row = BlobRow(Digest(address, sha256, size), chunk_set)  # row_from's checks
            else:
                row = row_from(_Found(address, sha256, size, chunk_set, value))
            found[address] = (row, value)
    return found


def _settle_present(
    conn: Connection, addresses: Sequence[str], wanted: dict[str, tuple[bytes, Digest]]
) -> set[str]:
    """Lock the stored rows among ``addresses`` and repair any whose bytes are not ``wanted``.

    One statement per batch brings each row with its inline bytes: an inline copy is intact
    when it equals the bytes being put and the row records their digest (the address was
    computed from those bytes, so equal bytes hash to it; no re-hash and no statement per
    blob, issue 29). Chunked and backend copies are re-read and re-hashed as before. A
    copy found otherwise is replaced by the bytes being put. Returns the addresses found.

    Raises:
        CorruptionError: ``corruption.row`` for a row whose bytes are not bytes (as a read).
    """
    found = _existing(conn, addresses, _INLINE_DATA)
    for address, (row, stored) in found.items():
        data, dg = wanted[address]
        if stored is None or row.chunk_set is not None:
            _repair_if_corrupt(conn, row, data)
        elif not (row.digest == dg and as_bytes(stored, address) == data):
            _replace(conn, row, data)
    return set(found)


def _repair_if_corrupt(conn: Connection, row: BlobRow, data: bytes) -> None:
    if verify_stored(conn, row) is None:
        return
    _replace(conn, row, data)


def _replace(conn: Connection, row: BlobRow, data: bytes) -> None:
    if row.chunk_set is not None:
        conn.execute(sa.delete(blob_chunks).where(blob_chunks.c.chunk_set == row.chunk_set))
    values = {**_storage_values(conn, data), "stored_in": None}
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

    ``new`` is decided by the insert itself (:func:`insert_returning`, a COPY that
    succeeded, or on SQLite the ids the insert gave: store/objects/blob_inserts.py), never
    by an earlier SELECT: among any number of concurrent writers of the same new bytes,
    exactly one is told ``new: True``, on both backends, inline or chunked.

    Returns:
        One :class:`PutResult` per item, in order.
    """
    where = external.target(conn)
    if where is not None and any(len(d) > where.inline_max for d in items):
        return _put_many_split(conn, items, where, unlogged_from)
    digests = [digest_bytes(d) for d in items]
    unique = list(dict.fromkeys(d.blake3 for d in digests))
    # Every item is looked up first, one statement per batch, with its stored inline bytes
    # (issue 29: a re-put of stored files paid an INSERT attempt and a re-read and re-hash
    # per blob). A stored copy is compared with the bytes being put, repaired if it differs,
    # and not written again; the rest go to INSERT ... ON CONFLICT DO NOTHING RETURNING (or
    # PostgreSQL's COPY, which cannot skip stored rows), and any a concurrent writer stored
    # in between are settled afterwards. A new blob's lookup is one index probe.
    copy_bound = conn.dialect.name == "postgresql" and len(unique) >= 1000
    by_address = {dg.blake3: (d, dg) for d, dg in zip(items, digests, strict=True)}
    existing = _settle_present(conn, unique, by_address)
    rows: list[dict[str, Any]] = []
    unlooked: dict[str, bytes] = {}
    seen: set[str] = set()
    for data, dg in zip(items, digests, strict=True):
        if dg.blake3 in seen:
            continue
        seen.add(dg.blake3)
        if dg.blake3 in existing:
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
    ids: dict[str, int] = {}
    if rows:
        rows.sort(key=operator.itemgetter("address"))  # one lock order for every writer
        if conn.dialect.name == "postgresql" and len(rows) >= 1000:
            written = copy_blobs(conn, rows)
        elif conn.dialect.name == "sqlite":
            written, ids = sqlite_insert_blobs(conn, rows)
        else:
            written = {k[0] for k in insert_returning(conn, blobs, rows)}
        for r in rows:
            if r["chunk_set"] is not None and r["address"] not in written:
                # A concurrent writer stored this large blob first: keep the row that
                # landed and delete our spare chunks (as put_stream does).
                conn.execute(
                    sa.delete(blob_chunks).where(blob_chunks.c.chunk_set == r["chunk_set"])
                )
    _settle_skipped(conn, rows, by_address, unlooked, written)
    note_blobs(conn, seen, fresh=written, ids=ids)
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
    conn: Connection,
    rows: list[dict[str, Any]],
    by_address: dict[str, tuple[bytes, Digest]],
    unlooked: dict[str, bytes],
    written: set[str],
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
        found = _settle_present(conn, stored, by_address)
        gone = {a for a in stored if a not in found}
        if not gone:
            return
        again = [r for r in rows if r["address"] in gone]
        written |= {k[0] for k in insert_returning(conn, blobs, again)}
        stored = [a for a in gone if a not in written]


def put_bytes(conn: Connection, data: bytes) -> PutResult:
    """Store one byte string; see :func:`put_many`."""
    return put_many(conn, [data])[0]


def put_stream(conn: Connection, stream: BinaryIO | Iterable[bytes]) -> PutResult:
    """Store bytes read from a binary stream (a file or stdin), up to any size.

    The bytes are hashed and written in one pass, :data:`CHUNK_SIZE` at a time, so memory
    stays at about one chunk whatever the size; exactly the bytes hashed are the bytes stored.
    """
    where = external.target(conn)
    if where is not None and file_sources.regular_file(stream):
        return _put_file_external(conn, stream, where)  # type: ignore[arg-type]
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
    if where is not None:
        return _put_stream_external(conn, chunks, where)
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


def _put_many_split(
    conn: Connection, items: Sequence[bytes], where: external.Target, unlogged_from: int | None
) -> list[PutResult]:
    """:func:`put_many` when some items go to the blob backend: those as one batch
    (:func:`_put_external_many`), the rest as another; results in order.
    """  # noqa: D205
    results: list[PutResult | None] = [None] * len(items)
    small = [i for i, d in enumerate(items) if len(d) <= where.inline_max]
    large = [i for i, d in enumerate(items) if len(d) > where.inline_max]
    if large:
        entries = [(digest_bytes(items[i]), None, items[i]) for i in large]
        logged = [unlogged_from is None or i < unlogged_from for i in large]
        for i, res in zip(large, _put_external_many(conn, where, entries, logged), strict=True):
            results[i] = res
    if small:
        cut = None if unlogged_from is None else sum(1 for i in small if i < unlogged_from)
        for i, res in zip(
            small, put_many(conn, [items[i] for i in small], unlogged_from=cut), strict=True
        ):
            results[i] = res
    return [r for r in results if r is not None]


def _put_stream_external(
    conn: Connection, chunks: Iterable[bytes], where: external.Target
) -> PutResult:
    """:func:`put_stream` for a store with a blob backend: spooled to a local temporary
    file while hashed, then stored inline (small) or uploaded before its row (large).
    """  # noqa: D205
    h = Hasher()
    with tempfile.NamedTemporaryFile(prefix="evstore-put-") as spool:
        for piece in chunks:
            h.update(piece)
            spool.write(piece)
        spool.flush()
        dg = h.digest()
        if dg.size <= where.inline_max:
            spool.seek(0)
            return put_many(conn, [spool.read()])[0]
        return _put_external(conn, where, dg, spool.name, None, True)


def _put_file_external(conn: Connection, stream: BinaryIO, where: external.Target) -> PutResult:
    """:func:`put_stream` of an open regular file for a store with a blob backend: a file
    of up to :data:`~.file_sources.PIECE` bytes, or up to ``blobs.inline_max`` (which stays
    in the database), is read into memory and stored as bytes; a larger one is hashed in a
    first read and uploaded from a second, checked read
    (:class:`~.file_sources.FileSource`: no local copy; ``input.changed`` if it changed).
    """  # noqa: D205
    start = stream.tell()
    whole = max(file_sources.PIECE, where.inline_max)
    head = file_sources.read_up_to(stream, whole + 1)
    if len(head) <= whole:
        return put_many(conn, [head])[0]
    h = Hasher()
    h.submit(head)
    while piece := file_sources.read_up_to(stream, file_sources.PIECE):
        h.submit(piece)  # hashed while the next piece is read
    dg = h.digest()
    return _put_external(conn, where, dg, file_sources.FileSource(stream, start, dg), None, True)


def _put_external(
    conn: Connection,
    where: external.Target,
    dg: Digest,
    path: str | file_sources.FileSource | None,
    data: bytes | None,
    logged: bool,
) -> PutResult:
    """Store one large blob's bytes in the backend, then its row (see external.py)."""
    return _put_external_many(conn, where, [(dg, path, data)], [logged])[0]


def _put_external_many(
    conn: Connection,
    where: external.Target,
    entries: Sequence[tuple[Digest, str | file_sources.FileSource | None, bytes | None]],
    logged: Sequence[bool],
) -> list[PutResult]:
    """Store large blobs in the backend, then their rows (see external.py); one result per
    entry ``(digest, local file or None, bytes or None)``, in order.

    The stored rows among them are locked in one statement and verified (a damaged or
    missing copy is uploaded again and the row repointed). The others' queued deletions
    are cancelled in one statement, their objects uploaded and stat'ed concurrently
    (:func:`external.upload_many`), and only then are their rows inserted, in one
    statement: a committed row always has its bytes. A blob is ``new`` only at its first
    entry and only when this insert wrote its row; a ``put`` log entry is recorded for each
    new blob whose ``logged`` is true.

    Raises:
        StoreStateError: ``blobs.unreachable`` (retryable), ``blobs.backend``.
    """  # noqa: D205
    first: dict[str, int] = {}
    for i, (dg, _, _) in enumerate(entries):
        first.setdefault(dg.blake3, i)
    found = existing_rows(conn, list(first))
    for address, row in sorted(found.items()):
        if verify_stored(conn, row) is None:
            continue
        dg, path, data = entries[first[address]]
        external.upload(conn, where, dg, path, data)  # repair: good bytes
        if row.chunk_set is not None and row.chunk_set != external.EXTERNAL:
            conn.execute(sa.delete(blob_chunks).where(blob_chunks.c.chunk_set == row.chunk_set))
        conn.execute(
            sa.update(blobs)
            .where(blobs.c.address == address)
            .values(data=None, chunk_set=external.EXTERNAL, stored_in=where.spec)
        )
    fresh = [entries[i] for a, i in first.items() if a not in found]
    written: set[str] = set()
    if fresh:
        external.upload_many(conn, where, fresh)
        rows = [
            {
                "address": dg.blake3,
                "sha256": dg.sha256,
                "size": dg.size,
                "data": None,
                "chunk_set": external.EXTERNAL,
                "stored_in": where.spec,
            }
            for dg, _, _ in fresh
        ]
        written = {k[0] for k in insert_returning(conn, blobs, rows)}
        lost = [dg.blake3 for dg, _, _ in fresh if dg.blake3 not in written]
        if lost:
            existing_rows(conn, lost)  # a concurrent writer won: lock its rows
    note_blobs(conn, list(first), fresh=written)
    results: list[PutResult] = []
    log: list[Digest] = []
    for i, (dg, _, _) in enumerate(entries):
        new = first[dg.blake3] == i and dg.blake3 in written
        results.append(PutResult(dg, new))
        if new and logged[i]:
            log.append(dg)
    append_puts(conn, log)
    return results
