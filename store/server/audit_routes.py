"""``evstore audit`` run by the server, streamed to the client (issue 28, docs/http.md#audit).

``POST P/v1/audit`` (admin) with ``{"roots", "sample", "seed", "since", "record"}`` (each
optional) runs ``store.retention.audit`` on the server, recorded like a local run (``evstore
audits``) with the token's id as the actor, and answers ``application/x-ndjson``:
``{"progress": [done, total]}`` lines (at most about twice a second), then ``{"end": RUN}``
(the JSON of ``evstore audit --json``), or ``{"error": ERROR}`` when the run fails midway. A bad
option is checked by the audit before its first object: it arrives as an ``error`` line. When
the client goes away the run stops at its next object and nothing of it is recorded.
``GET P/v1/audits[?limit=N]`` (read) lists the recorded runs, as ``evstore audits --json``.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from .. import EvstoreError, error
from .app import Served
from .auth import actor, admin, reader
from .wire import OBJECT_RESPONSES, json_body, known_members

__all__ = ["router"]

router = APIRouter()

_OPTIONS = {"roots", "sample", "seed", "since", "record"}
_END = object()


class _Stopped(Exception):
    """The client went away: the run stops."""


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
    responses={**OBJECT_RESPONSES, 200: {"content": {"application/x-ndjson": {}}}},
)
async def audit(request: Request, one: Served = Depends(admin)) -> StreamingResponse:  # noqa: B008
    """The run as NDJSON lines (module docstring)."""
    raw = await request.body()
    opts = _options(await json_body(request) if raw else {})
    who = actor(request)
    stop = threading.Event()
    events: queue.Queue[Any] = queue.Queue(maxsize=1000)
    last = [0.0]

    def progress(done: int, total: int) -> None:
        if stop.is_set():
            raise _Stopped
        now = time.monotonic()
        if now - last[0] >= 0.5 or done == total:
            last[0] = now
            events.put({"progress": [done, total]})

    def work() -> None:
        try:
            roots = opts.pop("roots")
            run = one.store.retention.audit(roots, actor=who, progress=progress, **opts)
            events.put({"end": run.to_dict()})
        except _Stopped:
            pass
        except EvstoreError as err:
            events.put({"error": err.to_dict()})
        finally:
            events.put(_END)

    thread = threading.Thread(target=work, name="evstore-remote-audit", daemon=True)

    async def lines() -> AsyncIterator[bytes]:
        thread.start()
        try:
            while True:
                item = await run_in_threadpool(events.get)
                if item is _END:
                    return
                yield json.dumps(item, sort_keys=True).encode("utf-8") + b"\n"
        finally:
            stop.set()
            while thread.is_alive():
                try:
                    events.get_nowait()
                except queue.Empty:
                    await run_in_threadpool(thread.join, 0.1)

    return StreamingResponse(lines(), media_type="application/x-ndjson")
