"""The blob backend interface: put, get a range, stat, delete and list by prefix.

A backend keeps bytes under keys and knows nothing of addresses, rows or transactions: the
database decides what exists (docs/design.md, "Blob bytes outside the database"). Every
implementation passes tests/backends/test_conformance.py (restic's backend test suite and
distribution's storage-driver test suites are the model).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..core.errors import EvstoreError, error

__all__ = ["BlobBackend", "CHUNK", "Listed", "blob_key", "missing", "unreachable"]

#: Bytes read or written at a time when streaming (1 MiB).
CHUNK = 1 << 20


@dataclass(frozen=True)
class Listed:
    """One object of a listing: its ``key``, ``size`` (bytes) and ``modified`` time (UTC)."""

    key: str
    size: int
    modified: _dt.datetime


def blob_key(address_hex: str) -> str:
    """The key of a blob's bytes: ``blake3/<2 hex>/<2 hex>/<64 hex>`` (fanned out by address).

    Args:
        address_hex: the blob's BLAKE3 as 64 lowercase hex.
    """
    return f"blake3/{address_hex[:2]}/{address_hex[2:4]}/{address_hex}"


def unreachable(spec: str, why: object) -> EvstoreError:
    """The typed error for a backend that could not be reached (``blobs.unreachable``)."""
    return error(
        "blobs.unreachable",
        f"the blob backend {spec} cannot be reached: {why}",
        backend=spec,
    )


class BlobBackend(Protocol):
    """What every blob backend does. Keys are ``/``-separated ASCII paths (:func:`blob_key`).

    Attributes:
        spec: the backend's spec (``file:/abs/dir``, ``s3://bucket/prefix``), no credentials.

    Every method raises StoreStateError ``blobs.unreachable`` (retryable) when the backend
    cannot be reached, and ``blobs.backend`` for another failure of the backend itself.
    """

    spec: str

    def put_file(self, key: str, path: str) -> None:
        """Store the local file at ``path`` under ``key``: visible whole or not at all."""
        ...

    def put_bytes(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key``: visible whole or not at all."""
        ...

    def put_chunks(self, key: str, chunks: Iterable[bytes]) -> None:
        """Store the bytes ``chunks`` yields, in order, under ``key``: visible whole or not at
        all. An exception raised by ``chunks`` (an :class:`EvstoreError` such as
        ``input.changed``) propagates unchanged and leaves the key as it was: the object is
        made visible only after ``chunks`` has ended (S3: the multipart upload is completed
        only then; a directory: the rename happens only then).
        """  # noqa: D205
        ...

    def create_bytes(self, key: str, data: bytes) -> bool:
        """Store ``data`` under ``key`` only if no object has that key (atomically: of two
        racing calls one wins); True when this call made it.
        """  # noqa: D205
        ...

    def get_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the object (fewer at its end).

        Raises:
            CorruptionError: ``corruption.blob-missing`` when no object has that key.
        """
        ...

    def iter_chunks(self, key: str, size: int = CHUNK) -> Iterator[bytes]:
        """The whole object, streamed in chunks of about ``size`` bytes.

        :data:`CHUNK` unless asked; a reader that writes each chunk somewhere asks for
        larger ones.

        Raises:
            CorruptionError: ``corruption.blob-missing`` when no object has that key.
        """
        ...

    def stat(self, key: str) -> int | None:
        """The object's size in bytes, or None when no object has that key."""
        ...

    def delete(self, key: str) -> None:
        """Remove the object (no error when there is none)."""
        ...

    def delete_many(self, keys: Sequence[str]) -> dict[str, EvstoreError]:
        """Remove the objects ``keys`` (absent ones are no error), in bulk where the backend
        can (S3: DeleteObjects, up to 1,000 keys a request).

        Returns:
            The keys that could not be deleted, each with its typed error (``blobs.backend``
            or ``blobs.key``); every other key is gone. Empty when all went.

        Raises:
            StoreStateError: ``blobs.unreachable`` when the backend cannot be reached (then
                any of the keys may still be there).
        """  # noqa: D205
        ...

    def list(self, prefix: str) -> Iterator[Listed]:
        """Every object whose key starts with ``prefix``, in no particular order."""
        ...


def missing(spec: str, key: str) -> EvstoreError:
    """The typed error for an object a row names and the backend lacks."""
    return error(
        "corruption.blob-missing",
        f"the bytes under {key} are missing from the blob backend {spec}; never served",
        backend=spec,
        key=key,
    )
