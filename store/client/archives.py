"""Archives of a remote store (issue 28): export and import over HTTP (docs/archive.md).

``evstore.export_archive(remote, refs, output)`` and ``evstore.import_archive(remote, path)``
hand a :class:`~evstore.client.remote.RemoteStore` to the methods here:

* Export: ``GET /v1/archive?ref=...`` streams the tar the server wrote (read scope) into a
  temporary file beside ``output``; the client then verifies it offline
  (:func:`evstore.verify_archive`: every digest, size, closure, edge and rule) before it is
  renamed into place (``FILE.tar``) or unpacked into a new or empty directory. A broken or
  lying transfer leaves nothing at ``output`` (``remote.digest`` for an archive that does not
  verify). The tar is byte-identical to a local export of the same closure.
* Import: the tar (a directory is packed into one first) is uploaded to ``POST
  /v1/archives`` (ingest scope); the server verifies all of it before writing anything and
  imports it in one transaction, with the local refusals and codes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..core.errors import EvstoreError, error
from .retention import root_params

if TYPE_CHECKING:
    from .http import Http

__all__ = ["RemoteArchives"]

_CHUNK = 1 << 20
#: How the server names its copy of an upload in errors (evstore.server.archive_routes).
_UPLOAD = "<archive>"


def _named(value: Any, where: str) -> Any:
    """``value`` with the server's name of the upload replaced by the local path."""
    if isinstance(value, str):
        return value.replace(_UPLOAD, where)
    if isinstance(value, list):
        return [_named(v, where) for v in value]
    if isinstance(value, dict):
        return {k: _named(v, where) for k, v in value.items()}
    return value


def _unwritable(output: str) -> None:
    """``output.unwritable`` as a local export refuses an output that is in the way."""
    tar = output.endswith(".tar")
    if os.path.lexists(output) and not (
        not tar and os.path.isdir(output) and not os.listdir(output)
    ):
        raise error(
            "output.unwritable",
            f"{output} already exists; give a new directory or .tar path",
            path=output,
        )


def _file_chunks(path: str) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            yield chunk


class RemoteArchives:
    """``export_archive`` and ``import_archive`` of a remote store (a mixin)."""

    http: Http

    def _live(self) -> None:  # the store's own check (RemoteStore._live)
        raise NotImplementedError

    def export_archive(
        self, refs: Sequence[str], output: str | os.PathLike[str], *, with_proofs: bool = False
    ) -> dict[str, Any]:
        """Receive the closure of ``refs`` as an archive at ``output`` (``.tar`` or a directory).

        Returns:
            ``{"output", "roots": [{"address", "kind", "manifest"}], "objects", "bytes"}``,
            the fields of :class:`evstore.archive.ops.ExportReport`.

        Raises:
            The server's errors (``ref.syntax``, ``not-found.blob``, ``corruption.*``, ``log.*``);
            InputError ``input.invalid`` (no refs), ``output.unwritable``; ``remote.digest``
            (the received archive does not verify; nothing is left at ``output``).
        """
        self._live()
        if not refs:
            raise error("input.invalid", "give at least one ref to export")
        out = os.fspath(output)
        _unwritable(out)
        parent = os.path.dirname(os.path.abspath(out))
        try:
            fd, tmp = tempfile.mkstemp(prefix=".evstore-archive-", suffix=".tar", dir=parent)
        except OSError as exc:
            raise error(
                "output.unwritable", f"cannot write {out}: {exc.strerror}", path=out
            ) from None
        try:
            params: dict[str, Any] = {"ref": list(refs)}
            if with_proofs:
                params["with_proofs"] = "true"
            resp = self.http.request(
                "GET", "v1/archive", idempotent=True, params=params, stream=True
            )
            with os.fdopen(fd, "wb") as fh:
                for chunk in self.http.iter_bytes(resp, "GET", "v1/archive"):
                    fh.write(chunk)
            from .. import verify_archive  # the archive reader loads the library: on use

            checked = verify_archive(tmp)
            if checked.faults:
                first = checked.faults[0]
                raise error(
                    "remote.digest",
                    f"{self.http.url}: the archive received does not verify ({first.code}: "
                    f"{first.message}); discarded",
                    url=self.http.url,
                )
            self._place(tmp, out)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return {
            "output": out,
            "roots": [
                {"address": r.address, "kind": r.kind, "manifest": "sha256:" + r.manifest}
                for r in checked.roots
            ],
            "objects": len(checked.members),
            "bytes": sum(m.size for m in checked.members.values()),
        }

    @staticmethod
    def _place(tmp: str, out: str) -> None:
        """Rename the verified tar into place, or unpack it into the new (or empty) directory."""
        if out.endswith(".tar"):
            os.replace(tmp, out)
            return
        parent = os.path.dirname(os.path.abspath(out))
        unpacked = tempfile.mkdtemp(prefix=".evstore-archive-", dir=parent)
        try:
            with tarfile.open(tmp, "r:") as tar:
                tar.extractall(unpacked, filter="data")
            if os.path.isdir(out):
                os.rmdir(out)  # empty (checked before the request)
            os.replace(unpacked, out)
        except BaseException:
            shutil.rmtree(unpacked, ignore_errors=True)
            raise
        os.unlink(tmp)

    def import_archive(self, path: str | os.PathLike[str], *, limits: Any = None) -> dict[str, Any]:
        """Upload the archive at ``path`` (a tar, or a directory packed here) to be imported.

        Returns:
            The fields of :class:`evstore.archive.ops.ImportReport` (``archive``: ``path``).

        Raises:
            As :func:`evstore.import_archive` on the server (every fault in
            ``details.faults``; nothing written); ``input.unreadable`` for ``path``.
        """
        self._live()
        where = os.fspath(path)
        params: dict[str, Any] = dict(root_params())
        if limits is not None:
            params["max_bytes"] = str(limits.max_bytes)
        with contextlib.ExitStack() as stack:
            send = where
            if os.path.isdir(where):
                fd, send = tempfile.mkstemp(prefix="evstore-upload-", suffix=".tar")
                os.close(fd)
                stack.callback(os.unlink, send)
                with tarfile.open(send, "w", format=tarfile.PAX_FORMAT) as tar:
                    for name in sorted(os.listdir(where)):
                        tar.add(os.path.join(where, name), arcname=name)
            try:
                size = os.path.getsize(send)
                with open(send, "rb"):
                    pass
            except OSError as exc:
                raise error(
                    "input.unreadable", f"cannot read {where}: {exc.strerror}", path=where
                ) from None
            try:
                out: dict[str, Any] = self.http.json(
                    "POST",
                    "v1/archives",
                    idempotent=True,  # importing twice stores nothing the second time
                    params=params,
                    body=lambda: _file_chunks(send),
                    headers={"Content-Type": "application/x-tar", "Content-Length": str(size)},
                )
            except EvstoreError as err:
                err.message = _named(err.message, where)
                err.args = (err.message,)
                err.path = _named(err.path, where)
                err.details = _named(err.details, where)
                raise
        if not isinstance(out, dict) or "roots" not in out:
            raise self.http.protocol("POST v1/archives: the answer is not an import report")
        out.pop("ok", None)
        out["archive"] = where
        return out
