"""The ceiling apps of bench/server.py: the same stack (FastAPI on uvicorn), no store.

``memory``: ``GET /v1/objects/{ref}`` checks a bearer token in a dict and returns fixed bytes
from memory with the server's headers (part a). ``file``: returns the same bytes from a file
(``FileResponse``, part b). Configured by environment (``EVBENCH_*``), run by uvicorn.

The route is a plain ``def`` (Starlette runs it in a worker thread); ``EVBENCH_ASYNC=1``
makes it an ``async def`` run on the event loop, as evstore's GET and the floor apps
(bench/server_floor.py) are: part (a) measures both on PostgreSQL (``ceiling_async``), so
that a floor is not compared only with a ceiling that pays a thread hop the floor does not.
"""

from __future__ import annotations

import os

from fastapi import FastAPI, Request
from starlette.responses import FileResponse, Response

TOKENS = {os.environ.get("EVBENCH_TOKEN", "t"): "read"}
BODY = os.urandom(int(os.environ.get("EVBENCH_SIZE", "1024")))
FILE = os.environ.get("EVBENCH_FILE", "")
HEADERS = {
    "ETag": '"blake3:' + "0" * 64 + '"',
    "Cache-Control": "public, max-age=31536000, immutable",
    "Repr-Digest": "sha-256=:" + "A" * 43 + "=:",
    "Accept-Ranges": "bytes",
}

app = FastAPI()


def get_object(ref: str, request: Request) -> Response:
    auth = request.headers.get("authorization", "")
    if TOKENS.get(auth.removeprefix("Bearer ")) is None:
        return Response(status_code=401)
    if FILE:
        return FileResponse(FILE, headers=HEADERS, media_type="application/octet-stream")
    return Response(BODY, headers=HEADERS, media_type="application/octet-stream")


async def get_object_async(ref: str, request: Request) -> Response:
    return get_object(ref, request)


app.get("/v1/objects/{ref}")(get_object_async if os.environ.get("EVBENCH_ASYNC") else get_object)
