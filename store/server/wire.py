"""Shared request and response plumbing of the routes: JSON bodies, the problem responses.

Bodies are read as bytes (within the limits the guard enforces) and parsed by evstore's
strict JSON reader, so a duplicate key or a lone surrogate in a request is the same
``json.*`` fault (400, with its pointer into the body) as in a file given to the CLI.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from .. import EvstoreError, error, loads

__all__ = [
    "BINARY",
    "NDJSON_RESPONSE",
    "OBJECT_RESPONSES",
    "PROBLEM_SCHEMA",
    "documents_json",
    "json_body",
    "known_members",
    "problem_responses",
    "refs_list",
    "request_body",
]

#: The JSON Schema of a problem+json body (RFC 9457 members and evstore's).
PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["type", "title", "status", "detail", "code", "rule", "pointer", "errors"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "code": {"type": "string"},
        "rule": {"type": "string"},
        "pointer": {"type": "string"},
        "errors": {"type": "array", "items": {"type": "object"}},
    },
}

_MEANING = {
    400: "Malformed ref, parameter or body (http.request, ref.syntax, json.*, input.*).",
    401: "No bearer token, or one this store does not know (WWW-Authenticate: Bearer).",
    403: "The token's scope does not allow this.",
    404: "No such object, artifact or route.",
    405: "The route does not take this method.",
    408: "The request's headers or body did not arrive in time (http.timeout); closed.",
    409: "A write-time binding conflict; nothing was written.",
    413: "The body is over the limit, or a validate over its time (docs/http.md#limits).",
    416: "The one Range asked is unsatisfiable (Content-Range: bytes */SIZE).",
    422: "A contract rule or an expected digest failed; nothing was written.",
    431: "The request line and headers are over the limit (http.headers-too-large).",
    500: "Stored bytes are corrupt (corruption.*), or another server fault; no bytes.",
    503: "Busy (store.busy, http.busy): retry after Retry-After seconds.",
}


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries of problem+json answers with these statuses."""
    return {
        s: {
            "description": _MEANING[s],
            "content": {"application/problem+json": {"schema": PROBLEM_SCHEMA}},
        }
        for s in statuses
    }


#: The problem answers any authenticated route may give.
OBJECT_RESPONSES = problem_responses(
    400, 401, 403, 404, 405, 408, 409, 413, 416, 422, 431, 500, 503
)


#: The schema of a body of raw bytes (a tar, a multipart upload, one object).
BINARY: dict[str, Any] = {"type": "string", "format": "binary"}

#: The 200 answer of a run streamed as NDJSON (store/server/streaming.py).
NDJSON_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The run, one JSON object a line (progress, fault, end or error).",
        "content": {"application/x-ndjson": {}},
    }
}


def request_body(
    schema: dict[str, Any], media_type: str = "application/json", *, required: bool = True
) -> dict[str, Any]:
    """The ``openapi_extra`` of a route whose body FastAPI does not parse (read as bytes).

    The route reads its body itself (strict JSON, a tar, a stream), so the OpenAPI
    document (OpenAPI 3.1, Request Body Object) is given here: one ``media_type`` whose
    body follows ``schema``.
    """
    return {"requestBody": {"required": required, "content": {media_type: {"schema": schema}}}}


async def json_body(request: Request) -> Any:
    """The request body parsed by evstore's strict reader (fraction tokens kept as floats).

    Raises:
        JSONFormError: ``json.*`` (400).
    """
    raw = await request.body()
    return await run_in_threadpool(lambda: loads(raw, number_tokens=True))


_IN_DOCUMENT = re.compile(r"/(documents)/(\d+)/document(/.*)?|/(envelopes)/(\d+)(/.*)?", re.S)


def documents_json(raw: bytes) -> Any:
    """An ingest or validate body parsed by the strict reader, faults pointing as the CLI's.

    A ``json.*`` fault inside a document of the body points into that document (RFC 6901,
    as ``evstore ingest FILE`` would say), not into the request body: the pointer
    ``/documents/0/document/role`` becomes ``/role``, with the document's place in
    ``details`` (``{"document": 0}``, or ``{"envelope": 0}`` for ``envelopes``) and its
    default name in ``path`` (``documents/0``). Faults elsewhere keep their body pointer.

    Raises:
        JSONFormError: ``json.*`` (400).
    """
    try:
        return loads(raw, number_tokens=True)
    except EvstoreError as err:
        m = _IN_DOCUMENT.fullmatch(err.pointer or "")
        if m is not None and err.code.startswith("json."):
            member = m.group(1) or m.group(4)
            index = int(m.group(2) or m.group(5))
            err.pointer = (m.group(3) if m.group(1) else m.group(6)) or ""
            err.details[member.removesuffix("s")] = index
            err.path = f"{member}/{index}"
        raise


def refs_list(body: Any, limit: int) -> list[str]:
    """The ``refs`` member of a ``missing`` body: a list of at most ``limit`` strings.

    Raises:
        InputError: ``http.request`` with a JSON Pointer to the fault.
    """
    if not isinstance(body, dict) or not isinstance(body.get("refs"), list):
        raise error("http.request", 'the body is {"refs": [REF, ...]}', "/refs")
    refs = body["refs"]
    if len(refs) > limit:
        raise error("http.request", f"at most {limit} refs in one request", "/refs", limit=limit)
    for i, r in enumerate(refs):
        if not isinstance(r, str):
            raise error("http.request", "a ref is a string", f"/refs/{i}")
    return list(refs)


def known_members(obj: Any, allowed: set[str] | frozenset[str], at: str = "") -> dict[str, Any]:
    """``obj`` when it is a JSON object whose members are all in ``allowed``.

    A body's nested objects are held to their members as strictly as the body itself: an
    unknown member (a misspelt option) is refused, never ignored.

    Raises:
        InputError: ``http.request`` with the JSON Pointer of ``obj`` (not an object) or of
            its first unknown member.
    """
    if not isinstance(obj, dict):
        what = "a JSON object is needed here" if at else "the body is a JSON object"
        raise error("http.request", what, at)
    for key in obj:
        if key not in allowed:
            known = ", ".join(sorted(allowed))
            pointer = at + "/" + key.replace("~", "~0").replace("/", "~1")  # RFC 6901
            raise error("http.request", f"unknown member {key!r} (known: {known})", pointer)
    return obj
