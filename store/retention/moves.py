"""``evstore blobs move --to BACKEND``: existing bytes moved between blob backends (issue 25).

Blob bytes live in the database (inline rows, chunk rows), a directory or a bucket
(store/objects/external.py). A move brings every blob that does not live where ``BACKEND``
says to it, while the store stays in use, in resumable batches; each batch:

1. **copy**: each blob's bytes are read from where its row says, hashed on the way into a
   local spool file and checked against the row (size, BLAKE3, SHA-256: damaged or missing
   bytes are never moved, the row is reported and left as it is); for a backend target the
   spool is uploaded under the blob's key and read back and hashed again.
2. **repoint**, one transaction for the batch: per row, the queued deletions of the target
   key are cancelled (on PostgreSQL this waits for a drain holding one), the target object
   is stat'ed again and uploaded anew when a drain took it meanwhile, then the row is
   updated only if it still says where its bytes were (a put's repair or a collection in
   between wins, and the copy just made is queued for deletion instead); inline bytes are
   written as the row's data or chunk rows; the old chunk rows are deleted and an old
   external copy is queued in ``blob_deletions``, drained by ``gc`` after the delay
   (a queued object is deleted only once no row names its place: ``_still_needed``).

Interrupted anywhere (an error, a kill), nothing is lost: before the repoint commits every
row still names bytes that are where it says; after it, the row names the verified copy.
Copies made by an interrupted batch are reused by the next run (it uploads again). The
``blobs.backend`` setting is set to ``BACKEND`` first, so new writes go there meanwhile; a
put whose transaction began before may still land in the old place: a move ends with
another pass while the previous one moved anything, and reports what ``remaining``.
docs/design.md, "Moving bytes between backends".
"""

from __future__ import annotations

import contextlib
import functools
import secrets
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..backends.base import blob_key
from ..backends.spec import INLINE, open_backend, parse_spec
from ..core.digests import Hasher
from ..core.errors import EvstoreError, NotFound, error
from ..core.settings import setting
from ..db.settings import load_settings, write_setting
from ..db.tables import blob_chunks, blobs
from ..db.transactions import Transactions
from ..objects.blobs import CHUNK_SIZE, INLINE_MAX, BlobRow, compare_digest, iter_stored, row_from
from ..objects.external import (
    EXTERNAL,
    cancel_deletions,
    make_backend_dir,
    queue_deletions,
)
from ..objects.markers import claim_backend

__all__ = ["BATCH", "BATCH_BYTES", "MoveReport", "move_blobs"]

#: Blobs per batch (one repoint transaction each).
BATCH = 50
#: Bytes of blob content per batch at most (a larger blob is a batch of its own): 64 MiB.
BATCH_BYTES = 64 << 20
#: Passes over the store at most (another pass runs while the previous one moved anything).
MAX_PASSES = 3

#: ``progress(moved so far, blobs to move found at the start)``.
Progress = Callable[[int, int], None]

#: Test seam: called with the name of each step reached (``"copied"`` after a batch's
#: bytes are in the target, ``"repointed"`` inside its transaction before the commit,
#: ``"committed"`` after it). Raising from it interrupts the move there.
_HOOK: Callable[[str], None] | None = None


def _reached(step: str) -> None:
    if _HOOK is not None:
        _HOOK(step)


@dataclass
class MoveReport:
    """What a move did.

    Attributes:
        to: the target spec in its normal form (``inline``, ``file:/dir``, ``s3://...``).
        moved: blobs whose rows now name the target. bytes: their size in bytes.
        batches: repoint transactions committed. passes: passes over the store.
        queued: old copies in a backend queued for deletion (``gc`` drains them).
        lost_races: blobs a put or a collection changed while being moved (left as they
            are now: still readable, or collected).
        faults: ``{"address", "code", "message"}`` per blob left where it is because its
            bytes are damaged or missing (``check`` reports them too).
        remaining: blobs still not in the target when the move ended (faults included).
    """

    to: str
    moved: int = 0
    bytes: int = 0
    batches: int = 0
    passes: int = 0
    queued: int = 0
    lost_races: int = 0
    faults: list[dict[str, Any]] = field(default_factory=list)
    remaining: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "to": self.to,
            "moved": self.moved,
            "bytes": self.bytes,
            "batches": self.batches,
            "passes": self.passes,
            "queued": self.queued,
            "lost_races": self.lost_races,
            "faults": self.faults,
            "remaining": self.remaining,
        }


@dataclass
class _Copy:
    """One blob of a batch: its row as read, and its verified bytes in ``spool``."""

    row: BlobRow
    stored_in: str | None
    spool: Path


def _pending(to: str, inline_max: int) -> sa.ColumnElement[bool]:
    """The rows whose bytes are not where a move to ``to`` puts them."""
    if to == INLINE:
        return blobs.c.stored_in.is_not(None)
    return sa.or_(
        sa.and_(blobs.c.stored_in.is_(None), blobs.c.size > inline_max),
        sa.and_(blobs.c.stored_in.is_not(None), blobs.c.stored_in != to),
    )


def _next_rows(
    db: Transactions, where: sa.ColumnElement[bool], after: str, batch: int
) -> list[tuple[BlobRow, str | None]]:
    cols = (blobs.c.address, blobs.c.sha256, blobs.c.size, blobs.c.chunk_set, blobs.c.stored_in)
    q = (
        sa.select(*cols)
        .where(where, blobs.c.address > after)
        .order_by(blobs.c.address)
        .limit(batch)
    )
    with db.read() as conn:
        return [(row_from(r), r.stored_in) for r in conn.execute(q)]


def _spool(db: Transactions, row: BlobRow, path: Path) -> None:
    """Copy a blob's stored bytes to ``path``, checked against its row.

    Raises:
        CorruptionError: damaged or missing bytes. NotFound: the row went meanwhile.
    """
    h = Hasher()
    with db.read() as conn, open(path, "wb") as out:
        for chunk in iter_stored(conn, row.digest.blake3):
            h.update(chunk)
            out.write(chunk)
    err = compare_digest(row, h.digest())
    if err is not None:
        raise err


def _upload_checked(to: str, row: BlobRow, path: Path) -> None:
    """Upload ``path`` under the blob's key in ``to``, then read it back and hash it.

    Raises:
        StoreStateError: ``blobs.backend`` when the copy read back is not the blob;
            ``blobs.unreachable``.
    """
    backend = open_backend(to)
    key = blob_key(row.digest.blake3)
    backend.put_file(key, str(path))
    h = Hasher()
    for chunk in backend.iter_chunks(key):
        h.update(chunk)
    if compare_digest(row, h.digest()) is not None:
        raise error(
            "blobs.backend",
            f"the copy of {row.digest.address} read back from {to} is not the blob; "
            "nothing was moved",
            backend=to,
        )


def _chunks_of(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while True:
            b = f.read(CHUNK_SIZE)
            if not b:
                return
            yield b


def _repoint(conn: Connection, to: str, copies: list[_Copy]) -> MoveReport:
    """The batch's transaction (see the module docstring, step 2); what it did, counted.

    May run more than once (a retried transaction): it counts into a fresh report.
    """
    report = MoveReport(to)
    moved: list[_Copy] = []
    doomed: list[tuple[str, str]] = []
    for c in copies:
        address = c.row.digest.blake3
        values: dict[str, Any]
        if to == INLINE:
            values = {"stored_in": None}
            if c.row.digest.size <= INLINE_MAX:
                values |= {"data": c.spool.read_bytes(), "chunk_set": None}
            else:
                values |= {"data": None, "chunk_set": secrets.randbits(62)}
        else:
            key = blob_key(address)
            cancel_deletions(conn, to, key)
            backend = open_backend(to)
            if backend.stat(key) != c.row.digest.size:  # a drain took it meanwhile
                backend.put_file(key, str(c.spool))
                if backend.stat(key) != c.row.digest.size:
                    raise error(
                        "blobs.backend",
                        f"{to} does not hold {key} after an upload; nothing was moved",
                        backend=to,
                    )
            values = {"data": None, "chunk_set": EXTERNAL, "stored_in": to}
        was = c.row.chunk_set
        done = conn.execute(
            sa.update(blobs)
            .where(
                blobs.c.address == address,
                blobs.c.stored_in.is_not_distinct_from(c.stored_in),
                blobs.c.chunk_set.is_not_distinct_from(was),
            )
            .values(**values)
        ).rowcount
        if done != 1:  # changed or collected meanwhile: the copy made is not needed
            report.lost_races += 1
            if to != INLINE:
                doomed.append((address, to))
            continue
        if to == INLINE and values["chunk_set"] is not None:
            for i, b in enumerate(_chunks_of(c.spool)):  # one chunk in memory at a time
                conn.execute(
                    sa.insert(blob_chunks), {"chunk_set": values["chunk_set"], "seq": i, "data": b}
                )
        if was is not None and was != EXTERNAL:
            conn.execute(sa.delete(blob_chunks).where(blob_chunks.c.chunk_set == was))
        if c.stored_in is not None:
            doomed.append((address, c.stored_in))
        moved.append(c)
    queue_deletions(conn, doomed)
    _reached("repointed")
    report.moved += len(moved)
    report.bytes += sum(c.row.digest.size for c in moved)
    report.queued += sum(1 for a, spec in doomed if spec != to)
    return report


def _start(db: Transactions, to: str) -> tuple[str, int]:
    """Check and set the target (``blobs.backend``); its normal form and ``blobs.inline_max``."""
    made = make_backend_dir(to)
    try:
        spec = claim_backend(db, to)  # answers, and is this store's (its marker)
    except BaseException:
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise

    def work(conn: Connection) -> int:
        write_setting(conn, "blobs.backend", spec)
        return int(setting(load_settings(conn), "blobs.inline_max"))

    return spec, db.run_transaction(work)


def move_blobs(
    db: Transactions,
    to: str,
    *,
    batch: int = BATCH,
    batch_bytes: int = BATCH_BYTES,
    progress: Progress | None = None,
) -> MoveReport:
    """Move every blob's bytes to the backend ``to`` (``evstore blobs move --to``).

    Args:
        db: the store's database.
        to: ``inline`` (the database), ``file:DIR`` (made when missing) or
            ``s3://BUCKET/PREFIX[?endpoint=URL&region=R]``; becomes ``blobs.backend``.
        batch: blobs per repoint transaction.
        batch_bytes: bytes of blob content per batch at most (one larger blob goes alone).
        progress: ``progress(moved so far, blobs to move found at the start)`` after each
            batch.

    Returns:
        A :class:`MoveReport`. Blobs larger than ``blobs.inline_max`` go to a backend
        target; every blob in a backend comes back for ``inline``.

    Raises:
        InputError: ``blobs.spec``, ``input.invalid`` (``batch`` or ``batch_bytes`` < 1).
        StoreStateError: ``blobs.unreachable`` (retryable: run the move again),
            ``blobs.backend``, and as any write. Nothing is lost whatever is raised.
    """
    if batch < 1 or batch_bytes < 1:
        raise error("input.invalid", f"a move's batch must be at least 1, not {batch}")
    spec, inline_max = _start(db, to)
    spec = parse_spec(spec).text
    report = MoveReport(spec)
    where = _pending(spec, inline_max)
    faults: dict[str, dict[str, Any]] = {}
    with db.read() as conn:
        found = int(conn.execute(sa.select(sa.func.count()).where(where)).scalar_one())
    with tempfile.TemporaryDirectory(prefix="evstore-move-") as tmp:
        for _ in range(MAX_PASSES):
            report.passes += 1
            before = report.moved
            after = ""
            while rows := _next_rows(db, where, after, batch):
                copies, after = _copy_batch(db, spec, rows, batch_bytes, Path(tmp), faults)
                if copies:
                    _reached("copied")
                    done = db.run_transaction(functools.partial(_repoint, to=spec, copies=copies))
                    report.moved += done.moved
                    report.bytes += done.bytes
                    report.queued += done.queued
                    report.lost_races += done.lost_races
                    report.batches += 1
                    _reached("committed")
                    if progress is not None:
                        progress(report.moved, max(found, report.moved))
                for f in Path(tmp).iterdir():
                    f.unlink()
            if report.moved == before:
                break
    report.faults = sorted(faults.values(), key=lambda f: str(f["address"]))
    with db.read() as conn:
        report.remaining = int(conn.execute(sa.select(sa.func.count()).where(where)).scalar_one())
    return report


def _copy_batch(
    db: Transactions,
    to: str,
    rows: list[tuple[BlobRow, str | None]],
    batch_bytes: int,
    tmp: Path,
    faults: dict[str, dict[str, Any]],
) -> tuple[list[_Copy], str]:
    """Step 1 for the first rows of ``rows`` up to ``batch_bytes`` (at least one blob); the
    copies made and the address of the last row dealt with (the next batch starts after it).
    """  # noqa: D205
    copies: list[_Copy] = []
    size = 0
    last = ""
    for row, stored_in in rows:
        if copies and size + row.digest.size > batch_bytes:
            break
        last = row.digest.blake3
        spool = tmp / row.digest.blake3
        try:
            _spool(db, row, spool)
        except NotFound:
            continue  # collected since it was listed
        except EvstoreError as err:
            if err.family != "corruption":
                raise
            faults[row.digest.address] = {
                "address": row.digest.address,
                "code": err.code,
                "message": err.message,
            }
            continue
        faults.pop(row.digest.address, None)
        if to != INLINE:
            _upload_checked(to, row, spool)
        copies.append(_Copy(row, stored_in, spool))
        size += row.digest.size
    return copies, last
