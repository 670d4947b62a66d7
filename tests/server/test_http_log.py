"""The log's routes over a real server (thread): checkpoint, entries, proofs, caching."""

from __future__ import annotations

import httpx
from serverkit import start_thread

import evstore


def test_log_routes_serve_proofs_that_verify(store_url, tmp_path):
    with evstore.open(store_url) as s:
        put = s.put(b"over http")
        s.put(b"second")
        key = tmp_path / "k"
        s.log.init_key(key)
        vkey = s.log.key()
    server = start_thread({None: store_url}, public_read=True)
    try:
        base = server.base
        r = httpx.get(f"{base}/v1/log/checkpoint")
        assert r.status_code == 404 and r.json()["code"] == "log.no-checkpoint"
        with evstore.open(store_url) as s:
            s.log.checkpoint(key)
        r = httpx.get(f"{base}/v1/log/checkpoint")
        assert r.status_code == 200 and r.text.split("\n")[1] == "2"
        assert httpx.get(f"{base}/v1/log").json()["size"] == 2
        r = httpx.get(f"{base}/v1/log/entries", params={"start": 0, "end": 2})
        assert "immutable" in r.headers["cache-control"] and len(r.json()["entries"]) == 2
        r = httpx.get(f"{base}/v1/log/entries", params={"start": 0, "end": 5})
        assert r.headers["cache-control"] == "no-cache"
        r = httpx.get(f"{base}/v1/log/proof/inclusion", params={"ref": put.digest.address})
        assert evstore.verify_log_proof(r.text, vkey, b"over http")["index"] == 0
        r = httpx.get(f"{base}/v1/log/proof/consistency", params={"old": 1})
        import json

        assert evstore.verify_log_proof(json.dumps(r.json()), vkey)["old_size"] == 1
        r = httpx.get(f"{base}/v1/log/proof/inclusion", params={"index": 9})
        assert r.status_code >= 400 and r.json()["code"] == "log.range"
    finally:
        server.stop()
