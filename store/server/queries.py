"""Read queries: artifact metadata, referrers, closures, ``find`` and paged ``ls``.

Each answers the JSON the CLI prints with ``--json`` for the same question (docs/http.md),
so a remote client gives the same results as a local store.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query

from .. import describe_artifact, error, find_with_warnings, list_page
from .app import Served
from .auth import reader
from .wire import OBJECT_RESPONSES

__all__ = ["router"]

router = APIRouter()


@router.get(
    "/v1/artifacts/{ref}",
    summary="An artifact's digests, kinds, warnings, edges and referrers",
    responses=OBJECT_RESPONSES,
)
def artifact(ref: str, one: Served = Depends(reader)) -> dict[str, Any]:  # noqa: B008
    """``describe_artifact``: 404 ``not-found.artifact`` for a blob of no kind."""
    return describe_artifact(one.store, ref)


@router.get(
    "/v1/refs/{ref}",
    summary="The stored artifacts that refer to an object (evstore refs --json)",
    responses=OBJECT_RESPONSES,
)
def refs(
    ref: str,
    all: bool = Query(False, description="Referrers of referrers too (--all)."),
    one: Served = Depends(reader),  # noqa: B008
) -> dict[str, Any]:
    """``{"ref", "refs": [{"address", "kinds", "role", "refers_to", "depth"}]}``."""
    return {"ref": ref, "refs": one.store.runs.refs(ref, transitive=all)}


@router.get(
    "/v1/closure/{ref}",
    summary="Everything an object needs, each verified (evstore closure --json)",
    responses=OBJECT_RESPONSES,
)
def closure(ref: str, one: Served = Depends(reader)) -> dict[str, Any]:  # noqa: B008
    """``{"ok", "root", "objects", "items"}``; 200 with ``ok`` false lists damage."""
    result: dict[str, Any] = one.store.runs.closure(ref).to_dict()
    return result


@router.get(
    "/v1/find",
    summary="Artifacts by a lookup attribute (evstore find --json)",
    responses=OBJECT_RESPONSES,
)
def find(
    name: str = Query(..., description="A lookup attribute (docs/kinds.md)."),
    value: str = Query(..., description="Its value, compared whole."),
    kind: str | None = Query(None, description="Only artifacts of this kind."),
    one: Served = Depends(reader),  # noqa: B008
) -> dict[str, Any]:
    """``{"artifacts": [...]}`` with each one's warnings; 404 ``not-found.artifact`` if none."""
    return {"artifacts": find_with_warnings(one.store, name, value, kind=kind)}


@router.get(
    "/v1/ls",
    summary="Artifacts (or blobs) in key order, one page (evstore ls --limit --after)",
    responses=OBJECT_RESPONSES,
)
def ls(
    kind: str | None = Query(None, description="Only artifacts of this kind."),
    limit: int = Query(1000, ge=1, description="At most this many items."),
    after: str | None = Query(None, description="The `next` cursor of the last page."),
    blobs: bool = Query(False, description="List blobs instead of artifacts."),
    one: Served = Depends(reader),  # noqa: B008
) -> dict[str, Any]:
    """``{"items": [...], "next": CURSOR|null}``; a stable order, so pages never repeat."""
    if limit > one.limits.page:
        raise error("http.request", f"limit is at most {one.limits.page}", limit=one.limits.page)
    if blobs and kind is not None:
        raise error("http.request", "blobs=1 lists every blob: kind does not apply")
    page = list_page(one.store, blobs=blobs, kind=kind, after=after, limit=limit)
    items = list(page)
    return {"items": items, "next": page.next}
