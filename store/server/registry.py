"""The OCI distribution API over a served store: ``/v2/...`` (docs/registry.md).

Registry tools (``skopeo``, ``oras``, ``crane``) pull retained closures with it. A retention
root ``R`` is the repository ``R`` (a name may hold ``/``: the path is parsed from its end);
each entry of the root is a tag (its BLAKE3 hex), ``latest`` the entry retained last; a tag's
manifest is the closure manifest ``archive export`` writes (store/archive/registry.py).

Routes (OCI distribution spec v1.1, "Pull" and "Content discovery"):

* ``GET /v2/`` — the version check (``Docker-Distribution-API-Version: registry/2.0``);
* ``GET``/``HEAD /v2/<name>/manifests/<tag or sha256:digest>``;
* ``GET``/``HEAD /v2/<name>/blobs/sha256:<hex>`` (one ``Range``; verified on read as
  ``/v1/objects``);
* ``GET /v2/<name>/tags/list`` (``n``, ``last``; a ``Link`` header when more follow);
* ``GET /v2/<name>/referrers/sha256:<hex>`` (what refers to an object, by evstore's edges);
* push (an ``ingest`` token): blob uploads (``POST``/``PATCH``/``PUT .../blobs/uploads/``,
  ``?mount=``) spooled to temporary files, never to the store, and ``PUT
  /v2/<name>/manifests/<reference>``: the closure imported as ``archive import`` does
  (evstore.push_oci_manifest), then retained under the repository;
* ``GET /v2/token`` — trades HTTP basic auth (an evstore token as the password) for a bearer
  token, the flow ``WWW-Authenticate: Bearer realm=...`` asks clients to follow.

Errors are the OCI error body ``{"errors": [{"code", "message", "detail"}]}`` with the OCI
code (``NAME_UNKNOWN``, ``MANIFEST_UNKNOWN``, ``BLOB_UNKNOWN``, ``NAME_INVALID``,
``UNAUTHORIZED``, ``DENIED``, ...) and ``detail`` carrying evstore's code, rule and pointer.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
import uuid
import weakref
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response

from .. import (
    EvstoreError,
    OciRepository,
    error,
    http_status,
    open_oci_repository,
    push_oci_manifest,
    token_scope,
)
from .app import Served, served
from .auth import SCOPES, actor
from .objects import IMMUTABLE, object_response
from .registry_named import ANY_KEY, PREFIX_KEY

__all__ = ["API_VERSION", "oci_error", "router"]

router = APIRouter()

#: The ``Docker-Distribution-API-Version`` every answer carries.
API_VERSION = "registry/2.0"
#: The ``service`` of the bearer challenge.
SERVICE = "evstore"
#: The bearer token given to an anonymous client of a store served with public reads.
ANONYMOUS = "anonymous"

_HEX64 = re.compile(r"[0-9a-f]{64}")
#: Names echoed in a challenge header (others are refused later, as ``registry.name``).
_SAFE_NAME = re.compile(r"[A-Za-z0-9._:@/+-]{1,128}")

#: OCI error code and HTTP status of an evstore code (others: by the error's status).
_OCI_CODES: dict[str, tuple[str, int]] = {
    "registry.name": ("NAME_INVALID", 400),
    "root.name": ("NAME_INVALID", 400),
    "not-found.root": ("NAME_UNKNOWN", 404),
    "registry.manifest-unknown": ("MANIFEST_UNKNOWN", 404),
    "not-found.blob": ("BLOB_UNKNOWN", 404),
    "ref.syntax": ("DIGEST_INVALID", 400),
    "http.unauthorized": ("UNAUTHORIZED", 401),
    "http.forbidden": ("DENIED", 403),
    "http.too-large": ("SIZE_INVALID", 413),
    "http.method": ("UNSUPPORTED", 405),
    "http.route": ("UNSUPPORTED", 404),
    "registry.manifest-invalid": ("MANIFEST_INVALID", 400),
    "registry.tag": ("TAG_INVALID", 400),
    "registry.tag-immutable": ("DENIED", 409),
    "registry.blob-unknown": ("MANIFEST_BLOB_UNKNOWN", 404),
    "registry.upload-unknown": ("BLOB_UPLOAD_UNKNOWN", 404),
    "registry.upload-invalid": ("BLOB_UPLOAD_INVALID", 400),
    "put.digest-mismatch": ("DIGEST_INVALID", 400),
    "archive.missing-blob": ("MANIFEST_BLOB_UNKNOWN", 404),
    "archive.digest-mismatch": ("DIGEST_INVALID", 400),
}


def _base_headers() -> dict[str, str]:
    return {"Docker-Distribution-API-Version": API_VERSION}


def oci_error(
    err: EvstoreError,
    oci_code: str | None = None,
    status: int | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """The OCI error answer of ``err``: ``{"errors": [{"code", "message", "detail"}]}``.

    ``detail`` holds evstore's ``code``, ``rule``, ``pointer`` and ``details``, so a registry
    client shows the OCI code and a person the evstore one (docs/errors.md).
    """
    mapped = _OCI_CODES.get(err.code)
    code = oci_code or (mapped[0] if mapped else None)
    status = status or (mapped[1] if mapped else http_status(err))
    if code is None:
        code = "UNKNOWN" if status >= 500 else "UNSUPPORTED"
    detail: dict[str, Any] = {"code": err.code, "rule": err.rule, "pointer": err.pointer}
    if err.details:
        detail["details"] = err.details
    body = {"errors": [{"code": code, "message": err.message, "detail": detail}]}
    out = {**_base_headers(), **(headers or {})}
    return Response(
        json.dumps(body, ensure_ascii=False, sort_keys=True).encode("utf-8"),
        status_code=status,
        headers=out,
        media_type="application/json",
    )


# --------------------------------------------------------------------------- auth


def _credential(request: Request) -> str | None:
    """The evstore token a request carries (bearer, or the password of basic auth), or None.

    Raises:
        InputError: ``http.unauthorized`` (another scheme, malformed basic credentials).
    """
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, value = header.strip().partition(" ")
    value = value.strip()
    if scheme.lower() == "bearer":
        return None if value == ANONYMOUS else value
    if scheme.lower() == "basic":
        try:
            text = base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise error("http.unauthorized", "malformed basic credentials") from None
        _user, sep, password = text.partition(":")
        if not sep:
            raise error("http.unauthorized", "basic credentials need user:password")
        return password
    raise error("http.unauthorized", "use bearer or basic authentication")


def _repo_path(request: Request, name: str) -> str:
    """The path of the repository ``name`` as its client names it: ``/v2/NAME``,
    ``/STORE/v2/NAME`` under a named store, ``/v2/STORE/NAME`` through the root's ``/v2/``.
    """  # noqa: D205
    prefix = request.scope.get(PREFIX_KEY)
    if prefix is not None:
        return f"/v2/{prefix}{name}"
    return f"{request.scope.get('root_path', '')}/v2/{name}"


def _token_scope(request: Request, one: Served, token: str) -> str | None:
    """The scope of ``token`` in the store (in any served store at the root's ``/v2/``)."""
    for other in request.scope.get(ANY_KEY) or [one]:
        scope = token_scope(other.store, token)
        if scope is not None:
            return scope
    return None


def _challenge(request: Request, name: str | None, actions: str) -> dict[str, str]:
    realm = str(request.base_url).rstrip("/") + "/v2/token"
    if PREFIX_KEY in request.scope or ANY_KEY in request.scope:
        realm = f"{request.url.scheme}://{request.url.netloc}/v2/token"
        name = None if name is None else request.scope.get(PREFIX_KEY, "") + name
    safe = name is not None and _SAFE_NAME.fullmatch(name) is not None
    scope = f',scope="repository:{name}:{actions}"' if safe else ""
    return {"WWW-Authenticate": f'Bearer realm="{realm}",service="{SERVICE}"{scope}'}


class _Denied(Exception):
    """An authentication or scope refusal, with the challenge to answer."""

    def __init__(self, err: EvstoreError, headers: dict[str, str]) -> None:
        self.err = err
        self.headers = headers


def _authorize(request: Request, one: Served, need: str, name: str | None) -> None:
    """Allow the request scope ``need`` (``read``: pull, ``ingest``: push), or raise _Denied."""
    actions = "pull" if need == "read" else "pull,push"
    try:
        token = _credential(request)
    except EvstoreError as err:
        raise _Denied(err, _challenge(request, name, actions)) from None
    scope = _token_scope(request, one, token) if token else None
    request.state.actor, request.state.scope = "public", None
    if scope is not None and token is not None:
        request.state.actor, request.state.scope = token[5:17], scope
    if need == "read" and one.public_read:
        return
    if scope is None:
        why = "this needs a token" if token is None else "the token is unknown or revoked"
        raise _Denied(error("http.unauthorized", why), _challenge(request, name, actions))
    if SCOPES.index(scope) < SCOPES.index(need):
        short = error(
            "http.forbidden",
            f"a {scope} token cannot do this; it needs scope {need}",
            scope=scope,
            needed=need,
        )
        raise _Denied(short, _challenge(request, name, actions))


# --------------------------------------------------------------------------- routes

_UPLOADS = re.compile(r"(?P<name>.+)/blobs/uploads/(?P<id>[^/]*)")
_ITEM = re.compile(r"(?P<name>.+)/(?P<what>manifests|blobs|referrers)/(?P<ref>[^/]+)")
_TAGS = re.compile(r"(?P<name>.+)/tags/list")


def _manifest_response(data: bytes, sha: str, head: bool) -> Response:
    headers = {
        **_base_headers(),
        "Docker-Content-Digest": "sha256:" + sha,
        "ETag": f'"sha256:{sha}"',
        "Content-Length": str(len(data)),
    }
    media = OciRepository.MANIFEST_MEDIA_TYPE
    return Response(b"" if head else data, 200, headers=headers, media_type=media)


def _blob_response(request: Request, one: Served, repo: OciRepository, digest: str) -> Response:
    """A blob by ``sha256:<hex>``: a stored object, the empty config, or one of the
    repository's closure manifests.
    """  # noqa: D205
    if not digest.startswith("sha256:") or not _HEX64.fullmatch(digest[7:]):
        raise error("ref.syntax", f"{digest!r} is no sha256:<64 hex> digest", digest=digest)
    head = request.method == "HEAD"
    try:
        response = object_response(digest, request, one)
    except EvstoreError as missing:
        if missing.code != "not-found.blob":
            raise
        extra = repo.extra_blob(digest)
        if extra is None:
            raise
        headers = {
            **_base_headers(),
            "Docker-Content-Digest": digest,
            "Cache-Control": IMMUTABLE,
            "Content-Length": str(len(extra)),
        }
        return Response(b"" if head else extra, 200, headers=headers, media_type=_OCTETS)
    response.headers["Content-Type"] = _OCTETS
    response.headers["Docker-Content-Digest"] = digest
    response.headers["Docker-Distribution-API-Version"] = API_VERSION
    return response


_OCTETS = "application/octet-stream"
_INDEX = "application/vnd.oci.image.index.v1+json"


def _tags_response(request: Request, repo: OciRepository) -> Response:
    n_text, last = request.query_params.get("n"), request.query_params.get("last")
    if n_text is not None and not n_text.isdigit():
        raise error("http.request", "n is a number of tags, 0 or more", parameter="n")
    n = None if n_text is None else int(n_text)
    tags, more = repo.tags_page(n, last)
    headers = _base_headers()
    if more and tags:
        link = f"{_repo_path(request, repo.name)}/tags/list?n={n}&last={quote(tags[-1], safe='')}"
        headers["Link"] = f'<{link}>; rel="next"'
    name = request.scope.get(PREFIX_KEY, "") + repo.name
    return JSONResponse({"name": name, "tags": tags}, headers=headers)


def _token_response(request: Request, one: Served) -> Response:
    """``GET /v2/token``: a bearer token for the basic credentials given (docs/registry.md)."""
    token = _credential(request)
    if token is None:
        if not one.public_read:
            raise _Denied(
                error("http.unauthorized", "log in: basic auth with an evstore token"),
                {"WWW-Authenticate": 'Basic realm="evstore"'},
            )
        token = ANONYMOUS
    elif _token_scope(request, one, token) is None:
        raise _Denied(
            error("http.unauthorized", "the token is unknown or revoked"),
            {"WWW-Authenticate": 'Basic realm="evstore"'},
        )
    body = {"token": token, "access_token": token, "expires_in": 3600}
    return JSONResponse(body, headers=_base_headers())


def _pull(request: Request, one: Served, rest: str) -> Response:
    """Every read route (GET and HEAD), parsed from the path after ``/v2/``."""
    head = request.method == "HEAD"
    if rest == "":
        _authorize(request, one, "read", None)
        headers = _base_headers()
        if one.public_read and "authorization" not in request.headers:
            # 200 to anyone, and the challenge too: a client (skopeo) learns from the version
            # check alone how to authenticate, and would push without credentials otherwise
            headers.update(_challenge(request, None, "pull"))
        return JSONResponse({}, headers=headers)
    if rest == "token":
        return _token_response(request, one)
    tags = _TAGS.fullmatch(rest)
    item = _ITEM.fullmatch(rest)
    name = tags["name"] if tags else item["name"] if item else None
    if name is None:
        raise error("http.route", f"no route {request.method} /v2/{rest}")
    _authorize(request, one, "read", name)
    repo = open_oci_repository(one.store, name)
    if tags is not None:
        return _tags_response(request, repo)
    assert item is not None
    if item["what"] == "manifests":
        data, sha = repo.manifest(item["ref"])
        return _manifest_response(data, sha, head)
    if item["what"] == "blobs":
        return _blob_response(request, one, repo, item["ref"])
    wanted = request.query_params.get("artifactType")
    index = repo.referrers(item["ref"], wanted)
    headers = _base_headers()
    if wanted is not None:
        headers["OCI-Filters-Applied"] = "artifactType"
    return Response(index, 200, headers=headers, media_type=_INDEX)


async def _answer(request: Request, rest: str) -> Response:
    one = served(request)
    spool = getattr(request.app.state, "oci_spool", None)
    if spool is not None:  # uploads left unused past the expiry are dropped
        spool.sweep()
    try:
        uploads = _UPLOADS.fullmatch(rest)
        if uploads is not None:
            return await _upload(request, one, uploads["name"], uploads["id"])
        item = _ITEM.fullmatch(rest)
        if request.method == "PUT" and item is not None and item["what"] == "manifests":
            try:
                return await _push_manifest(request, one, item["name"], item["ref"])
            except EvstoreError as err:
                mapped = err.code in _OCI_CODES or err.code.startswith(("http.", "registry."))
                if mapped or http_status(err) >= 500:
                    raise
                # a fault of the closure (a kind's rule: 422, a binding: 409 elsewhere):
                # OCI clients expect 400 MANIFEST_INVALID (docs/registry.md#errors)
                return oci_error(err, "MANIFEST_INVALID", 400)
        if request.method in ("GET", "HEAD"):
            return await run_in_threadpool(_pull, request, one, rest)
        raise error("http.method", f"/v2/{rest} does not take {request.method}")
    except _Denied as denied:
        return oci_error(denied.err, headers=denied.headers)
    except EvstoreError as err:
        return oci_error(err)


# --------------------------------------------------------------------------- push


@dataclass
class _Upload:
    """One blob upload session: its spool file, bytes so far and running SHA-256.

    ``touched`` is the monotonic time of its last request (seconds); ``busy`` counts the
    requests appending to it now (a busy session never expires).
    """

    name: str
    path: str
    size: int = 0
    sha: Any = field(default_factory=hashlib.sha256)
    touched: float = field(default_factory=time.monotonic)
    busy: int = 0


class _Spool:
    """The blob uploads of one served store: sessions, and finished blobs by SHA-256 hex.

    Files live in a temporary directory of this process. A session or a finished blob not
    used for ``expiry`` seconds (the server's ``upload_expiry``) is dropped, its file removed,
    at the next ``/v2/`` request (:meth:`sweep`); a finished blob is dropped too once a
    manifest naming it is accepted (it is in the store then), and the whole directory when
    the server stops (:meth:`close`, from the app's shutdown). Nothing here is in the store:
    a refused manifest leaves no object behind.
    """

    def __init__(self, expiry: float) -> None:
        self.expiry = expiry
        self._dir = tempfile.mkdtemp(prefix="evstore-oci-uploads-")
        # also removed when this spool is collected or the process exits without a shutdown
        self._finalizer = weakref.finalize(self, shutil.rmtree, self._dir, True)
        self.sessions: dict[str, _Upload] = {}
        self.done: dict[str, tuple[str, float]] = {}
        self._next_sweep = 0.0

    @property
    def directory(self) -> str:
        """The spool's directory (its files: sessions and finished blobs)."""
        return self._dir

    def close(self) -> None:
        """Drop every session and finished blob and remove the directory (server stop)."""
        self.sessions.clear()
        self.done.clear()
        self._finalizer()

    def sweep(self) -> None:
        """Drop the sessions and finished blobs untouched for ``expiry`` seconds.

        Looks at most every ``min(expiry / 2, 60)`` seconds: a push of many blobs does not
        walk every session on each request.
        """
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + min(self.expiry / 2, 60.0)
        edge = now - self.expiry
        for upload_id, session in list(self.sessions.items()):
            if session.busy == 0 and session.touched < edge:
                self.drop(upload_id)
        for sha, (_path, touched) in list(self.done.items()):
            if touched < edge:
                self.forget(sha)

    def start(self, name: str) -> tuple[str, _Upload]:
        upload_id = uuid.uuid4().hex
        path = os.path.join(self._dir, upload_id)
        open(path, "wb").close()
        session = self.sessions[upload_id] = _Upload(name, path)
        return upload_id, session

    def get(self, name: str, upload_id: str) -> _Upload:
        session = self.sessions.get(upload_id)
        if session is None or session.name != name:
            raise error(
                "registry.upload-unknown",
                f"no upload {upload_id!r} in the repository {name!r}",
                upload=upload_id,
            )
        session.touched = time.monotonic()
        return session

    def drop(self, upload_id: str) -> None:
        session = self.sessions.pop(upload_id, None)
        if session is not None and os.path.exists(session.path):
            os.unlink(session.path)

    def forget(self, sha256_hex: str) -> None:
        """Drop a finished blob (stored by an accepted manifest, or expired)."""
        entry = self.done.pop(sha256_hex, None)
        if entry is not None and os.path.exists(entry[0]):
            os.unlink(entry[0])

    def finish(self, upload_id: str, digest: str) -> None:
        """Close the upload: its bytes must hash to ``digest`` (else dropped, raised)."""
        session = self.sessions[upload_id]
        got = session.sha.hexdigest()
        if digest != "sha256:" + got:
            self.drop(upload_id)
            raise error(
                "put.digest-mismatch",
                f"the uploaded bytes have SHA-256 {got}, not the {digest} given",
                expected=digest,
                sha256="sha256:" + got,
            )
        target = os.path.join(self._dir, "sha256-" + got)
        os.replace(session.path, target)
        self.sessions.pop(upload_id)
        self.done[got] = (target, time.monotonic())

    def spooled(self, sha256_hex: str) -> str | None:
        """The file of a finished upload by SHA-256 hex, or None."""
        entry = self.done.get(sha256_hex)
        return None if entry is None else entry[0]


def _spool(request: Request) -> _Spool:
    """The spool of the request's store, made on first use and closed when the app stops."""
    spool = getattr(request.app.state, "oci_spool", None)
    if spool is None:
        one = served(request)
        spool = request.app.state.oci_spool = _Spool(one.limits.upload_expiry)
        one.closers.append(spool.close)
    return spool


def _upload_headers(request: Request, name: str, upload_id: str, size: int) -> dict[str, str]:
    return {
        **_base_headers(),
        "Location": f"{_repo_path(request, name)}/blobs/uploads/{upload_id}",
        "Docker-Upload-UUID": upload_id,
        "Range": f"0-{max(size - 1, 0)}",
    }


def _digest_param(request: Request, param: str = "digest") -> str | None:
    """The ``digest`` (or ``mount``) query parameter of an upload, or None.

    Raises:
        InputError: ``ref.syntax`` (the OCI ``DIGEST_INVALID``): not ``sha256:<64 hex>``, or
            given more than once (which one the client meant cannot be told).
    """
    given = request.query_params.getlist(param)
    if len(given) > 1:
        raise error(
            "ref.syntax",
            f"the {param} parameter is given {len(given)} times; give it once",
            digest=given,
            parameter=param,
        )
    digest = given[0] if given else None
    if digest is not None and not (digest.startswith("sha256:") and _HEX64.fullmatch(digest[7:])):
        raise error(
            "ref.syntax",
            f"{param} {digest!r} is no sha256:<64 hex> digest",
            digest=digest,
            parameter=param,
        )
    return digest


#: A request body declared at most this long (bytes) is written to the spool on the event
#: loop: one write of a small chunk to a file costs less than handing it to a thread (a
#: registry client pushes most blobs in one small PATCH each); a longer one, chunk by chunk
#: in a thread, so a slow disk never holds the loop.
_INLINE_BYTES = 1 << 20


async def _append(request: Request, one: Served, upload_id: str, session: _Upload) -> None:
    """Append the request body to the upload, within the object size limit."""
    limit = one.limits.object_bytes
    declared = request.headers.get("content-length", "")
    inline = declared.isdigit() and int(declared) <= _INLINE_BYTES
    if declared.isdigit() and session.size + int(declared) > limit:
        _spool(request).drop(upload_id)
        raise error("http.too-large", f"the blob is over the limit of {limit} bytes", limit=limit)
    start = request.headers.get("content-range")
    if start is not None:
        first = start.removeprefix("bytes ").split("-", 1)[0].strip()
        if not first.isdigit() or int(first) != session.size:
            raise error(
                "registry.upload-invalid",
                f"the chunk starts at {first}, the upload holds {session.size} bytes",
                size=session.size,
            )
    if declared == "0":  # nothing to append (a PUT closing a chunked upload)
        session.touched = time.monotonic()
        return
    session.busy += 1
    try:
        with open(session.path, "ab") as fh:
            async for chunk in request.stream():
                session.size += len(chunk)
                if session.size > limit:
                    _spool(request).drop(upload_id)
                    raise error(
                        "http.too-large",
                        f"the blob is over the limit of {limit} bytes",
                        limit=limit,
                    )
                session.sha.update(chunk)
                if inline:
                    fh.write(chunk)
                else:
                    await run_in_threadpool(fh.write, chunk)
    finally:
        session.busy -= 1
        session.touched = time.monotonic()


def _created(request: Request, name: str, digest: str) -> Response:
    headers = {
        **_base_headers(),
        "Location": f"{_repo_path(request, name)}/blobs/{digest}",
        "Docker-Content-Digest": digest,
    }
    return Response(b"", 201, headers=headers)


async def _upload(request: Request, one: Served, name: str, upload_id: str) -> Response:
    """``POST``, ``PATCH``, ``PUT``, ``GET``, ``DELETE`` of ``/v2/NAME/blobs/uploads/[ID]``."""
    OciRepository.check_name(name)
    await run_in_threadpool(_authorize, request, one, "ingest", name)
    spool = _spool(request)
    method = request.method
    if method == "POST" and upload_id == "":
        mount = _digest_param(request, "mount")  # malformed: DIGEST_INVALID, nothing kept
        if mount is not None:
            who = actor(request)
            gone = await run_in_threadpool(lambda: one.store.retention.missing([mount], actor=who))
            if not gone:  # stored already: its lease is extended, nothing to upload
                return _created(request, name, mount)
        digest = _digest_param(request)
        new_id, session = spool.start(name)
        if digest is not None:  # a monolithic upload: the body is the blob
            await _append(request, one, new_id, session)
            spool.finish(new_id, digest)
            return _created(request, name, digest)
        return Response(b"", 202, headers=_upload_headers(request, name, new_id, 0))
    session = spool.get(name, upload_id)
    if method == "PATCH":
        await _append(request, one, upload_id, session)
        return Response(b"", 202, headers=_upload_headers(request, name, upload_id, session.size))
    if method == "PUT":
        digest = _digest_param(request)
        if digest is None:
            raise error("registry.upload-invalid", "close an upload with ?digest=sha256:<hex>")
        await _append(request, one, upload_id, session)
        spool.finish(upload_id, digest)
        return _created(request, name, digest)
    if method == "GET":
        return Response(b"", 204, headers=_upload_headers(request, name, upload_id, session.size))
    if method == "DELETE":
        spool.drop(upload_id)
        return Response(b"", 204, headers=_base_headers())
    raise error("http.method", f"an upload does not take {method}")


def _named_blobs(data: bytes) -> list[str]:
    """The SHA-256 hex of every blob an accepted manifest names (config and layers)."""
    doc = json.loads(data)
    descriptors = [doc.get("config") or {}, *(doc.get("layers") or [])]
    return [str(d.get("digest", ""))[7:] for d in descriptors if isinstance(d, dict)]


async def _push_manifest(request: Request, one: Served, name: str, reference: str) -> Response:
    """``PUT /v2/NAME/manifests/REFERENCE``: import the closure, root it under NAME."""
    OciRepository.check_name(name)
    await run_in_threadpool(_authorize, request, one, "ingest", name)
    data = await request.body()
    spool = _spool(request)
    who = actor(request)
    out = await run_in_threadpool(
        lambda: push_oci_manifest(one.store, name, reference, data, spool.spooled, actor=who)
    )
    # stored now (or, the manifest itself uploaded as a blob, served from the store): their
    # spooled copies are not needed any more
    for sha in [*_named_blobs(data), out["digest"][7:], hashlib.sha256(data).hexdigest()]:
        spool.forget(sha)
    headers = {
        **_base_headers(),
        "Location": f"{_repo_path(request, name)}/manifests/{out['digest']}",
        "Docker-Content-Digest": out["digest"],
    }
    return Response(b"", 201, headers=headers)


@router.api_route("/v2/", methods=["GET", "HEAD"], include_in_schema=False)
@router.api_route("/v2", methods=["GET", "HEAD"], include_in_schema=False)
async def version_check(request: Request) -> Response:
    """``GET /v2/``: 200 ``{}`` when the client may read (401 with a challenge otherwise)."""
    return await _answer(request, "")


@router.api_route(
    "/v2/{rest:path}",
    methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
    include_in_schema=False,
)
async def distribution(rest: str, request: Request) -> Response:
    """Every other ``/v2/`` route (see the module docstring)."""
    return await _answer(request, rest)
