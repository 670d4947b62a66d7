"""A token revoked while its request's body is still arriving stores nothing (attack4).

The scope is checked when the request starts; a bulk put's body may take minutes to arrive.
A token revoked in between must not commit: the store asks again before it writes.
"""

from __future__ import annotations

import threading

import httpx
from serverkit import make_tokens, start_thread

import evstore

MEDIA = "application/x-evstore-objects"


def _parts(datas: list[bytes]) -> list[bytes]:
    return [f"{len(d)} {evstore.digest_bytes(d).address}\n".encode() + d for d in datas]


def test_a_bulk_put_whose_token_is_revoked_mid_body_stores_nothing(store_url):
    tokens = make_tokens(store_url)
    token = tokens["ingest"]
    token_id = token.split("_")[1]
    server = start_thread({None: store_url})
    datas = [f"part {i} of a slow upload\n".encode() for i in range(3)]
    first_sent = threading.Event()
    revoked = threading.Event()

    def body():
        parts = _parts(datas)
        yield parts[0]
        first_sent.set()
        assert revoked.wait(30), "the token was not revoked in time"
        yield from parts[1:]

    def revoke():
        assert first_sent.wait(30)
        with evstore.open(store_url) as store:
            evstore.revoke_token(store, token_id)
        revoked.set()

    t = threading.Thread(target=revoke)
    t.start()
    try:
        with httpx.Client(base_url=server.base, timeout=60) as c:
            r = c.post(
                "/v1/objects/batch",
                content=body(),
                headers={"Authorization": f"Bearer {token}", "Content-Type": MEDIA},
            )
    finally:
        t.join(timeout=60)
        server.stop()
    assert r.status_code == 401, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["code"] == "http.unauthorized"
    with evstore.open(store_url) as store:
        addresses = [evstore.digest_bytes(d).address for d in datas]
        assert sorted(store.has(addresses)) == sorted(addresses)  # every one missing
