"""A long run on the server streamed to its client as NDJSON, stopped when the client leaves.

``evstore check`` and ``evstore audit`` over the URL (store/server/check_routes.py,
audit_routes.py; docs/http.md#check) both run in a thread of their own beside the
database and answer ``application/x-ndjson``: one JSON object a line (keys sorted), as the
run goes. :class:`NdjsonRun` is that machinery, once:

* ``progress(done, total)`` is what the run calls after each object: it queues a
  ``{"progress": [done, total]}`` line at most every :data:`PROGRESS_S` seconds (and the
  last one), and raises :class:`Stopped` once the client has gone, so the run stops at its
  next object;
* ``emit(obj)`` queues one line (a fault, the end); it too raises :class:`Stopped` once
  the client has gone, and never blocks for good on a full queue (a run with many faults and
  no reader would otherwise hold its thread and its database snapshot forever);
* :meth:`NdjsonRun.response` starts the run's thread when the answer starts; the run's
  ``EvstoreError`` becomes an ``{"error": ERROR}`` line. When the client goes away
  (Starlette cancels the answer on ``http.disconnect``) the flag is set within
  :data:`POLL_S` and the answer waits (at most :data:`JOIN_S`) for the thread to end, so a
  run is never left working for nobody.

Options are judged before :meth:`~NdjsonRun.response` is called, so a bad one is a 400
problem before the stream starts (RFC 9457; the routes do it).
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from .. import EvstoreError

__all__ = ["NdjsonRun", "POLL_S", "PROGRESS_S", "Stopped", "ndjson_line"]

#: Seconds between two progress lines (the last one always comes).
PROGRESS_S = 0.5
#: Seconds the answer waits for a line before looking again whether the client left.
POLL_S = 0.1
#: Seconds the answer waits, once the client left, for the run's thread to stop.
JOIN_S = 30.0
_END = object()


class Stopped(Exception):
    """The client went away: the run stops (raised inside the run's thread)."""


def ndjson_line(obj: Any) -> bytes:
    """One NDJSON line: ``obj`` as JSON with sorted keys, then a newline (UTF-8 bytes)."""
    return json.dumps(obj, sort_keys=True).encode("utf-8") + b"\n"


class NdjsonRun:
    """One streamed run: its stop flag, its queue of lines, its progress throttle.

    Args:
        name: the thread's name (``evstore-remote-check``, ...).
        maxsize: lines queued at most before ``emit`` waits for the client to read.
    """

    def __init__(self, name: str, maxsize: int = 1000) -> None:
        self.name = name
        self.stop = threading.Event()
        self._events: queue.Queue[Any] = queue.Queue(maxsize=maxsize)
        self._last = 0.0

    def progress(self, done: int, total: int) -> None:
        """The run's ``progress(done, total)`` callback (objects). Raises Stopped."""
        if self.stop.is_set():
            raise Stopped
        now = time.monotonic()
        if now - self._last >= PROGRESS_S or done == total:
            self._last = now
            self.emit({"progress": [done, total]})

    def emit(self, obj: Any) -> None:
        """Queue one line; waits while the queue is full. Raises Stopped once the client left."""
        while True:
            if self.stop.is_set():
                raise Stopped
            try:
                self._events.put(obj, timeout=POLL_S)
                return
            except queue.Full:
                continue

    def _work(self, work: Callable[[], None]) -> None:
        try:
            work()
        except Stopped:
            pass
        except EvstoreError as err:
            try:
                self.emit({"error": err.to_dict()})
            except Stopped:
                pass
        finally:
            self._put_end()

    def _put_end(self) -> None:
        while not self.stop.is_set():
            try:
                self._events.put(_END, timeout=POLL_S)
                return
            except queue.Full:
                continue

    def _next(self) -> Any:
        try:
            return self._events.get(timeout=POLL_S)
        except queue.Empty:
            return None

    def response(self, work: Callable[[], None]) -> StreamingResponse:
        """The NDJSON answer; ``work()`` runs in a thread of its own when the answer starts.

        ``work`` calls :meth:`emit` and :meth:`progress` (both raise :class:`Stopped` once
        the client left; ``work`` lets it through, and should close what it opened in a
        ``finally``).
        """
        thread = threading.Thread(target=self._work, args=(work,), name=self.name, daemon=True)

        async def lines() -> AsyncIterator[bytes]:
            thread.start()
            try:
                while True:
                    item = await run_in_threadpool(self._next)  # returns within POLL_S
                    if item is _END:
                        return
                    if item is not None:
                        yield ndjson_line(item)
            finally:
                self.stop.set()
                with anyio.CancelScope(shield=True):  # the answer may be cancelled already
                    deadline = time.monotonic() + JOIN_S
                    while thread.is_alive() and time.monotonic() < deadline:
                        await run_in_threadpool(thread.join, POLL_S)

        return StreamingResponse(lines(), media_type="application/x-ndjson")
