"""Pushes over the OCI distribution API (issue 27, docs/registry.md#push), and oras.

A closure exported from one store (both backends) is pushed into another served store by
skopeo, by the oras SDK and by hand; every push is imported with the checks of
``archive import``, and hostile pushes leave the store as it was.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import httpx
import pytest
from serverkit import make_tokens, start_thread

import evstore

NAME = "pushed/closure"


def _source(url: str, tmp_path: Path, tag: str = "") -> dict:
    """A second store with a json document naming two blobs, exported to a tar and a dir."""
    src = tmp_path / f"src{tag}.db"
    with evstore.open(f"sqlite:///{src}", create=True) as store:
        a = store.put(b"pushed evidence one " + tag.encode()).digest.address
        b = store.put(b"pushed evidence two " + tag.encode()).digest.address
        doc = json.dumps({"note": "pushed " + tag, "items": [a, b]}).encode()
        (res,) = store.ingest([evstore.Document(doc, kind="json")]).results
        root = res.digest.address
        report = evstore.export_archive(store, [root], tmp_path / f"export{tag}.tar")
        evstore.export_archive(store, [root], tmp_path / f"export{tag}")
    digest = report.roots[0]["manifest"]
    manifest = (tmp_path / f"export{tag}" / "blobs" / "sha256" / digest[7:]).read_bytes()
    return {"root": root, "blobs": [a, b], "digest": digest, "manifest": manifest, "tag": tag}


@pytest.fixture
def target(store_url: str):
    """The test's store (empty) served with tokens required."""
    tokens = make_tokens(store_url)
    server = start_thread({None: store_url}, limits=evstore.ServerLimits(object_bytes=4096))
    server.tokens = tokens
    yield server
    server.stop()


def _client(server, scope: str = "ingest") -> httpx.Client:
    return server.client(scope)


def _push_blob(
    c: httpx.Client, name: str, data: bytes, digest: str | None = None
) -> httpx.Response:
    digest = digest or "sha256:" + hashlib.sha256(data).hexdigest()
    return c.post(f"/v2/{name}/blobs/uploads/", params={"digest": digest}, content=data)


def _push_layout(c: httpx.Client, name: str, layout: Path, skip: set[str] = frozenset()) -> None:
    for blob in sorted((layout / "blobs" / "sha256").iterdir()):
        if blob.name not in skip:
            r = _push_blob(c, name, blob.read_bytes())
            assert r.status_code == 201, r.text


def test_skopeo_pushes_an_exported_closure_and_pulls_it_back(
    store_url, target, tmp_path, require_tool
):
    src = _source(store_url, tmp_path)
    exe = require_tool("skopeo")
    host = target.base.removeprefix("http://")
    tag = src["root"][7:]
    push = subprocess.run(
        [
            exe,
            "--insecure-policy",
            "copy",
            "--dest-tls-verify=false",
            f"--dest-creds=evstore:{target.tokens['ingest']}",
            f"oci-archive:{tmp_path / 'export.tar'}:{tag}",
            f"docker://{host}/{NAME}:{tag}",
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert push.returncode == 0, push.stderr
    with evstore.open(store_url) as store:
        assert src["root"] in [e["address"] for e in store.retention.entries(NAME)]
        assert store.has([src["root"], *src["blobs"]]) == []
        assert list(store.check()) == []
    raw = subprocess.run(
        [
            exe,
            "inspect",
            "--raw",
            "--tls-verify=false",
            f"--creds=evstore:{target.tokens['read']}",
            f"docker://{host}/{NAME}:latest",
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert raw.returncode == 0, raw.stderr
    assert raw.stdout == src["manifest"]  # byte-identical both ways


def test_skopeo_pushes_into_a_store_served_with_public_reads(store_url, tmp_path, require_tool):
    """The version check answers 200 to anyone there, with the challenge skopeo needs to
    send its credentials for a push (it learns how to authenticate from that answer only).
    """
    src = _source(store_url, tmp_path)
    tokens = make_tokens(store_url)
    server = start_thread({None: store_url}, public_read=True)
    try:
        ping = httpx.get(server.base + "/v2/")
        assert ping.status_code == 200
        assert ping.headers["www-authenticate"].startswith('Bearer realm="')
        host = server.base.removeprefix("http://")
        tag = src["root"][7:]
        push = subprocess.run(
            [
                require_tool("skopeo"),
                "--insecure-policy",
                "copy",
                "--dest-tls-verify=false",
                f"--dest-creds=evstore:{tokens['ingest']}",
                f"oci-archive:{tmp_path / 'export.tar'}:{tag}",
                f"docker://{host}/{NAME}:{tag}",
            ],
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert push.returncode == 0, push.stderr
        with evstore.open(store_url) as store:
            assert src["root"] in [e["address"] for e in store.retention.entries(NAME)]
        # Anonymous reads still need nothing: the token flow hands out "anonymous".
        raw = subprocess.run(
            [require_tool("skopeo"), "inspect", "--raw", "--tls-verify=false"]
            + [f"docker://{host}/{NAME}:latest"],
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert raw.returncode == 0 and raw.stdout == src["manifest"], raw.stderr
    finally:
        server.stop()


def test_chunked_uploads_mounts_and_the_manifest_by_hand(store_url, target, tmp_path):
    src = _source(store_url, tmp_path)
    c = _client(target)
    layout = tmp_path / "export"
    first = next(iter(sorted((layout / "blobs" / "sha256").iterdir())))
    data = first.read_bytes()
    # Chunked: POST, PATCH twice (Content-Range), a status GET, then PUT with the digest.
    r = c.post(f"/v2/{NAME}/blobs/uploads/")
    assert r.status_code == 202 and r.headers["location"].startswith(f"/v2/{NAME}/blobs/uploads/")
    where = r.headers["location"]
    half = len(data) // 2
    r = c.patch(where, content=data[:half], headers={"Content-Range": f"0-{half - 1}"})
    assert r.status_code == 202 and r.headers["range"] == f"0-{half - 1}"
    bad = c.patch(where, content=b"x", headers={"Content-Range": "0-0"})  # out of order
    assert bad.status_code == 400 and bad.json()["errors"][0]["code"] == "BLOB_UPLOAD_INVALID"
    r = c.patch(where, content=data[half:], headers={"Content-Range": f"{half}-{len(data) - 1}"})
    assert c.get(where).status_code == 204
    r = c.put(where, params={"digest": "sha256:" + first.name})
    assert r.status_code == 201 and r.headers["docker-content-digest"] == "sha256:" + first.name
    assert c.get(where).json()["errors"][0]["code"] == "BLOB_UPLOAD_UNKNOWN"
    _push_layout(c, NAME, layout, skip={first.name})
    manifest_url = f"/v2/{NAME}/manifests/{src['digest']}"
    r = c.put(manifest_url, content=src["manifest"], headers={"Content-Type": _MANIFEST})
    assert r.status_code == 201, r.text
    assert r.headers["docker-content-digest"] == src["digest"]
    assert c.get(manifest_url).content == src["manifest"]
    # A blob stored already is mounted: no upload, its lease extended.
    sha = hashlib.sha256(b"pushed evidence one ").hexdigest()
    r = c.post("/v2/other/blobs/uploads/", params={"mount": f"sha256:{sha}", "from": NAME})
    assert r.status_code == 201 and r.headers["docker-content-digest"] == f"sha256:{sha}"
    r = c.post("/v2/other/blobs/uploads/", params={"mount": "sha256:" + "0" * 64})
    assert r.status_code == 202  # not stored: an upload session instead


_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def test_hostile_pushes_are_refused_with_nothing_kept(store_url, target, tmp_path, snapshot):
    src = _source(store_url, tmp_path)
    other = _source(store_url, tmp_path, "b")
    c = _client(target)
    with evstore.open(store_url) as store:
        before = snapshot(store)
    put_manifest = f"/v2/{NAME}/manifests/{src['root'][7:]}"
    headers = {"Content-Type": _MANIFEST}

    def refused(r: httpx.Response, status: int, code: str, ours: str | None = None) -> None:
        assert r.status_code == status, r.text
        (err,) = r.json()["errors"]
        assert err["code"] == code
        assert ours is None or err["detail"]["code"] == ours
        with evstore.open(store_url) as store:
            assert snapshot(store) == before

    # A manifest naming blobs never uploaded.
    r = c.put(put_manifest, content=src["manifest"], headers=headers)
    refused(r, 404, "MANIFEST_BLOB_UNKNOWN", "registry.blob-unknown")
    # A layer whose digest lies: the upload is refused and nothing of it kept.
    r = _push_blob(c, NAME, b"some bytes", "sha256:" + "1" * 64)
    refused(r, 400, "DIGEST_INVALID", "put.digest-mismatch")
    # An upload over the size limit (the server's object_bytes: 4096 here).
    r = _push_blob(c, NAME, b"x" * 5000)
    refused(r, 413, "SIZE_INVALID", "http.too-large")
    # A malformed mount digest: DIGEST_INVALID, no upload started (found by the attack).
    for bad in ("sha256:zz", "sha256:" + "A" * 64, "md5:" + "0" * 32, ""):
        r = c.post(f"/v2/{NAME}/blobs/uploads/", params={"mount": bad, "from": "other"})
        refused(r, 400, "DIGEST_INVALID", "ref.syntax")
        assert "location" not in r.headers
    # A name with '..'; a read token cannot push.
    r = _push_blob(c, "team/..x", b"abc")
    refused(r, 400, "NAME_INVALID", "registry.name")
    r = _push_blob(_client(target, "read"), NAME, b"abc")
    refused(r, 403, "DENIED", "http.forbidden")
    # A member whose address annotation lies: the import's own check, nothing written.
    _push_layout(c, NAME, tmp_path / "export")
    doc = json.loads(src["manifest"])
    doc["layers"][1]["annotations"]["dev.evstore.address"] = "blake3:" + "0" * 64
    r = c.put(put_manifest, content=evstore.dumps(doc), headers=headers)
    refused(r, 400, "MANIFEST_INVALID", "archive.address-mismatch")
    # A manifest pushed to a digest that is not its own, and to a tag not its root's.
    r = c.put(f"/v2/{NAME}/manifests/sha256:{'2' * 64}", content=src["manifest"], headers=headers)
    refused(r, 400, "MANIFEST_INVALID", "registry.manifest-invalid")
    r = c.put(f"/v2/{NAME}/manifests/v1", content=src["manifest"], headers=headers)
    refused(r, 400, "TAG_INVALID", "registry.tag")
    # Tags are immutable: latest, once it names one closure, takes no other.
    r = c.put(f"/v2/{NAME}/manifests/latest", content=src["manifest"], headers=headers)
    assert r.status_code == 201, r.text
    _push_layout(c, NAME, tmp_path / "exportb")
    with evstore.open(store_url) as store:
        before = snapshot(store)
    r = c.put(f"/v2/{NAME}/manifests/latest", content=other["manifest"], headers=headers)
    refused(r, 409, "DENIED", "registry.tag-immutable")
    r = c.put(f"/v2/{NAME}/manifests/{src['root'][7:]}", content=other["manifest"], headers=headers)
    refused(r, 400, "TAG_INVALID", "registry.tag")
    # The same manifest again is no change; the other by its own tag is accepted.
    assert c.put(
        f"/v2/{NAME}/manifests/latest", content=src["manifest"], headers=headers
    ).is_success
    r = c.put(
        f"/v2/{NAME}/manifests/{other['root'][7:]}", content=other["manifest"], headers=headers
    )
    assert r.status_code == 201
    tags = c.get(f"/v2/{NAME}/tags/list").json()["tags"]
    assert {src["root"][7:], other["root"][7:], "latest"} <= set(tags)


def test_oras_pulls_and_pushes_a_closure_and_a_blob(store_url, target, tmp_path):
    import oras.client
    import oras.container

    src = _source(store_url, tmp_path)
    host = target.base.removeprefix("http://")
    client = oras.client.OrasClient(hostname=host, insecure=True)
    client.auth.set_basic_auth("evstore", target.tokens["ingest"])
    container = oras.container.Container(f"{NAME}:{src['root'][7:]}", registry=host)
    layout = tmp_path / "export"
    doc = json.loads(src["manifest"])
    for desc in [doc["config"], *doc["layers"]]:
        path = layout / "blobs" / "sha256" / desc["digest"][7:]
        r = client.upload_blob(str(path), container, desc)
        assert r.status_code in (200, 201), r.text
    r = client.upload_manifest(doc, container)  # oras sends json.dumps: not canonical
    assert r.status_code == 201, r.text
    assert r.headers["Docker-Content-Digest"] == src["digest"]  # stored in canonical form
    with evstore.open(store_url) as store:
        assert store.has([src["root"], *src["blobs"]]) == []
        assert list(store.check()) == []
    # Pull: the manifest and every layer, byte-identical to the export.
    reader = oras.client.OrasClient(hostname=host, insecure=True)
    reader.auth.set_basic_auth("evstore", target.tokens["read"])
    pulled = reader.get_manifest(f"{host}/{NAME}:latest")
    assert evstore.dumps(pulled) == src["manifest"]
    files = reader.pull(target=f"{host}/{NAME}:latest", outdir=str(tmp_path / "oras"))
    assert len(files) == len(doc["layers"])
    for path in files:
        name = Path(path).name.removeprefix("sha256:")
        assert Path(path).read_bytes() == (layout / "blobs" / "sha256" / name).read_bytes()
    # One blob alone, by digest.
    one = doc["layers"][1]["digest"]
    out = tmp_path / "one.bin"
    reader.download_blob(container, one, str(out))
    assert hashlib.sha256(out.read_bytes()).hexdigest() == one[7:]
    client.session.close()  # requests keeps its sockets open until closed
    reader.session.close()


def test_oras_lists_referrers(store_url, target, tmp_path):
    """The oras SDK (no referrers call of its own) asks through its authenticated session."""
    import oras.client

    src = _source(store_url, tmp_path)
    c = _client(target)
    _push_layout(c, NAME, tmp_path / "export")
    r = c.put(
        f"/v2/{NAME}/manifests/latest", content=src["manifest"], headers={"Content-Type": _MANIFEST}
    )
    assert r.status_code == 201
    host = target.base.removeprefix("http://")
    reader = oras.client.OrasClient(hostname=host, insecure=True)
    reader.auth.set_basic_auth("evstore", target.tokens["read"])
    sha = hashlib.sha256(b"pushed evidence two ").hexdigest()
    r = reader.do_request(f"http://{host}/v2/{NAME}/referrers/sha256:{sha}", "GET")
    reader.session.close()
    assert r.status_code == 200
    (entry,) = r.json()["manifests"]
    assert entry["annotations"]["dev.evstore.address"] == src["root"]
