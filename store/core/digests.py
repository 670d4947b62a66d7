"""Digests: the one place where bytes are hashed and digests are encoded.

Terms:
    address   ``blake3:`` + 64 lowercase hex of the BLAKE3-256 digest of a blob's bytes; the
              primary key of every stored object.
    sha256    the SHA-256 of the same bytes, kept beside the address because the contracts
              speak SHA-256 (bare lowercase hex, ``sha256:`` + hex or + 43-char base64url).

:class:`Hasher` computes size, BLAKE3 and SHA-256 in one pass over exactly the bytes stored,
so a streamed 256 MiB blob is read once.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, BinaryIO

import blake3 as _blake3

from .errors import EvstoreError, error

__all__ = [
    "Digest",
    "Hasher",
    "PARALLEL_MIN",
    "b64u_to_hex",
    "blake3_hex",
    "digest_batch",
    "digest_bytes",
    "digest_stream",
    "hex_to_b64u",
    "read_again_checked",
    "sha256_b64u",
    "sha256_hex",
]


def sha256_hex(data: bytes) -> str:
    """SHA-256 of ``data`` as 64 lowercase hex characters."""
    return hashlib.sha256(data).hexdigest()


def sha256_b64u(data: bytes) -> str:
    """SHA-256 of ``data`` as 43 base64url characters without padding."""
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def hex_to_b64u(hex_digest: str) -> str:
    """Re-encode a 64-hex SHA-256 as 43-char unpadded base64url.

    Raises:
        ValueError: ``hex_digest`` is not 64 hex characters (a caller bug; user input goes
            through :mod:`evstore.core.refs`).
    """
    raw = bytes.fromhex(hex_digest)
    if len(raw) != 32:
        raise ValueError("a SHA-256 digest is 32 bytes")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def b64u_to_hex(b64u: str) -> str:
    """Decode a 43-char unpadded base64url SHA-256 to 64 lowercase hex.

    Canonical only: the last character's two unused bits must be zero, so each digest has
    exactly one spelling (RFC 4648 section 3.5).

    Raises:
        ValueError: not 43 base64url characters, or non-zero padding bits.
    """
    if len(b64u) != 43 or not all(c.isascii() and (c.isalnum() or c in "-_") for c in b64u):
        raise ValueError("expected 43 base64url characters")
    try:
        raw = base64.urlsafe_b64decode(b64u + "=")
    except (binascii.Error, ValueError) as exc:  # pragma: no cover - alphabet checked above
        raise ValueError(str(exc)) from exc
    if hex_to_b64u(raw.hex()) != b64u:
        raise ValueError("non-zero padding bits")
    return raw.hex()


def blake3_hex(data: bytes) -> str:
    """BLAKE3-256 of ``data`` as 64 lowercase hex characters."""
    return _blake3.blake3(data).hexdigest()


@dataclass(frozen=True, slots=True)
class Digest:
    """The digests of one byte string.

    Attributes:
        blake3: 64 lowercase hex (the address, without the ``blake3:`` prefix).
        sha256: 64 lowercase hex.
        size: length in bytes.
    """

    blake3: str
    sha256: str
    size: int

    @property
    def address(self) -> str:
        """The content address, ``blake3:<64 hex>``."""
        return "blake3:" + self.blake3

    @property
    def sha256_b64u(self) -> str:
        """The SHA-256 as 43-char unpadded base64url."""
        return hex_to_b64u(self.sha256)

    def forms(self) -> dict[str, str | int]:
        """Every digest form the contracts use, as a JSON-ready dict."""
        b64u = self.sha256_b64u  # encoded once for both forms
        return {
            "address": "blake3:" + self.blake3,
            "size": self.size,
            "sha256": "sha256:" + self.sha256,
            "sha256_b64u": "sha256:" + b64u,
            "object_store": "object-store:sha256:" + b64u,
        }


#: Chunks of at least this many bytes are hashed by SHA-256 and BLAKE3 at once (bytes).
PARALLEL_MIN = 1 << 18

_POOL: list[tuple[int, ThreadPoolExecutor]] = []
_POOL_LOCK = threading.Lock()


def _sha_pool() -> ThreadPoolExecutor:
    """This process's SHA-256 workers (one per CPU), made again in a forked child."""
    pid = os.getpid()
    if _POOL and _POOL[0][0] == pid:
        return _POOL[0][1]
    with _POOL_LOCK:
        if not _POOL or _POOL[0][0] != pid:  # a child's copy has no threads: a new pool
            pool = ThreadPoolExecutor(os.cpu_count() or 2, thread_name_prefix="evstore-sha256")
            _POOL[:] = [(pid, pool)]
        return _POOL[0][1]


class Hasher:
    """Size, BLAKE3 and SHA-256 in one pass: call :meth:`update` per chunk, then :meth:`digest`."""

    __slots__ = ("_b3", "_pending", "_sha", "size")

    def __init__(self) -> None:
        self._b3 = _blake3.blake3()
        self._sha = hashlib.sha256()
        self._pending: tuple[Future[object], Future[object]] | None = None
        self.size = 0

    def update(self, chunk: bytes | memoryview) -> None:
        """Feed the next chunk (bytes).

        A chunk of :data:`PARALLEL_MIN` bytes or more is hashed by SHA-256 in a worker
        thread while BLAKE3 hashes it here (both release the GIL on large buffers), so a
        verified read of a large blob costs about the slower of the two hashes in wall time,
        not their sum (issue 29; docs/design.md, "Hashing in parallel"). Both are done
        before this returns.
        """
        self._wait()
        if len(chunk) >= PARALLEL_MIN:
            done = _sha_pool().submit(self._sha.update, chunk)
            self._b3.update(chunk)
            done.result()
        else:
            self._b3.update(chunk)
            self._sha.update(chunk)
        self.size += len(chunk)

    def submit(self, chunk: bytes | memoryview) -> None:
        """Feed the next chunk (bytes) and return before it is hashed, so that the caller
        reads the next chunk while this one is hashed (issue 29; docs/design.md, "Hashing
        in parallel").

        A chunk of :data:`PARALLEL_MIN` bytes or more is handed to two worker threads, one
        per hash (both libraries release the GIL on large buffers); the call first waits
        for the previous chunk's hashing, so at most one chunk is in flight. The caller
        must not modify ``chunk`` afterwards. A smaller chunk is hashed here, as
        :meth:`update` does. :meth:`digest` waits for the chunk in flight; an error of a
        worker (none is expected of the hash libraries) is raised there or by the next call.
        """  # noqa: D205
        self._wait()
        if len(chunk) >= PARALLEL_MIN:
            pool = _sha_pool()
            self._pending = (
                pool.submit(self._sha.update, chunk),
                pool.submit(self._b3.update, chunk),
            )
        else:
            self._b3.update(chunk)
            self._sha.update(chunk)
        self.size += len(chunk)

    def _wait(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            for done in pending:
                done.result()

    def digest(self) -> Digest:
        """The :class:`Digest` of everything fed so far (waits for a chunk in flight)."""
        self._wait()
        return Digest(self._b3.hexdigest(), self._sha.hexdigest(), self.size)


def digest_bytes(data: bytes) -> Digest:
    """The :class:`Digest` of an in-memory byte string (one pass each, no copy)."""
    if len(data) <= (1 << 20):
        return Digest(_blake3.blake3(data).hexdigest(), hashlib.sha256(data).hexdigest(), len(data))
    sha = _sha_pool().submit(hashlib.sha256, data)  # beside BLAKE3's own threads
    b3 = _blake3.blake3(data, max_threads=_blake3.blake3.AUTO)
    return Digest(b3.hexdigest(), sha.result().hexdigest(), len(data))


def _digest_all(items: Sequence[bytes]) -> list[Digest]:
    b3 = _blake3.blake3
    sha = hashlib.sha256
    return [Digest(b3(d).hexdigest(), sha(d).hexdigest(), len(d)) for d in items]


def digest_batch(items: Sequence[bytes]) -> Future[list[Digest]]:
    """Start hashing each of ``items`` in a worker thread and return at once.

    For many small byte strings (an export's batch of inline blobs, issue 29): the caller
    fetches the next batch while this one is hashed (both hash libraries release the GIL on
    buffers of 2 KiB or more; docs/design.md, "Hashing in parallel"). Each item is hashed in
    the one worker, single-threaded. The caller must not modify the items until the result
    is taken.

    Returns:
        A future whose ``result()`` is the :class:`Digest` of each item, in order (size in
        bytes); it re-raises an error of the worker (none is expected of the hash libraries).
    """
    return _sha_pool().submit(_digest_all, items)


def digest_stream(stream: BinaryIO, chunk_size: int = 1 << 20) -> Digest:
    """Digest a binary stream without holding it (reads ``chunk_size`` bytes at a time)."""
    h = Hasher()
    while chunk := stream.read(chunk_size):
        h.update(chunk)
    return h.digest()


def read_again_checked(
    stream: IO[bytes], start: int, digest: Digest, piece: int, *, doing: str = "stored"
) -> Iterator[bytes]:
    """The ``digest.size`` bytes of ``stream`` from offset ``start`` again, ``piece`` bytes
    at a time, checked against ``digest``, the first read's (issue 25's two-read put).

    BLAKE3 is computed again on the way: equal BLAKE3 means equal bytes, so the first
    read's SHA-256 holds. A stream that now ends early or holds other bytes raises before
    the last piece is yielded, so a consumer that commits only after the last piece (a
    multipart upload, a request body) never commits other bytes. ``doing`` names what the
    bytes were being read for in the message ("stored", "sent").

    Raises:
        InputError: ``input.changed``; ``input.unreadable`` for an OSError of the read.
    """  # noqa: D205
    name = getattr(stream, "name", None)
    what = f"the file {name}" if isinstance(name, str) else "the input stream"

    def changed(how: str) -> EvstoreError:
        return error(
            "input.changed",
            f"{what} changed while it was being {doing} ({how}); nothing was stored: "
            "put it again once it is no longer being written",
        )

    b3 = _blake3.blake3()
    left = digest.size
    try:
        stream.seek(start)
        while left > 0:
            chunk = stream.read(min(piece, left))
            if not chunk:
                raise changed(f"it ended {left} bytes early")
            b3.update(chunk)
            left -= len(chunk)
            if left <= 0 and b3.hexdigest() != digest.blake3:
                raise changed("its bytes differ from those first read")
            yield chunk
    except OSError as exc:
        raise error(
            "input.unreadable", f"cannot read {what} again: {exc.strerror or exc}"
        ) from None
