"""The client's side of ``serve --redirect-large`` against a scripted server and bucket.

What a real bucket cannot show: the token never goes to the bucket, the client asks for
redirects, and bytes are held to the promise of the 307 (its SHA-256 and address) as well
as to the ref (tests/backends/test_http_redirect.py runs the real thing on SeaweedFS).
"""

from __future__ import annotations

import base64
import hashlib

import httpx
import pytest

import evstore
from evstore.client import RemoteStore

URL = "http://evstore.test:8080"
BUCKET = "http://bucket.test:8333/b/blake3/xx?X-Amz-Signature=abc"
TOKEN = "s3cret-token-value"
DATA = b"the bytes of a large blob" * 1000
ADDRESS = evstore.digest_bytes(DATA).address


def _repr_digest(data: bytes) -> str:
    return f"sha-256=:{base64.b64encode(hashlib.sha256(data).digest()).decode()}:"


def _remote(seen: list[httpx.Request], *, etag: str, sha_of: bytes, sent: bytes) -> RemoteStore:
    def script(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.host == "bucket.test":
            return httpx.Response(200, content=sent)
        assert request.headers.get("Evstore-Redirect") == "allow"
        return httpx.Response(
            307,
            headers={"Location": BUCKET, "ETag": f'"{etag}"', "Repr-Digest": _repr_digest(sha_of)},
        )

    return RemoteStore(URL, token=TOKEN, transport=httpx.MockTransport(script))


def test_the_client_follows_the_redirect_without_its_token():
    seen: list[httpx.Request] = []
    with _remote(seen, etag=ADDRESS, sha_of=DATA, sent=DATA) as remote:
        assert remote.get(ADDRESS) == DATA
    assert [r.url.host for r in seen] == ["evstore.test", "bucket.test"]
    assert seen[0].headers["Authorization"] == f"Bearer {TOKEN}"
    assert "Authorization" not in seen[1].headers


@pytest.mark.parametrize("lie", ["sha256", "address"])
def test_bytes_not_matching_the_redirects_promise_are_refused(lie):
    """The bytes match the ref, but not what the 307 promised: refused all the same (the
    server and the bucket disagree about what is stored).
    """
    other = b"other bytes"
    etag = evstore.digest_bytes(other).address if lie == "address" else ADDRESS
    sha_of = other if lie == "sha256" else DATA
    with _remote([], etag=etag, sha_of=sha_of, sent=DATA) as remote:
        with pytest.raises(evstore.CorruptionError) as info:
            remote.get(ADDRESS)
        assert info.value.code == "remote.digest"
        with (
            pytest.raises(evstore.CorruptionError) as info,
            remote.open_blob(ADDRESS, verify_first=False) as (_d, chunks),
        ):
            b"".join(chunks)
        assert info.value.code == "remote.digest"


def test_a_tampered_object_in_the_bucket_is_refused():
    tampered = bytearray(DATA)
    tampered[7] ^= 1
    with _remote([], etag=ADDRESS, sha_of=DATA, sent=bytes(tampered)) as remote:
        with pytest.raises(evstore.CorruptionError) as info:
            remote.get(ADDRESS)
        assert info.value.code == "remote.digest"


def test_a_redirect_without_a_usable_location_is_a_protocol_error():
    def script(request: httpx.Request) -> httpx.Response:
        return httpx.Response(307, headers={"Location": "ftp://elsewhere/x"})

    with RemoteStore(URL, transport=httpx.MockTransport(script)) as remote:
        with pytest.raises(evstore.EvstoreError) as info:
            remote.get(ADDRESS)
        assert info.value.code == "remote.protocol"
