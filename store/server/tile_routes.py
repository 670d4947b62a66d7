"""The log as C2SP tlog-tiles under the store's prefix (issue 26, docs/log.md#tiles).

``GET <prefix>/checkpoint`` (the latest signed note, short-lived), ``GET
<prefix>/tile/<L>/<N>[.p/<W>]`` and ``GET <prefix>/tile/entries/<N>[.p/<W>]`` (full tiles
immutable, partial ones short-lived), read by ``store.log.tile`` (store/log/tiles.py) from
the rows the proof routes use. A tile beyond the latest signed checkpoint is 404
``tiles.missing``; a path not of the format is 400 ``tiles.malformed``.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import PlainTextResponse, Response

from .. import error
from .app import Served
from .auth import reader
from .wire import OBJECT_RESPONSES

__all__ = ["router"]

router = APIRouter()

_IMMUTABLE = {"Cache-Control": "public, max-age=31536000, immutable"}
#: Partial tiles and the checkpoint change as the log grows: a few seconds at most.
_SHORT = {"Cache-Control": "public, max-age=5"}


@router.get(
    "/checkpoint",
    summary="The latest signed checkpoint (c2sp.org/tlog-tiles)",
    responses=OBJECT_RESPONSES,
)
def checkpoint(one: Served = Depends(reader)) -> PlainTextResponse:  # noqa: B008
    """The note as ``text/plain; charset=utf-8``; 404 ``log.no-checkpoint`` before the first."""
    latest = one.store.log.latest()
    if latest is None:
        raise error("log.no-checkpoint", "no signed checkpoint yet")
    note = latest["note"]
    return PlainTextResponse(note, headers=_SHORT, media_type="text/plain; charset=utf-8")


@router.get(
    "/tile/{path:path}",
    summary="A tlog-tiles tile or entry bundle",
    responses=OBJECT_RESPONSES,
)
def tile(path: str, one: Served = Depends(reader)) -> Response:  # noqa: B008
    """The tile's bytes (``application/octet-stream``): immutable when full."""
    data, full = one.store.log.tile("tile/" + path)
    return Response(
        data, media_type="application/octet-stream", headers=_IMMUTABLE if full else _SHORT
    )
