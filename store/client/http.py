"""The HTTP side of a remote store: one httpx client, bounded retries, typed errors.

Every request of :class:`~evstore.client.remote.RemoteStore` goes through :meth:`Http.request`:

* Retries. A request that never reached the server (connection refused, connect timeout) is
  retried whatever its method; a request the server may have seen (read timeout, a broken
  answer, ``503`` busy) is retried only when it is idempotent (GET, HEAD, the PUT of
  content-addressed bytes, ``POST missing``). At most ``retries`` retries, after
  ``backoff * 2**n`` seconds (n = 0, 1, ...; jittered to 50-100 %, capped at ``max_backoff``),
  or after the server's ``Retry-After`` (seconds or an HTTP date; capped at
  ``max_retry_after``) when it sends one.
* Errors. A ``application/problem+json`` answer (RFC 9457) becomes the evstore error it
  describes (same code, message, rule, pointer, path, details), so a remote store fails as a
  local one does. What remains is a typed ``remote.*`` error naming the URL, never the token:
  ``remote.unreachable``, ``remote.timeout``, ``remote.busy`` (503 after the retries),
  ``remote.auth`` (401/403 without a problem body), ``remote.protocol`` (anything else the
  API does not say: a 5xx without a problem body, a truncated or malformed answer).
"""

from __future__ import annotations

import email.utils
import random
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from ..core.errors import (
    CODES,
    BindingConflict,
    ContractError,
    CorruptionError,
    EvstoreError,
    InputError,
    NotFound,
    StoreStateError,
    error,
    error_class,
    family_of_status,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "Http",
    "RetryPolicy",
    "display_url",
    "is_remote_url",
    "rebuild_error",
    "unsupported",
]

#: Seconds to connect, and to wait for each read or write (httpx timeouts).
DEFAULT_TIMEOUT = 30.0

_FAMILY: dict[str, type[EvstoreError]] = {
    "input": InputError,
    "contract": ContractError,
    "binding": BindingConflict,
    "not-found": NotFound,
    "corruption": CorruptionError,
    "store": StoreStateError,
}


#: What a bearer token may hold (RFC 6750 allows less; the server answers the rest with 401).
_TOKEN = re.compile(r"[\x21-\x7e]*")


def is_remote_url(url: str) -> bool:
    """True for an ``http://`` or ``https://`` store URL (case-insensitive scheme)."""
    return url[:8].lower().startswith(("http://", "https://"))


def display_url(url: str) -> str:
    """``url`` without user information, query or fragment (safe to print and log)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port is not None else ""
    return urllib.parse.urlunsplit((parts.scheme, host + port, parts.path.rstrip("/"), "", ""))


class RetryPolicy:
    """How often and how long to retry (see the module docstring).

    Attributes:
        retries: retries after the first attempt (0: none).
        backoff: seconds before the first retry (doubled each time).
        max_backoff: the longest computed wait, in seconds.
        max_retry_after: the longest ``Retry-After`` honoured, in seconds.
    """

    def __init__(
        self,
        retries: int = 4,
        backoff: float = 0.25,
        max_backoff: float = 8.0,
        max_retry_after: float = 30.0,
    ) -> None:
        if retries < 0 or backoff < 0 or max_backoff < 0 or max_retry_after < 0:
            raise ValueError("retry settings are non-negative")
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        """Seconds to wait before retry number ``attempt + 1`` (``attempt`` from 0)."""
        if retry_after is not None:
            told = _retry_after_seconds(retry_after)
            if told is not None:
                return min(told, self.max_retry_after)
        ceiling = min(self.max_backoff, self.backoff * (2**attempt))
        return ceiling * random.uniform(0.5, 1.0)  # jitter, not a secret


def _retry_after_seconds(value: str) -> float | None:
    """``Retry-After`` (RFC 9110 section 10.2.3) in seconds from now, or None if unreadable."""
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def rebuild_error(fault: dict[str, Any], status: int = 0) -> EvstoreError:
    """The evstore error a problem document (or one of its ``errors``) describes.

    A code this evstore knows gets its own class (the family and contract leaf it has
    locally); an unknown code (a newer server) keeps its text, in the class of its family.
    """
    code = str(fault.get("code") or "")
    message = str(fault.get("message") or fault.get("detail") or fault.get("title") or code)
    details = fault.get("details")
    if code in CODES:
        cls = error_class(code)
        rule = fault.get("rule")
        rule = CODES[code].rule if rule is None else str(rule)
    else:
        cls = _FAMILY.get(str(fault.get("family")), _FAMILY[family_of_status(status)])
        rule = str(fault.get("rule") or "")
    path = fault.get("path")
    return cls(
        message,
        code=code or cls.default_code,
        rule=rule,
        pointer=str(fault.get("pointer") or ""),
        path=None if path is None else str(path),
        details=dict(details) if isinstance(details, dict) and details else None,
    )


#: Said with ``http.route`` for a route every store serves: the URL names no store.
_NO_STORE = "no evstore store is served at {url}; a server of named stores serves each at /NAME"

#: Transport failures that mean the request never reached the server (safe to resend).
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


class Http:
    """One server: its base URL, token and retry policy (thread-safe like ``httpx.Client``).

    Args:
        url: ``http(s)://HOST:PORT[/NAME]``; requests go to ``<url>/v1/...``.
        token: a bearer token (sent as ``Authorization``; never part of an error or log line).
        timeout: seconds (connect, and each read or write).
        policy: the :class:`RetryPolicy`.
        transport: an httpx transport (tests pass ``httpx.MockTransport``).
        sleep: the function that waits (tests pass one that records).
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        policy: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        try:
            parts = urllib.parse.urlsplit(url)
            parts.port  # noqa: B018 - raises for a port out of range or not a number
        except ValueError as exc:  # the URL is not echoed: it may hold a password
            raise error("store.url", f"the store URL is not a URL: {exc}") from None
        if token is not None and not _TOKEN.fullmatch(token):
            # never echoed; an illegal header value would be, in httpx's message
            raise error(
                "input.invalid",
                "the token is not a bearer token (printable ASCII, no spaces or line breaks)",
            )
        if not parts.hostname or parts.query or parts.fragment or parts.username:
            given = [
                what
                for what, there in (
                    ("no host", not parts.hostname),
                    ("a user part (USER@, not shown)", parts.username),
                    ("a query", parts.query),
                    ("a fragment", parts.fragment),
                )
                if there
            ]
            raise error(
                "store.url",
                f"{display_url(url)} is not a store URL ({', '.join(given)}): "
                "http(s)://HOST[:PORT][/NAME], no user, query or fragment (a token goes in "
                "EVSTORE_TOKEN)",
            )
        self.url = display_url(url)
        headers = {"User-Agent": "evstore"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.policy = policy or RetryPolicy()
        self._sleep = sleep
        self.client = httpx.Client(
            base_url=self.url + "/",
            headers=headers,
            timeout=timeout,
            transport=transport,
            follow_redirects=False,
        )
        self._transport = transport
        self._bucket: httpx.Client | None = None
        self._bucket_lock = threading.Lock()

    def bucket(self) -> httpx.Client:
        """A client for presigned URLs of a bucket: no token, no base URL (made once)."""
        with self._bucket_lock:
            if self._bucket is None:
                self._bucket = httpx.Client(
                    headers={"User-Agent": "evstore"},
                    timeout=self.client.timeout,
                    transport=self._transport,
                    follow_redirects=False,
                )
            return self._bucket

    def close(self) -> None:
        """Close the connection pools."""
        self.client.close()
        with self._bucket_lock:
            if self._bucket is not None:
                self._bucket.close()

    # -- requests -------------------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        *,
        idempotent: bool,
        params: dict[str, Any] | None = None,
        json: Any = None,
        body: Callable[[], Any] | None = None,
        headers: dict[str, str] | None = None,
        stream: bool = False,
        ok: tuple[int, ...] = (200, 201),
    ) -> httpx.Response:
        """Send a request (with retries); a 2xx answer in ``ok``, else the typed error.

        Args:
            method: the HTTP method.
            path: below the store URL, e.g. ``v1/objects/blake3:...`` (already encoded).
            idempotent: may be resent after the server could have seen it.
            params: query parameters.
            json: a JSON body.
            body: called once per attempt for the raw body (bytes or an iterator of bytes),
                so a stream can be rewound for a retry.
            headers: extra request headers.
            stream: leave the body unread (the caller iterates and closes it).
            ok: the statuses that are success.

        Raises:
            EvstoreError: the server's problem, or ``remote.*``.
        """
        attempt = 0
        while True:
            retry_after: str | None = None
            try:
                req = self.client.build_request(
                    method,
                    path,
                    params=params,
                    json=json,
                    content=None if body is None else body(),
                    headers=headers,
                )
                resp = self.client.send(req, stream=stream)
            except UnicodeEncodeError:  # a lone surrogate in a parameter or JSON body
                raise error(
                    "input.invalid",
                    f"{method} {path}: an argument is not valid Unicode text (a lone surrogate)",
                ) from None
            except httpx.HTTPError as exc:
                sent = not isinstance(exc, _NOT_SENT)
                if (sent and not idempotent) or attempt >= self.policy.retries:
                    raise self._transport_error(exc, method, path) from None
            else:
                if resp.status_code in ok:
                    return resp
                if resp.status_code != 503 or not idempotent or attempt >= self.policy.retries:
                    raise self.problem(resp, method, path, idempotent)
                retry_after = resp.headers.get("Retry-After")
                resp.close()
            self._sleep(self.policy.delay(attempt, retry_after))
            attempt += 1

    def json(self, method: str, path: str, *, idempotent: bool = True, **kw: Any) -> Any:
        """:meth:`request`, then the JSON body (``remote.protocol`` when it is not JSON)."""
        resp = self.request(method, path, idempotent=idempotent, **kw)
        try:
            return resp.json()
        except ValueError:
            raise self.protocol(f"{method} {path}: the answer is not JSON") from None

    def iter_bytes(self, resp: httpx.Response, method: str, path: str) -> Iterator[bytes]:
        """The body of a streamed answer, chunk by chunk; transport faults become typed."""
        try:
            yield from resp.iter_bytes(1 << 20)
        except httpx.HTTPError as exc:
            raise self._transport_error(exc, method, path) from None
        finally:
            resp.close()

    # -- errors ---------------------------------------------------------------------------
    def protocol(self, message: str, **details: Any) -> EvstoreError:
        """A ``remote.protocol`` error about this server."""
        return error("remote.protocol", f"{self.url}: {message}", url=self.url, **details)

    def _transport_error(self, exc: httpx.HTTPError, method: str, path: str) -> EvstoreError:
        where = f"{method} {self.url}/{path.split('?', 1)[0]}"
        if isinstance(exc, httpx.TimeoutException):
            return error(
                "remote.timeout",
                f"{where}: no answer in time after {self.policy.retries} retries",
                url=self.url,
            )
        if isinstance(exc, (httpx.ConnectError, httpx.UnsupportedProtocol)):
            return error(
                "remote.unreachable",
                f"{where}: cannot reach the server after {self.policy.retries} retries "
                f"({type(exc).__name__})",
                url=self.url,
            )
        return error(
            "remote.protocol",
            f"{where}: the transfer broke off ({type(exc).__name__}: {exc})",
            url=self.url,
        )

    def problem(
        self, resp: httpx.Response, method: str, path: str, idempotent: bool = True
    ) -> EvstoreError:
        """The typed error of a non-success answer (the response is read and closed)."""
        try:
            resp.read()
            doc = resp.json() if resp.content else None
        except (httpx.HTTPError, ValueError):
            doc = None
        finally:
            resp.close()
        status = resp.status_code
        where = f"{method} {self.url}/{path.split('?', 1)[0]}"
        if status == 503:
            told = doc.get("code") if isinstance(doc, dict) else None
            return error(
                "remote.busy",
                f"{where}: the server is busy (503)"
                + (f" after {self.policy.retries} retries" if idempotent else ""),
                url=self.url,
                server_code=told if isinstance(told, str) else None,
            )
        if isinstance(doc, dict) and isinstance(doc.get("code"), str) and doc["code"]:
            faults = doc.get("errors")
            first = faults[0] if isinstance(faults, list) and faults else None
            if isinstance(first, dict) and first.get("code") == doc["code"]:
                doc = {**doc, **first}
            err = rebuild_error(doc, status)
            if err.code == "http.route" and path.startswith("v1/"):  # every store has it
                err.message = f"{err.message} ({_NO_STORE.format(url=self.url)})"
            return err
        if status in (401, 403):
            return error(
                "remote.auth",
                f"{where}: {status} "
                + ("no valid token" if status == 401 else "the token's scope is too small")
                + " (set EVSTORE_TOKEN)",
                url=self.url,
                status=status,
            )
        return error(
            "remote.protocol",
            f"{where}: HTTP {status} without a problem document",
            url=self.url,
            status=status,
        )


#: Why a command stays beside the database (the refusal's message; docs/http.md#the-client).
WHY_LOCAL: dict[str, str] = {
    "init": "it creates the database and its schema, and a server serves only a store that exists",
    "migrate": "it changes the schema under every process that has the store open: stop the "
    "server, migrate beside the database, start it again",
    "log init-key": "it makes the private key file on the machine that signs: run it there, "
    "then start the server with --log-key PATH",
    "log tiles export": "the server serves the same tiles itself at P/checkpoint and "
    "P/tile/...; a directory for static hosting is written beside the database",
    "gc --vacuum": "VACUUM needs the database alone (SQLite) or its owner's rights",
}


def unsupported(command: str) -> EvstoreError:
    """The ``remote.unsupported`` error of a command that needs the database itself.

    Its message names the reason (:data:`WHY_LOCAL`) and ``details.command`` the command.
    """
    why = WHY_LOCAL.get(command, "it needs the database itself")
    return error(
        "remote.unsupported",
        f"`evstore {command}` works only beside the database ({why}): run it with a "
        "database URL (sqlite:///..., postgresql://...) on the server's machine",
        command=command,
    )
