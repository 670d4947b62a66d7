"""Verify on read over the wire: corrupt small objects are 500 with no bytes, corrupt large
ones end in a broken transfer (never a complete body), and the fault is logged."""

from __future__ import annotations

import httpx
import pytest
from serverkit import corrupt


def test_a_corrupt_small_object_is_500_with_its_code_and_no_bytes(served, store_url):
    data = b"small and soon damaged" * 10
    with served.client() as c:
        address = c.put("/v1/objects", content=data).json()["address"]
    corrupt(store_url, address)
    with served.client() as c:
        for headers in ({}, {"Range": "bytes=0-3"}):
            r = c.get(f"/v1/objects/{address}", headers=headers)
            assert r.status_code == 500
            assert r.headers["content-type"] == "application/problem+json"
            assert r.json()["code"].startswith("corruption.")
            assert data[:8] not in r.content
        assert c.head(f"/v1/objects/{address}").status_code == 500
        st = c.get(f"/v1/objects/{address}/stat", params={"verify": 1})
        assert st.status_code == 500 and st.json()["code"].startswith("corruption.")
        assert c.post("/v1/missing", json={"refs": [address]}).json() == {"missing": [address]}
        cl = c.get(f"/v1/closure/{address}").json()
        assert cl["ok"] is False
    served.stop()
    assert "corruption" in served.log.read_text()


def test_a_corrupt_large_object_aborts_the_transfer(served, store_url):
    data = bytes(range(256)) * (40 * 1024 + 7)  # about 10 MiB: streamed
    with served.client() as c:
        address = c.put("/v1/objects", content=data).json()["address"]
        assert c.get(f"/v1/objects/{address}").content == data
    corrupt(store_url, address)
    with served.client() as c:
        with pytest.raises(httpx.HTTPError):  # a broken transfer, never a complete body
            with c.stream("GET", f"/v1/objects/{address}") as r:
                assert r.status_code == 200
                got = b"".join(r.iter_bytes())
                assert len(got) < len(data)  # unreachable when the transfer breaks
        # A range is served only from bytes verified on this read: a problem, no bytes.
        r = c.get(f"/v1/objects/{address}", headers={"Range": "bytes=0-99"})
        assert r.status_code == 500 and r.json()["code"].startswith("corruption.")
        # The server lives on: other objects are still served.
        ok = c.put("/v1/objects", content=b"fine").json()["address"]
        assert c.get(f"/v1/objects/{ok}").content == b"fine"
    served.stop()
    log = served.log.read_text()
    assert f"aborted the transfer of {address}" in log


def test_corruption_in_process(store_url, caplog):
    # The same two paths on uvicorn in a thread (coverage of the abort), the fault logged.
    from serverkit import make_tokens, start_thread

    tokens = make_tokens(store_url)
    server = start_thread({None: store_url})
    server.tokens = tokens
    try:
        large = bytes(range(256)) * (40 * 1024 + 3)
        with server.client() as c:
            big = c.put("/v1/objects", content=large).json()["address"]
            small = c.put("/v1/objects", content=b"tiny bytes").json()["address"]
        corrupt(store_url, big)
        corrupt(store_url, small)
        with server.client() as c:
            r = c.get(f"/v1/objects/{small}")
            assert r.status_code == 500 and r.json()["code"].startswith("corruption.")
            with pytest.raises(httpx.HTTPError), c.stream("GET", f"/v1/objects/{big}") as r:
                assert len(b"".join(r.iter_bytes())) < len(large)
        assert any(f"aborted the transfer of {big}" in m for m in caplog.messages)
        assert any("corruption on GET" in m for m in caplog.messages)
    finally:
        server.stop()
