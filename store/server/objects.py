"""Objects over HTTP: ``GET``/``HEAD P/v1/objects/{ref}``, ``stat``, ``PUT``/``POST``, ``missing``.

Reads carry the exact stored bytes with a strong ``ETag`` of the address, an immutable
``Cache-Control``, ``Repr-Digest`` (RFC 9530, SHA-256 of the whole object), the media type
(``application/json`` for artifacts), ``Accept-Ranges``; ``If-None-Match`` answers 304 and one
``Range`` 206 (416 when unsatisfiable; several ranges are answered 200 with the whole object).

Verify on read holds over the wire (docs/http.md#verify-on-read): an object of at most
:data:`SMALL_MAX` bytes is read and verified whole before its first byte is sent (a corrupt
one is a 500 problem with its code, and no bytes); a range of a larger object is served only
after the whole object verified on this read; a larger object sent whole is streamed in
bounded memory (1 MiB chunks), one chunk held back, and when its bytes fail verification the
response is aborted before it completes and the fault is logged.
"""

from __future__ import annotations

import base64
import logging
import os
import tempfile
from collections.abc import Iterator
from typing import Any, BinaryIO, cast

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response, StreamingResponse

from .. import (
    CorruptionError,
    EvstoreError,
    Store,
    error,
    gated_read,
    gated_read_loop,
    object_head,
    parse_ref,
    presign_object,
)
from .app import Served
from .auth import Gate, actor, ingester, read_gate, reader, readmit, scope_of, writes_leases
from .limits import TransferAborted
from .pools import in_pool
from .problems import problem
from .wire import OBJECT_RESPONSES, json_body, known_members, refs_list, request_body
from .writes import rooted

__all__ = [
    "IMMUTABLE",
    "REDIRECT_HEADER",
    "SMALL_MAX",
    "STORED_BYTES",
    "object_response",
    "parse_range",
    "router",
]

log = logging.getLogger("server")

router = APIRouter()

#: Objects up to this size (bytes) are verified whole before the first byte is sent.
SMALL_MAX = 8 << 20
#: The ``Cache-Control`` of every object (its bytes never change under its address).
IMMUTABLE = "public, max-age=31536000, immutable"
#: The request header by which a client says it follows a redirect to the bucket and
#: verifies the bytes itself (value ``allow``); docs/http.md#redirects-to-the-bucket.
REDIRECT_HEADER = "Evstore-Redirect"
#: A PUT body is kept in memory up to this many bytes, then in a temporary file.
SPOOL_MAX = 8 << 20

_UNSATISFIABLE = (-1, -1)
#: Headers of every answer carrying stored bytes: a browser never renders them as a page of
#: this origin (a stored HTML or SVG document would run under the pages' CSP otherwise): it
#: downloads them, does not sniff a type, and a document opened anyway runs sandboxed.
STORED_BYTES = {
    "X-Content-Type-Options": "nosniff",
    "Content-Disposition": "attachment",
    "Content-Security-Policy": "sandbox",
}


#: A byte position written with more digits than this is beyond any object (no int made of it).
_DIGITS_MAX = 30
_BEYOND = 10**_DIGITS_MAX


def _position(text: str) -> int | None:
    """A ``Range`` position: ASCII digits only (``str.isdigit`` also takes ``²`` and other
    scripts' digits), any length: past :data:`_DIGITS_MAX` digits it is :data:`_BEYOND`.
    None when ``text`` is not a position (RFC 9110 section 14.1.1: ``1*DIGIT``).
    """  # noqa: D205
    if not text or not text.isascii() or not text.isdigit():
        return None
    return _BEYOND if len(text) > _DIGITS_MAX else int(text)


def parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The one byte range ``[start, end)`` a ``Range`` header asks of ``size`` bytes.

    Returns None when the whole object is to be sent (no header, another unit, malformed,
    several ranges: RFC 9110 section 14.2 lets a server ignore them) and ``(-1, -1)`` when
    the one range is unsatisfiable (416): a first position at or past the end, a suffix
    of 0 bytes, or positions written with other than ASCII digits (``bytes=²-``, a
    superscript two: a digit to Python, no byte position to HTTP). A position of any
    length is read without making a huge int (4,300 digits are simply past the end).
    """
    if header is None:
        return None
    unit, sep, spec = header.partition("=")
    if not sep or unit.strip().lower() != "bytes" or "," in spec:
        return None
    first, dash, last = spec.strip().partition("-")
    if not dash:
        return None
    if any(not part.isascii() and part.isdigit() for part in (first, last)):
        return _UNSATISFIABLE
    start, stop = _position(first), _position(last)
    if (first and start is None) or (last and stop is None):
        return None
    if start is None:
        if stop is None:
            return None
        if stop == 0 or size == 0:
            return _UNSATISFIABLE
        return max(0, size - stop), size
    if stop is not None and stop < start:
        return None
    if start >= size:
        return _UNSATISFIABLE
    end = size if stop is None else min(stop + 1, size)
    return start, end


def _matches(if_none_match: str | None, etag: str) -> bool:
    if if_none_match is None:
        return False
    for tag in if_none_match.split(","):
        tag = tag.strip()
        if tag == "*" or tag.removeprefix("W/") == etag:
            return True
    return False


def object_headers(stat: dict[str, Any]) -> dict[str, str]:
    """The headers every answer about one object carries (200, 206, 304, HEAD)."""
    sha = bytes.fromhex(str(stat["sha256"]).removeprefix("sha256:"))
    return {
        "ETag": f'"{stat["address"]}"',
        "Cache-Control": IMMUTABLE,
        "Repr-Digest": f"sha-256=:{base64.b64encode(sha).decode('ascii')}:",
        "Accept-Ranges": "bytes",
        "Content-Type": "application/json" if stat["artifact"] else "application/octet-stream",
        **STORED_BYTES,
    }


async def get_object(
    ref: str,
    request: Request,
    gate: Gate = Depends(read_gate),  # noqa: B008
) -> Response:
    """Exact bytes, verified on read; ETag, Repr-Digest, 304, single Range (206/416).

    The token, the object's head and (inline objects up to 64 KiB) its verified bytes come
    from one statement awaited on the event loop (``evstore.gated_read_loop``, issue 29:
    no worker thread); the token is admitted before anything about the object is
    answered. Such an object is then answered on the event loop; anything else (larger
    objects, other ref forms, a statement that could not run) by :func:`object_response`
    in a worker thread.
    """
    one = gate.served
    want_bytes = request.headers.get("if-none-match") is None
    if one.reads is not None:  # awaited on the event loop: no worker thread
        found = await gated_read_loop(one.reads, gate.token, ref, want_bytes=want_bytes)
    else:  # outside the app's lifespan
        found = await in_pool(
            request, "read", lambda: gated_read(one.store, gate.token, ref, want_bytes=want_bytes)
        )
    if not found.answered:  # the statement could not run: the general reads, typed errors
        gate.admit(await scope_of(request, gate) if gate.token else None)
    else:
        gate.admit(found.scope)
    if found.fault is not None:
        raise found.fault
    if found.head is not None and found.data is not None:  # nothing more to read
        return object_response(ref, request, one, found.head, found.data)
    return await run_in_threadpool(object_response, ref, request, one, found.head)


def object_response(
    ref: str,
    request: Request,
    one: Served,
    stat: dict[str, Any] | None = None,
    data: bytes | None = None,
) -> Response:
    """The answer to a GET or HEAD of ``ref`` by a request already admitted (blocking).

    ``stat`` (``evstore.object_head``'s dict) and ``data`` (the object's verified bytes)
    are read here when not given; a large object's first chunk is read before this
    returns. The OCI registry's blob GET answers with it too.

    Raises:
        RefSyntaxError, NotFound, CorruptionError: as ``Store.get``.
    """
    if stat is None:
        stat = object_head(one.store, ref)
    size = int(stat["size"])
    headers = object_headers(stat)
    etag = headers["ETag"]
    if _matches(request.headers.get("if-none-match"), etag):
        del headers["Content-Type"]
        return Response(status_code=304, headers=headers)
    wanted = parse_range(request.headers.get("range"), size)
    if_range = request.headers.get("if-range")
    if wanted is not None and if_range is not None and if_range.strip() != etag:
        wanted = None  # the client's copy is of other bytes: send the whole object
    if wanted == _UNSATISFIABLE:
        asked = request.headers.get("range") or ""
        why = "" if asked.isascii() else " (a range is ASCII digits: RFC 9110 section 14.1.1)"
        err = error(
            "http.range",
            f"no byte of the range {asked[:80]!r} is in this {size}-byte object{why}",
            size=size,
        )
        return problem(err, 416, headers={"Content-Range": f"bytes */{size}"})
    head = request.method == "HEAD"
    if wanted is None and not head:
        moved = _redirect(one, request, stat, headers)
        if moved is not None:
            return moved
    if size <= SMALL_MAX:
        if data is None:
            data = one.store.get(ref)  # verified whole before the first byte is sent
        if wanted is None:
            return Response(data, 200, headers=headers)
        start, end = wanted
        headers["Content-Range"] = f"bytes {start}-{end - 1}/{size}"
        return Response(data[start:end], 206, headers=headers)
    if wanted is None:
        headers["Content-Length"] = str(size)
        if head:
            return Response(b"", 200, headers=headers)
        body = _primed(_stream_checked(one.store, ref))
        return StreamingResponse(body, 200, headers=headers)
    start, end = wanted
    headers["Content-Range"] = f"bytes {start}-{end - 1}/{size}"
    headers["Content-Length"] = str(end - start)
    if head:
        return Response(b"", 206, headers=headers)
    return StreamingResponse(
        _primed(_stream_range(one.store, ref, start, end)), 206, headers=headers
    )


def _redirect(
    one: Served, request: Request, stat: dict[str, Any], headers: dict[str, str]
) -> Response | None:
    """307 to a presigned URL of the bucket, or None to serve the bytes here.

    Only a whole-object GET of a blob over ``limits.redirect_large`` bytes whose bytes are
    in an S3 backend, asked by a client that sends ``Evstore-Redirect: allow`` (it verifies
    what it receives: the server cannot, the bytes go from the bucket to the client). The
    answer keeps ``ETag`` (the BLAKE3 address) and ``Repr-Digest`` (the SHA-256), which the
    client checks the received bytes against; it is never cached (the URL expires).
    """
    limit = one.limits.redirect_large
    if limit <= 0 or int(stat["size"]) <= limit:
        return None
    if request.headers.get(REDIRECT_HEADER, "").strip().lower() != "allow":
        return None
    try:
        url = presign_object(one.store, str(stat["address"]), one.limits.redirect_seconds)
    except EvstoreError as err:  # cannot sign: serve the bytes ourselves
        log.warning("no redirect for %s: %s", stat["address"], err)
        return None
    if url is None:
        return None
    out = {k: v for k, v in headers.items() if k in ("ETag", "Repr-Digest")}
    out.update({"Location": url, "Cache-Control": "no-store", "Vary": REDIRECT_HEADER})
    return Response(b"", 307, headers=out)


_GET_DOC: dict[str, Any] = {
    "summary": "The exact stored bytes of an object, by any content ref",
    "response_class": Response,
    "responses": {
        200: {"description": "The exact stored bytes.", "content": {"*/*": {}}},
        206: {"description": "The one byte range asked.", "content": {"*/*": {}}},
        304: {"description": "Not modified (If-None-Match matched the ETag)."},
        307: {
            "description": "The bytes are at this presigned URL of the bucket (serve "
            "--redirect-large, only for a request with Evstore-Redirect: allow; verify them "
            "against the ETag and Repr-Digest)."
        },
        **OBJECT_RESPONSES,
    },
}
router.add_api_route(
    "/v1/objects/{ref}", get_object, methods=["GET"], operation_id="get_object", **_GET_DOC
)
router.add_api_route(
    "/v1/objects/{ref}", get_object, methods=["HEAD"], operation_id="head_object", **_GET_DOC
)


def _primed(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Take the first chunk now (errors before it become a problem answer), then the rest."""
    try:
        first = next(chunks)
    except StopIteration:
        return iter(())

    def rest() -> Iterator[bytes]:
        yield first
        yield from chunks

    return rest()


def _stream_checked(store: Store, ref: str) -> Iterator[bytes]:
    """The whole object in one read, one chunk held back until the read verified."""
    with store.open_blob(ref, verify_first=False) as (_digest, chunks):
        held: bytes | None = None
        try:
            for chunk in chunks:
                if held is not None:
                    yield held
                held = chunk
        except CorruptionError as err:
            log.error("aborted the transfer of %s: %s", ref, err)
            raise TransferAborted(str(err)) from err
        if held is not None:
            yield held


def _stream_range(store: Store, ref: str, start: int, end: int) -> Iterator[bytes]:
    """Bytes ``[start, end)`` of an object verified whole on this read first."""
    with store.open_blob(ref, verify_first=True) as (_digest, chunks):
        pos = 0
        for chunk in chunks:
            lo, hi = pos, pos + len(chunk)
            pos = hi
            if hi <= start:
                continue
            if lo >= end:
                break
            yield chunk[max(start - lo, 0) : min(end, hi) - lo]


@router.get(
    "/v1/objects/{ref}/stat",
    summary="Facts about a stored object (Store.stat)",
    responses=OBJECT_RESPONSES,
)
def stat_object(
    ref: str,
    verify: bool = Query(False, description="Re-hash the stored bytes first."),
    one: Served = Depends(reader),  # noqa: B008
) -> dict[str, Any]:
    """The JSON of ``Store.stat`` (``evstore stat --json``); 500 when ``verify`` finds damage."""
    return one.store.stat(ref, verify=verify)


_PUT_DOC = {
    "summary": "Store raw bytes (201 new, 200 already stored)",
    "responses": {
        201: {"description": "Stored: the digest forms and new: true."},
        200: {"description": "Already stored: new: false."},
        **OBJECT_RESPONSES,
    },
    "openapi_extra": request_body({"type": "string"}, "application/octet-stream"),
}


async def put_object(
    request: Request,
    expect: str | None = Query(
        None, description="A content ref the bytes must hash to; else 422, nothing stored."
    ),
    root: str | None = Query(
        None, description="Root the object under this root (default: default)."
    ),
    one: Served = Depends(ingester),  # noqa: B008
) -> Response:
    """Store the raw body (rooted under ``root``); with ``expect``, only when the bytes hash
    to that ref.
    """  # noqa: D205
    if expect is not None:
        parse_ref(expect)  # a malformed ref is refused before the body is read
    # Spooled, so a transaction retried on contention reads the same bytes again; the store
    # checks ``expect`` against what it is about to commit (Store.put), hashing once.
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_MAX)
    file = cast(BinaryIO, spool)
    try:
        buf = bytearray()
        size = 0
        async for chunk in request.stream():
            buf += chunk
            if len(buf) >= 1 << 20:
                size += len(buf)
                await run_in_threadpool(spool.write, bytes(buf))
                buf.clear()
        size += len(buf)
        await run_in_threadpool(spool.write, bytes(buf))
        await readmit(request, "ingest")  # revoked while the body arrived: refused
        spool.seek(0)
        if size > SPOOL_MAX:  # on disk already: a plain file object over it, so that a blob
            # backend store reads it twice instead of copying it (store/objects/file_sources.py)
            file = os.fdopen(os.dup(spool.fileno()), "rb")
        result = await in_pool(  # the writes' own threads: reads keep theirs (issue 23)
            request, "write", rooted(request, root, lambda: one.store.put(file, expect=expect))
        )
    finally:
        if file is not cast(BinaryIO, spool):
            file.close()
        spool.close()
    out = result.digest.forms()
    out["new"] = result.new
    return JSONResponse(out, status_code=201 if result.new else 200)


router.add_api_route("/v1/objects", put_object, methods=["PUT"], **_PUT_DOC)  # type: ignore[arg-type]
router.add_api_route(
    "/v1/objects",
    put_object,
    methods=["POST"],
    operation_id="post_object",
    **_PUT_DOC,  # type: ignore[arg-type]
)


@router.post(
    "/v1/missing",
    summary="Which of these refs name no stored object (batch existence check)",
    responses=OBJECT_RESPONSES,
    openapi_extra=request_body(
        {
            "type": "object",
            "required": ["refs"],
            "properties": {"refs": {"type": "array", "items": {"type": "string"}}},
        }
    ),
)
async def missing(request: Request, one: Served = Depends(reader)) -> dict[str, Any]:  # noqa: B008
    """``{"refs": [...]}`` -> ``{"missing": [...]}``: refs as given, verified as ``has``.

    Made with an ingest or admin token, it is an upload's existence check and extends the
    leases of what it reports present (``store.retention.missing``); with a read token or a
    public read it writes nothing.
    """
    body = await json_body(request)
    refs = refs_list(body, one.limits.missing_refs)
    known_members(body, {"refs"})
    if writes_leases(request):
        who = actor(request)
        found = await run_in_threadpool(lambda: one.store.retention.missing(refs, actor=who))
        return {"missing": found}
    return {"missing": await run_in_threadpool(one.store.has, refs)}
