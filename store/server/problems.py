"""Errors over HTTP: every evstore error as ``application/problem+json`` (RFC 9457).

The status is :func:`evstore.http_status` (the one table, in store/core/error_codes.py, that
the pages and the client share): from the code, else from the error's family: 400 malformed
ref or input, 404 unknown, 409 binding conflict, 422 contract violation, 401/403
authentication and scope, 413 too large, 503 busy (with ``Retry-After``), 500 corruption and
other store faults. The body carries the evstore code,
message, contract rule and JSON Pointer, and ``errors``: every fault (validate lists many).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from http import HTTPStatus
from typing import Any

from starlette.responses import Response

from .. import EvstoreError, http_status

__all__ = [
    "PROBLEM_TYPE",
    "RETRY_AFTER_S",
    "problem",
    "problem_body",
    "status_of",
]

#: The ``type`` URI of a problem is this prefix and the evstore code.
PROBLEM_TYPE = "https://evstore.dev/errors/"

#: Seconds a client is asked to wait after a 503 (``Retry-After``).
RETRY_AFTER_S = 1


def status_of(err: EvstoreError) -> int:
    """The HTTP status of an evstore error (code first, then family): ``evstore.http_status``."""
    return http_status(err)


def problem_body(
    err: EvstoreError,
    status: int,
    errors: Iterable[EvstoreError] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The RFC 9457 members of ``err``: type, title, status, detail, and evstore's members.

    ``errors`` defaults to ``[err]``; ``extra`` members are added as they are (e.g. a
    validate ``report``).
    """
    faults = [err] if errors is None else list(errors)
    body: dict[str, Any] = {
        "type": PROBLEM_TYPE + err.code,
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": err.message,
        "code": err.code,
        "rule": err.rule,
        "pointer": err.pointer,
        "errors": [e.to_dict() for e in faults],
    }
    if err.path is not None:
        body["path"] = err.path
    if err.details:
        body["details"] = err.details
    body.update(extra)
    return body


def problem(
    err: EvstoreError,
    status: int | None = None,
    *,
    errors: Iterable[EvstoreError] | None = None,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> Response:
    """The problem+json response of ``err`` (status from :func:`status_of` when None).

    503 answers carry ``Retry-After``; 401 answers ``WWW-Authenticate: Bearer``; every one
    ``X-Content-Type-Options: nosniff`` (also those the limits guard sends outside the apps).
    """
    status = status_of(err) if status is None else status
    out = dict(headers or {})
    out.setdefault("X-Content-Type-Options", "nosniff")
    if status == 503:
        out.setdefault("Retry-After", str(RETRY_AFTER_S))
    if status == 401:
        out.setdefault("WWW-Authenticate", 'Bearer realm="evstore"')
    if status == 403:
        out.setdefault("WWW-Authenticate", 'Bearer realm="evstore", error="insufficient_scope"')
    body = problem_body(err, status, errors, **extra)
    return Response(
        json.dumps(body, ensure_ascii=False, sort_keys=True).encode("utf-8"),
        status_code=status,
        headers=out,
        media_type="application/problem+json",
    )
