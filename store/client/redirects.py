"""Object GETs that may be answered by the bucket itself (``serve --redirect-large``).

The client says it follows a redirect with ``Evstore-Redirect: allow``; a server told to
(``serve --redirect-large BYTES``) answers a whole GET of a large blob whose bytes are in an
S3 bucket with ``307`` to a short-lived presigned URL, keeping the ``ETag`` (the BLAKE3
address) and ``Repr-Digest`` (RFC 9530, the SHA-256). The bytes then come from the bucket,
which nobody verified on the way: this client hashes every byte it receives and refuses
them (``remote.digest``) unless both the BLAKE3 and the SHA-256 are the ones the server
promised and the ref names (docs/http.md#redirects-to-the-bucket). The token is never sent
to the bucket.
"""

from __future__ import annotations

import base64
import binascii
import urllib.parse
from dataclasses import dataclass

import httpx

from ..core.digests import Digest
from ..core.errors import error
from .http import Http

__all__ = ["Promised", "REDIRECT_HEADER", "check_promised", "get_object"]

#: The request header that asks for redirects (value ``allow``).
REDIRECT_HEADER = "Evstore-Redirect"


@dataclass(frozen=True)
class Promised:
    """What a server's 307 says the bytes are: the ``address`` (``blake3:<hex>``) and the
    ``sha256`` (hex), each None when the answer did not carry it.
    """  # noqa: D205

    address: str | None
    sha256: str | None


def _promised(resp: httpx.Response) -> Promised:
    etag = resp.headers.get("ETag", "").strip().removeprefix("W/").strip('"') or None
    sha = None
    for item in resp.headers.get("Repr-Digest", "").split(","):
        name, _, value = item.strip().partition("=")
        if name.strip().lower() == "sha-256" and value.startswith(":") and value.endswith(":"):
            try:
                sha = base64.b64decode(value[1:-1], validate=True).hex()
            except (binascii.Error, ValueError):
                sha = None
    return Promised(etag, sha)


def get_object(http: Http, path: str) -> tuple[httpx.Response, Promised | None]:
    """GET ``path`` streamed, following one 307 to a bucket; the answer and the promise.

    Returns:
        The 200 answer (the caller reads and closes it) and, when it came from a bucket,
        what the server promised the bytes are (None: the server sent them itself).

    Raises:
        EvstoreError: the server's problem; ``corruption.blob-missing`` (the bucket has
            no such object); ``remote.protocol`` (a 307 without a usable ``Location``, or
            another answer of the bucket: an expired or refused URL).
    """
    resp = http.request(
        "GET", path, idempotent=True, stream=True, headers={REDIRECT_HEADER: "allow"}, ok=(200, 307)
    )
    if resp.status_code == 200:
        return resp, None
    promised = _promised(resp)
    location = resp.headers.get("Location", "")
    resp.close()
    scheme = urllib.parse.urlsplit(location).scheme.lower()
    if scheme not in ("http", "https"):
        raise http.protocol(f"GET {path}: a 307 without an http(s) Location")
    where = urllib.parse.urlsplit(location)._replace(query="").geturl()  # no signature
    try:
        got = http.bucket().send(http.bucket().build_request("GET", location), stream=True)
    except httpx.HTTPError as exc:
        raise error(
            "remote.unreachable",
            f"GET {where} (redirected by {http.url}): {type(exc).__name__}",
            url=http.url,
        ) from None
    if got.status_code == 200:
        return got, promised
    got.close()
    if got.status_code == 404:
        raise error(
            "corruption.blob-missing",
            f"{http.url} redirected {path} to {where}, which has no such object; never served",
            url=http.url,
        )
    raise http.protocol(
        f"GET {path}: the bucket it redirected to answered HTTP {got.status_code}",
        status=got.status_code,
    )


def check_promised(http: Http, ref: str, digest: Digest, promised: Promised | None) -> None:
    """Refuse bytes from a bucket unless they are what the server promised (``remote.digest``).

    The ref itself is checked by the caller; this checks the other digest too (a
    ``blake3:`` ref's SHA-256, a ``sha256:`` ref's BLAKE3), so every byte is held to both.
    """
    if promised is None:
        return
    if promised.address == digest.address and promised.sha256 == digest.sha256:
        return
    raise error(
        "remote.digest",
        f"{http.url}: the {digest.size} bytes the bucket sent for {ref} hash to "
        f"{digest.address} (sha256:{digest.sha256}), not to what the server promised "
        f"({promised.address}, sha256:{promised.sha256}); discarded",
        ref=ref,
        url=http.url,
    )
