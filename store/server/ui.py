"""The audit pages (issue 15, evstore.pages) under ``P/ui``, with this server's tokens.

A ``read`` token (bearer header) or the pages' sign-in cookie or ``--public-read`` opens them.
The cookie holds a session value derived from the token (:func:`evstore.create_session`: an
HMAC keyed with the token's stored hash, bound to the pages' path ``P/ui``, expiring), never
the token; revoking the token ends every session made from it.
"""

from __future__ import annotations

from fastapi import Request

from .. import create_session, session_scope, token_scope
from ..pages import create_router
from .app import served

__all__ = ["router"]


def _reads(request: Request, token: str) -> bool:
    """Whether ``token`` is a live token of this store (every scope includes ``read``)."""
    return token_scope(served(request).store, token) is not None


def _mint(request: Request, token: str, audience: str) -> str | None:
    """A session value for a live token of this store, for the pages under ``audience``."""
    return create_session(served(request).store, token, audience)


def _check(request: Request, value: str, audience: str) -> bool:
    """Whether a session value still stands for a live token of this store."""
    return session_scope(served(request).store, value, audience) is not None


router = create_router(
    lambda request: served(request).store,
    authorize=_reads,
    public_read=lambda request: served(request).public_read,
    sessions=(_mint, _check),
)
