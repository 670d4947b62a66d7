"""Administration over HTTP (issue 28): settings, and a checkpoint signed on request.

``GET P/v1/config[/{name}]`` reads settings (read scope), ``PUT P/v1/config/{name}``
``{"value": V}`` sets one (admin), with the answers of ``evstore config --json``; a setting
that names a place on the server's machine or where its bytes go (``log.key_file``, a key
file; ``blobs.backend``, a directory or bucket; ``log.witness_policy``, URLs the server posts to)
is refused (403 ``config.server-only``): it
is set beside the database (``blobs.backend`` changes through ``evstore blobs move``).
``POST P/v1/log/checkpoint`` (admin) signs a checkpoint of the log now with the key the
server was started with (``evstore serve --log-key``), as ``evstore log checkpoint`` does
beside the database; a server started without one answers 409 ``log.server-no-key``. The
private key never leaves the server's machine.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from .. import error
from .app import Served
from .auth import admin, reader
from .wire import OBJECT_RESPONSES, json_body, known_members, request_body

__all__ = ["router"]

router = APIRouter()

#: Settings that name a place on the server's machine: set beside the database only (an
#: admin token would otherwise choose which file of the server's disk is read as a key, or
#: which directory of it new blob bytes are written to, or which URLs the server posts its
#: checkpoints to and reports the answers of).
_SERVER_ONLY = frozenset({"log.key_file", "blobs.backend", "log.witness_policy"})


@router.get(
    "/v1/config", summary="Every setting (evstore config --json)", responses=OBJECT_RESPONSES
)
async def settings(one: Served = Depends(reader)) -> dict[str, Any]:  # noqa: B008
    """``{NAME: value, ...}``, every setting of docs/settings.md."""
    out: dict[str, Any] = await run_in_threadpool(one.store.config)
    return out


@router.get(
    "/v1/config/{name}",
    summary="One setting (evstore config NAME --json)",
    responses=OBJECT_RESPONSES,
)
async def setting(name: str, one: Served = Depends(reader)) -> dict[str, Any]:  # noqa: B008
    """``{NAME: value}``; 400 ``config.unknown`` for a name that is no setting."""
    out: dict[str, Any] = await run_in_threadpool(one.store.config, name)
    return out


@router.put(
    "/v1/config/{name}",
    summary="Set a setting (evstore config NAME VALUE --json)",
    responses=OBJECT_RESPONSES,
    openapi_extra=request_body(
        {
            "type": "object",
            "required": ["value"],
            "properties": {"value": {}},
            "additionalProperties": False,
        }
    ),
)
async def set_setting(
    name: str,
    request: Request,
    one: Served = Depends(admin),  # noqa: B008
) -> dict[str, Any]:
    """``{"value": V}`` -> ``{NAME: stored value}``: a string is parsed as the CLI parses
    ``VALUE``, any other JSON value must have the setting's type (``config.value``).
    """  # noqa: D205
    if name in _SERVER_ONLY:
        raise error(
            "config.server-only",
            f"{name} names a place on the server's machine: set it beside the database "
            f"(evstore --store DATABASE-URL config {name} PATH), not over HTTP",
            setting=name,
        )
    body = known_members(await json_body(request), {"value"})
    if "value" not in body:
        raise error("http.request", 'the body is {"value": V}', "/value")
    stored = await run_in_threadpool(one.store.set_config, name, body["value"])
    return {name: stored}


@router.post(
    "/v1/log/checkpoint",
    summary="Sign a checkpoint now with the server's --log-key (evstore log checkpoint)",
    responses=OBJECT_RESPONSES,
)
async def sign_checkpoint(one: Served = Depends(admin)) -> dict[str, Any]:  # noqa: B008
    """``{"size", "root", "origin", "note", "signed_at", "new"}`` as ``evstore log checkpoint
    --json``; 409 ``log.server-no-key`` when the server was started without ``--log-key``.
    """  # noqa: D205
    if one.log_key is None:
        raise error(
            "log.server-no-key",
            "this server signs nothing: it was started without --log-key (run `evstore log "
            "checkpoint` beside the database, or restart the server with --log-key PATH)",
        )
    out: dict[str, Any] = await run_in_threadpool(one.store.log.checkpoint, one.log_key)
    return out


@router.post(
    "/v1/log/integrate",
    summary="Add queued log entries to the tree now (evstore log integrate)",
    responses=OBJECT_RESPONSES,
)
async def integrate(one: Served = Depends(admin)) -> dict[str, Any]:  # noqa: B008
    """``{"integrated", "size", "pending", "checkpoint"}`` as ``evstore log integrate
    --json``: the server integrates what writes queued (docs/log.md), then signs with its
    ``--log-key`` when it was started with one (``checkpoint`` null otherwise).
    """  # noqa: D205
    out: dict[str, Any] = await run_in_threadpool(one.store.log.integrate, one.log_key)
    return out
