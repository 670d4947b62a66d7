"""The OCI distribution API (issue 27, docs/registry.md): pulls by skopeo and over HTTP.

Each test fills its store (both backends) with a json document naming two blobs, retained
under the root ``team/evidence``, and serves it on 127.0.0.1.
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
from pathlib import Path

import pytest
from serverkit import make_tokens, start_thread

import evstore

ROOT = "team/evidence"


def _fill(url: str, tag: str = "") -> dict:
    """Store two blobs and a json document naming them; retain the document under ROOT."""
    with evstore.open(url) as store:
        a = store.put(b"first evidence bytes " + tag.encode()).digest.address
        b = store.put(b"second evidence bytes " + tag.encode()).digest.address
        doc = json.dumps({"note": "refs " + tag, "items": [a, b]}).encode()
        (res,) = store.ingest([evstore.Document(doc, kind="json")]).results
        root = res.digest.address
        store.retention.retain([root], ROOT)
    return {"root": root, "blobs": [a, b]}


def _export(url: str, ref: str, out: Path) -> tuple[str, bytes]:
    """The manifest digest and bytes ``archive export`` writes for ``ref``."""
    with evstore.open(url) as store:
        report = evstore.export_archive(store, [ref], out)
    digest = report.roots[0]["manifest"]
    return digest, (out / "blobs" / "sha256" / digest[7:]).read_bytes()


@pytest.fixture
def registry(store_url: str):
    """The store served with read tokens required (the thread server, for coverage)."""
    tokens = make_tokens(store_url)
    server = start_thread({None: store_url})
    server.tokens = tokens
    yield server
    server.stop()


def _skopeo(require_tool, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    exe = require_tool("skopeo")
    return subprocess.run(
        [exe, "--insecure-policy", *args], capture_output=True, timeout=timeout, check=False
    )


def test_skopeo_pulls_a_retained_closure_byte_identical(
    store_url, empty_url, registry, tmp_path, require_tool
):
    filled = _fill(store_url)
    digest, manifest = _export(store_url, filled["root"], tmp_path / "exported")
    host = registry.base.removeprefix("http://")
    creds = f"--creds=evstore:{registry.tokens['read']}"
    raw = _skopeo(
        require_tool, "inspect", "--raw", "--tls-verify=false", creds, f"docker://{host}/{ROOT}"
    )
    assert raw.returncode == 0, raw.stderr
    assert raw.stdout == manifest  # the tag latest: the closure manifest export writes
    out = tmp_path / "pulled"
    copy = _skopeo(
        require_tool,
        "copy",
        "--src-tls-verify=false",
        f"--src-creds=evstore:{registry.tokens['read']}",
        f"docker://{host}/{ROOT}@{digest}",
        f"oci:{out}",
    )
    assert copy.returncode == 0, copy.stderr
    for path in (out / "blobs" / "sha256").iterdir():  # every pulled file as exported
        twin = tmp_path / "exported" / "blobs" / "sha256" / path.name
        assert path.read_bytes() == twin.read_bytes()
    assert evstore.verify_archive(out).ok
    with evstore.open(empty_url, create=True) as fresh:
        got = evstore.import_archive(fresh, out)
        assert got.roots[0]["address"] == filled["root"]
        assert {i.address for i in fresh.ls()} == {filled["root"]}
        assert all(fresh.has([a]) == [] for a in filled["blobs"])
        assert list(fresh.check()) == []
    # Without credentials a store that is not public refuses, with a bearer challenge.
    denied = _skopeo(
        require_tool, "inspect", "--raw", "--tls-verify=false", f"docker://{host}/{ROOT}"
    )
    assert denied.returncode != 0


def test_the_pull_routes_speak_the_distribution_spec(store_url, registry):
    filled = _fill(store_url)
    root_hex = filled["root"][7:]
    with evstore.open(store_url) as store:
        sha_a = store.stat(filled["blobs"][0])["sha256"]
        bytes_a = store.get(filled["blobs"][0])
    anon = registry.client(None)
    r = anon.get("/v2/")
    assert r.status_code == 401
    challenge = r.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="') and 'service="evstore"' in challenge
    assert r.headers["docker-distribution-api-version"] == "registry/2.0"
    r = anon.get(f"/v2/{ROOT}/manifests/latest")
    assert r.status_code == 401 and r.json()["errors"][0]["code"] == "UNAUTHORIZED"
    assert f'scope="repository:{ROOT}:pull"' in r.headers["www-authenticate"]
    # The token flow: basic auth with an evstore token as the password gives a bearer.
    basic = base64.b64encode(f"me:{registry.tokens['read']}".encode()).decode()
    r = anon.get(
        "/v2/token", params={"service": "evstore"}, headers={"Authorization": f"Basic {basic}"}
    )
    assert r.status_code == 200
    bearer = r.json()["token"]
    bad = anon.get(
        "/v2/token", headers={"Authorization": "Basic " + base64.b64encode(b"x:y").decode()}
    )
    assert bad.status_code == 401
    c = registry.client(None)
    c.headers["Authorization"] = f"Bearer {bearer}"
    assert c.get("/v2/").status_code == 200
    by_basic = anon.get(f"/v2/{ROOT}/tags/list", headers={"Authorization": f"Basic {basic}"})
    assert by_basic.status_code == 200
    # Tags: every entry's BLAKE3 hex and latest; pages with n and last, a Link to the next.
    r = c.get(f"/v2/{ROOT}/tags/list")
    assert r.json() == {"name": ROOT, "tags": sorted([root_hex, "latest"])}
    first = c.get(f"/v2/{ROOT}/tags/list", params={"n": 1})
    assert len(first.json()["tags"]) == 1 and 'rel="next"' in first.headers["link"]
    link = first.headers["link"].split(";")[0].strip("<>")
    rest = c.get(link)
    assert first.json()["tags"] + rest.json()["tags"] == sorted([root_hex, "latest"])
    assert "link" not in rest.headers
    # Manifests by tag and by digest, HEAD with the same headers.
    r = c.get(f"/v2/{ROOT}/manifests/latest")
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/vnd.oci.image.manifest.v1+json"
    digest = "sha256:" + hashlib.sha256(r.content).hexdigest()
    assert r.headers["docker-content-digest"] == digest
    assert c.get(f"/v2/{ROOT}/manifests/{root_hex}").content == r.content
    assert c.get(f"/v2/{ROOT}/manifests/{digest}").content == r.content
    h = c.head(f"/v2/{ROOT}/manifests/{digest}")
    assert h.status_code == 200 and h.content == b""
    assert int(h.headers["content-length"]) == len(r.content)
    layers = json.loads(r.content)["layers"]
    assert [x["annotations"]["dev.evstore.address"] for x in layers][0] == filled["root"]
    # Blobs by SHA-256, whole and by range; the empty config too.
    r = c.get(f"/v2/{ROOT}/blobs/{sha_a}")
    assert r.content == bytes_a and r.headers["docker-content-digest"] == sha_a
    r = c.get(f"/v2/{ROOT}/blobs/{sha_a}", headers={"Range": "bytes=2-5"})
    assert r.status_code == 206 and r.content == bytes_a[2:6]
    config = json.loads(c.get(f"/v2/{ROOT}/manifests/latest").content)["config"]["digest"]
    assert c.get(f"/v2/{ROOT}/blobs/{config}").content == b"{}"
    assert c.head(f"/v2/{ROOT}/blobs/{sha_a}").headers["content-length"] == str(len(bytes_a))
    # OCI error bodies, carrying evstore's code.
    for path, status, code, ours in (
        ("/v2/nobody/manifests/latest", 404, "NAME_UNKNOWN", "not-found.root"),
        (f"/v2/{ROOT}/manifests/{'0' * 64}", 404, "MANIFEST_UNKNOWN", "registry.manifest-unknown"),
        (f"/v2/{ROOT}/manifests/sha256:{'0' * 64}", 404, "MANIFEST_UNKNOWN", None),
        (f"/v2/{ROOT}/blobs/sha256:{'0' * 64}", 404, "BLOB_UNKNOWN", "not-found.blob"),
        (f"/v2/{ROOT}/blobs/sha256:XYZ", 400, "DIGEST_INVALID", "ref.syntax"),
        ("/v2/team/..evidence/tags/list", 400, "NAME_INVALID", "registry.name"),
    ):
        r = c.get(path)
        assert r.status_code == status, (path, r.text)
        (err,) = r.json()["errors"]
        assert err["code"] == code and err["message"]
        assert ours is None or err["detail"]["code"] == ours


def test_public_read_needs_no_token_and_latest_follows_retention(store_url, tmp_path):
    first = _fill(store_url, "one")
    second = _fill(store_url, "two")  # retained later: the tag latest
    server = start_thread({None: store_url}, public_read=True)
    try:
        c = server.client(None)
        assert c.get("/v2/").status_code == 200
        tags = c.get(f"/v2/{ROOT}/tags/list").json()["tags"]
        assert set(tags) == {first["root"][7:], second["root"][7:], "latest"}
        latest = c.get(f"/v2/{ROOT}/manifests/latest")
        assert json.loads(latest.content)["annotations"]["dev.evstore.root"] == second["root"]
        assert c.get("/v2/token").json()["token"] == "anonymous"
    finally:
        server.stop()


def test_referrers_list_what_refers_to_an_object(store_url, registry):
    filled = _fill(store_url)
    with evstore.open(store_url) as store:
        sha_a = store.stat(filled["blobs"][0])["sha256"]
        sha_doc = store.stat(filled["root"])["sha256"]
    c = registry.client("read")
    r = c.get(f"/v2/{ROOT}/referrers/{sha_a}")
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/vnd.oci.image.index.v1+json"
    index = r.json()
    (entry,) = index["manifests"]
    assert entry["annotations"]["dev.evstore.address"] == filled["root"]
    assert entry["annotations"]["dev.evstore.role"] == "mentions"
    assert entry["artifactType"] == "application/vnd.evstore.closure.v1"
    manifest = c.get(f"/v2/{ROOT}/manifests/{entry['digest']}")  # the referrer's closure
    assert manifest.status_code == 200 and len(manifest.content) == entry["size"]
    kept = c.get(
        f"/v2/{ROOT}/referrers/{sha_a}",
        params={"artifactType": "application/vnd.evstore.closure.v1"},
    )
    assert kept.json() == index and kept.headers["oci-filters-applied"] == "artifactType"
    other = c.get(f"/v2/{ROOT}/referrers/{sha_a}", params={"artifactType": "text/plain"})
    assert other.json()["manifests"] == []
    assert c.get(f"/v2/{ROOT}/referrers/{sha_doc}").json()["manifests"] == []  # nothing refers
    assert c.get(f"/v2/{ROOT}/referrers/sha256:{'0' * 64}").json()["manifests"] == []
    bad = c.get(f"/v2/{ROOT}/referrers/sha256:nothex")
    assert bad.status_code == 400 and bad.json()["errors"][0]["code"] == "DIGEST_INVALID"
