"""``GET P/v1``: which store this is, the evstore version, the backend, the read policy."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from .app import Served, served, version

__all__ = ["router"]

router = APIRouter()


@router.get(
    "/v1",
    summary="The served store: name, evstore version, backend, public_read",
    responses={200: {"description": "Always answered; needs no token."}},
)
def about(one: Served = Depends(served)) -> dict[str, Any]:  # noqa: B008
    """``{"store": NAME|null, "evstore": VERSION, "backend", "public_read"}`` (no token)."""
    return {
        "store": one.name,
        "evstore": version(),
        "backend": one.backend,
        "public_read": one.public_read,
    }
