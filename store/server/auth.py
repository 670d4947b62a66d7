"""Bearer-token authentication and scopes (docs/http.md#auth).

``Authorization: Bearer <token>``; scopes are ordered ``read < ingest < admin``. Reads need
a ``read`` token unless the store is served with ``public_read``; writes need ``ingest``;
token management needs ``admin``. A missing, malformed, unknown or revoked token (a token of
another store included: each store's tokens live in its own database) is 401 with
``WWW-Authenticate: Bearer``; a token whose scope is short is 403.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from .. import EvstoreError, error, token_scope, token_scope_loop
from .app import Served, served
from .pools import in_pool

__all__ = [
    "Gate",
    "SCOPES",
    "actor",
    "admin",
    "gate",
    "ingester",
    "read_gate",
    "reader",
    "readmit",
    "require",
    "scope_of",
    "writes_leases",
]

#: Token scopes, lowest first (evstore.access.tokens.SCOPES).
SCOPES = ("read", "ingest", "admin")

_bearer = HTTPBearer(auto_error=False, description="A token made with `evstore token create`.")


def require(need: str) -> Callable[..., Awaitable[Served]]:
    """A FastAPI dependency: the request's store, once its token allows scope ``need``.

    An ``async`` dependency (issue 29): a plain ``def`` one ran in a worker thread of its
    own; the token's one-statement lookup is awaited on the event loop (:func:`scope_of`),
    and nothing is looked up when no token was sent.

    Raises:
        InputError: ``http.unauthorized`` (401) or ``http.forbidden`` (403).
    """

    async def check(
        request: Request,
        credentials: HTTPAuthorizationCredentials | None = Depends(_bearer),  # noqa: B008
    ) -> Served:
        gate = Gate(request, need, credentials)
        return gate.admit(await scope_of(request, gate) if gate.token else None)

    return check


async def scope_of(request: Request, gate: Gate) -> str | None:
    """The scope of ``gate``'s token (None: unknown, revoked or malformed), read now.

    Awaited on the event loop (``evstore.token_scope_loop``: no worker thread); when that
    statement could not run, or outside the app's lifespan, ``evstore.token_scope`` in one
    of the point reads' threads (store/server/pools.py), which reports a database fault.
    Nothing is cached: a revoked token is refused from the next request on.
    """
    one = gate.served
    if one.reads is not None:
        found = await token_scope_loop(one.reads, gate.token)
        if found.answered:
            return found.scope
    return await in_pool(request, "read", lambda: token_scope(one.store, gate.token))


async def readmit(request: Request, need: str) -> None:
    """Ask again whether the request's token allows scope ``need``, reading its row now.

    For a request whose body takes long to arrive (a bulk put): its token was admitted when
    the request started and may have been revoked since; the route calls this once the
    body is in, before it writes anything, so a revoked token stores nothing.

    Raises:
        InputError: ``http.unauthorized`` (401) or ``http.forbidden`` (403).
    """
    gate = Gate(request, need, await _bearer(request))
    gate.admit(await scope_of(request, gate) if gate.token else None)


class Gate:
    """A request's bearer token, read from its headers but not looked up yet.

    ``GET P/v1/objects/{ref}`` looks the token up in the same statement as the object
    (``evstore.gated_read``) and then calls :meth:`admit` with the scope found, which
    decides exactly as :func:`require`'s dependency does.

    Attributes:
        served: the request's store. need: the scope asked. token: the bearer token's text
            ("" when none was sent).
    """

    def __init__(
        self, request: Request, need: str, credentials: HTTPAuthorizationCredentials | None
    ) -> None:
        self.request = request
        self.served = served(request)
        self.need = need
        self.credentials = credentials
        self.token = "" if credentials is None else credentials.credentials.strip()

    def admit(self, scope: str | None) -> Served:
        """The store, once ``scope`` (the live token's, None: unknown, revoked or none)
        allows :attr:`need`; records the actor and scope on the request.

        Raises:
            InputError: ``http.unauthorized`` (401) or ``http.forbidden`` (403).
        """  # noqa: D205
        request, one, need, text = self.request, self.served, self.need, self.token
        request.state.actor, request.state.scope = "public", None
        if not text:
            scope = None
        if need == "read" and one.public_read:
            if scope is not None:  # a public read made with a live token acts as the token
                request.state.actor, request.state.scope = text[5:17], scope
            return one
        if self.credentials is None or self.credentials.scheme.lower() != "bearer":
            raise _unauthorized("this request needs a bearer token (Authorization: Bearer ...)")
        if scope is None:
            raise _unauthorized("the bearer token is unknown to this store or was revoked")
        if SCOPES.index(scope) < SCOPES.index(need):
            raise error(
                "http.forbidden",
                f"a {scope} token cannot do this; it needs scope {need}",
                scope=scope,
                needed=need,
            )
        # a live token's text is ``evst_<id>_<secret>`` (evstore.access.tokens): its id is the actor
        request.state.actor, request.state.scope = text[5:17], scope
        return one


def gate(need: str) -> Callable[..., Awaitable[Gate]]:
    """A FastAPI dependency: the request's :class:`Gate` for scope ``need``; the route
    looks the token up itself and calls :meth:`Gate.admit` before it answers anything.
    """  # noqa: D205

    async def read_token(
        request: Request,
        credentials: HTTPAuthorizationCredentials | None = Depends(_bearer),  # noqa: B008
    ) -> Gate:
        return Gate(request, need, credentials)

    return read_token


def actor(request: Request) -> str:
    """Who makes ``request``: its token's id, or ``public`` (recorded in retention rows)."""
    return str(getattr(request.state, "actor", "public"))


def writes_leases(request: Request) -> bool:
    """True when ``request`` was made with an ``ingest`` or ``admin`` token (issue 12: its
    existence checks extend leases; a read token or a public read never writes).
    """  # noqa: D205
    return getattr(request.state, "scope", None) in ("ingest", "admin")


def _unauthorized(message: str) -> EvstoreError:
    return error("http.unauthorized", message)


#: Dependencies of the three scopes.
reader = require("read")
#: The read scope's token, to be looked up by the route (``GET P/v1/objects/{ref}``).
read_gate = gate("read")
ingester = require("ingest")
admin = require("admin")
