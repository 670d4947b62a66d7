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
                          (bench/_pg_floor.py ``aread_copy``) after one statement for the
                          size (the Content-Length), NO hashing
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
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from _pg_floor import aread_copy
from fastapi import FastAPI, Request
from server_ceiling import HEADERS, TOKENS
from starlette.responses import Response, StreamingResponse

MODE = os.environ.get("EVBENCH_FLOOR", "row")
CONNINFO = os.environ.get("EVBENCH_PG", "")
POOL_SIZE = int(os.environ.get("EVBENCH_PG_POOL", "4"))
_ROW_SQL = "SELECT data FROM blobs WHERE address = %s"
_HEAD_SQL = "SELECT size, sha256 FROM blobs WHERE address = %s"

_pool: asyncio.Queue[Any] = asyncio.Queue()


@asynccontextmanager
async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
    conns = [
        await psycopg.AsyncConnection.connect(CONNINFO, autocommit=MODE == "row")
        for _ in range(POOL_SIZE if MODE == "row" else 1)
    ]
    for c in conns:
        _pool.put_nowait(c)
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


async def _stream(address: str, want: tuple[int, str] | None) -> AsyncIterator[bytes | memoryview]:
    """The chunks of ``address``; hashed and checked against ``want`` (size, SHA-256) if given."""
    conn = await _pool.get()
    try:
        if want is None:
            async for chunk in aread_copy(conn, address):
                yield chunk
            return
        from evstore.core.digests import Hasher

        h = Hasher()
        async for chunk in aread_copy(conn, address):
            h.submit(chunk)  # hashed in two threads while it is sent and the next is read
            yield chunk
        got = h.digest()
        if (got.blake3, got.size, got.sha256) != (address, *want):
            raise RuntimeError("the stored bytes do not hash to their address")
    finally:
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
    body = _stream(address, head if MODE == "hashed" else None)
    headers = {**HEADERS, "Content-Length": str(head[0])}
    return StreamingResponse(body, headers=headers, media_type="application/octet-stream")
