"""The audit pages (issue 15, evstore.pages) under ``P/ui``, with this server's tokens.

A ``read`` token (bearer header or the pages' sign-in cookie) or ``--public-read`` opens them.
"""

from __future__ import annotations

from fastapi import Request

from .. import token_scope
from ..pages import create_router
from .app import served

__all__ = ["router"]


def _reads(request: Request, token: str) -> bool:
    """Whether ``token`` is a live token of this store (every scope includes ``read``)."""
    return token_scope(served(request).store, token) is not None


router = create_router(
    lambda request: served(request).store,
    authorize=_reads,
    public_read=lambda request: served(request).public_read,
)
