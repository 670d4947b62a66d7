"""The tamper-evident log over HTTP (docs/log.md): checkpoint, entries, proofs.

Every proof is served with the signed checkpoint it was computed at, from one read snapshot
(the library's ``store.log``). A range of entries wholly inside the latest signed checkpoint
never changes and is served ``immutable``; anything else is ``no-cache``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse, PlainTextResponse

from .. import error
from .app import Served
from .auth import reader
from .wire import OBJECT_RESPONSES

__all__ = ["router"]

router = APIRouter()

#: The OpenAPI answers of a route whose 200 is text (a signed note, a tlog-proof).
_TEXT = {
    200: {
        "description": "The text (UTF-8, lines ending in LF).",
        "content": {"text/plain": {"schema": {"type": "string"}}},
    },
    **OBJECT_RESPONSES,
}

_IMMUTABLE = {"Cache-Control": "public, max-age=31536000, immutable"}
_FRESH = {"Cache-Control": "no-cache"}


@router.get(
    "/v1/log",
    summary="The log's size, root, verifier key and latest checkpoint",
    responses=OBJECT_RESPONSES,
)
def status(one: Served = Depends(reader)) -> JSONResponse:  # noqa: B008
    """The JSON of ``evstore log --json``."""
    return JSONResponse(one.store.log.status(), headers=_FRESH)


@router.get(
    "/v1/log/checkpoint",
    summary="The latest signed checkpoint (C2SP signed note)",
    response_class=PlainTextResponse,
    responses=_TEXT,
)
def checkpoint(one: Served = Depends(reader)) -> PlainTextResponse:  # noqa: B008
    """The note as text; 404 ``log.no-checkpoint`` before the first."""
    latest = one.store.log.latest()
    if latest is None:
        raise error("log.no-checkpoint", "no signed checkpoint yet")
    return PlainTextResponse(latest["note"], headers=_FRESH)


@router.get(
    "/v1/log/entries",
    summary="Entries START..END-1 (evstore log entries --json)",
    responses=OBJECT_RESPONSES,
)
def entries(
    start: int = Query(0, ge=0),
    end: int | None = Query(None, ge=0),
    one: Served = Depends(reader),  # noqa: B008
) -> JSONResponse:
    """``{"entries": [...]}``; immutable when the whole range lies in the latest checkpoint."""
    latest = one.store.log.latest()
    rows = one.store.log.entries(start, end)
    full = (
        end is not None
        and latest is not None
        and end <= int(latest["size"])
        and len(rows) == end - start
    )
    return JSONResponse({"entries": rows}, headers=_IMMUTABLE if full else _FRESH)


@router.get(
    "/v1/log/proof/inclusion",
    summary="A tlog-proof of an entry in the latest checkpoint",
    response_class=PlainTextResponse,
    responses=_TEXT,
)
def inclusion(
    ref: str | None = Query(None),
    index: int | None = Query(None, ge=0),
    one: Served = Depends(reader),  # noqa: B008
) -> PlainTextResponse:
    """The tlog-proof text of ``evstore prove REF [--index N]``."""
    return PlainTextResponse(one.store.log.prove(ref, index=index)["text"], headers=_FRESH)


@router.get(
    "/v1/log/proof/consistency",
    summary="A consistency proof to a signed checkpoint",
    responses=OBJECT_RESPONSES,
)
def consistency(
    old: int = Query(..., ge=0),
    new: int | None = Query(None, ge=0),
    one: Served = Depends(reader),  # noqa: B008
) -> JSONResponse:
    """The JSON of ``evstore prove --consistency OLD [NEW]``."""
    out: dict[str, Any] = one.store.log.prove_consistency(old, new)
    out.pop("text")
    return JSONResponse(out, headers=_FRESH)
