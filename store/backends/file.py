"""The directory backend (``file:DIR``): one file per key, written atomically.

A put writes a temporary file beside its target (same directory, so the rename cannot cross
file systems), fsyncs it, renames it into place and fsyncs the directory: after a crash the
key holds the whole object or nothing. Temporary files start with ``.`` and are never
listed; a crash may leave one, and the orphan sweep removes it with the other strays.
"""

from __future__ import annotations

import datetime as _dt
import os
import secrets
import shutil
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from ..core.errors import EvstoreError, error
from .base import CHUNK, Listed, missing

__all__ = ["FileBackend"]


class FileBackend:
    """A :class:`~evstore.backends.base.BlobBackend` over the directory ``root``.

    Args:
        root: the directory. It must exist (``evstore init --blobs file:DIR`` makes it): a
            missing one (an unmounted volume, a deleted folder) is ``blobs.unreachable``,
            never silently recreated empty.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.spec = f"file:{self.root}"

    def _present(self) -> None:
        if not self.root.is_dir():
            raise error(
                "blobs.unreachable",
                f"the blob backend directory {self.root} does not exist (create it, or mount it)",
                backend=self.spec,
            )

    def _fault(self, what: str, exc: OSError) -> EvstoreError:
        return error(
            "blobs.backend",
            f"the blob backend {self.spec} failed to {what}: {exc.strerror or exc}",
            backend=self.spec,
        )

    def _path(self, key: str) -> Path:
        if not key or key.startswith("/") or ".." in key.split("/") or "\\" in key:
            raise error("blobs.key", f"not a backend key: {key!r}", key=key)
        return self.root / key

    def _write(self, key: str, fill: object, *, exclusive: bool = False) -> bool:
        """Write ``key`` through a temporary file (``fill(out)``), fsynced, then renamed over
        the key, or with ``exclusive`` hard-linked to it (``link`` fails when the name exists:
        False, nothing changed); the directory fsynced after. True when written here.
        """  # noqa: D205
        self._present()
        target = self._path(key)
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "xb") as out:
                fill(out)  # type: ignore[operator]
                out.flush()
                os.fsync(out.fileno())
            if exclusive:
                try:
                    os.link(tmp, target)
                except FileExistsError:
                    return False
            else:
                os.replace(tmp, target)
            fd = os.open(target.parent, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            return True
        except OSError as exc:
            raise self._fault(f"write {key}", exc) from None
        finally:
            tmp.unlink(missing_ok=True)

    def put_file(self, key: str, path: str) -> None:
        """Store the local file at ``path`` under ``key`` (temporary file, fsync, rename).

        Raises:
            OSError: ``path`` cannot be opened (nothing is written).
        """
        with open(path, "rb") as src:
            self._write(key, lambda out: shutil.copyfileobj(src, out, CHUNK))

    def put_bytes(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` (temporary file, fsync, rename)."""
        self._write(key, lambda out: out.write(data))  # type: ignore[attr-defined]

    def put_chunks(self, key: str, chunks: Iterable[bytes]) -> None:
        """Store the bytes ``chunks`` yields under ``key`` (temporary file, fsync, rename once
        ``chunks`` has ended); an exception of ``chunks`` propagates and leaves the key as it
        was (the temporary file is removed).
        """  # noqa: D205
        raised: list[OSError] = []  # the iterable's own OSError, kept apart from a write's

        def fill(out: BinaryIO) -> None:
            it = iter(chunks)
            while True:
                try:
                    chunk = next(it)
                except StopIteration:
                    return
                except OSError as exc:
                    raised.append(exc)
                    raise
                out.write(chunk)

        try:
            self._write(key, fill)
        except EvstoreError:
            if raised:
                raise raised[0] from None
            raise

    def create_bytes(self, key: str, data: bytes) -> bool:
        """Store ``data`` under ``key`` unless it exists (hard link of a temporary file, which
        fails when the name exists); True when made here.
        """  # noqa: D205
        return self._write(key, lambda out: out.write(data), exclusive=True)  # type: ignore[attr-defined]

    def get_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the object (``corruption.blob-missing`` when absent)."""
        self._present()
        try:
            with open(self._path(key), "rb") as f:
                f.seek(start)
                return f.read(max(0, end - start))
        except FileNotFoundError:
            raise missing(self.spec, key) from None
        except OSError as exc:
            raise self._fault(f"read {key}", exc) from None

    def iter_chunks(self, key: str, size: int = CHUNK) -> Iterator[bytes]:
        """The whole object in chunks of ``size`` bytes (the last one shorter)."""
        try:
            f = open(self._path(key), "rb")
        except FileNotFoundError:
            raise missing(self.spec, key) from None
        except OSError as exc:
            raise self._fault(f"read {key}", exc) from None
        return self._chunks(f, key, size)

    def _chunks(self, f: object, key: str, size: int) -> Iterator[bytes]:
        with f:  # type: ignore[attr-defined]
            while True:
                try:
                    b = f.read(size)  # type: ignore[attr-defined]
                except OSError as exc:
                    raise self._fault(f"read {key}", exc) from None
                if not b:
                    return
                yield b

    def stat(self, key: str) -> int | None:
        """The object's size in bytes, or None."""
        self._present()
        try:
            return self._path(key).stat().st_size
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._fault(f"stat {key}", exc) from None

    def delete(self, key: str) -> None:
        """Remove the object (nothing when it is absent)."""
        try:
            self._path(key).unlink(missing_ok=True)
        except OSError as exc:
            raise self._fault(f"delete {key}", exc) from None

    def delete_many(self, keys: Sequence[str]) -> dict[str, EvstoreError]:
        """Remove the objects ``keys``, one at a time; those that failed, with their errors."""
        failed: dict[str, EvstoreError] = {}
        for key in keys:
            try:
                self.delete(key)
            except EvstoreError as err:  # blobs.backend, blobs.key: this key only
                failed[key] = err
        return failed

    def list(self, prefix: str) -> Iterator[Listed]:
        """Every object under the directory ``prefix`` (``""``: all; temporary files excluded)."""
        start = self._path(prefix) if prefix else self.root
        if not start.is_dir():
            return
        for dirpath, dirnames, filenames in os.walk(start):
            dirnames.sort()
            for name in sorted(filenames):
                if name.startswith("."):
                    continue
                full = Path(dirpath) / name
                try:
                    st = full.stat()
                except FileNotFoundError:
                    continue  # deleted while listing
                when = _dt.datetime.fromtimestamp(st.st_mtime, _dt.UTC)
                yield Listed(full.relative_to(self.root).as_posix(), st.st_size, when)
