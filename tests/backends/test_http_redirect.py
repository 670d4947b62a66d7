"""``serve --redirect-large``: a large GET answered 307 to a presigned URL of the bucket,
for clients that ask, and the evstore client verifying every byte it then receives.

Against a real SeaweedFS on 127.0.0.1 (tests/backends/conftest.py), both databases.
"""

from __future__ import annotations

import base64
import hashlib
import os
import sys
import urllib.parse
import uuid
from pathlib import Path

import httpx
import pytest

import evstore
from evstore.backends.base import blob_key
from evstore.backends.spec import open_backend

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from serverkit import make_tokens, start_process

MIB = 1 << 20
THRESHOLD = 2 * MIB


@pytest.fixture
def redirecting(store_url, s3_server, tmp_path):
    """A store keeping blobs over 1 MiB in the bucket, served with --redirect-large 2 MiB:
    (server, spec, {name: bytes}, {name: address}).
    """
    spec = f"s3://{s3_server.bucket}/r{uuid.uuid4().hex[:12]}?endpoint={s3_server.endpoint}"
    blobs = {"big": os.urandom(3 * MIB), "mid": os.urandom(MIB + MIB // 2), "small": b"s" * 100}
    with evstore.open(store_url) as st:
        st.set_config("blobs.backend", spec)
        st.set_config("blobs.inline_max", MIB)
        addresses = {k: st.put(v).digest.address for k, v in blobs.items()}
    tokens = make_tokens(store_url)
    server = start_process(
        ["--store", store_url, "serve", "--no-access-log", "--redirect-large", str(THRESHOLD)],
        tmp_path,
    )
    server.tokens = tokens
    try:
        yield server, spec, blobs, addresses
    finally:
        server.stop()


def test_a_large_get_is_redirected_only_when_asked(redirecting, s3_server):
    server, _spec, blobs, addresses = redirecting
    http = server.client("read")
    path = f"/v1/objects/{addresses['big']}"
    allow = {"Evstore-Redirect": "allow"}

    r = http.get(path, headers=allow)
    assert r.status_code == 307, r.text
    location = r.headers["Location"]
    assert location.startswith(s3_server.endpoint + "/"), location
    assert "X-Amz-Signature=" in location and "X-Amz-Expires=300" in location
    assert r.headers["ETag"] == f'"{addresses["big"]}"'
    sha = base64.b64encode(hashlib.sha256(blobs["big"]).digest()).decode()
    assert r.headers["Repr-Digest"] == f"sha-256=:{sha}:"
    assert r.headers["Cache-Control"] == "no-store"
    # The presigned URL needs no token, and gives exactly the stored bytes.
    with httpx.Client(timeout=60) as bare:
        assert bare.get(location).content == blobs["big"]
        assert bare.get(location, headers={"Range": "bytes=5-9"}).content == blobs["big"][5:10]

    # Without the header: the bytes from the server itself, as before.
    r = http.get(path)
    assert r.status_code == 200 and r.content == blobs["big"]
    # Range requests are served (verified whole first), never redirected.
    r = http.get(path, headers={**allow, "Range": "bytes=100-199"})
    assert r.status_code == 206 and r.content == blobs["big"][100:200]
    # HEAD, and blobs at or under the threshold (in the bucket or inline), are not redirected.
    assert http.head(path, headers=allow).status_code == 200
    r = http.get(f"/v1/objects/{addresses['mid']}", headers=allow)
    assert r.status_code == 200 and r.content == blobs["mid"]
    r = http.get(f"/v1/objects/{addresses['small']}", headers=allow)
    assert r.status_code == 200 and r.content == blobs["small"]


def test_the_client_follows_the_redirect_and_verifies(redirecting):
    server, _spec, blobs, addresses = redirecting
    with evstore.open(server.base, token=server.tokens["read"]) as remote:
        assert remote.get(addresses["big"]) == blobs["big"]
        sha_ref = "sha256:" + hashlib.sha256(blobs["big"]).hexdigest()
        assert remote.get(sha_ref) == blobs["big"]
        with remote.open_blob(addresses["big"], verify_first=False) as (_d, chunks):
            assert b"".join(chunks) == blobs["big"]
        assert remote.get(addresses["mid"]) == blobs["mid"]


def test_a_tampered_bucket_object_is_refused_after_the_redirect(redirecting):
    """The bucket's object changed behind the store's back: the server would refuse it
    (corruption.digest, it verifies before sending), but on the redirect the bytes come
    from the bucket, so it is the client that refuses them: remote.digest, nothing returned.
    """
    server, spec, blobs, addresses = redirecting
    tampered = bytearray(blobs["big"])
    tampered[MIB] ^= 1
    open_backend(spec).put_bytes(blob_key(addresses["big"][7:]), bytes(tampered))
    with evstore.open(server.base, token=server.tokens["read"]) as remote:
        for ref in (addresses["big"], "sha256:" + hashlib.sha256(blobs["big"]).hexdigest()):
            with pytest.raises(evstore.CorruptionError) as info:
                remote.get(ref)
            assert info.value.code == "remote.digest", info.value
        with (
            pytest.raises(evstore.CorruptionError) as info,
            remote.open_blob(addresses["big"], verify_first=False) as (_d, chunks),
        ):
            b"".join(chunks)
        assert info.value.code == "remote.digest"
    # Without the redirect the server refuses the same bytes itself.
    r = server.client("read").get(f"/v1/objects/{addresses['big']}")
    assert r.status_code == 500 and r.json()["code"] == "corruption.digest"


def test_a_missing_bucket_object_is_blob_missing_after_the_redirect(redirecting):
    server, spec, _blobs, addresses = redirecting
    open_backend(spec).delete(blob_key(addresses["big"][7:]))
    with evstore.open(server.base, token=server.tokens["read"]) as remote:
        with pytest.raises(evstore.CorruptionError) as info:
            remote.get(addresses["big"])
        assert info.value.code == "corruption.blob-missing"
        assert "X-Amz-Signature" not in str(info.value)  # the signed URL is not repeated


def test_presign_object_names_only_bucket_objects(store, tmp_path, s3_server):
    (tmp_path / "d").mkdir()
    store.set_config("blobs.inline_max", MIB)
    store.set_config("blobs.backend", f"file:{tmp_path / 'd'}")
    in_dir = store.put(os.urandom(2 * MIB)).digest.address
    inline = store.put(b"x" * 10).digest.address
    assert evstore.presign_object(store, in_dir, 60) is None
    assert evstore.presign_object(store, inline, 60) is None
    assert evstore.presign_object(store, "blake3:" + "0" * 64, 60) is None
    spec = f"s3://{s3_server.bucket}/p{uuid.uuid4().hex[:12]}?endpoint={s3_server.endpoint}"
    store.set_config("blobs.backend", spec)
    data = os.urandom(2 * MIB)
    in_bucket = store.put(data).digest.address
    url = evstore.presign_object(store, in_bucket, 60)
    assert url is not None and "X-Amz-Expires=60" in url
    assert urllib.parse.urlsplit(url).path.endswith(in_bucket[7:])
    with httpx.Client(timeout=60) as bare:
        assert bare.get(url).content == data
