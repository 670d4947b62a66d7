"""``evstore audit`` run by the server, streamed to the client (issue 28, docs/http.md#audit).

``POST P/v1/audit`` (admin) with ``{"roots", "sample", "seed", "since", "record"}`` (each
optional) runs ``store.retention.audit`` on the server, recorded like a local run (``evstore
audits``) with the token's id as the actor, and answers ``application/x-ndjson``:
``{"progress": [done, total]}`` lines (at most about twice a second), then ``{"end": RUN}``
(the JSON of ``evstore audit --json``), or ``{"error": ERROR}`` when the run fails midway. A bad
option (``root.name``, ``input.invalid``: a bad ``sample`` or ``since``) is a 400 problem before
the stream starts; a named root that holds nothing (``not-found.root``) is found by the run, an
``error`` line. When the client goes away the run stops at its next root entry and nothing of
it is recorded (store/server/streaming.py).
``GET P/v1/audits[?limit=N]`` (read) lists the recorded runs, as ``evstore audits --json``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from .. import error
from .app import Served
from .auth import actor, admin, reader
from .streaming import NdjsonRun
from .wire import NDJSON_RESPONSE, OBJECT_RESPONSES, json_body, known_members, request_body

__all__ = ["router"]

router = APIRouter()

_OPTIONS = {"roots", "sample", "seed", "since", "record"}
_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "roots": {"type": "array", "items": {"type": "string"}},
        "sample": {"type": "number"},
        "seed": {"type": "integer"},
        "since": {"type": "string"},
        "record": {"type": "boolean"},
    },
}


def _options(body: Any) -> dict[str, Any]:
    opts = known_members(body, _OPTIONS)
    roots = opts.get("roots", [])
    if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
        raise error("http.request", "roots is a list of root names", "/roots")
    for name, kind in (("seed", int), ("record", bool)):
        if name in opts and type(opts[name]) is not kind:
            raise error("http.request", f"{name} is a {kind.__name__}", f"/{name}")
    if opts.get("sample") is not None and type(opts["sample"]) not in (int, float):
        raise error("http.request", "sample is a number", "/sample")
    if opts.get("since") is not None and not isinstance(opts["since"], str):
        raise error("http.request", "since is a string", "/since")
    return {**opts, "roots": tuple(roots)}


@router.get("/v1/audits", summary="The recorded audit runs (evstore audits --json)")
async def audits(
    limit: int = Query(50, ge=1, le=100_000),
    one: Served = Depends(reader),  # noqa: B008
) -> dict[str, Any]:
    """``{"audits": [...]}``, newest first."""
    return {"audits": await run_in_threadpool(one.store.retention.audits, limit)}


@router.post(
    "/v1/audit",
    summary="Audit the retained artifacts on the server, streamed as NDJSON (evstore audit)",
    responses={**OBJECT_RESPONSES, **NDJSON_RESPONSE},
    openapi_extra=request_body(_SCHEMA, required=False),
)
async def audit(request: Request, one: Served = Depends(admin)) -> StreamingResponse:  # noqa: B008
    """The run as NDJSON lines (module docstring)."""
    raw = await request.body()
    opts = _options(await json_body(request) if raw else {})
    roots = opts.pop("roots")
    # the audit's own option rules, before the answer starts (a 400 problem)
    one.store.retention.check_audit_options(
        roots, sample=opts.get("sample"), since=opts.get("since")
    )
    who = actor(request)
    stream = NdjsonRun("evstore-remote-audit")

    def work() -> None:
        run = one.store.retention.audit(roots, actor=who, progress=stream.progress, **opts)
        stream.emit({"end": run.to_dict()})

    return stream.response(work)
