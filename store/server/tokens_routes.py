"""Tokens managed remotely with an ``admin`` token: list, create (shown once), revoke."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response

from .. import create_token as _create_token
from .. import error
from .. import list_tokens as _list_tokens
from .. import revoke_token as _revoke_token
from .app import Served
from .auth import admin
from .wire import OBJECT_RESPONSES, json_body, known_members, request_body

__all__ = ["router"]

router = APIRouter()


@router.get(
    "/v1/tokens", summary="Every token of this store, no secrets", responses=OBJECT_RESPONSES
)
def list_tokens(one: Served = Depends(admin)) -> dict[str, Any]:  # noqa: B008
    """``{"tokens": [{"id", "scope", "name", "created_at", "revoked_at"}]}``."""
    return {"tokens": _list_tokens(one.store)}


@router.post(
    "/v1/tokens",
    summary="Make a token (its text is in this answer only)",
    status_code=201,
    responses=OBJECT_RESPONSES,
    openapi_extra=request_body(
        {
            "type": "object",
            "required": ["scope"],
            "properties": {
                "scope": {"enum": ["read", "ingest", "admin"]},
                "name": {"type": "string"},
            },
            "additionalProperties": False,
        }
    ),
)
async def create_token(request: Request, one: Served = Depends(admin)) -> Response:  # noqa: B008
    """``{"scope": S, "name": LABEL}`` -> 201 ``{"id", "token", "scope", "name", ...}``."""
    body = await json_body(request)
    if isinstance(body, dict):
        known_members(body, {"scope", "name"})  # a misspelt member is named first
    if not isinstance(body, dict) or not isinstance(body.get("scope"), str):
        raise error("http.request", 'the body is {"scope": S, "name": LABEL}', "/scope")
    name = body.get("name", "")
    if not isinstance(name, str):
        raise error("http.request", "name is a string", "/name")
    made = await run_in_threadpool(_create_token, one.store, body["scope"], name)
    return JSONResponse(made, status_code=201)


@router.delete("/v1/tokens/{token_id}", summary="Revoke a token by id", responses=OBJECT_RESPONSES)
def revoke_token(token_id: str, one: Served = Depends(admin)) -> dict[str, Any]:  # noqa: B008
    """``{"id", "revoked": true, "revoked_at"}``; 404 ``not-found.token``."""
    return _revoke_token(one.store, token_id)
