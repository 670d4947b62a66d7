"""Batch reads of blobs: one statement per batch of refs, every blob verified (issue 29).

``cat-batch``, ``verify-list`` and ``has`` name thousands of blobs, mostly small. Read one at
a time, each paid a read transaction and two SQLAlchemy statements (74 % of their CPU, issue
29); here a batch of up to :data:`BATCH` refs is looked up with one statement on the
driver's cursor (:func:`evstore.db.engine.driver_rows`), which also brings the bytes of every
inline blob of at most :data:`SMALL` bytes. Those are verified (size, BLAKE3, SHA-256:
:func:`~evstore.objects.blobs.compare_digest`, exactly as a single read) and answered from
the batch. Anything else (a larger, chunked or backend blob; a SHA-256 that more than one
row claims) is read the single-blob way, in its own read transaction, so its answer, error
and message are the ones :meth:`Store.open_blob` gives. Memory: one batch's small blobs
(at most :data:`BATCH` x :data:`SMALL` bytes) plus one chunk.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from ..core.digests import Digest, digest_bytes
from ..core.errors import CorruptionError, EvstoreError, NotFound
from ..core.refs import ContentRef, parse_ref
from ..db.engine import driver_rows
from ..db.transactions import Transactions
from . import blobs as _blobs

__all__ = ["BATCH", "BlobRead", "SMALL", "has_verified", "read_batches", "resolve"]

#: Refs looked up by one statement (within SQLite's bound-parameter limit of old builds).
BATCH = 500
#: Largest inline blob whose bytes come with the batch's index rows, in bytes.
SMALL = 1 << 16

#: The head of the batch statement: the index columns, and the bytes of a small inline blob.
_HEAD = (
    "SELECT address, sha256, size, chunk_set, stored_in, CASE WHEN chunk_set IS NULL"
    f" AND stored_in IS NULL AND size <= {SMALL} THEN data END FROM blobs WHERE "
)


@dataclass(frozen=True, slots=True)
class BlobRead:
    """One ref's answer: ``digest`` and verified ``chunks``, or the ``error`` it met.

    ``ref`` is the ref as given. ``chunks`` of a blob answered from the batch is its whole
    verified bytes as one chunk; otherwise it is :func:`~evstore.objects.blobs.iter_verified`
    (the whole blob verified before its first chunk; CorruptionError or ``blobs.*`` from the
    first ``next``). The caller consumes ``chunks`` before asking for the next BlobRead.
    """

    ref: str
    digest: Digest | None
    chunks: Iterator[bytes]
    error: EvstoreError | None


class _Row:
    """A selected row in the attribute shape :func:`~evstore.objects.blobs.row_from` reads."""

    __slots__ = ("address", "chunk_set", "data", "sha256", "size", "stored_in")

    def __init__(self, r: Sequence[Any]) -> None:
        self.address, self.sha256, self.size, self.chunk_set, self.stored_in, self.data = r


def resolve(conn: Connection, ref: str) -> _blobs.BlobRow:
    """The index row ``ref`` names (a SHA-256 ref: one row with that digest).

    Raises:
        RefSyntaxError: ``ref.syntax``. NotFound: ``not-found.blob`` (``details.ref``).
        CorruptionError: ``corruption.row``.
    """
    row = _blobs.lookup(conn, parse_ref(ref))
    if row is None:
        raise NotFound(f"no blob for {ref}", code="not-found.blob", details={"ref": ref})
    return row


def _select(conn: Connection, parsed: Sequence[ContentRef]) -> list[_Row]:
    """Rows of every blob a ref of ``parsed`` names: one statement (two IN lists, UNION ALL)."""
    addresses = sorted({p.hex for p in parsed if p.algorithm == "blake3"})
    sha256s = sorted({p.hex for p in parsed if p.algorithm != "blake3"})
    head = _HEAD
    parts: list[str] = []
    params: list[Any] = []
    if conn.dialect.name == "postgresql":
        for column, values in (("address", addresses), ("sha256", sha256s)):
            if values:
                parts.append(f"{head}{column} = ANY(%b)")
                params.append(values)
    else:
        for column, values in (("address", addresses), ("sha256", sha256s)):
            if values:
                parts.append(f"{head}{column} IN ({','.join('?' * len(values))})")
                params.extend(values)
    if not parts:
        return []
    return [_Row(r) for r in driver_rows(conn, " UNION ALL ".join(parts), tuple(params))]


def _index(rows: list[_Row]) -> tuple[dict[str, _Row], dict[str, list[_Row]]]:
    by_address: dict[str, _Row] = {}
    by_sha256: dict[str, list[_Row]] = {}
    for r in rows:
        if r.address not in by_address:  # a row selected by both lists comes twice
            by_address[r.address] = r
            by_sha256.setdefault(r.sha256, []).append(r)
    return by_address, by_sha256


def _small(r: _Row, row: _blobs.BlobRow) -> bytes | None:
    """The blob's bytes when the batch brought them, else None (read it singly).

    Raises:
        CorruptionError: ``corruption.row`` for a value that is not bytes (as a read).
    """
    if r.chunk_set is not None or r.stored_in is not None or row.digest.size > SMALL:
        return None
    return b"" if r.data is None else _blobs.as_bytes(r.data, r.address)


def read_batches(db: Transactions, refs: Sequence[str]) -> Iterator[BlobRead]:
    """One :class:`BlobRead` per ref of ``refs``, in order, each blob verified.

    A malformed ref answers ``ref.syntax``, an unknown one ``not-found.blob`` ("no blob for
    <ref>"), a corrupt blob its ``corruption.*`` code: the errors and messages of
    :meth:`Store.open_blob`. Errors of the database during a batch's statement send that
    batch the single-blob way (each ref then meets the error itself).
    """
    for start in range(0, len(refs), BATCH):
        yield from _one_batch(db, refs[start : start + BATCH])


def _one_batch(db: Transactions, refs: Sequence[str]) -> Iterator[BlobRead]:
    parsed: list[ContentRef | EvstoreError] = []
    for ref in refs:
        try:
            parsed.append(parse_ref(ref))
        except EvstoreError as err:
            parsed.append(err)
    try:
        with db.read() as conn:
            rows = _select(conn, [p for p in parsed if isinstance(p, ContentRef)])
    except EvstoreError:
        rows = None
    if rows is None:
        for ref, p in zip(refs, parsed, strict=True):
            if isinstance(p, ContentRef):
                yield from _single_read(db, ref)
            else:
                yield _failed(ref, p)
        return
    by_address, by_sha256 = _index(rows)
    for ref, p in zip(refs, parsed, strict=True):
        if not isinstance(p, ContentRef):
            yield _failed(ref, p)
            continue
        if p.algorithm == "blake3":
            found = by_address.get(p.hex)
            candidates = [] if found is None else [found]
        else:
            candidates = by_sha256.get(p.hex, [])
        if not candidates:
            gone = NotFound(f"no blob for {ref}", code="not-found.blob", details={"ref": ref})
            yield _failed(ref, gone)
            continue
        if len(candidates) > 1:  # a SHA-256 claimed twice (a tampered row): as singly
            yield from _single_read(db, ref)
            continue
        try:
            row = _blobs.row_from(candidates[0])
            data = _small(candidates[0], row)
        except EvstoreError as err:
            yield _failed(ref, err)
            continue
        if data is None:
            yield from _single_read(db, ref)
            continue
        bad = _blobs.compare_digest(row, digest_bytes(data))
        yield (
            _failed(ref, bad) if bad is not None else BlobRead(ref, row.digest, iter((data,)), None)
        )


def _failed(ref: str, err: EvstoreError) -> BlobRead:
    return BlobRead(ref, None, iter(()), err)


def _single_read(db: Transactions, ref: str) -> Iterator[BlobRead]:
    """A ref read as :meth:`Store.open_blob` reads it: its own read transaction, held while
    the caller consumes the chunks (they are verified before the first is produced).
    """  # noqa: D205
    try:
        with db.read() as conn:
            row = resolve(conn, ref)
            yield BlobRead(ref, row.digest, _blobs.iter_verified(conn, row), None)
    except EvstoreError as err:
        yield _failed(ref, err)


def has_verified(db: Transactions, parsed: Sequence[ContentRef]) -> list[str]:
    """The refs of ``parsed`` (their text) that no stored, intact blob answers.

    One read transaction and one statement per :data:`BATCH` refs; a SHA-256 ref counts any
    row with that digest whose bytes hash to it. Bytes that came with the batch are hashed
    in memory, others re-read (:func:`~evstore.objects.blobs.intact`).

    Raises:
        CorruptionError: ``corruption.row`` for a malformed index row (as the single lookup).
    """
    missing: list[str] = []
    for start in range(0, len(parsed), BATCH):
        part = parsed[start : start + BATCH]
        with db.read() as conn:
            by_address, by_sha256 = _index(_select(conn, part))
            for p in part:
                if p.algorithm == "blake3":
                    found = by_address.get(p.hex)
                    candidates = [] if found is None else [found]
                else:
                    candidates = by_sha256.get(p.hex, [])
                rows = [(r, _blobs.row_from(r)) for r in candidates]
                if not any(_intact(conn, r, row) for r, row in rows):
                    missing.append(p.text)
    return missing


def _intact(conn: Connection, r: _Row, row: _blobs.BlobRow) -> bool:
    try:
        data = _small(r, row)
    except CorruptionError:
        return False  # not bytes: as the re-read finds it
    if data is None:
        return _blobs.intact(conn, row)
    return _blobs.compare_digest(row, digest_bytes(data)) is None
