r"""Many objects in one request, committed in one transaction (issue 28, docs/http.md#bulk).

``POST P/v1/objects/batch[?batch=N&root=NAME]`` (ingest) takes a stream of parts
(``application/x-evstore-objects``): per object one header line ``SIZE ADDRESS\n`` (a
decimal byte count and the ``blake3:<hex>`` the client computed), then exactly SIZE bytes.

The body is read as it arrives into one spool file on disk, each part after a 16-byte
record of its size (a part over 8 MiB into a file of its own); each part is hashed while it
is written and must hash to its address, else the request is refused (422
``put.digest-mismatch`` naming the part) before anything is stored. Only then are the parts
stored by ``Store.put_many``, read back from the spool in one pass: one transaction for all
of them (all or nothing, as ``evstore put`` of many files locally), or one per N with
``batch`` (the library's batches: the error of a failing one says what stayed committed).
The request's size is bounded by ``--max-bundle-bytes`` and the number of parts by
:data:`MAX_PARTS`. A body cut short or malformed is refused (400 ``http.request``) with
nothing stored.

The answer: ``{"results": [{"address", "sha256", "sha256_b64u", "object_store", "size",
"new"}, ...]}``, one per part, in order. The library hands the results over after its
commit (``Store.put_many(results=...)``); they are written to a temporary file and the
answer is streamed from it.

Memory (issue 28) holds one chunk of the body, one hasher and the part being received,
then the library's one chunk of items; nothing per part: the server's memory does not grow
with the number of parts (tests/store/test_put_many_bounded.py, docs/benchmarks.md).
"""

from __future__ import annotations

import json
import os
import re
import struct
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, overload

import blake3
from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from .. import PutResult, error
from .app import Served
from .auth import ingester, readmit
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
    """The part being received: its size, address, bytes still to come, own file if any."""

    __slots__ = ("address", "left", "path", "size")

    def __init__(self, size: int, address: str, path: str | None) -> None:
        self.size, self.address, self.path = size, address, path
        self.left = size


#: A part's record in the spool, before its bytes: its size, and the number of its own
#: file (-1: its bytes follow in the spool).
_RECORD = struct.Struct("<qq")


class _Spool:
    """Parts received into a directory: ``all`` holds them back to back, each after its record.

    Nothing is kept per part in memory (issue 28): the part being received, and a count.
    """

    def __init__(self, directory: str) -> None:
        self.dir = directory
        self.all = open(os.path.join(directory, "all"), "w+b")
        self.count = 0
        self._own: Any = None
        # One hasher, for the part being received (a BLAKE3 state is ~2 KB: one a part
        # would make memory grow with the number of parts).
        self._hasher = blake3.blake3()

    def start(self, size: int, address: str) -> _Part:
        if self.count >= MAX_PARTS:
            raise error("http.request", f"more than {MAX_PARTS} parts in one request")
        path = None
        if size > _OWN_FILE:
            path = os.path.join(self.dir, str(self.count))
            self._own = open(path, "wb")
        self.all.write(_RECORD.pack(size, self.count if path else -1))
        self.count += 1
        self._hasher = blake3.blake3()
        return _Part(size, address, path)

    def write(self, part: _Part, data: bytes) -> None:
        self._hasher.update(data)
        (self._own if part.path else self.all).write(data)
        part.left -= len(data)
        if part.left == 0:
            if part.path:
                self._own.close()
            got = "blake3:" + self._hasher.hexdigest()
            if got != part.address:
                raise error(
                    "put.digest-mismatch",
                    f"part {self.count - 1} hashes to {got}, not to {part.address} as "
                    "sent; nothing was stored",
                    f"/{self.count - 1}",
                    part=self.count - 1,
                    expected=part.address,
                    got=got,
                )

    def items(self) -> Iterator[Any]:
        """The parts for ``put_many``, lazily and in order: bytes read back, or the path of
        a large one (one sequential read of the spool).
        """  # noqa: D205
        self.all.flush()
        with open(self.all.name, "rb") as fh:
            for _ in range(self.count):
                size, own = _RECORD.unpack(fh.read(_RECORD.size))
                if own >= 0:
                    yield Path(self.dir, str(own))
                else:
                    yield fh.read(size)

    def close(self) -> None:
        self.all.close()
        if self._own is not None:
            self._own.close()


class _Parts(Sequence[Any]):
    """The spool's parts as a sequence for ``put_many``: each iteration reads the spool
    again from its start (one pass, nothing kept per part), so a transaction the database
    asks to run again stores the same parts (a generator could be read once: the retry
    was ``store.busy``).
    """  # noqa: D205

    def __init__(self, spool: _Spool) -> None:
        self._spool = spool

    def __len__(self) -> int:
        return self._spool.count

    def __iter__(self) -> Iterator[Any]:
        return self._spool.items()

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        """One part by reading up to it (put_many iterates; this is for completeness)."""
        if isinstance(index, slice):
            return list(self)[index]
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        index %= len(self)
        for i, part in enumerate(self):
            if i == index:
                return part
        raise IndexError(index)


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
                        raise error("http.request", f"part {spool.count}: no header line")
                    break
                m = _HEADER.fullmatch(buf[: end + 1])
                if m is None:
                    raise error(
                        "http.request",
                        f"part {spool.count}: the header is 'SIZE blake3:<hex>\\n'",
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
) -> StreamingResponse:
    """``{"results": [put --json object, ...]}``, one per part, in order.

    The results are written to a temporary file as the library hands them over after its
    commit (``Store.put_many(results=...)``), and the answer is read from it as it is sent.
    """
    answer = tempfile.TemporaryFile(prefix="evstore-batch-answer-")
    try:
        with tempfile.TemporaryDirectory(prefix="evstore-batch-") as tmp:
            spool = _Spool(tmp)
            try:
                await _receive(request, spool)
                await readmit(request, "ingest")  # revoked while the body arrived: refused
                await run_in_threadpool(rooted(request, root, _storing(one, spool, batch, answer)))
            finally:
                spool.close()
    except BaseException:
        answer.close()
        raise
    return StreamingResponse(_answer(answer), media_type="application/json")


def _storing(one: Served, spool: _Spool, batch: int | None, answer: IO[bytes]) -> Callable[[], int]:
    """The worker thread's call: ``put_many`` of the parts, each result written to ``answer``."""

    def write(res: PutResult) -> None:
        row = res.digest.forms()
        row["new"] = res.new
        answer.write(json.dumps(row, separators=(",", ":")).encode() + b",")

    def work() -> int:
        return one.store.put_many(_Parts(spool), batch=batch, results=write)

    return work


def _answer(answer: IO[bytes]) -> Iterator[bytes]:
    """The answer's bytes from the results file (closed at the end): chunks of 64 KiB."""
    try:
        answer.flush()
        end = answer.tell()
        answer.seek(0)
        yield b'{"results":['
        left = end - 1 if end else 0  # each row ends with a comma: the last one's is dropped
        while left > 0:
            chunk = answer.read(min(left, 64 << 10))
            if not chunk:
                break
            left -= len(chunk)
            yield chunk
        yield b"]}"
    finally:
        answer.close()
