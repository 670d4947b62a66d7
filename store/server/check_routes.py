"""``evstore check`` run by the server, streamed to the client (issue 28, docs/http.md#check).

``POST P/v1/check`` (admin) with ``{"sample", "seed", "kinds", "since", "jobs", "record"}``
(each optional, as ``Store.check`` takes them) answers ``application/x-ndjson``, one JSON
object a line, as the run goes: ``{"progress": [done, total]}`` (at most about twice a
second), ``{"fault": FAULT}`` for each fault as found (the error's JSON: code, message, rule,
pointer, details), then ``{"end": {"checked", "recorded", "not_recorded",
"recorded_warnings", "audit_warnings"}}``, or ``{"error": ERROR}`` when the run itself fails
midway. A bad option is a 400 problem before the stream starts. When the client goes away the
server's run stops at its next object (objects verified so far stay recorded, as a local
check interrupted by Ctrl-C). The streaming itself is store/server/streaming.py.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from .. import error
from .app import Served
from .auth import admin
from .streaming import NdjsonRun
from .wire import NDJSON_RESPONSE, OBJECT_RESPONSES, json_body, known_members, request_body

__all__ = ["router"]

router = APIRouter()

_OPTIONS = {"sample", "seed", "kinds", "since", "jobs", "record"}
_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "sample": {"type": "number"},
        "seed": {"type": "integer"},
        "kinds": {"type": "array", "items": {"type": "string"}},
        "since": {"type": "string"},
        "jobs": {"type": "integer"},
        "record": {"type": "boolean"},
    },
}


def _options(body: Any) -> dict[str, Any]:
    opts = known_members(body, _OPTIONS)
    kinds = opts.get("kinds", [])
    if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
        raise error("http.request", "kinds is a list of strings", "/kinds")
    for name, kind in (("seed", int), ("jobs", int), ("record", bool)):
        if name in opts and type(opts[name]) is not kind:
            raise error("http.request", f"{name} is a {kind.__name__}", f"/{name}")
    if opts.get("sample") is not None and type(opts["sample"]) not in (int, float):
        raise error("http.request", "sample is a number", "/sample")
    if opts.get("since") is not None and not isinstance(opts["since"], str):
        raise error("http.request", "since is a string", "/since")
    return {**opts, "kinds": tuple(kinds)}


@router.post(
    "/v1/check",
    summary="Re-verify the store on the server, faults streamed as NDJSON (evstore check)",
    responses={**OBJECT_RESPONSES, **NDJSON_RESPONSE},
    openapi_extra=request_body(_SCHEMA, required=False),
)
async def check(request: Request, one: Served = Depends(admin)) -> StreamingResponse:  # noqa: B008
    """The run as NDJSON lines (module docstring)."""
    raw = await request.body()
    opts = _options(await json_body(request) if raw else {})
    stream = NdjsonRun("evstore-remote-check")
    audit: list[dict[str, str]] = []
    # options are checked here, before the answer starts (a 400 problem)
    run = await run_in_threadpool(
        lambda: one.store.check(progress=stream.progress, warnings=audit, **opts)
    )

    def work() -> None:
        try:
            for fault in run:
                stream.emit({"fault": fault.to_dict()})
            stream.emit(
                {
                    "end": {
                        "checked": run.checked,
                        "recorded": run.recorded,
                        "not_recorded": run.not_recorded,
                        "recorded_warnings": one.store.recorded_warnings(),
                        "audit_warnings": audit,
                    }
                }
            )
        finally:
            run.close()

    return stream.response(work)
