"""Contract read routes: what the CLI's contract read commands print, over HTTP.

One route per command (docs/http.md#contract-reads); each is one call into the store's
contract namespace, answering the bytes the command prints or the JSON of its ``--json``:

=================================================  ==========================================
``GET P/v1/artifacts[?kind=]``                     ``evstore ls --json`` (oldest first)
``GET P/v1/fragments/{ref}/quote``                 ``evstore quote REF`` (exact bytes)
``GET P/v1/fragments?document_id=``               ``evstore fragments --json``
``GET P/v1/fragment-sources?document_id=&fragment_id=``  ``evstore fragment-sources --json``
``GET P/v1/contexts/{ref}/excerpt?range=S:E&window=N``   ``evstore excerpt --json``
``GET P/v1/runs``                                  ``evstore runs --json``
``GET P/v1/packages/{ref}/export``                 ``evstore export REF`` (canonical JSON)
``GET P/v1/manifests/content?manifest_ref=``       ``evstore manifest content`` (exact bytes)
=================================================  ==========================================

Every route needs a ``read`` token (or ``--public-read``). The remote client
(store/client/contracts.py) checks what these answer against bytes it verified itself.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Depends, Query
from starlette.responses import Response

from .. import check_kind, error
from .app import Served
from .auth import reader
from .wire import OBJECT_RESPONSES

__all__ = ["router"]

router = APIRouter()

_RANGE = re.compile(r"(-?[0-9]+):(-?[0-9]+)")
_BYTES: dict[int | str, dict[str, Any]] = {
    200: {"content": {"application/octet-stream": {}}, "description": "The exact bytes."}
}


@router.get(
    "/v1/artifacts",
    summary="Every stored artifact, oldest first (evstore ls --json)",
    responses=OBJECT_RESPONSES,
)
def artifacts(
    kind: str | None = Query(None, description="Only artifacts of this kind."),
    one: Served = Depends(reader),  # noqa: B008
) -> dict[str, Any]:
    """``{"artifacts": [...]}`` in acceptance order (``P/v1/ls`` pages in key order)."""
    if kind is not None:
        check_kind(kind)
    return {"artifacts": [a.to_dict() for a in one.store.ls(kind)]}


@router.get(
    "/v1/fragments/{ref}/quote",
    summary="The exact quoted bytes of a stored fragment (evstore quote)",
    response_class=Response,
    responses={**OBJECT_RESPONSES, **_BYTES},
)
def quote(ref: str, one: Served = Depends(reader)) -> Response:  # noqa: B008
    """``source[start_offset:end_offset]``, re-verified against quote_sha256 first."""
    data: bytes = one.store.fragments.quote(ref)
    return Response(data, media_type="application/octet-stream")


@router.get(
    "/v1/fragments",
    summary="Stored fragments of a document, oldest first (evstore fragments --json)",
    responses=OBJECT_RESPONSES,
)
def fragments(
    document_id: str = Query(..., description="The fragments' document_id."),
    one: Served = Depends(reader),  # noqa: B008
) -> dict[str, Any]:
    """``{"fragments": [{"address", "kind", "contract_version", "accepted_at", "size"}]}``."""
    return {"fragments": [a.to_dict() for a in one.store.fragments.by_document(document_id)]}


@router.get(
    "/v1/fragment-sources",
    summary="Content versions registered for a fragment pair (evstore fragment-sources --json)",
    responses=OBJECT_RESPONSES,
)
def fragment_sources(
    document_id: str = Query(..., description="The document_id."),
    fragment_id: str = Query(..., description="The fragment_id."),
    one: Served = Depends(reader),  # noqa: B008
) -> dict[str, Any]:
    """``{"sources": [...]}``: each listed artifact with its parsed ``record``."""
    rows = []
    for a in one.store.fragments.sources(document_id, fragment_id):
        d = a.to_dict()
        d["record"] = one.store.load(a.address)
        rows.append(d)
    return {"sources": rows}


def _ranges(values: list[str]) -> list[tuple[int, int]]:
    out = []
    for i, text in enumerate(values):
        m = _RANGE.fullmatch(text)
        if m is None:
            raise error(
                "http.request",
                f"range {text!r} is not START:END (two unit ids, inclusive)",
                f"/range/{i}",
            )
        out.append((int(m.group(1)), int(m.group(2))))
    return out


@router.get(
    "/v1/contexts/{ref}/excerpt",
    summary="The evidence context selected from a stored source document (evstore excerpt)",
    responses=OBJECT_RESPONSES,
)
def excerpt(
    ref: str,
    range: list[str] = Query(  # noqa: B008
        [], description="A cited range of unit ids START:END, inclusive (repeatable)."
    ),
    window: int = Query(0, ge=0, description="Units of context added on each side."),
    one: Served = Depends(reader),  # noqa: B008
) -> dict[str, Any]:
    """``{"ok", "source", "window", "units", "address", "excerpt"}`` as ``excerpt --json``."""
    got = one.store.contexts.excerpt_bytes(ref, _ranges(range), window)
    return {
        "ok": True,
        "source": ref,
        "window": window,
        "units": len(got.units),
        "address": got.digest.address,
        "excerpt": got.units,
    }


@router.get(
    "/v1/runs",
    summary="The run records, oldest first (evstore runs --json)",
    responses=OBJECT_RESPONSES,
)
def runs(one: Served = Depends(reader)) -> dict[str, Any]:  # noqa: B008
    """``{"runs": [{"address", ..., "files", "artifacts", "evidence_context"}]}``."""
    return {"runs": one.store.runs.runs()}


@router.get(
    "/v1/packages/{ref}/export",
    summary="A stored insonic package with its current observations (evstore export)",
    response_class=Response,
    responses={
        **OBJECT_RESPONSES,
        200: {"content": {"application/json": {}}, "description": "Canonical JSON."},
    },
)
def export(ref: str, one: Served = Depends(reader)) -> Response:  # noqa: B008
    """RFC 8785 bytes of ``{"address", "format", "observations", "package"}`` (REF or id)."""
    data: bytes = one.store.packages.export(ref)
    return Response(data, media_type="application/json")


@router.get(
    "/v1/manifests/content",
    summary="The rendered content of a stored manifest (evstore manifest content)",
    response_class=Response,
    responses={**OBJECT_RESPONSES, **_BYTES},
)
def manifest_content(
    manifest_ref: str = Query(..., description="The manifest's manifest/ref."),
    one: Served = Depends(reader),  # noqa: B008
) -> Response:
    """The exact bytes of the manifest's content/ref, verified first."""
    data: bytes = one.store.manifests.content(manifest_ref)
    return Response(data, media_type="application/octet-stream")
