"""``evstore check`` run by the server, streamed to the client (issue 28, docs/http.md#check).

``POST P/v1/check`` (admin) with ``{"sample", "seed", "kinds", "since", "jobs", "record"}``
(each optional, as ``Store.check`` takes them) answers ``application/x-ndjson``, one JSON
object a line, as the run goes: ``{"progress": [done, total]}`` (at most about twice a
second), ``{"fault": FAULT}`` for each fault as found (the error's JSON: code, message, rule,
pointer, details), then ``{"end": {"checked", "recorded", "not_recorded",
"recorded_warnings", "audit_warnings"}}``, or ``{"error": ERROR}`` when the run itself fails
midway. A bad option is a 400 problem before the stream starts. When the client goes away the
server's run stops at its next object (objects verified so far stay recorded, as a local
check interrupted by Ctrl-C).
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from .. import EvstoreError, error
from .app import Served
from .auth import admin
from .wire import OBJECT_RESPONSES, json_body, known_members

__all__ = ["router"]

router = APIRouter()

_OPTIONS = {"sample", "seed", "kinds", "since", "jobs", "record"}
_END = object()


class _Stopped(Exception):
    """The client went away: the run stops."""


def _line(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True).encode("utf-8") + b"\n"


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
    responses={**OBJECT_RESPONSES, 200: {"content": {"application/x-ndjson": {}}}},
)
async def check(request: Request, one: Served = Depends(admin)) -> StreamingResponse:  # noqa: B008
    """The run as NDJSON lines (module docstring)."""
    raw = await request.body()
    opts = _options(await json_body(request) if raw else {})
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

    audit: list[dict[str, str]] = []
    # options are checked here, before the answer starts (a 400 problem)
    run = await run_in_threadpool(
        lambda: one.store.check(progress=progress, warnings=audit, **opts)
    )

    def work() -> None:
        try:
            for fault in run:
                if stop.is_set():
                    break
                events.put({"fault": fault.to_dict()})
            if not stop.is_set():
                events.put(
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
        except _Stopped:
            pass
        except EvstoreError as err:
            events.put({"error": err.to_dict()})
        finally:
            run.close()
            events.put(_END)

    thread = threading.Thread(target=work, name="evstore-remote-check", daemon=True)

    async def lines() -> AsyncIterator[bytes]:
        thread.start()
        try:
            while True:
                item = await run_in_threadpool(events.get)
                if item is _END:
                    return
                yield _line(item)
        finally:
            stop.set()
            while thread.is_alive():  # let the run see the flag; drain what it still puts
                try:
                    events.get_nowait()
                except queue.Empty:
                    await run_in_threadpool(thread.join, 0.1)

    return StreamingResponse(lines(), media_type="application/x-ndjson")
