"""The store as a C2SP tlog-witness: ``POST <prefix>/add-checkpoint`` (issue 26).

Enabled by ``evstore serve --witness-key PATH``; without it the route answers 404
``witness.disabled``. The logs followed are each store's ``witness.logs`` setting. The
request needs no token: the spec defines none, and a witness cosigns only checkpoints
signed by a log key it was configured with, consistent with what it cosigned before
(evstore.log.witness, docs/log.md#witnesses). Answers, as the spec gives them:

* 200 ``text/plain``: the cosignature line (``— <witness name> <base64>``);
* 409 ``text/x.tlog.size``: the old size is not the size last cosigned; the body is that
  size and a newline;
* problem+json otherwise: 400 ``witness.request`` / ``witness.old-size``, 403
  ``witness.unsigned``, 404 ``witness.unknown-log``, 409 ``witness.conflict`` (another root
  at the cosigned size: a fork), 422 ``witness.inconsistent`` (a fork or a bad proof).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import PlainTextResponse, Response
from starlette.concurrency import run_in_threadpool

from .. import EvstoreError, error
from .app import Served, served
from .limits import WITNESS_BODY
from .wire import OBJECT_RESPONSES

__all__ = ["router"]

router = APIRouter()

#: The media type of a 409 naming the size held (c2sp.org/tlog-witness).
SIZE_TYPE = "text/x.tlog.size"
#: The OpenAPI answers: the cosignature line (text), 409 as the size held or a problem.
_ANSWERS = {
    **OBJECT_RESPONSES,
    200: {
        "description": "The cosignature line(s) (c2sp.org/tlog-cosignature), LF-terminated.",
        "content": {"text/plain": {"schema": {"type": "string"}}},
    },
    409: {
        "description": "The old size is not the size last cosigned (the body is that size),"
        " or another root at that size (a problem).",
        "content": {
            SIZE_TYPE: {"schema": {"type": "string"}},
            **OBJECT_RESPONSES[409]["content"],
        },
    },
}


@router.post(
    "/add-checkpoint",
    summary="Cosign a log's checkpoint as a witness (c2sp.org/tlog-witness)",
    response_class=PlainTextResponse,
    responses=_ANSWERS,
)
async def add_checkpoint(
    request: Request,
    one: Served = Depends(served),  # noqa: B008
) -> Response:
    """The cosignature line, or 409 ``text/x.tlog.size`` with the size held (module doc)."""
    if one.witness is None:
        raise error("witness.disabled", "this server is no witness (serve --witness-key)")
    body = await request.body()  # at most WITNESS_BODY: the Guard refuses more (413) as it comes
    if len(body) > WITNESS_BODY:  # a body limit configured around the Guard
        raise error("witness.request", f"an add-checkpoint body is at most {WITNESS_BODY} bytes")
    try:
        done = await run_in_threadpool(one.store.log.witness_add_checkpoint, one.witness, body)
    except EvstoreError as err:
        held = err.details.get("size")
        if err.code == "witness.conflict" and isinstance(held, int):
            # exactly this media type, no charset parameter (clients compare it whole)
            return Response(
                f"{held}\n".encode(), status_code=409, headers={"Content-Type": SIZE_TYPE}
            )
        raise
    return PlainTextResponse(done["cosignature"], media_type="text/plain; charset=utf-8")
