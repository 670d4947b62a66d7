"""Objects and queries over HTTP, against a real server (subprocess, then in a thread)."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess

import pytest
from serverkit import EVSTORE, make_tokens, start_process

import evstore

IMMUTABLE = "public, max-age=31536000, immutable"


def _repr_digest(data: bytes) -> str:
    return "sha-256=:" + base64.b64encode(hashlib.sha256(data).digest()).decode() + ":"


def _forms(data: bytes) -> list[str]:
    d = evstore.digest_bytes(data)
    return [
        d.address,
        "sha256:" + d.sha256,
        "sha256:" + d.sha256_b64u,
        "object-store:sha256:" + d.sha256_b64u,
    ]


def _problem(r, status: int, code: str) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert body["code"] == code and body["status"] == status
    assert body["type"] == f"https://evstore.dev/errors/{code}"
    assert {"title", "detail", "rule", "pointer", "errors"} <= set(body)
    assert body["errors"][0]["code"] == code
    return body


def test_about(served_any, store_url):
    with served_any.client(None) as c:
        r = c.get("/v1")
    backend = "sqlite" if store_url.startswith("sqlite") else "postgresql"
    assert r.json() == {
        "store": None,
        "evstore": r.json()["evstore"],
        "backend": backend,
        "public_read": False,
    }


def test_put_get_head_every_ref_form_and_headers(served_any):
    data = b"hello over the wire\n"
    with served_any.client() as c:
        r = c.put("/v1/objects", content=data)
        assert r.status_code == 201 and r.json()["new"] is True
        put = r.json()
        assert put["address"] == evstore.digest_bytes(data).address
        again = c.post("/v1/objects", content=data)
        assert again.status_code == 200 and again.json()["new"] is False
        for ref in _forms(data):
            g = c.get(f"/v1/objects/{ref}")
            assert g.status_code == 200 and g.content == data
            assert g.headers["etag"] == f'"{put["address"]}"'
            assert g.headers["cache-control"] == IMMUTABLE
            assert g.headers["repr-digest"] == _repr_digest(data)
            assert g.headers["content-type"] == "application/octet-stream"
            assert g.headers["accept-ranges"] == "bytes"
            assert g.headers["content-length"] == str(len(data))
            h = c.head(f"/v1/objects/{ref}")
            assert h.status_code == 200 and h.content == b""
            assert {k: v for k, v in h.headers.items() if k != "date"} == {
                k: v for k, v in g.headers.items() if k != "date"
            }


def test_artifacts_are_json_and_described(served_any):
    doc = {"evidence": "x", "n": 1}
    with served_any.client() as c:
        r = c.post("/v1/ingest", json={"documents": [{"name": "a.json", "document": doc}]})
        assert r.status_code == 200, r.text
        report = r.json()
        assert report["ok"] is True and report["documents"] == 1
        address = report["artifacts"][0]["address"]
        g = c.get(f"/v1/objects/{address}")
        assert g.headers["content-type"] == "application/json"
        assert json.loads(g.content) == doc
        a = c.get(f"/v1/artifacts/{address}").json()
        assert a["address"] == address and a["size"] == len(g.content)
        assert [k["kind"] for k in a["kinds"]] == ["json"]
        assert a["warnings"] == [] and a["edges"] == [] and a["referrers"] == []
        assert a["sha256"] == "sha256:" + hashlib.sha256(g.content).hexdigest()
        st = c.get(f"/v1/objects/{address}/stat", params={"verify": 1}).json()
        assert st["verified"] is True and st["artifacts"][0]["kind"] == "json"
        blob = c.put("/v1/objects", content=b"plain").json()["address"]
        _problem(c.get(f"/v1/artifacts/{blob}"), 404, "not-found.artifact")


def test_304_and_ranges(served_any):
    data = bytes(range(256)) * 4
    with served_any.client() as c:
        address = c.put("/v1/objects", content=data).json()["address"]
        url = f"/v1/objects/{address}"
        etag = f'"{address}"'
        for inm in (etag, f"W/{etag}", f'"other", {etag}', "*"):
            r = c.get(url, headers={"If-None-Match": inm})
            assert r.status_code == 304 and r.content == b""
            assert r.headers["etag"] == etag and r.headers["cache-control"] == IMMUTABLE
        assert c.get(url, headers={"If-None-Match": '"other"'}).status_code == 200
        cases = {
            "bytes=0-9": (0, 10),
            "bytes=1000-": (1000, 1024),
            "bytes=-24": (1000, 1024),
            "bytes=1020-5000": (1020, 1024),
        }
        for spec, (a, b) in cases.items():
            r = c.get(url, headers={"Range": spec})
            assert r.status_code == 206, spec
            assert r.content == data[a:b]
            assert r.headers["content-range"] == f"bytes {a}-{b - 1}/1024"
            assert r.headers["content-length"] == str(b - a)
            assert r.headers["repr-digest"] == _repr_digest(data)  # of the whole object
            h = c.head(url, headers={"Range": spec})
            assert h.status_code == 206 and h.headers["content-range"] == r.headers["content-range"]
        for spec in ("bytes=1024-", "bytes=5000-6000", "bytes=-0"):
            r = c.get(url, headers={"Range": spec})
            _problem(r, 416, "http.range")
            assert r.headers["content-range"] == "bytes */1024"
        for spec in ("bytes=0-1,5-6", "items=0-1", "bytes=x-y", "bytes=9-3"):
            r = c.get(url, headers={"Range": spec})
            assert r.status_code == 200 and r.content == data, spec
        stale = c.get(url, headers={"Range": "bytes=0-1", "If-Range": '"other"'})
        assert stale.status_code == 200 and stale.content == data
        fresh = c.get(url, headers={"Range": "bytes=0-1", "If-Range": etag})
        assert fresh.status_code == 206 and fresh.content == data[:2]


def test_large_objects_stream_with_the_same_headers(served_any):
    data = (b"0123456789abcdef" * 65536) * 9 + b"tail"  # 9 MiB + 4: streamed, not small
    with served_any.client() as c:
        address = c.put("/v1/objects", content=data).json()["address"]
        url = f"/v1/objects/{address}"
        g = c.get(url)
        assert g.status_code == 200 and g.content == data
        assert g.headers["content-length"] == str(len(data))
        assert g.headers["repr-digest"] == _repr_digest(data)
        h = c.head(url)
        assert h.headers["content-length"] == str(len(data)) and h.content == b""
        r = c.get(url, headers={"Range": f"bytes={len(data) - 10}-"})
        assert r.status_code == 206 and r.content == data[-10:]
        mid = c.get(url, headers={"Range": "bytes=1048570-2097160"})
        assert mid.content == data[1048570:2097161]


def test_put_expect_mismatch_stores_nothing(served_any, store_url, snapshot):
    with evstore.open(store_url) as store:
        before = snapshot(store)
    with served_any.client() as c:
        other = evstore.digest_bytes(b"other bytes")
        for expect in (other.address, "sha256:" + other.sha256):
            r = c.put("/v1/objects", params={"expect": expect}, content=b"these bytes")
            body = _problem(r, 422, "put.digest-mismatch")
            assert body["details"]["expected"] == expect
        _problem(c.put("/v1/objects", params={"expect": "md5:x"}, content=b"x"), 400, "ref.syntax")
    with evstore.open(store_url) as store:
        assert snapshot(store) == before
    with served_any.client() as c:
        good = evstore.digest_bytes(b"these bytes")
        for expect in _forms(b"these bytes"):
            r = c.put("/v1/objects", params={"expect": expect}, content=b"these bytes")
            assert r.status_code in (200, 201) and r.json()["address"] == good.address


def test_missing_ls_find_refs_closure(served_any):
    with served_any.client() as c:
        addresses = sorted(
            c.put("/v1/objects", content=b"b%d" % i).json()["address"] for i in range(5)
        )
        absent = "blake3:" + "0" * 64
        r = c.post("/v1/missing", json={"refs": [addresses[0], absent, "sha256:" + "1" * 64]})
        assert r.json() == {"missing": [absent, "sha256:" + "1" * 64]}
        _problem(c.post("/v1/missing", json={"refs": ["nope"]}), 400, "ref.syntax")
        _problem(c.post("/v1/missing", json={"refs": [1]}), 400, "http.request")
        _problem(
            c.post("/v1/missing", content=b'{"refs": [], "refs": []}'), 400, "json.duplicate-key"
        )
        seen, after = [], None
        for _ in range(10):
            params = {"blobs": 1, "limit": 2, **({"after": after} if after else {})}
            page = c.get("/v1/ls", params=params).json()
            seen += [i["address"] for i in page["items"]]
            after = page["next"]
            if after is None:
                break
        assert seen == addresses
        _problem(c.get("/v1/ls", params={"limit": 0}), 400, "http.request")
        _problem(c.get("/v1/ls", params={"kind": "nope"}), 400, "kind.unknown")
        _problem(c.get("/v1/ls", params={"after": "garbage"}), 400, "input.invalid")
        doc = {"key": "value"}
        c.post("/v1/ingest", json={"documents": [{"document": doc, "kind": "json"}]})
        arts = c.get("/v1/ls").json()
        assert [a["kind"] for a in arts["items"]] == ["json"] and arts["next"] is None
        find = {"name": "manifest_ref", "value": "m"}
        _problem(c.get("/v1/find", params={**find, "kind": "nope"}), 400, "kind.unknown")
        _problem(c.get("/v1/find", params=find), 404, "not-found.artifact")
        address = arts["items"][0]["address"]
        assert c.get(f"/v1/refs/{address}").json() == {"ref": address, "refs": []}
        cl = c.get(f"/v1/closure/{address}").json()
        assert cl["ok"] is True and cl["root"] == address and cl["objects"] == 1
        _problem(c.get(f"/v1/refs/{absent}"), 404, "not-found.blob")


def test_ingest_and_validate_match_the_cli(served_any, store_url, tmp_path, snapshot):
    doc = {"a": [1, 2.5, "x"]}
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    cli = subprocess.run(
        [EVSTORE, "--store", store_url, "--json", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    with served_any.client() as c:
        v = c.post("/v1/validate", json={"documents": [{"name": str(path), "document": doc}]})
        assert v.status_code == 200
        assert v.json() == json.loads(cli.stdout)
        r = c.post("/v1/ingest", json={"documents": [{"name": str(path), "document": doc}]})
        cli = subprocess.run(
            [EVSTORE, "--store", store_url, "--json", "ingest", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        remote, local = r.json(), json.loads(cli.stdout)
        assert remote["artifacts"][0]["address"] == local["artifacts"][0]["address"]
        assert remote["artifacts"][0]["new"] is True and local["artifacts"][0]["new"] is False
    with evstore.open(store_url) as store:
        before = snapshot(store)
    bad = {"documents": [{"document": {"x": 1}, "kind": "manifest"}]}
    with served_any.client() as c:
        v = c.post("/v1/validate", json=bad)
        body = v.json()
        assert v.status_code == 422 and v.headers["content-type"] == "application/problem+json"
        assert body["report"]["ok"] is False and len(body["errors"]) == len(
            body["report"]["faults"]
        )
        assert body["code"] == body["report"]["faults"][0]["code"]
        i = c.post("/v1/ingest", json=bad)
        assert i.status_code == 422 and i.json()["code"] == body["code"]
        assert i.json()["pointer"] == body["pointer"]
        _problem(c.post("/v1/ingest", json={"documents": {}}), 400, "http.request")
        _problem(c.post("/v1/ingest", json={"bogus": 1}), 400, "http.request")
        _problem(c.post("/v1/ingest", json={"root": 5}), 400, "http.request")
        _problem(c.post("/v1/ingest", json={"root": "../x"}), 400, "root.name")
        _problem(c.post("/v1/ingest", json={"content": ["***"]}), 400, "http.request")
        _problem(c.post("/v1/ingest", content=b"{"), 400, "json.syntax")
        _problem(
            c.post("/v1/ingest", json={"documents": [{"document": {}, "kind": "nope"}]}),
            400,
            "kind.unknown",
        )
    with evstore.open(store_url) as store:
        assert snapshot(store) == before


def test_never_a_traceback_or_html(served_any):
    with served_any.client() as c:
        _problem(c.get("/"), 404, "http.route")
        _problem(c.get("/v1/nothing/here"), 404, "http.route")
        _problem(c.delete("/v1/objects"), 405, "http.method")
        _problem(c.get("/v1/objects/not-a-ref"), 400, "ref.syntax")
        _problem(c.get("/v1/objects/" + "blake3:" + "0" * 64), 404, "not-found.blob")
        _problem(c.get("/v1/find"), 400, "http.request")
        _problem(c.get("/v1/ls", params={"blobs": "maybe"}), 400, "http.request")
        spec = c.get("/openapi.json").json()
        assert "/v1/objects/{ref}" in spec["paths"] and spec["openapi"].startswith("3.")


@pytest.mark.parametrize("scope", ["read"])
def test_public_read(store_url, tmp_path, scope):
    tokens = make_tokens(store_url)
    server = start_process(
        ["--store", store_url, "serve", "--public-read", "--no-access-log"], tmp_path
    )
    try:
        server.tokens = tokens
        with server.client(None) as anon, server.client("ingest") as writer:
            assert anon.get("/v1").json()["public_read"] is True
            address = writer.put("/v1/objects", content=b"pub").json()["address"]
            assert anon.get(f"/v1/objects/{address}").content == b"pub"
            _problem(anon.put("/v1/objects", content=b"no"), 401, "http.unauthorized")
            with server.client(scope) as reader:
                _problem(reader.put("/v1/objects", content=b"no"), 403, "http.forbidden")
    finally:
        assert server.stop() == 0
