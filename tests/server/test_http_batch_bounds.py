"""A batch size larger than any count is one batch, not a 500 (attack4).

``POST P/v1/objects/batch?batch=N`` and ``Store.put_many(batch=N)`` took any N >= 1, but
an N past ``sys.maxsize`` reached ``itertools.islice`` and failed with a ValueError
(500 ``http.internal`` over HTTP). ``evstore put --batch`` bounds it at the option.
"""

from __future__ import annotations

import httpx
from serverkit import make_tokens, start_thread

import evstore

HUGE = 10**30


def test_a_huge_batch_is_one_batch_in_the_library(store):
    datas = [b"one", b"two", b"one"]
    got = store.put_many(datas, batch=HUGE)
    assert [r.new for r in got] == [True, True, False]
    assert store.has([r.digest.address for r in got]) == []


def test_a_huge_batch_is_one_batch_over_http(store_url):
    token = make_tokens(store_url)["ingest"]
    server = start_thread({None: store_url})
    datas = [b"first part", b"second part"]
    body = b"".join(f"{len(d)} {evstore.digest_bytes(d).address}\n".encode() + d for d in datas)
    try:
        with httpx.Client(base_url=server.base, timeout=60) as c:
            r = c.post(
                "/v1/objects/batch",
                params={"batch": str(HUGE)},
                content=body,
                headers={
                    "Authorization": f"Bearer {token}",
                    "Content-Type": "application/x-evstore-objects",
                },
            )
    finally:
        server.stop()
    assert r.status_code == 200, r.text
    assert [x["address"] for x in r.json()["results"]] == [
        evstore.digest_bytes(d).address for d in datas
    ]
