"""Retention over HTTP (issue 12, docs/http.md#retention): roots, their history, and gc.

``POST P/v1/roots/{name}/retain`` and ``.../release`` need an ``ingest`` token, ``GET
P/v1/roots`` and ``P/v1/roots/history`` read, ``POST P/v1/gc`` ``admin``. Each answers the
dict of the ``store.retention`` method it calls; who acts is the token's id (recorded in
``evstore roots --history``). Errors are the library's codes as problem+json.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool

from .. import EvstoreError, error
from .app import Served
from .auth import actor, admin, ingester, reader
from .wire import OBJECT_RESPONSES, json_body, known_members, refs_list, request_body

__all__ = ["router"]

router = APIRouter()

_REFS = {"type": "array", "items": {"type": "string"}}


def _body(schema: dict[str, Any]) -> dict[str, Any]:
    return request_body({"type": "object", **schema})


@router.get("/v1/roots", summary="Every root (evstore roots --json)", responses=OBJECT_RESPONSES)
async def list_roots(one: Served = Depends(reader)) -> dict[str, Any]:  # noqa: B008
    """``{"roots": [{"root", "entries", "held", "until"}]}``."""
    return {"roots": await run_in_threadpool(one.store.retention.roots)}


@router.get(
    "/v1/roots/history",
    summary="Retain, release and collection events, newest first (evstore roots --history)",
    responses=OBJECT_RESPONSES,
)
async def history(
    limit: int = Query(1000, ge=1, le=100_000, description="Events listed."),
    one: Served = Depends(reader),  # noqa: B008
) -> dict[str, Any]:
    """``{"events": [{"at", "actor", "action", "root", "address", "detail"}]}``."""
    return {"events": await run_in_threadpool(one.store.retention.history, limit)}


@router.post(
    "/v1/roots/{name:path}/retain",
    summary="Hold objects and their closures under a root (evstore retain)",
    responses=OBJECT_RESPONSES,
    openapi_extra=_body(
        {"required": ["refs"], "properties": {"refs": _REFS, "until": {"type": ["string", "null"]}}}
    ),
)
async def retain(
    name: str,
    request: Request,
    one: Served = Depends(ingester),  # noqa: B008
) -> dict[str, Any]:
    """``{"refs": [...], "until": TIME|null}`` -> ``{"root", "until", "retained"}``."""
    body = known_members(await json_body(request), {"refs", "until"})
    refs = refs_list(body, one.limits.missing_refs)
    until = body.get("until")
    if until is not None and not isinstance(until, str):
        raise error("http.request", "until is a time as text (ISO 8601 or 30d)", "/until")
    who = actor(request)
    try:
        out: dict[str, Any] = await run_in_threadpool(
            lambda: one.store.retention.retain(refs, name, until=until, actor=who)
        )
    except EvstoreError as err:
        if "until" in err.details:  # the time given was refused: it is the body's /until
            err.pointer = "/until"
        raise
    return out


@router.post(
    "/v1/roots/{name:path}/release",
    summary="Release a root, or only some of its entries (evstore release)",
    responses=OBJECT_RESPONSES,
    openapi_extra=_body({"properties": {"refs": _REFS}}),
)
async def release(
    name: str,
    request: Request,
    one: Served = Depends(ingester),  # noqa: B008
) -> dict[str, Any]:
    """``{"refs": [...]}`` (absent or empty: every entry) -> ``{"root", "released"}``."""
    body = known_members(await json_body(request), {"refs"})
    refs = [] if body.get("refs") is None else refs_list(body, one.limits.missing_refs)
    who = actor(request)
    out: dict[str, Any] = await run_in_threadpool(
        lambda: one.store.retention.release(name, refs, actor=who)
    )
    return out


@router.post(
    "/v1/gc",
    summary="Collect what no root reaches and whose lease expired (evstore gc --json)",
    responses=OBJECT_RESPONSES,
    openapi_extra=_body(
        {
            "properties": {
                "dry_run": {"type": "boolean"},
                "batch": {"type": "integer", "minimum": 1, "maximum": 10000},
            }
        }
    ),
)
async def gc(request: Request, one: Served = Depends(admin)) -> dict[str, Any]:  # noqa: B008
    """``{"dry_run": bool, "batch": N}`` -> the gc report (``count``, ``bytes``, ``objects``)."""
    body = known_members(await json_body(request), {"dry_run", "batch"})
    dry_run = body.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise error("http.request", "dry_run is true or false", "/dry_run")
    batch = body.get("batch", 200)
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= 10000:
        raise error("http.request", "batch is an integer from 1 to 10000", "/batch")
    who = actor(request)
    report = await run_in_threadpool(
        lambda: one.store.retention.gc(dry_run=dry_run, batch=batch, actor=who)
    )
    out: dict[str, Any] = report.to_dict()
    return out
