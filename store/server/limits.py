"""Request limits of the server, enforced before a body is buffered (docs/http.md#limits).

:class:`Limits` holds the numbers; :class:`Guard` is the outermost ASGI middleware: it
answers 413 from ``Content-Length`` before reading a byte, counts the bytes of bodies sent
without it (chunked) and stops the request at the limit, refuses a header block over
:attr:`Limits.header_bytes` (431), stops a body that does not keep arriving (408, issue 23),
answers 503 with ``Retry-After`` when the server already has its limit of requests in
flight, and ends a response whose stream was aborted (a corrupt large object) without
completing it. A request waiting for the bytes of its body holds no in-flight slot, so
clients that send slowly cannot take the server's capacity from the others. The socket-level
limits (header timeout, connection cap) are store/server/protocol.py's.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.responses import Response

from .. import EvstoreError, error
from .problems import problem

__all__ = [
    "BodyTimeout",
    "BodyTooLarge",
    "Guard",
    "Limits",
    "TransferAborted",
    "WITNESS_BODY",
    "closing",
    "headers_too_large",
    "timed_out",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("server")


#: The Guard's body limit of a route that enforces its own.
_UNBOUNDED = 1 << 62
#: An add-checkpoint body (``POST P/add-checkpoint``, no token): 63 proof lines and a note
#: with a few signatures fit in 16 KiB; more is refused (413) while it arrives.
WITNESS_BODY = 64 * 1024


@dataclass(frozen=True)
class Limits:
    """The server's request limits (bytes unless said otherwise).

    Attributes:
        object_bytes: a raw object body (``PUT``/``POST P/v1/objects``); spooled to a
            temporary file past 8 MiB, never held whole in memory. Default 1 GiB.
        json_bytes: a JSON body (ingest, validate, missing, tokens). Default 64 MiB.
        bundle_bytes: a bundle tar (``POST P/v1/bundles``) or an archive tar (``POST
            P/v1/archives``) or many objects (``POST P/v1/objects/batch``), spooled to disk.
            Default 1 GiB.
        missing_refs: refs in one ``missing`` request. Default 10000.
        page: the largest ``limit`` of one ``ls`` page. Default 10000.
        in_flight: requests handled at once; more get 503 with ``Retry-After``. A request
            waiting for its body's bytes does not count. Default 256.
        validate_bytes: a validate body (``POST P/v1/validate``): a read token may send it,
            and checking costs far more than storing. Default 1 MiB.
        validate_seconds: a validate running longer is stopped between two documents
            (``http.validate-cost``, 413). Default 30.
        form_bytes: a body sent to the pages (``P/ui/...``: the sign-in form needs no
            token). Default 4 KiB.
        header_bytes: the request line and headers together (431 over it). Default 16 KiB.
        header_timeout: seconds a connection may take to send a request's line and headers
            (from its opening, or from the end of the previous response); then 408 and the
            connection is closed. Default 10.
        body_timeout: seconds a body may take before it must arrive at ``body_rate``
            (bytes per second, averaged from the body's start); a body slower than that, or
            one that stalls this long, is answered 408 (``http.timeout``) and its connection
            closed. Defaults 15 s and 1 KiB/s.
        connections: open connections per process; one more is answered 503 and closed at
            once (no file descriptor is held for it). Default 1000.
        validate_threads: validations run at once (their own thread pool); more wait.
            Default 4.
        write_threads: ingests, bundles and puts run at once (their own pool); more wait.
            Reads keep the rest of the threads. Default 8.
        read_threads: point reads run at once (a token's lookup, a GET of an object's
            head and inline bytes: one statement each, their own pool); more wait. Few
            threads pass the GIL around less (issue 29). Default 4.
        upload_expiry: seconds an OCI blob upload (docs/registry.md#push) may go unused,
            unfinished or finished and not yet named by a manifest, before its spooled file
            is removed. Default 3600.
        redirect_large: a whole-object GET of a blob larger than this whose bytes are in
            an S3 backend is answered 307 to a presigned URL of the bucket, for a client
            that sends ``Evstore-Redirect: allow`` (``serve --redirect-large``). 0 (the
            default): never.
        redirect_seconds: how long such a URL is valid (seconds). Default 300.
    """

    object_bytes: int = 1 << 30
    json_bytes: int = 64 << 20
    bundle_bytes: int = 1 << 30
    missing_refs: int = 10_000
    page: int = 10_000
    in_flight: int = 256
    validate_bytes: int = 1 << 20
    validate_seconds: float = 30.0
    form_bytes: int = 4 << 10
    header_bytes: int = 16 << 10
    header_timeout: float = 10.0
    body_timeout: float = 15.0
    body_rate: int = 1 << 10
    connections: int = 1000
    validate_threads: int = 4
    write_threads: int = 8
    read_threads: int = 4
    upload_expiry: float = 3600.0
    redirect_large: int = 0
    redirect_seconds: int = 300

    def __post_init__(self) -> None:
        """Refuse a seconds field that is not a finite number > 0 (``input.invalid``).

        Raises:
            EvstoreError: ``input.invalid`` naming the field: ``nan``, ``inf`` or a value
                <= 0 would never time out (or time out at once); found by the attack.
        """
        for name in ("validate_seconds", "header_timeout", "body_timeout", "upload_expiry"):
            value = getattr(self, name)
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not (ok and math.isfinite(value) and value > 0):
                raise error(
                    "input.invalid",
                    f"Limits.{name} {value!r} is not a finite number of seconds > 0 "
                    "(docs/http.md#limits)",
                    "/" + name,
                )

    def body_limit(self, method: str, path: str) -> int:
        """The body limit of a request to ``path`` (the path after the store prefix too)."""
        if method in ("PUT", "POST") and path.endswith("/v1/objects"):
            return self.object_bytes
        if path.endswith(("/v1/bundles", "/v1/archives", "/v1/objects/batch")):
            return self.bundle_bytes
        if path.endswith("/v1/validate"):
            return min(self.validate_bytes, self.json_bytes)
        if path.endswith("/add-checkpoint"):
            return WITNESS_BODY  # no token needed: refused while it arrives, not after

        if path.startswith("/v2/"):
            if "/blobs/uploads/" in path:
                # OCI blob uploads: store/server/registry.py holds the whole blob (every chunk
                # together) to object_bytes and answers in the OCI error form itself.
                return _UNBOUNDED
            return self.json_bytes  # a repository named ui/... is not a page's form
        if "/ui/" in path or path.endswith("/ui"):
            return self.form_bytes  # the pages' forms (sign-in) need no token: keep them small
        return self.json_bytes


class BodyTooLarge(Exception):
    """A request body went over its limit while it was read (answered 413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is over the limit of {limit} bytes")
        self.limit = limit


class BodyTimeout(Exception):
    """A request body did not arrive in time (answered 408 ``http.timeout``, then closed)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the request body did not arrive in time ({seconds:g} s)")
        self.seconds = seconds


def timed_out(what: str) -> EvstoreError:
    """The ``http.timeout`` error: ``what`` (headers, body) did not arrive in time."""
    return error(
        "http.timeout",
        f"the request's {what} did not arrive in time (docs/http.md#limits); "
        "the connection is closed",
    )


def headers_too_large(limit: int) -> EvstoreError:
    """The ``http.headers-too-large`` error for ``limit`` bytes."""
    return error(
        "http.headers-too-large",
        f"the request line and headers are over the limit of {limit} bytes (docs/http.md#limits)",
        limit=limit,
    )


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
        limits = self.limits
        size = len(scope["method"]) + len(scope.get("raw_path") or b"") + 12
        size += len(scope.get("query_string") or b"") + 1
        size += sum(len(k) + len(v) + 4 for k, v in scope.get("headers", ()))
        if size > limits.header_bytes:
            await problem(headers_too_large(limits.header_bytes))(scope, receive, send)
            return
        limit = limits.body_limit(scope["method"], scope["path"])
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
        body_done = False
        start = anyio.current_time()

        async def counted() -> Message:
            nonlocal received, body_done
            if body_done:  # after the body only a disconnect comes: no deadline
                return await receive()
            # Waiting for the network, a request holds no in-flight slot.
            self.in_flight -= 1
            try:
                wait = start + limits.body_timeout + received / limits.body_rate
                with anyio.move_on_after(max(0.0, wait - anyio.current_time())) as waited:
                    message = await receive()
            finally:
                self.in_flight += 1
            if waited.cancelled_caught:
                raise BodyTimeout(limits.body_timeout)
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
                body_done = not message.get("more_body", False)
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
        except BodyTimeout:
            if started:
                raise
            await closing(problem(timed_out("body")))(scope, receive, send)
        finally:
            self.in_flight -= 1


def closing(response: Response) -> Response:
    """``response`` with ``Connection: close``: the server closes the connection after it."""
    response.headers["connection"] = "close"
    return response


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
