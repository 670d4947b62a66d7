"""Writes: ``POST P/v1/ingest``, ``P/v1/validate`` (JSON) and ``P/v1/bundles`` (tar).

The ingest body carries what the CLI's ``ingest`` takes (docs/http.md#ingest)::

    {"documents": [{"name": str, "kind": str|null, "document": <JSON value>}],
     "content": [<base64>], "sources": [<base64> | {"document_id", "fragment_id", "data"}],
     "envelopes": [<JSON value>], "scope": {"host_id", "tenant_id",
     "authorization_scope_id"}|null, "source_document": REF|null, "root": NAME|null}

and answers what ``ingest --json`` / ``validate --json`` print; one request is one
transaction, with the same verdicts, codes and pointers as the CLI. Ingest, PUT and bundles
root what they write under ``root`` (the body's member, or ``?root=``; ``default`` when absent),
acting as the token's id (issue 12, docs/http.md#retention).

A validate (read scope) takes no write lock: ``Store.validate`` reads one snapshot. It is
bounded (``Limits.validate_bytes``, ``Limits.validate_seconds``), runs in its own thread
capacity (store/server/pools.py), and stops between two documents once its client has gone.
"""

from __future__ import annotations

import base64
import binascii
import json
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import JSONResponse, Response

from .. import Document, EvstoreError, error, fragment_scope, rooting
from .app import Served
from .auth import actor, ingester, reader, readmit
from .bundles import receive_tar, unpack_bundle
from .pools import in_pool
from .problems import problem
from .wire import BINARY, OBJECT_RESPONSES, documents_json, known_members, request_body

__all__ = ["INGEST_SCHEMA", "body_root", "ingest_inputs", "rooted", "router"]

router = APIRouter()

_T = TypeVar("_T")

_B64 = {"type": "string", "contentEncoding": "base64"}

#: The JSON Schema of an ingest or validate body (also in the OpenAPI document).
INGEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "documents": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["document"],
                "properties": {
                    "name": {"type": "string"},
                    "kind": {"type": ["string", "null"]},
                    "document": {},
                },
                "additionalProperties": False,
            },
        },
        "content": {"type": "array", "items": _B64},
        "sources": {
            "type": "array",
            "items": {
                "oneOf": [
                    _B64,
                    {
                        "type": "object",
                        "required": ["document_id", "fragment_id", "data"],
                        "properties": {
                            "document_id": {"type": "string"},
                            "fragment_id": {"type": "string"},
                            "data": _B64,
                        },
                        "additionalProperties": False,
                    },
                ]
            },
        },
        "envelopes": {"type": "array"},
        "scope": {
            "type": ["object", "null"],
            "properties": {
                "host_id": {"type": ["string", "null"]},
                "tenant_id": {"type": ["string", "null"]},
                "authorization_scope_id": {"type": ["string", "null"]},
            },
            "additionalProperties": False,
        },
        "source_document": {"type": ["string", "null"]},
        "root": {"type": ["string", "null"]},
    },
    "additionalProperties": False,
}

_KEYS = frozenset(INGEST_SCHEMA["properties"])
_DOCUMENT_KEYS = frozenset(INGEST_SCHEMA["properties"]["documents"]["items"]["properties"])
_SOURCE_KEYS = frozenset(INGEST_SCHEMA["properties"]["sources"]["items"]["oneOf"][1]["properties"])
_SCOPE_KEYS = frozenset(INGEST_SCHEMA["properties"]["scope"]["properties"])


def _bad(message: str, pointer: str) -> EvstoreError:
    return error("http.request", message, pointer)


def _list(body: dict[str, Any], key: str) -> list[Any]:
    value = body.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _bad(f"{key} is a list", f"/{key}")
    return value


def _b64(value: Any, pointer: str) -> bytes:
    if not isinstance(value, str):
        raise _bad("bytes are a base64 string", pointer)
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise _bad("not valid base64", pointer) from None


def _text(value: Any, pointer: str) -> str:
    if not isinstance(value, str):
        raise _bad("a string is needed here", pointer)
    return value


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")


def ingest_inputs(body: Any) -> tuple[list[Document], dict[str, Any], list[bytes]]:
    """An ingest body as ``(documents, options, supplied bytes)`` for ``Store.ingest``.

    Raises:
        InputError: ``http.request`` (a malformed member; its pointer),
            ``fragment.scope-incomplete``. The ``root`` member is :func:`body_root`'s.
    """
    known_members(body, _KEYS)
    body_root(body)
    docs: list[Document] = []
    for i, item in enumerate(_list(body, "documents")):
        at = f"/documents/{i}"
        if not isinstance(item, dict) or "document" not in item:
            raise _bad('a document is {"name", "kind", "document"}', at)
        known_members(item, _DOCUMENT_KEYS, at)
        name = item.get("name", f"documents/{i}")
        kind = item.get("kind")
        docs.append(
            Document(
                _json_bytes(item["document"]),
                name=_text(name, at + "/name"),
                kind=None if kind is None else _text(kind, at + "/kind"),
            )
        )
    for i, env in enumerate(_list(body, "envelopes")):
        docs.append(Document(_json_bytes(env), name=f"envelopes/{i}", kind="envelope"))
    supplied = [_b64(c, f"/content/{i}") for i, c in enumerate(_list(body, "content"))]
    options: dict[str, Any] = {}
    triples = []
    for i, src in enumerate(_list(body, "sources")):
        at = f"/sources/{i}"
        if isinstance(src, dict):
            known_members(src, _SOURCE_KEYS, at)
            data = _b64(src.get("data"), at + "/data")
            triples.append(
                (
                    _text(src.get("document_id"), at + "/document_id"),
                    _text(src.get("fragment_id"), at + "/fragment_id"),
                    data,
                )
            )
        supplied.append(data if isinstance(src, dict) else _b64(src, at))
    if triples:
        options["sources"] = triples
    scope = body.get("scope")
    if scope is not None:
        known_members(scope, _SCOPE_KEYS, "/scope")
        parts = [scope.get(k) for k in ("host_id", "tenant_id", "authorization_scope_id")]
        made = fragment_scope(*parts)
        if made is not None:
            options["scope"] = made
    if body.get("source_document") is not None:
        options["source_document"] = _text(body["source_document"], "/source_document")
    return docs, options, supplied


def body_root(body: dict[str, Any]) -> str | None:
    """The ``root`` member of an ingest body (None when absent or null).

    Raises:
        InputError: ``http.request`` (not a string; pointer ``/root``).
    """
    value = body.get("root")
    return None if value is None else _text(value, "/root")


def rooted(request: Request, root: str | None, work: Callable[[], _T]) -> Callable[[], _T]:
    """``work`` run inside ``evstore.rooting(root or "default", actor=<token id>)``.

    The root lives in a ContextVar, so the context is entered in the threadpool callable
    itself (the thread that writes). A bad name raises ``root.name`` there, before any write.
    """
    who = actor(request)

    def call() -> _T:
        with rooting(root or "default", actor=who):
            return work()

    return call


_BODY = request_body(INGEST_SCHEMA)


@router.post(
    "/v1/ingest",
    summary="Validate and store documents in one transaction (evstore ingest --json)",
    response_model=dict[str, Any],
    responses=OBJECT_RESPONSES,
    openapi_extra=_BODY,
)
async def ingest(request: Request, one: Served = Depends(ingester)) -> Response:  # noqa: B008
    """The ingest report; the first fault as a problem (nothing written).

    The token is looked up on the event loop and the body parsed, checked and ingested in
    one worker-thread hop (issue 29: one hop a request, not three); the report, plain JSON
    values, is answered as it is (no response-model pass over it).
    """
    raw = await request.body()
    await readmit(request, "ingest")  # revoked while the body arrived: refused
    who = actor(request)

    def work() -> Any:
        body = documents_json(raw)
        docs, options, supplied = ingest_inputs(body)
        with rooting(body_root(body) or "default", actor=who):
            return one.store.ingest(docs, options=options, supplied=supplied)

    report = await in_pool(request, "write", work)
    return JSONResponse(report.to_dict())


def _validate_poll(gone: threading.Event, seconds: float) -> Callable[[], None]:
    """The ``poll`` of one validate: stop when the client went away or time is up.

    The time counts from the first poll (the validation's start), not from the request's
    arrival: a validate waiting for one of the validation threads spends none of it.
    """
    start: list[float] = []

    def poll() -> None:
        if not start:
            start.append(time.monotonic())
        deadline = start[0] + seconds
        if gone.is_set():
            raise error("http.request", "the client went away; the validation was stopped")
        if time.monotonic() > deadline:
            raise error(
                "http.validate-cost",
                f"the validation ran over its limit of {seconds:g} s and was stopped "
                "(docs/http.md#limits): send fewer or smaller documents per request",
                limit_s=seconds,
            )

    return poll


async def _watch(request: Request, gone: threading.Event) -> None:
    """Set ``gone`` once the client has disconnected (checked every 0.2 s)."""
    while not await request.is_disconnected():
        await anyio.sleep(0.2)
    gone.set()


@router.post(
    "/v1/validate",
    summary="Run every check of ingest, write nothing (evstore validate --json)",
    responses=OBJECT_RESPONSES,
    openapi_extra=_BODY,
)
async def validate(request: Request, one: Served = Depends(reader)) -> Response:  # noqa: B008
    """The validate report (200 when valid); faults as one 422 problem listing them all.

    Raises (as problems): ``http.validate-cost`` (413: over ``Limits.validate_seconds``),
    ``http.too-large`` (413: a body over ``Limits.validate_bytes``), ``json.*``,
    ``http.request``.
    """
    raw = await request.body()
    gone = threading.Event()
    poll = _validate_poll(gone, one.limits.validate_seconds)

    def work() -> Any:
        docs, options, supplied = ingest_inputs(documents_json(raw))
        return one.store.validate(docs, options=options, supplied=supplied, poll=poll)

    failure: Exception | None = None
    async with anyio.create_task_group() as tg:  # (a task group wraps what its body raises)
        tg.start_soon(_watch, request, gone)
        try:
            report = await in_pool(request, "validate", work)
        except Exception as exc:
            failure = exc
        finally:
            tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
    out = report.to_dict()
    out["bindings_checked"] = True
    if report.ok:
        return JSONResponse(out)
    return problem(report.faults[0], 422, errors=report.faults, report=out)


@router.post(
    "/v1/bundles",
    summary="Store a run bundle sent as a tar archive (evstore ingest-bundle --json)",
    responses=OBJECT_RESPONSES,
    openapi_extra=request_body(BINARY, "application/x-tar"),
)
async def bundles(
    request: Request,
    source_document: str | None = Query(
        None, description="Check the evidence context against this stored source document."
    ),
    root: str | None = Query(
        None, description="Root what the bundle stores under this root (default: default)."
    ),
    one: Served = Depends(ingester),  # noqa: B008
) -> dict[str, Any]:
    """The run report; an archive with '..', absolute paths or links is refused (422)."""
    spool = await receive_tar(request)
    try:
        await readmit(request, "ingest")  # revoked while the body arrived: refused
        with tempfile.TemporaryDirectory(prefix="evstore-bundle-") as tmp:

            def work() -> dict[str, Any]:
                directory = unpack_bundle(spool, tmp, one.limits.bundle_bytes)
                report = one.store.runs.ingest_bundle(directory, source_document=source_document)
                out: dict[str, Any] = report.to_dict()
                return out

            return await in_pool(request, "write", rooted(request, root, work))
    finally:
        spool.close()
