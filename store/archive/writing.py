"""Writing an export: every object read in batches, verified, then written to a tar or directory.

:func:`write_files` writes the layout's files by name. Inline blobs are read a batch at a
time on the driver's cursor (:func:`~evstore.db.engine.driver_rows`: one statement per
:data:`~evstore.archive.closure.BATCH` rows or :data:`WHOLE_MAX` bytes), and each batch is
hashed (size, BLAKE3, SHA-256) in a worker thread while the next batch is fetched
(:func:`~evstore.core.digests.digest_batch`); a batch is written only once every object in
it matched its index row, so no byte that failed verification reaches the output. Chunked
and backend blobs stream a chunk at a time, checked at their end (a failure aborts the whole
export: :meth:`Writer.abort` removes what was written).

A tar is written directly on the file descriptor: USTAR headers from
:func:`~evstore.archive.layout.tar_header` (the bytes ``tarfile`` would write), and a whole
batch's headers, bytes and padding in one ``writev`` per :data:`_IOV` buffers: ``tarfile``'s
per-member cost, then three buffered writes per member, were a fifth of the export (issue 29).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future
from typing import Any

import sqlalchemy as sa

from ..core.digests import Digest, digest_batch
from ..core.errors import NotFound, error
from ..db.engine import driver_rows
from ..objects import blobs as _blobs
from .closure import BATCH
from .layout import BLOB_DIR, blob_name, tar_end, tar_header, tar_info

__all__ = ["WHOLE_MAX", "Writer", "write_files"]

#: Inline blobs are read at most this many bytes per statement (bytes).
WHOLE_MAX = 8 << 20
#: Buffers per ``writev`` (Linux's IOV_MAX).
_IOV = 1024
_ZEROS = bytes(tarfile.BLOCKSIZE)
#: The directories a tar lists before the blobs, parents first.
_DIRS = ("blobs", "blobs/sha256")


class Writer:
    """Writes the layout into a temporary sibling of the output, renamed into place at the end.

    Raises (from each method): InputError ``output.unwritable`` when the output is in the
    way (a path that exists, other than an empty directory) or cannot be written.
    """

    def __init__(self, output: str) -> None:
        self.output = output
        self.tar = output.endswith(".tar")
        parent = os.path.dirname(os.path.abspath(output))
        if os.path.lexists(output) and not (
            not self.tar and os.path.isdir(output) and not os.listdir(output)
        ):
            raise error(
                "output.unwritable",
                f"{output} already exists; give a new directory or .tar path",
                path=output,
            )
        self._fd: int | None = None
        self._offset = 0
        try:
            if self.tar:
                self._fd, self.tmp = tempfile.mkstemp(prefix=".evstore-archive-", dir=parent)
            else:
                self.tmp = tempfile.mkdtemp(prefix=".evstore-archive-", dir=parent)
                os.makedirs(os.path.join(self.tmp, BLOB_DIR))
        except OSError as exc:
            raise self._unwritable(exc) from None

    def _unwritable(self, exc: OSError) -> Exception:
        return error(
            "output.unwritable",
            f"cannot write {self.output}: {exc.strerror}",
            path=self.output,
        )

    def _put(self, parts: list[bytes]) -> None:
        """Append ``parts`` to the tar: one ``writev`` per :data:`_IOV` buffers."""
        assert self._fd is not None
        try:
            for i in range(0, len(parts), _IOV):
                group = parts[i : i + _IOV]
                want = sum(map(len, group))
                done = os.writev(self._fd, group)
                if done < want:  # a short write: the rest a buffer at a time
                    rest = memoryview(b"".join(group))[done:]
                    while rest:
                        rest = rest[os.write(self._fd, rest) :]
                self._offset += want
        except OSError as exc:
            raise self._unwritable(exc) from None

    def write(self, name: str, size: int, chunks: Iterable[bytes]) -> None:
        """One file of ``size`` bytes, streamed from ``chunks`` (read to their end)."""
        if self._fd is None:
            try:
                with open(os.path.join(self.tmp, name), "wb") as fh:
                    for chunk in chunks:
                        fh.write(chunk)
            except OSError as exc:
                raise self._unwritable(exc) from None
            return
        self._put([tar_header(name, size)])
        written = 0
        for chunk in chunks:  # to the iterator's end: iter_checked verifies there
            written += len(chunk)
            self._put([chunk])
        if written != size:
            raise error("output.unwritable", f"{name}: {written} bytes, not {size}")
        self._put([_ZEROS[: -size % tarfile.BLOCKSIZE]])

    def write_all(self, files: list[tuple[str, bytes]]) -> None:
        """Files whose bytes are in memory (and verified), in order: ``(name, bytes)``."""
        if self._fd is None:
            for name, data in files:
                self.write(name, len(data), (data,))
            return
        parts: list[bytes] = []
        add = parts.append
        for name, data in files:
            size = len(data)
            add(tar_header(name, size))
            if size:
                add(data)
                if size % tarfile.BLOCKSIZE:
                    add(_ZEROS[: -size % tarfile.BLOCKSIZE])
        self._put(parts)

    def directories(self) -> None:
        """The tar's entries of ``blobs`` and ``blobs/sha256`` (a directory has them)."""
        if self._fd is not None:
            self._put([tar_info(d, None).tobuf(tarfile.USTAR_FORMAT) for d in _DIRS])

    def commit(self) -> None:
        """End the tar and move the output into place."""
        try:
            if self._fd is not None:
                self._put([tar_end(self._offset)])
                fd, self._fd = self._fd, None
                os.close(fd)
                os.chmod(self.tmp, 0o644)
            elif os.path.isdir(self.output):
                os.rmdir(self.output)
            os.replace(self.tmp, self.output)
        except OSError as exc:
            raise self._unwritable(exc) from None

    def abort(self) -> None:
        """Remove everything written (the output path is left as it was)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        if os.path.isdir(self.tmp):
            shutil.rmtree(self.tmp, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)


def _fetch(
    conn: sa.Connection, rows: list[_blobs.BlobRow], rowids: Mapping[str, Any] | None = None
) -> list[bytes]:
    """The stored bytes of inline blobs (one statement), unverified, in the order of ``rows``.

    On SQLite, with every row's ``blobs.id`` in ``rowids`` (BLAKE3 hex -> id, read in the
    same snapshot by the walk), the rows are read by their primary key: one b-tree seek
    each instead of the address index's and then the table's (about a third less CPU for
    10k rows of 10 KiB, issue 29); the rows are keyed by the address they hold, so a row
    that no longer has the asked-for address is not found.

    Raises:
        NotFound: ``not-found.blob``. CorruptionError: ``corruption.row`` (not bytes).
    """
    addresses = [r.digest.blake3 for r in rows]
    params: tuple[Any, ...]
    found: dict[str, Any]
    if conn.dialect.name == "postgresql":
        sql, params = "SELECT address, data FROM blobs WHERE address = ANY(%b)", (addresses,)
        found = {a: d for a, d in driver_rows(conn, sql, params, binary=True)}
    else:
        ids = [rowids.get(a) for a in addresses] if rowids is not None else None
        if ids is not None and all(type(i) is int for i in ids):
            sql = f"SELECT address, data FROM blobs WHERE id IN ({','.join('?' * len(ids))})"
            params = tuple(ids)
        else:
            sql = f"SELECT address, data FROM blobs WHERE address IN ({','.join('?' * len(rows))})"
            params = tuple(addresses)
        found = {a: d for a, d in driver_rows(conn, sql, params)}
    out: list[bytes] = []
    for row in rows:
        a = row.digest.blake3
        if a not in found:
            raise NotFound(f"no blob {row.digest.address}", code="not-found.blob")
        d = found[a]
        out.append(d if type(d) is bytes else b"" if d is None else _blobs.as_bytes(d, a))
    return out


_Batch = list[tuple[str, Any]]  # (name, bytes or an inline BlobRow)


def _segments(files: dict[str, tuple[int, Any]]) -> Iterator[_Batch | tuple[str, int, Any]]:
    """The files by name: runs of in-memory and inline ones (at most :data:`BATCH` rows and
    :data:`WHOLE_MAX` bytes to read each), and each chunked or backend blob on its own.
    """  # noqa: D205
    batch: _Batch = []
    rows = total = 0
    for name in sorted(files):
        size, what = files[name]
        if isinstance(what, bytes):
            batch.append((name, what))
            continue
        if what.chunk_set is not None:
            if batch:
                yield batch
                batch, rows, total = [], 0, 0
            yield name, size, what
            continue
        if rows >= BATCH or total >= WHOLE_MAX:
            yield batch
            batch, rows, total = [], 0, 0
        batch.append((name, what))
        rows += 1
        total += size
    if batch:
        yield batch


class _Pending:
    """One batch read and handed to the hashing worker, not yet verified nor written."""

    def __init__(
        self, conn: sa.Connection, batch: _Batch, rowids: Mapping[str, Any] | None
    ) -> None:
        self.batch = batch
        self.rows = [w for _, w in batch if not isinstance(w, bytes)]
        self.data = _fetch(conn, self.rows, rowids) if self.rows else []
        self.hashed: Future[list[Digest]] | None = digest_batch(self.data) if self.rows else None

    def files(self) -> list[tuple[str, bytes]]:
        """The batch's files, every object checked against its row.

        Raises:
            CorruptionError: size, BLAKE3 or SHA-256 of an object differ from its row.
        """
        got = self.hashed.result() if self.hashed is not None else []
        data = iter(self.data)
        out: list[tuple[str, bytes]] = []
        i = 0
        for name, what in self.batch:
            if isinstance(what, bytes):
                out.append((name, what))
                continue
            if got[i] != what.digest:
                err = _blobs.compare_digest(what, got[i])
                if err is not None:
                    raise err
            out.append((name, next(data)))
            i += 1
        return out


def write_files(
    conn: sa.Connection,
    writer: Writer,
    files: dict[str, tuple[int, Any]],
    rowids: Mapping[str, Any] | None = None,
) -> None:
    """Write ``files`` (SHA-256 hex -> ``(size in bytes, bytes or BlobRow)``) as blobs, by name.

    ``rowids`` (BLAKE3 hex -> ``blobs.id``, from the same snapshot) lets SQLite read inline
    blobs by primary key (:func:`_fetch`).

    Each batch of inline blobs is hashed while the next one is read, and written only after
    every object in it was verified; chunked and backend blobs are streamed and checked at
    their end.

    Raises:
        NotFound: ``not-found.blob``. CorruptionError: an object does not match its index
            row (size, BLAKE3, SHA-256) or is malformed. InputError: ``output.unwritable``.
    """
    pending: _Pending | None = None
    for seg in _segments(files):
        if isinstance(seg, list):
            ahead = _Pending(conn, [(blob_name(n), w) for n, w in seg], rowids)
            if pending is not None:
                writer.write_all(pending.files())  # hashed while ``ahead`` was read
            pending = ahead
            continue
        if pending is not None:
            writer.write_all(pending.files())
            pending = None
        name, size, row = seg
        writer.write(blob_name(name), size, _blobs.iter_checked(conn, row))
    if pending is not None:
        writer.write_all(pending.files())
