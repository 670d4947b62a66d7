"""A token revoked while its request's body is still arriving stores nothing (attack4).

The scope is checked when the request starts; a write's body may take minutes to arrive.
A token revoked in between must not commit: the server asks again before it writes.
"""

from __future__ import annotations

import threading

import httpx
import pytest
from serverkit import make_tokens, start_thread

import evstore

DATAS = [f"part {i} of a slow upload\n".encode() for i in range(3)]


def _bulk_chunks() -> list[bytes]:
    return [f"{len(d)} {evstore.digest_bytes(d).address}\n".encode() + d for d in DATAS]


# (method, path, content type, body chunks, addresses a success would store)
CASES = {
    "bulk": (
        "POST",
        "/v1/objects/batch",
        "application/x-evstore-objects",
        _bulk_chunks(),
        [evstore.digest_bytes(d).address for d in DATAS],
    ),
    "put": (
        "PUT",
        "/v1/objects",
        "application/octet-stream",
        DATAS,
        [evstore.digest_bytes(b"".join(DATAS)).address],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_write_whose_token_is_revoked_mid_body_stores_nothing(store_url, case):
    method, path, media, chunks, addresses = CASES[case]
    token = make_tokens(store_url)["ingest"]
    token_id = token.split("_")[1]
    server = start_thread({None: store_url})
    first_sent = threading.Event()
    revoked = threading.Event()

    def body():
        yield chunks[0]
        first_sent.set()
        assert revoked.wait(30), "the token was not revoked in time"
        yield from chunks[1:]

    def revoke():
        assert first_sent.wait(30)
        with evstore.open(store_url) as store:
            evstore.revoke_token(store, token_id)
        revoked.set()

    t = threading.Thread(target=revoke)
    t.start()
    try:
        with httpx.Client(base_url=server.base, timeout=60) as c:
            r = c.request(
                method,
                path,
                content=body(),
                headers={"Authorization": f"Bearer {token}", "Content-Type": media},
            )
    finally:
        t.join(timeout=60)
        server.stop()
    assert r.status_code == 401, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["code"] == "http.unauthorized"
    with evstore.open(store_url) as store:
        assert sorted(store.has(addresses)) == sorted(addresses)  # every one missing
