"""The floor apps of bench/server.py (issue 29): the ceiling's stack plus PostgreSQL, no store.

The ceiling apps (bench/server_ceiling.py) answer from memory or a file; these answer from
the PostgreSQL database evstore's migration created, with psycopg 3 directly (no evstore
code, no SQLAlchemy) on the event loop, so that ``floor / ceiling`` bounds what a store
whose bytes or index live in PostgreSQL can reach on this machine.

``GET /v1/objects/{ref}`` checks a bearer token in a dict (as the ceiling does), then:

    EVBENCH_FLOOR=row     (part a) one round trip: ``SELECT data FROM blobs WHERE address =
                          $1``, prepared, on one of ``EVBENCH_PG_POOL`` (default 4) async
                          connections per worker, opened at start-up; the inline bytes
                          returned with the ceiling's headers
    EVBENCH_FLOOR=stream  (part b) the chunk rows streamed as read by one binary COPY
                          (bench/_pg_floor.py ``read_copy``) on a blocking connection in
                          a worker thread that reads up to 2 chunks ahead of the socket,
                          after one statement for the size (the Content-Length), NO hashing.
                          ``EVBENCH_READER=async`` reads with ``aread_copy`` on the event
                          loop instead: slower here (libpq hands a 1 MiB row over in many
                          small socket reads, each an event-loop wake-up)
    EVBENCH_FLOOR=hashed  (part b) the same, each chunk also given to ``Hasher.submit``
                          (store/core/digests.py: BLAKE3 and SHA-256 in two worker threads
                          while the next chunk is read) and the size and digests compared
                          with the row at the end (a mismatch aborts the response): the least a
                          store that verifies every byte it serves must do

``ref`` is ``blake3:<hex>`` (or the hex); the database is ``EVBENCH_PG`` (a libpq URL).
An unknown address answers 404. Run by uvicorn, configured by environment.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from _pg_floor import aread_copy, read_copy
from fastapi import FastAPI, Request
from server_ceiling import HEADERS, TOKENS
from starlette.responses import Response, StreamingResponse

MODE = os.environ.get("EVBENCH_FLOOR", "row")
CONNINFO = os.environ.get("EVBENCH_PG", "")
POOL_SIZE = int(os.environ.get("EVBENCH_PG_POOL", "4"))
_ROW_SQL = "SELECT data FROM blobs WHERE address = %s"
_HEAD_SQL = "SELECT size, sha256 FROM blobs WHERE address = %s"

READER = os.environ.get("EVBENCH_READER", "thread")
_pool: asyncio.Queue[Any] = asyncio.Queue()
_blocking: queue.Queue[Any] = queue.Queue()  # the worker thread's connection (part b)


@asynccontextmanager
async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
    conns = [
        await psycopg.AsyncConnection.connect(CONNINFO, autocommit=MODE == "row")
        for _ in range(POOL_SIZE if MODE == "row" else 1)
    ]
    for c in conns:
        _pool.put_nowait(c)
    if MODE != "row":
        _blocking.put(psycopg.connect(CONNINFO))
    try:
        yield
    finally:
        for c in conns:
            await c.close()


app = FastAPI(lifespan=lifespan)


async def _row(address: str) -> bytes | None:
    conn = await _pool.get()
    try:
        cur = await conn.execute(_ROW_SQL, (address,), prepare=True, binary=True)
        row = await cur.fetchone()
    finally:
        _pool.put_nowait(conn)
    return None if row is None else row[0]


async def _head(address: str) -> tuple[int, str] | None:
    """The blob's size (bytes) and SHA-256 (hex), or None."""
    conn = await _pool.get()
    try:
        async with conn.transaction():
            cur = await conn.execute(_HEAD_SQL, (address,), prepare=True)
            row = await cur.fetchone()
    finally:
        _pool.put_nowait(conn)
    return None if row is None else (int(row[0]), row[1])


def _hasher() -> Any:
    from evstore.core.digests import Hasher

    return Hasher()


_END = object()


def _read_ahead(
    address: str, want: tuple[int, str] | None, loop: Any, out: asyncio.Queue[Any], stop: Any
) -> None:
    """Worker thread: the chunks into ``out`` (bounded: the read stays 2 chunks ahead), then
    ``_END`` once the COPY and its transaction have ended and the digest matched, or the
    exception that ended the read. Returns early once ``stop`` is set (the client left).
    """
    conn = _blocking.get()
    try:
        h = _hasher() if want is not None else None
        for chunk in read_copy(conn, address):
            if h is not None:
                h.submit(chunk)  # hashed in two threads while the next chunk is read
            asyncio.run_coroutine_threadsafe(out.put(chunk), loop).result()
            if stop.is_set():
                return
        if h is not None and want is not None:
            got = h.digest()
            if (got.blake3, got.size, got.sha256) != (address, *want):
                raise RuntimeError("the stored bytes do not hash to their row")
        asyncio.run_coroutine_threadsafe(out.put(_END), loop).result()
    except Exception as exc:  # handed to the response, which aborts
        asyncio.run_coroutine_threadsafe(out.put(exc), loop).result()
    finally:
        _blocking.put(conn if not conn.closed else psycopg.connect(CONNINFO))


async def _stream_threaded(
    address: str, want: tuple[int, str] | None
) -> AsyncIterator[bytes | memoryview]:
    """The chunks as :func:`_read_ahead` reads them; the last held back until it is done."""
    out: asyncio.Queue[Any] = asyncio.Queue(maxsize=2)
    stop = threading.Event()
    loop = asyncio.get_running_loop()
    threading.Thread(target=_read_ahead, args=(address, want, loop, out, stop)).start()
    held = None
    try:
        while (item := await out.get()) is not _END:
            if isinstance(item, Exception):
                raise item
            if held is not None:
                yield held
            held = item
        if held is not None:
            yield held
    finally:
        stop.set()
        while not out.empty():  # a reader waiting to put gets its turn, sees stop, ends
            out.get_nowait()


async def _stream(address: str, want: tuple[int, str] | None) -> AsyncIterator[bytes | memoryview]:
    """The chunks of ``address``; hashed and checked against ``want`` (size, SHA-256) if given.

    The last chunk is held back until the COPY and its transaction have ended: a client has
    every byte once it has the last chunk and may close at once, and Starlette then cancels
    this generator, which would cut the connection in the middle of the COPY's trailer.
    """
    conn = await _pool.get()
    try:
        h = _hasher() if want is not None else None
        held = None
        async for chunk in aread_copy(conn, address):
            if h is not None:
                h.submit(chunk)  # hashed in two threads while it is sent and the next is read
            if held is not None:
                yield held
            held = chunk
        if h is not None and want is not None:
            got = h.digest()
            if (got.blake3, got.size, got.sha256) != (address, *want):
                raise RuntimeError("the stored bytes do not hash to their row")
        if held is not None:
            yield held
    finally:
        if conn.closed:  # cut by a client gone early: the pool gets a fresh connection
            conn = await psycopg.AsyncConnection.connect(CONNINFO)
        _pool.put_nowait(conn)


@app.get("/v1/objects/{ref}")
async def get_object(ref: str, request: Request) -> Response:
    auth = request.headers.get("authorization", "")
    if TOKENS.get(auth.removeprefix("Bearer ")) is None:
        return Response(status_code=401)
    address = ref.removeprefix("blake3:")
    if MODE == "row":
        data = await _row(address)
        if data is None:
            return Response(status_code=404)
        return Response(data, headers=HEADERS, media_type="application/octet-stream")
    head = await _head(address)  # the Content-Length (and the SHA-256 to check)
    if head is None:
        return Response(status_code=404)
    stream = _stream if READER == "async" else _stream_threaded
    body = stream(address, head if MODE == "hashed" else None)
    headers = {**HEADERS, "Content-Length": str(head[0])}
    return StreamingResponse(body, headers=headers, media_type="application/octet-stream")
