r"""Many objects in one request, committed in one transaction (issue 28, docs/http.md#bulk).

``POST P/v1/objects/batch[?batch=N&root=NAME]`` (ingest) takes a stream of parts
(``application/x-evstore-objects``): per object one header line ``SIZE ADDRESS\n`` (a
decimal byte count and the ``blake3:<hex>`` the client computed), then exactly SIZE bytes.

The body is read as it arrives into one spool file on disk (a part over 8 MiB into a file of
its own); each part is hashed while it is written and must hash to its address, else the
request is refused (422 ``put.digest-mismatch`` naming the part) before anything is stored.
Only then are the parts stored by ``Store.put_many``: one transaction for all of them (all or
nothing, as ``evstore put`` of many files locally), or one per N with ``batch`` (the
library's batches: the error of a failing one says what stayed committed). Memory holds one
chunk of the body and one offset per part, whatever the number of parts; the request's size
is bounded by ``--max-bundle-bytes`` and the number of parts by :data:`MAX_PARTS`. A body cut
short or malformed is refused (400 ``http.request``) with nothing stored.

The answer: ``{"results": [{"address", "sha256", "sha256_b64u", "object_store", "size",
"new"}, ...]}``, one per part, in order.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import blake3
from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool

from .. import error
from .app import Served
from .auth import ingester
from .wire import BINARY, OBJECT_RESPONSES, request_body
from .writes import rooted

__all__ = ["MAX_PARTS", "MEDIA_TYPE", "router"]

router = APIRouter()

#: The media type of the body.
MEDIA_TYPE = "application/x-evstore-objects"
#: The most parts one request may carry.
MAX_PARTS = 1_000_000
#: A part larger than this goes to a file of its own (passed to put_many as a path).
_OWN_FILE = 8 << 20
_HEADER = re.compile(rb"(0|[1-9][0-9]{0,18}) (blake3:[0-9a-f]{64})\n")
_HEADER_MAX = 100


class _Part:
    __slots__ = ("address", "hasher", "left", "offset", "path", "size")

    def __init__(self, size: int, address: str, offset: int, path: str | None) -> None:
        self.size, self.address, self.offset, self.path = size, address, offset, path
        self.left = size
        self.hasher = blake3.blake3()


class _Spool:
    """Parts received into a directory: ``all`` holds the small ones back to back."""

    def __init__(self, directory: str) -> None:
        self.dir = directory
        self.all = open(os.path.join(directory, "all"), "w+b")
        self.parts: list[_Part] = []
        self._own: Any = None

    def start(self, size: int, address: str) -> _Part:
        if len(self.parts) >= MAX_PARTS:
            raise error("http.request", f"more than {MAX_PARTS} parts in one request")
        path = None
        if size > _OWN_FILE:
            path = os.path.join(self.dir, str(len(self.parts)))
            self._own = open(path, "wb")
        part = _Part(size, address, self.all.tell(), path)
        self.parts.append(part)
        return part

    def write(self, part: _Part, data: bytes) -> None:
        part.hasher.update(data)
        (self._own if part.path else self.all).write(data)
        part.left -= len(data)
        if part.left == 0:
            if part.path:
                self._own.close()
            got = "blake3:" + part.hasher.hexdigest()
            if got != part.address:
                raise error(
                    "put.digest-mismatch",
                    f"part {len(self.parts) - 1} hashes to {got}, not to {part.address} as "
                    "sent; nothing was stored",
                    f"/{len(self.parts) - 1}",
                    part=len(self.parts) - 1,
                    expected=part.address,
                    got=got,
                )

    def items(self) -> Iterator[Any]:
        """The parts for ``put_many``, lazily: bytes read back, or the path of a large one."""
        self.all.flush()
        with open(self.all.name, "rb") as fh:
            for part in self.parts:
                if part.path:
                    yield Path(part.path)
                else:
                    fh.seek(part.offset)
                    yield fh.read(part.size)

    def close(self) -> None:
        self.all.close()
        if self._own is not None:
            self._own.close()


async def _receive(request: Request, spool: _Spool) -> None:
    """Read the body into ``spool``, part by part (``http.request`` when it is malformed)."""
    buf = b""
    part: _Part | None = None
    async for chunk in request.stream():
        buf += chunk
        while buf:
            if part is None:
                end = buf.find(b"\n", 0, _HEADER_MAX)
                if end < 0:
                    if len(buf) >= _HEADER_MAX:
                        raise error("http.request", f"part {len(spool.parts)}: no header line")
                    break
                m = _HEADER.fullmatch(buf[: end + 1])
                if m is None:
                    raise error(
                        "http.request",
                        f"part {len(spool.parts)}: the header is 'SIZE blake3:<hex>\\n'",
                    )
                buf = buf[end + 1 :]
                part = spool.start(int(m.group(1)), m.group(2).decode("ascii"))
                if part.size == 0:
                    spool.write(part, b"")
                    part = None
                continue
            take, buf = buf[: part.left], buf[part.left :]
            spool.write(part, take)
            if part.left == 0:
                part = None
    if part is not None or buf:
        raise error("http.request", "the body ends inside a part; nothing was stored")


@router.post(
    "/v1/objects/batch",
    summary="Store many objects in one transaction (evstore put of many files)",
    responses=OBJECT_RESPONSES,
    openapi_extra=request_body(BINARY, MEDIA_TYPE),
)
async def put_batch(
    request: Request,
    batch: int | None = Query(None, ge=1, description="Commit every N parts (--batch N)."),
    root: str | None = Query(None, description="Root the objects under this root."),
    one: Served = Depends(ingester),  # noqa: B008
) -> dict[str, Any]:
    """``{"results": [put --json object, ...]}``, one per part, in order."""
    with tempfile.TemporaryDirectory(prefix="evstore-batch-") as tmp:
        spool = _Spool(tmp)
        try:
            await _receive(request, spool)

            def work() -> list[Any]:
                return one.store.put_many(spool.items(), batch=batch)

            results = await run_in_threadpool(rooted(request, root, work))
        finally:
            spool.close()
    out = []
    for r in results:
        row = r.digest.forms()
        row["new"] = r.new
        out.append(row)
    return {"results": out}
