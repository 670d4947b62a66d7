"""Named stores over the OCI distribution API (issue 27, docs/registry.md#named-stores).

``evstore serve lab=URL side=URL`` answers registry tools at the root's ``/v2/``, a
repository named with its store's name in front (``lab/team/evidence``): skopeo pulls from
one store and pushes into the other, each with that store's tokens. Both backends (the
test's store is ``lab``; ``side`` is a SQLite store of its own).
"""

from __future__ import annotations

import base64
import subprocess

import pytest
from serverkit import make_tokens, start_thread
from test_http_registry import ROOT, _export, _fill

import evstore


@pytest.fixture
def named(store_url: str, empty_url: str):
    """The test's store as ``lab`` and an empty store as ``side``, tokens required."""
    evstore.open(empty_url, create=True).close()
    tokens = {"lab": make_tokens(store_url), "side": make_tokens(empty_url)}
    server = start_thread({"lab": store_url, "side": empty_url})
    server.tokens = tokens
    server.urls = {"lab": store_url, "side": empty_url}
    yield server
    server.stop()


def _skopeo(require_tool, *args: str) -> subprocess.CompletedProcess:
    exe = require_tool("skopeo")
    return subprocess.run(
        [exe, "--insecure-policy", *args], capture_output=True, timeout=120, check=False
    )


def test_skopeo_pulls_from_one_named_store_and_pushes_into_another(
    store_url, named, tmp_path, require_tool
):
    filled = _fill(store_url)
    digest, manifest = _export(store_url, filled["root"], tmp_path / "exported")
    host = named.base.removeprefix("http://")
    lab_read = f"evstore:{named.tokens['lab']['read']}"
    raw = _skopeo(
        require_tool,
        "inspect",
        "--raw",
        "--tls-verify=false",
        f"--creds={lab_read}",
        f"docker://{host}/lab/{ROOT}",
    )
    assert raw.returncode == 0, raw.stderr
    assert raw.stdout == manifest
    out = tmp_path / "pulled"
    pull = _skopeo(
        require_tool,
        "copy",
        "--src-tls-verify=false",
        f"--src-creds={lab_read}",
        f"docker://{host}/lab/{ROOT}@{digest}",
        f"oci:{out}",
    )
    assert pull.returncode == 0, pull.stderr
    assert evstore.verify_archive(out).ok
    # The other store's token cannot read lab's repository.
    other = _skopeo(
        require_tool,
        "inspect",
        "--raw",
        "--tls-verify=false",
        f"--creds=evstore:{named.tokens['side']['read']}",
        f"docker://{host}/lab/{ROOT}",
    )
    assert other.returncode != 0
    # Pushed into side (its ingest token): imported, retained under the root "pushed".
    push = _skopeo(
        require_tool,
        "copy",
        "--dest-tls-verify=false",
        f"--dest-creds=evstore:{named.tokens['side']['ingest']}",
        f"oci:{out}",
        f"docker://{host}/side/pushed:{filled['root'][7:]}",
    )
    assert push.returncode == 0, push.stderr
    with evstore.open(named.urls["side"]) as side:
        assert [e["address"] for e in side.retention.entries("pushed")] == [filled["root"]]
        assert side.has([filled["root"], *filled["blobs"]]) == []
        assert list(side.check()) == []
    with evstore.open(store_url) as lab:  # nothing crossed into lab
        assert lab.retention.entries("pushed") == []


def test_the_root_v2_names_repositories_with_their_store(store_url, named):
    _fill(store_url)
    lab, side = named.client(None), named.client(None)
    lab.headers["Authorization"] = f"Bearer {named.tokens['lab']['read']}"
    side.headers["Authorization"] = f"Bearer {named.tokens['side']['ingest']}"
    anon = named.client(None)
    # The version check: any store's token; none gets the root's token realm.
    assert lab.get("/v2/").status_code == 200 and side.get("/v2/").status_code == 200
    r = anon.get("/v2/")
    assert r.status_code == 401
    assert f'realm="{named.base}/v2/token"' in r.headers["www-authenticate"]
    basic = base64.b64encode(f"u:{named.tokens['side']['read']}".encode()).decode()
    r = anon.get("/v2/token", headers={"Authorization": f"Basic {basic}"})
    assert r.status_code == 200 and r.json()["token"] == named.tokens["side"]["read"]
    # A repository's store is its first segment; the answers name it that way.
    r = lab.get(f"/v2/lab/{ROOT}/tags/list", params={"n": 1})
    assert r.status_code == 200 and r.json()["name"] == f"lab/{ROOT}"
    assert r.headers["link"].startswith(f"</v2/lab/{ROOT}/tags/list?n=1&last=")
    r = anon.get(f"/v2/lab/{ROOT}/tags/list")
    assert r.status_code == 401
    assert f'scope="repository:lab/{ROOT}:pull"' in r.headers["www-authenticate"]
    r = side.post("/v2/side/pushed/blobs/uploads/")
    assert r.status_code == 202 and r.headers["location"].startswith("/v2/side/pushed/blobs/")
    assert side.get(r.headers["location"]).status_code == 204
    # The same store under its own prefix keeps working, and its answers say that prefix.
    r = side.post("/side/v2/pushed/blobs/uploads/")
    assert r.status_code == 202 and r.headers["location"].startswith("/side/v2/pushed/blobs/")
    # A token of one store does not reach the other's repositories.
    assert side.get(f"/v2/lab/{ROOT}/tags/list").json()["errors"][0]["code"] == "UNAUTHORIZED"
    # No store of that name: the OCI NAME_UNKNOWN.
    for path in ("/v2/nostore/x/tags/list", "/v2/lab", "/v2/v1/x/manifests/latest"):
        r = lab.get(path)
        assert r.status_code == 404, path
        assert r.json()["errors"][0]["code"] == "NAME_UNKNOWN", path
