"""The OCI upload spool and the pushes issue 27 still owed (docs/registry.md#push, #errors).

Uploads never followed by a manifest do not pile up (an expiry, and the server's stop), a
duplicate ``digest`` parameter is refused, a kind's fault in a pushed closure is the 400
``MANIFEST_INVALID`` OCI clients expect, and the hostile pushes the first tests did not cover
(a chunked upload over the limit, a manifest to a name with ``..``) leave nothing behind: not
in the store, not in the spool. Both backends.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from pathlib import Path

import httpx
import pytest
from serverkit import make_tokens, start_thread
from test_http_registry_push import _MANIFEST, NAME, _push_blob, _push_layout, _source

import evstore
from evstore.core.errors import http_status

#: How long the expiry test lets an upload go unused (the server's upload_expiry is 0.3 s).
EXPIRY_S = 0.3


@pytest.fixture
def spool_root(tmp_path, monkeypatch) -> Path:
    """The temporary directory the in-process server spools uploads to (this test's own)."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def _serve(store_url: str, **limits):
    tokens = make_tokens(store_url)
    limits.setdefault("object_bytes", 4096)
    server = start_thread({None: store_url}, limits=evstore.ServerLimits(**limits))
    server.tokens = tokens
    return server


def _spooled(root: Path) -> list[str]:
    """The files in the upload spools under ``root`` (sessions and finished blobs)."""
    return sorted(p.name for d in root.glob("evstore-oci-uploads-*") for p in d.iterdir())


def test_unfinished_uploads_expire_and_the_spool_goes_with_the_server(store_url, spool_root):
    server = _serve(store_url, upload_expiry=EXPIRY_S)
    try:
        c = server.client("ingest")
        r = c.post(f"/v2/{NAME}/blobs/uploads/")  # a chunked upload, never finished
        assert r.status_code == 202
        where = r.headers["location"]
        assert c.patch(where, content=b"half a blob").status_code == 202
        assert _push_blob(c, NAME, b"a finished blob no manifest names").status_code == 201
        assert len(_spooled(spool_root)) == 2
        # Used again within the expiry: kept (the session's clock restarts at each request).
        assert c.get(where).status_code == 204
        assert len(_spooled(spool_root)) == 2
        time.sleep(EXPIRY_S * 2)
        # The next /v2/ request of the store drops both: files and sessions.
        assert c.get("/v2/").status_code == 200
        assert _spooled(spool_root) == []
        gone = c.get(where)
        assert gone.status_code == 404
        assert gone.json()["errors"][0]["code"] == "BLOB_UPLOAD_UNKNOWN"
        # Left unfinished again: the server's stop removes the spool directory itself.
        r = c.post(f"/v2/{NAME}/blobs/uploads/")
        assert c.patch(r.headers["location"], content=b"more").status_code == 202
        assert len(_spooled(spool_root)) == 1
    finally:
        server.stop()
    assert list(spool_root.glob("evstore-oci-uploads-*")) == []


def test_an_accepted_manifest_takes_its_blobs_out_of_the_spool(store_url, spool_root, tmp_path):
    src = _source(store_url, tmp_path)
    server = _serve(store_url)
    try:
        c = server.client("ingest")
        _push_layout(c, NAME, tmp_path / "export")
        assert len(_spooled(spool_root)) == len(list((tmp_path / "export/blobs/sha256").iterdir()))
        r = c.put(
            f"/v2/{NAME}/manifests/latest",
            content=src["manifest"],
            headers={"Content-Type": _MANIFEST},
        )
        assert r.status_code == 201, r.text
        # everything it names is in the store now, and the manifest (uploaded as a blob
        # too by _push_layout) is served from it
        assert _spooled(spool_root) == []
    finally:
        server.stop()


def test_a_duplicate_digest_parameter_is_refused(store_url, spool_root):
    server = _serve(store_url)
    try:
        c = server.client("ingest")
        data = b"one blob, two digests"
        good = "sha256:" + hashlib.sha256(data).hexdigest()
        other = "sha256:" + hashlib.sha256(b"another").hexdigest()
        for params in ([("digest", other), ("digest", good)], [("digest", good)] * 2):
            r = c.post(f"/v2/{NAME}/blobs/uploads/", params=params, content=data)
            assert r.status_code == 400, r.text
            (err,) = r.json()["errors"]
            assert err["code"] == "DIGEST_INVALID" and err["detail"]["code"] == "ref.syntax"
        r = c.post(f"/v2/{NAME}/blobs/uploads/")
        where = r.headers["location"]
        r = c.put(where, params=[("digest", other), ("digest", good)], content=data)
        assert r.status_code == 400 and r.json()["errors"][0]["code"] == "DIGEST_INVALID"
        upload_id = where.rsplit("/", 1)[1]
        (session,) = spool_root.glob(f"evstore-oci-uploads-*/{upload_id}")
        assert session.stat().st_size == 0  # the session is still there, nothing written
        assert _spooled(spool_root) == [upload_id]
    finally:
        server.stop()


def test_more_hostile_pushes_leave_nothing_behind(store_url, spool_root, tmp_path, snapshot):
    src = _source(store_url, tmp_path)
    server = _serve(store_url)
    with evstore.open(store_url) as store:
        before = snapshot(store)
    headers = {"Content-Type": _MANIFEST}

    def refused(r: httpx.Response, status: int, code: str, ours: str | None = None) -> dict:
        assert r.status_code == status, r.text
        (err,) = r.json()["errors"]
        assert err["code"] == code
        assert ours is None or err["detail"]["code"] == ours
        with evstore.open(store_url) as store:
            assert snapshot(store) == before
        return err

    try:
        c = server.client("ingest")
        # A chunked upload going over the limit in its second chunk: the session is dropped.
        r = c.post(f"/v2/{NAME}/blobs/uploads/")
        where = r.headers["location"]
        assert c.patch(where, content=b"x" * 3000).status_code == 202
        refused(c.patch(where, content=b"x" * 3000), 413, "SIZE_INVALID", "http.too-large")
        assert _spooled(spool_root) == []
        refused(c.get(where), 404, "BLOB_UPLOAD_UNKNOWN", "registry.upload-unknown")
        # A manifest pushed to a name with '..' or an empty segment.
        # (percent-encoded: a client library removes dot segments before sending)
        for bad in ("team/%2E%2E/closure", "team//closure", "%2E/closure", "team/%2e%2e"):
            r = c.put(f"/v2/{bad}/manifests/latest", content=src["manifest"], headers=headers)
            refused(r, 400, "NAME_INVALID", "registry.name")
        # A closure whose root breaks its kind's rules: a json document laid out as a
        # fragment. The import refuses it (a contract fault, 422 over /v1/): 400 here.
        _push_layout(c, NAME, tmp_path / "export")
        spooled = _spooled(spool_root)
        doc = json.loads(src["manifest"])
        for layer in doc["layers"]:
            if layer["annotations"]["dev.evstore.address"] == src["root"]:
                layer["annotations"]["dev.evstore.kind"] = "fragment"
        doc["annotations"]["dev.evstore.kind"] = "fragment"
        r = c.put(f"/v2/{NAME}/manifests/latest", content=evstore.dumps(doc), headers=headers)
        err = refused(r, 400, "MANIFEST_INVALID")
        assert err["detail"]["code"].startswith("fragment.")
        assert http_status(evstore.core.errors.error(err["detail"]["code"], "")) == 422
        assert _spooled(spool_root) == spooled  # kept for a corrected manifest (or expiry)
    finally:
        server.stop()


def test_chunks_small_and_large_make_one_blob(store_url, spool_root):
    """A small body is written on the event loop, a large or unannounced one from a thread:
    either way, the chunks of one upload in order, hashed as they arrive, one blob.
    """
    from evstore.server.registry import _INLINE_BYTES

    server = _serve(store_url, object_bytes=4 * _INLINE_BYTES)
    try:
        c = server.client("ingest")
        parts = [
            b"a small first chunk",  # declared small: inline
            bytes(range(256)) * (_INLINE_BYTES // 256 + 1),  # declared over the inline bytes
            b"an unannounced chunk " * 100,  # chunked transfer: no Content-Length
            b"",  # an empty PATCH
        ]
        r = c.post(f"/v2/{NAME}/blobs/uploads/")
        where = r.headers["location"]
        size = 0
        for i, part in enumerate(parts):
            body = iter([part[:1000], part[1000:]]) if i == 2 else part
            r = c.patch(where, content=body)
            size += len(part)
            assert r.status_code == 202, r.text
            assert r.headers["range"] == f"0-{size - 1}"
        data = b"".join(parts)
        wrong = "sha256:" + hashlib.sha256(data + b"!").hexdigest()
        r = c.put(where, params={"digest": wrong})
        assert r.status_code == 400 and r.json()["errors"][0]["code"] == "DIGEST_INVALID"
        assert _spooled(spool_root) == []  # a lying digest: the session is dropped
        r = c.post(f"/v2/{NAME}/blobs/uploads/")
        where = r.headers["location"]
        for part in parts[:2]:
            assert c.patch(where, content=part).status_code == 202
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        r = c.put(where, params={"digest": digest}, content=b"".join(parts[2:]))
        assert r.status_code == 201, r.text
        (done,) = spool_root.glob(f"evstore-oci-uploads-*/sha256-{digest[7:]}")
        assert done.read_bytes() == data
    finally:
        server.stop()
