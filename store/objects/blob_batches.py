"""Many blobs in one transaction, and the expected-digest check of a put.

:func:`put_stream_many` is the body of :meth:`evstore.Store.put_many`: small items are
gathered into chunks written by one statement batch, large ones streamed, and a caller's
stream is rewound when the transaction runs again (:class:`rereadable`).
"""

from __future__ import annotations

import os
import stat
import struct
import tempfile
from collections.abc import Callable, Iterable
from typing import Any, BinaryIO

import sqlalchemy as sa

from ..core.digests import Digest
from ..core.errors import EvstoreError, error
from ..core.refs import ContentRef
from ..db.tables import blobs as _blob_rows
from ..db.transactions import Transactions
from . import blobs as _blobs
from . import external
from .leases import settle_blobs
from .log_entries import spill_entries

__all__ = [
    "PUT_CHUNK",
    "ResultSpool",
    "expecting",
    "item_bytes",
    "put_expecting",
    "put_stream_many",
    "rereadable",
]

#: A path larger than this (bytes) is streamed by itself instead of read into a chunk.
_READ_WHOLE_MAX = 8 << 20
#: Flags of a path's open (looked up once: two ``getattr`` a file were ~1 us, issue 29).
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
#: A chunk of small items is written once it holds this many bytes.
_CHUNK_BYTES = 64 << 20
#: Small items ``put_many`` writes per statement batch: enough for PostgreSQL's COPY path
#: (1,000 or more) and few statements on SQLite (issue 16, bench/core.py part a).
PUT_CHUNK = 2000


def item_bytes(item: Any, index: int) -> bytes | BinaryIO:
    """An item of :meth:`evstore.Store.put_many`: its bytes, or an open stream for a large one.

    Raises:
        InputError: ``input.unreadable`` (a path that cannot be read), ``input.invalid``.
    """
    if isinstance(item, (bytes, bytearray, memoryview)):
        return bytes(item)
    if isinstance(item, os.PathLike):
        path = os.fspath(item)
        try:
            return _read_path(path)
        except OSError as exc:
            raise error(
                "input.unreadable", f"cannot read {path}: {exc.strerror}", path=str(path)
            ) from None
    if hasattr(item, "read"):
        return item  # type: ignore[no-any-return]
    raise error(
        "input.invalid",
        f"item {index} is a {type(item).__name__}: put_many takes bytes, paths or binary streams",
        item=index,
    )


def _read_path(path: str | bytes) -> bytes | BinaryIO:
    """A small file's bytes (read to its end), or a large file open for streaming.

    Plain descriptor calls (open, fstat, read, close): a file object per small file cost
    ~5 us of the ~48 us a file of a bulk re-put (issue 29). Reads until end of file, so a
    file that grows after the fstat is read whole: the first read asks for one byte more
    than the fstat's size, and a regular file that gives exactly its size has ended (one
    read per small file, as git reads st_size bytes); anything else (fewer bytes, a pipe, a
    device) is read until a read returns nothing. Raises OSError as ``open`` would.
    """
    fd = os.open(path, _OPEN_FLAGS)
    try:
        st = os.fstat(fd)
        size = st.st_size
        if size > _READ_WHOLE_MAX:
            fh = os.fdopen(fd, "rb")
            fd = -1  # the stream owns it now
            return fh
        first = os.read(fd, size + 1)  # the whole file in one call, as a rule
        if len(first) == size and stat.S_ISREG(st.st_mode):
            return first  # the regular file's size, and no byte more: its end
        parts = [first]
        while parts[-1]:  # to the end of the file (one more call that finds it)
            parts.append(os.read(fd, 1 << 16))
        return parts[0] if len(parts) == 2 else b"".join(parts)
    finally:
        if fd >= 0:
            os.close(fd)


def put_stream_many(
    conn: sa.Connection,
    items: Iterable[Any],
    progress: Callable[[int], None] | None = None,
    streams: dict[int, rereadable] | None = None,
    out: list[_blobs.PutResult] | ResultSpool | None = None,
) -> list[_blobs.PutResult] | ResultSpool:
    """Store ``items`` on ``conn``, a chunk of small ones at a time, large ones streamed.

    ``streams`` keeps, across the attempts of one transaction, each stream item's
    :class:`~evstore.facade.ingest.rereadable` by its index, so a retry stores the same bytes.
    The results go to ``out`` (a new list by default; a :class:`ResultSpool` keeps them on
    disk), which is returned.

    Before each chunk after the first, what the earlier ones left for the commit is written
    (their roots and leases, :func:`~evstore.objects.leases.settle_blobs`; their log entries,
    :func:`~evstore.objects.log_entries.spill_entries`), so memory holds one chunk's rows,
    entries and addresses whatever the number of items (issue 28); a call of one chunk
    writes them at the commit, as any write does.
    """
    if streams is None:
        streams = {}
    if out is None:
        out = []
    pending: list[bytes] = []
    size = 0
    written = [False]

    def settle() -> None:
        if written[0]:
            settle_blobs(conn)  # roots and leases first: rooting may log retain entries
            spill_entries(conn)
        written[0] = True

    def flush() -> None:
        nonlocal size
        if pending:
            settle()
            out.extend(_blobs.put_many(conn, pending))
            pending.clear()
            size = 0
            if progress is not None:
                progress(len(out))

    for i, item in enumerate(items):
        data = item_bytes(item, i)
        if isinstance(data, bytes):
            pending.append(data)
            size += len(data)
            if len(pending) >= PUT_CHUNK or size >= _CHUNK_BYTES:
                flush()
            continue
        flush()
        if not isinstance(item, os.PathLike):  # a caller's stream: rewound on a retry
            data = streams.setdefault(i, rereadable(data))()
        try:
            settle()
            out.append(_blobs.put_stream(conn, data))
        finally:
            if isinstance(item, os.PathLike):
                data.close()
        if progress is not None:
            progress(len(out))
    flush()
    return out


class ResultSpool:
    """Put results kept in a temporary file, in order, instead of a list (issue 28).

    73 bytes a result on disk (BLAKE3 and SHA-256 as bytes, the size, the ``new`` flag),
    none in memory: a put of many items hands its results to a caller's sink after its
    commit (:meth:`replay`) without holding one :class:`~evstore.core.results.PutResult`
    per item. :meth:`reset` empties it for another attempt of a transaction. Use it as a
    context manager, or :meth:`close` it.
    """

    def __init__(self) -> None:
        self._fh = tempfile.TemporaryFile(prefix="evstore-results-")
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def __enter__(self) -> ResultSpool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def append(self, res: _blobs.PutResult) -> None:
        """Keep one result after the others."""
        d = res.digest
        self._fh.write(
            _RECORD.pack(bytes.fromhex(d.blake3), bytes.fromhex(d.sha256), d.size, res.new)
        )
        self._count += 1

    def extend(self, results: Iterable[_blobs.PutResult]) -> None:
        """Keep each of ``results``, in order."""
        for res in results:
            self.append(res)

    def reset(self) -> None:
        """Forget every result (a transaction's new attempt starts from none)."""
        self._fh.seek(0)
        self._fh.truncate()
        self._count = 0

    def replay(self, sink: Callable[[_blobs.PutResult], object]) -> int:
        """Call ``sink(result)`` for each result kept, in order; return how many.

        Memory: one read of about 64 KiB of records at a time.
        """
        self._fh.flush()
        self._fh.seek(0)
        left = self._count
        per = max(1, (64 << 10) // _RECORD.size)
        while left:
            n = min(per, left)
            block = self._fh.read(n * _RECORD.size)
            for b3, sha, size, new in _RECORD.iter_unpack(block):
                sink(_blobs.PutResult(Digest(b3.hex(), sha.hex(), size), new))
            left -= n
        self._fh.seek(0, os.SEEK_END)
        return self._count

    def close(self) -> None:
        """Delete the file."""
        self._fh.close()


#: One result on disk: BLAKE3, SHA-256, size in bytes, new.
_RECORD = struct.Struct("<32s32sQ?")


def expecting(
    wanted: ContentRef | None, expect: str | None
) -> Callable[[_blobs.PutResult], _blobs.PutResult]:
    """A check that a put's result hashes to ``wanted`` (the parsed ``expect`` ref).

    Run inside the put's transaction, so a mismatch rolls everything back.

    Raises:
        InputError: ``put.digest-mismatch`` with ``expected`` and ``got`` in its details.
    """

    def check(res: _blobs.PutResult) -> _blobs.PutResult:
        if wanted is not None:
            got = res.digest.blake3 if wanted.algorithm == "blake3" else res.digest.sha256
            if got != wanted.hex:
                raise error(
                    "put.digest-mismatch",
                    f"the bytes do not hash to {expect}; nothing was stored",
                    expected=expect,
                    got=f"{wanted.algorithm}:{got}",
                )
        return res

    return check


def put_expecting(
    tx: Transactions,
    put: Callable[[sa.Connection], _blobs.PutResult],
    wanted: ContentRef | None,
    expect: str | None,
) -> _blobs.PutResult:
    """Run ``put`` in one transaction, checked against ``expect`` (:func:`expecting`).

    A mismatch rolls the transaction back; when the put had uploaded new bytes to a blob
    backend, that object is queued for deletion in a transaction of its own (the drain
    deletes it after ``blobs.deletion_delay_seconds`` unless a row needs it by then), so a
    refused put leaves no orphan (issue 25).

    Raises:
        InputError: ``put.digest-mismatch``, and what ``put`` raises.
    """
    checked = expecting(wanted, expect)
    uploaded: list[tuple[str, str]] = []

    def work(conn: sa.Connection) -> _blobs.PutResult:
        uploaded.clear()
        res = put(conn)
        if wanted is not None and res.new:
            q = sa.select(_blob_rows.c.stored_in).where(_blob_rows.c.address == res.digest.blake3)
            spec = conn.execute(q).scalar()
            if spec is not None:
                uploaded.append((res.digest.blake3, spec))
        return checked(res)

    try:
        return tx.run_transaction(work)
    except EvstoreError as err:
        if err.code == "put.digest-mismatch" and uploaded:
            tx.run_transaction(lambda conn: external.queue_deletions(conn, uploaded))
        raise


class rereadable:  # lower case: used like a function, as one_shot is
    """A stream for a transaction body that may be run again on contention.

    Calling the object returns ``stream`` positioned where it was at the first call: a
    seekable stream (a file, a spooled upload) is sought back to that position for every
    later attempt, so each attempt hashes and stores the same bytes. A stream that cannot
    seek (stdin, a pipe, a generator of chunks) is handed out once; a second call raises
    ``store.busy`` (retryable; nothing was written) instead of storing what is left of it
    (issue 23: a retried streamed put must never commit other bytes).

    Raises:
        StoreStateError: ``store.busy`` on a second call for a stream that cannot seek.
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.start: int | None = None
        self.used = False

    def __call__(self) -> Any:
        """The stream, at its starting position (raises ``store.busy`` as above)."""
        if not self.used:
            self.used = True
            try:
                if hasattr(self.stream, "seekable") and self.stream.seekable():
                    self.start = int(self.stream.tell())
            except (OSError, ValueError, AttributeError):
                self.start = None
            return self.stream
        if self.start is None:
            raise error(
                "store.busy",
                "the database was busy and the streamed input cannot be read again; "
                "nothing was written: run the command again",
            )
        try:
            self.stream.seek(self.start)
        except (OSError, ValueError) as exc:
            raise error(
                "store.busy",
                f"the database was busy and the input could not be rewound ({exc}); "
                "nothing was written: run the command again",
            ) from None
        return self.stream
