"""A large regular file put into a blob backend without a local copy (issue 25).

A streamed put must upload exactly the bytes it hashed (issue 23), and the key it uploads to
is the digest, so the bytes are hashed before the upload. A pipe or stdin can be read only
once: it is spooled to a temporary file while hashed, and the spool is uploaded
(store/objects/blobs.py). An open *regular* file can be read twice instead, which saves
writing and reading the whole blob again locally: the first read hashes it, the second
feeds the upload and is checked against the first as it goes (BLAKE3, the address: equal
BLAKE3 means equal bytes, so the SHA-256 of the first read holds for them too). A file that
changed in between (shorter, longer or other bytes) raises ``input.changed`` from inside the
upload before its last piece is handed over, so the backend never makes the object visible
(:meth:`~evstore.backends.base.BlobBackend.put_chunks`) and no row is written.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from typing import Any, BinaryIO

from ..core.digests import Digest, read_again_checked

__all__ = ["FileSource", "PIECE", "read_up_to", "regular_file"]

#: Bytes read from the file at a time, on both reads (the S3 backend's upload part size).
PIECE = 8 << 20


def regular_file(stream: Any) -> bool:
    """Whether ``stream`` is a binary file object over a seekable regular file.

    Only Python's own file objects count (``open(path, "rb")``, ``tempfile.TemporaryFile``),
    by exact type: their ``fileno`` has no side effect and their ``read`` gives the file's
    bytes. A subclass is read once, as any stream: a tar member
    (``TarFile.extractfile``, whose raw part has no ``fileno``) or a caller's reader that
    counts or hashes what it hands out must not be read twice. A pipe, a socket, stdin from a
    terminal, a text stream or another file-like object is False, and is read once.
    """
    if type(stream) not in (io.BufferedReader, io.BufferedRandom, io.FileIO):
        return False
    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode) and stream.seekable()
    except (OSError, ValueError, AttributeError):
        return False


def read_up_to(stream: BinaryIO, n: int) -> bytes:
    """Up to ``n`` bytes of ``stream``: fewer only at its end (a raw file may return less
    than asked at once, so reads are repeated).
    """  # noqa: D205
    parts: list[bytes] = []
    got = 0
    while got < n:
        b = stream.read(n - got)
        if not b:
            break
        parts.append(b)
        got += len(b)
    return parts[0] if len(parts) == 1 else b"".join(parts)


class FileSource:
    """The bytes of an open regular file from byte offset ``start``, whose first read gave
    ``digest``; :meth:`pieces` reads them again for an upload, checking them as it goes.

    Args:
        stream: the open file (:func:`regular_file` is True for it); it is sought, not closed.
        start: the offset (bytes) where the first read began.
        digest: what the first read found (size in bytes, BLAKE3, SHA-256).
    """  # noqa: D205

    __slots__ = ("digest", "start", "stream")

    def __init__(self, stream: BinaryIO, start: int, digest: Digest) -> None:
        self.stream = stream
        self.start = start
        self.digest = digest

    def pieces(self) -> Iterator[bytes]:
        """The file's bytes again, :data:`PIECE` at a time.

        Raises:
            InputError: ``input.changed`` before the last piece is yielded when the file
                now holds other bytes (or fewer) than the first read found; an OSError of
                the second read is ``input.unreadable``.
        """
        return read_again_checked(self.stream, self.start, self.digest, PIECE)
