"""Portable archives over HTTP (issue 28, docs/archive.md, docs/http.md#archives).

``GET P/v1/archive?ref=R[&ref=R2...][&with_proofs=1]`` (read) exports the closure of the refs
as an OCI Image Layout tar, the bytes ``evstore archive export -o FILE.tar`` writes beside the
database. The tar is written to a temporary file on the server first (the export's own
all-or-nothing: a corrupt object leaves nothing and answers its ``corruption.*`` problem
before any byte is sent), then streamed from it and removed.

``POST P/v1/archives[?max_bytes=N&root=NAME]`` (ingest) takes such a tar as the body. It is
spooled to a temporary file (the request limit is the bundle limit, ``--max-bundle-bytes``),
verified completely and then imported in one transaction by ``evstore.import_archive``,
exactly as locally: the same refusals and codes, nothing written when anything is wrong. A
body cut short never reaches the import (the limit guard or the server stops reading), so an
interrupted upload leaves the store unchanged.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.responses import FileResponse

from .. import ArchiveLimits, EvstoreError, export_archive, import_archive
from .app import Served
from .auth import ingester, reader, readmit
from .wire import BINARY, OBJECT_RESPONSES, request_body
from .writes import rooted

__all__ = ["router"]

router = APIRouter()

_TAR = "application/x-tar"
#: What the server's temporary copy of an upload is called in its errors: the client puts
#: its own path back (evstore.client.archives), so a fault names the file the user gave.
UPLOAD = "<archive>"


def _renamed(value: Any, path: str) -> Any:
    """``value`` with every mention of the temporary ``path`` replaced by :data:`UPLOAD`."""
    if isinstance(value, str):
        return value.replace(path, UPLOAD)
    if isinstance(value, list):
        return [_renamed(v, path) for v in value]
    if isinstance(value, dict):
        return {k: _renamed(v, path) for k, v in value.items()}
    return value


def _remove(directory: str) -> None:
    for name in os.listdir(directory):
        os.unlink(os.path.join(directory, name))
    os.rmdir(directory)


@router.get(
    "/v1/archive",
    summary="The closure of the refs as an OCI Image Layout tar (evstore archive export)",
    responses={**OBJECT_RESPONSES, 200: {"content": {_TAR: {}}, "description": "The tar."}},
)
async def export(
    ref: list[str] = Query(..., description="A root's content ref (repeat for more roots)."),  # noqa: B008
    with_proofs: bool = Query(False, description="Add log entries and inclusion proofs."),
    one: Served = Depends(reader),  # noqa: B008
) -> FileResponse:
    """The tar, byte-identical to a local export of the same closure (without proofs)."""
    tmp = tempfile.mkdtemp(prefix="evstore-export-")
    path = os.path.join(tmp, "archive.tar")
    try:
        await run_in_threadpool(
            lambda: export_archive(one.store, list(ref), path, with_proofs=with_proofs)
        )
    except BaseException:
        _remove(tmp)
        raise
    return FileResponse(path, media_type=_TAR, background=BackgroundTask(_remove, tmp))


@router.post(
    "/v1/archives",
    summary="Verify an archive tar completely, then import all of it (evstore archive import)",
    responses=OBJECT_RESPONSES,
    openapi_extra=request_body(BINARY, _TAR),
)
async def import_(
    request: Request,
    max_bytes: int | None = Query(None, ge=0, description="--max-bytes of the import."),
    root: str | None = Query(None, description="Root what is imported under this root."),
    one: Served = Depends(ingester),  # noqa: B008
) -> dict[str, Any]:
    """The report of ``evstore archive import --json`` (``archive``: the server's copy)."""
    fd, path = tempfile.mkstemp(prefix="evstore-import-", suffix=".tar")
    try:
        with os.fdopen(fd, "wb") as fh:
            async for chunk in request.stream():
                fh.write(chunk)
        await readmit(request, "ingest")  # revoked while the body arrived: refused
        limits = None if max_bytes is None else ArchiveLimits(max_bytes=max_bytes)

        def work() -> dict[str, Any]:
            out: dict[str, Any] = import_archive(one.store, path, limits=limits).to_dict()
            return out

        return await run_in_threadpool(rooted(request, root, work))
    except EvstoreError as err:
        err.message = _renamed(err.message, path)
        err.args = (err.message,)
        err.path = _renamed(err.path, path)
        err.details = _renamed(err.details, path)
        raise
    finally:
        os.unlink(path)
