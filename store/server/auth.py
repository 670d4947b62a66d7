"""Bearer-token authentication and scopes (docs/http.md#auth).

``Authorization: Bearer <token>``; scopes are ordered ``read < ingest < admin``. Reads need
a ``read`` token unless the store is served with ``public_read``; writes need ``ingest``;
token management needs ``admin``. A missing, malformed, unknown or revoked token (a token of
another store included: each store's tokens live in its own database) is 401 with
``WWW-Authenticate: Bearer``; a token whose scope is short is 403.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from .. import EvstoreError, error, token_scope
from .app import Served, served

__all__ = ["SCOPES", "actor", "admin", "ingester", "reader", "require", "writes_leases"]

#: Token scopes, lowest first (evstore.access.tokens.SCOPES).
SCOPES = ("read", "ingest", "admin")

_bearer = HTTPBearer(auto_error=False, description="A token made with `evstore token create`.")


def require(need: str) -> Callable[..., Served]:
    """A FastAPI dependency: the request's store, once its token allows scope ``need``.

    Raises:
        InputError: ``http.unauthorized`` (401) or ``http.forbidden`` (403).
    """

    def check(
        request: Request,
        credentials: HTTPAuthorizationCredentials | None = Depends(_bearer),  # noqa: B008
    ) -> Served:
        one = served(request)
        request.state.actor, request.state.scope = "public", None
        text = "" if credentials is None else credentials.credentials.strip()
        scope = token_scope(one.store, text) if text else None
        if need == "read" and one.public_read:
            if scope is not None:  # a public read made with a live token acts as the token
                request.state.actor, request.state.scope = text[5:17], scope
            return one
        if credentials is None or credentials.scheme.lower() != "bearer":
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

    return check


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
ingester = require("ingest")
admin = require("admin")
