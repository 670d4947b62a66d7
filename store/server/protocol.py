"""The server's HTTP/1.1 connections: uvicorn's h11 protocol with socket-level limits.

uvicorn reads requests asynchronously but sets no deadline on a request's line and headers
and no cap on open connections: a client that opens connections and sends a byte now and
then holds a file descriptor each, for ever (issue 23). :class:`GuardedH11Protocol` adds
what :class:`~evstore.server.limits.Guard` cannot see from inside the app:

- **header timeout**: a connection must send a request's line and headers within
  ``Limits.header_timeout`` seconds of its opening (or of the end of the previous
  response); otherwise it is answered 408 (``http.timeout``, problem+json) and closed. An
  idle keep-alive connection is closed by uvicorn's ``timeout_keep_alive`` first.
- **connection cap**: beyond ``Limits.connections`` open connections (and never more than
  the file descriptor limit less :data:`SPARE_FDS`), a new one is answered 503
  (``http.busy``) and closed at once.
- **header size**: h11 refuses a header block still incomplete past ``Limits.header_bytes``
  (uvicorn's ``h11_max_incomplete_event_size``); that refusal is answered 431
  (``http.headers-too-large``, problem+json) instead of uvicorn's plain-text 400. A complete
  block over the limit is the Guard's (431 too).

The limits come from the app's :class:`~evstore.server.limits.Guard` (each worker process
builds its own app), so the protocol class itself holds no state and pickles by name.
"""

from __future__ import annotations

import asyncio
from http import HTTPStatus
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from .. import EvstoreError, error
from .limits import Guard, Limits, headers_too_large, timed_out
from .problems import RETRY_AFTER_S, problem_body, status_of

__all__ = ["GuardedH11Protocol", "SPARE_FDS", "connection_cap", "raw_problem"]


def raw_problem(err: EvstoreError) -> bytes:
    """A whole HTTP/1.1 problem+json response of ``err`` that closes the connection."""
    import json

    status = status_of(err)
    body = json.dumps(problem_body(err, status), sort_keys=True).encode("utf-8")
    head = [
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}",
        "content-type: application/problem+json",
        "x-content-type-options: nosniff",  # as every other answer (store/server/headers.py)
        f"content-length: {len(body)}",
        "connection: close",
    ]
    if status == 503:
        head.append(f"retry-after: {RETRY_AFTER_S}")
    return ("\r\n".join(head) + "\r\n\r\n").encode("ascii") + body


def _limits(app: Any) -> Limits:
    """The :class:`Limits` of the Guard inside uvicorn's middleware wrapping of ``app``."""
    for _ in range(16):
        if isinstance(app, Guard):
            return app.limits
        app = getattr(app, "app", None)
        if app is None:
            break
    return Limits()


#: File descriptors kept for everything but connections (the database, spools, logs).
SPARE_FDS = 64


def connection_cap(limits: Limits) -> int:
    """``Limits.connections``, and never more than the process's file descriptor limit
    (``RLIMIT_NOFILE``, soft) less :data:`SPARE_FDS`: idle connections must not exhaust the
    descriptors the stores need.
    """  # noqa: D205
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):  # pragma: no cover - not POSIX
        return limits.connections
    if soft == resource.RLIM_INFINITY:
        return limits.connections
    return max(1, min(limits.connections, soft - SPARE_FDS))


class _Connection(h11.Connection):
    """h11's connection, remembering the protocol error that refused the request."""

    refused: h11.RemoteProtocolError | None = None

    def next_event(self) -> Any:
        try:
            return super().next_event()
        except h11.RemoteProtocolError as exc:
            self.refused = exc
            raise


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header timeout, a connection cap and a 431 answer."""

    def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self.limits = _limits(self.app)
        self.parser = _Connection(h11.SERVER, self.limits.header_bytes)
        self.conn = self.parser
        self.head_timer: asyncio.TimerHandle | None = None
        self.cap = connection_cap(self.limits)

    # -- connection cap ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Accept the connection, or answer 503 and close it when the cap is reached."""
        super().connection_made(transport)
        if len(self.connections) > self.cap:
            err = error(
                "http.busy", f"the server has its limit of {self.cap} open connections; retry"
            )
            transport.write(raw_problem(err))
            transport.close()
            return
        self._arm()

    # -- header timeout ---------------------------------------------------------------------
    def _arm(self) -> None:
        self._disarm()
        self.head_timer = self.loop.call_later(self.limits.header_timeout, self._head_late)

    def _disarm(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _head_late(self) -> None:
        self.head_timer = None
        if self.transport.is_closing():
            return
        if self.cycle is None or self.cycle.response_complete:
            if self.conn.their_state is h11.IDLE and not self.conn.trailing_data[0]:
                self.transport.close()  # nothing of a request arrived: just close
                return
        else:
            return  # a request is being handled: the Guard times its body
        self.transport.write(raw_problem(timed_out("headers")))
        self.transport.close()

    def data_received(self, data: bytes) -> None:
        """Feed ``data``; a request whose headers are complete stops the header timer."""
        super().data_received(data)
        if self.cycle is not None and not self.cycle.response_complete:
            self._disarm()

    def on_response_complete(self) -> None:
        """After each response the next request's headers are timed again."""
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the header timer with the connection."""
        self._disarm()
        super().connection_lost(exc)

    # -- header size --------------------------------------------------------------------------
    def send_400_response(self, msg: str) -> None:
        """A request h11 refused: 431 for a header block over the limit, else 400; closed."""
        refused = self.parser.refused
        if refused is not None and refused.error_status_hint == 431:
            err = headers_too_large(self.limits.header_bytes)
        else:
            err = error("http.request", f"malformed HTTP request: {refused or msg}")
        self.transport.write(raw_problem(err))
        self.transport.close()
