"""Request limits of the server, enforced before a body is buffered (docs/http.md#limits).

:class:`Limits` holds the numbers; :class:`Guard` is the outermost ASGI middleware: it
answers 413 from ``Content-Length`` before reading a byte, counts the bytes of bodies sent
without it (chunked) and stops the request at the limit, answers 503 with ``Retry-After``
when the server already has its limit of requests in flight, and ends a response whose
stream was aborted (a corrupt large object) without completing it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from .. import EvstoreError, error
from .problems import problem

__all__ = ["BodyTooLarge", "Guard", "Limits", "TransferAborted"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("server")


#: The Guard's body limit of a route that enforces its own.
_UNBOUNDED = 1 << 62


@dataclass(frozen=True)
class Limits:
    """The server's request limits (bytes unless said otherwise).

    Attributes:
        object_bytes: a raw object body (``PUT``/``POST P/v1/objects``); spooled to a
            temporary file past 8 MiB, never held whole in memory. Default 1 GiB.
        json_bytes: a JSON body (ingest, validate, missing, tokens). Default 64 MiB.
        bundle_bytes: a bundle tar (``POST P/v1/bundles``), spooled to disk. Default 1 GiB.
        missing_refs: refs in one ``missing`` request. Default 10000.
        page: the largest ``limit`` of one ``ls`` page. Default 10000.
        in_flight: requests handled at once; more get 503 with ``Retry-After``. Default 256.
    """

    object_bytes: int = 1 << 30
    json_bytes: int = 64 << 20
    bundle_bytes: int = 1 << 30
    missing_refs: int = 10_000
    page: int = 10_000
    in_flight: int = 256

    def body_limit(self, method: str, path: str) -> int:
        """The body limit of a request to ``path`` (the path after the store prefix too)."""
        if method in ("PUT", "POST") and path.endswith("/v1/objects"):
            return self.object_bytes
        if path.endswith("/v1/bundles"):
            return self.bundle_bytes
        if "/v2/" in path and "/blobs/uploads/" in path:
            # OCI blob uploads: store/server/registry.py holds the whole blob (every chunk
            # together) to object_bytes and answers in the OCI error form itself.
            return _UNBOUNDED
        return self.json_bytes


class BodyTooLarge(Exception):
    """A request body went over its limit while it was read (answered 413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is over the limit of {limit} bytes")
        self.limit = limit


class TransferAborted(Exception):
    """A streamed response must end incomplete (its bytes failed verification; logged)."""


def too_large(limit: int) -> EvstoreError:
    """The ``http.too-large`` error for ``limit`` bytes."""
    return error(
        "http.too-large",
        f"the request body is over the limit of {limit} bytes (docs/http.md#limits)",
        limit=limit,
    )


class Guard:
    """The outermost ASGI middleware: body limits, requests in flight, aborted transfers."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app = app
        self.limits = limits
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run one request through the limits (other scopes pass through)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limits.body_limit(scope["method"], scope["path"])
        length = _content_length(scope)
        if length is not None and length > limit:
            await problem(too_large(limit))(scope, receive, send)
            return
        if self.in_flight >= self.limits.in_flight:
            err = error(
                "http.busy",
                f"the server is handling its limit of {self.limits.in_flight} requests; retry",
            )
            await problem(err)(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        self.in_flight += 1
        try:
            await self.app(scope, counted, tracked)
        except TransferAborted:
            if not started:
                raise
            # Return with the response incomplete: the server closes the connection, and the
            # client sees a broken transfer, never a complete body of wrong bytes.
            return
        except BodyTooLarge as exc:
            if started:
                raise
            await problem(too_large(exc.limit))(scope, receive, send)
        finally:
            self.in_flight -= 1


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
