"""Concurrent bulk puts of the same objects all succeed (attack4).

The body of ``POST P/v1/objects/batch`` is spooled to disk, so a transaction the database
asks to run again (PostgreSQL: writers of overlapping chunks in different orders meet in
a deadlock, one of them rolled back) can read the parts again. It was handed to the store
as a one-shot generator, and the retry failed with 503 ``store.busy`` ("the streamed input
cannot be read again"): three of four concurrent writers refused.
"""

from __future__ import annotations

import random
import threading

import httpx
from serverkit import make_tokens, start_thread

import evstore

WRITERS = 4
PARTS = 5000  # above PUT_CHUNK (2000): each writer writes chunk by chunk


def test_concurrent_bulk_puts_of_the_same_objects_all_succeed(store_url):
    token = make_tokens(store_url)["ingest"]
    server = start_thread({None: store_url})
    datas = [f"written by every writer {i}\n".encode() for i in range(PARTS)]
    answers: dict[int, httpx.Response] = {}

    def write(k: int) -> None:
        mine = datas[:]
        random.Random(k).shuffle(mine)  # each writer its own order
        body = b"".join(f"{len(d)} {evstore.digest_bytes(d).address}\n".encode() + d for d in mine)
        with httpx.Client(base_url=server.base, timeout=300) as c:
            answers[k] = c.post(
                "/v1/objects/batch",
                content=body,
                params={"root": f"writer-{k % 2}"},
                headers={
                    "Authorization": f"Bearer {token}",
                    "Content-Type": "application/x-evstore-objects",
                },
            )

    threads = [threading.Thread(target=write, args=(k,)) for k in range(WRITERS)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
    finally:
        server.stop()
    assert sorted(answers) == list(range(WRITERS))
    news: dict[str, int] = {}
    for k, r in sorted(answers.items()):
        assert r.status_code == 200, (k, r.text[:300])
        results = r.json()["results"]
        assert len(results) == PARTS
        for x in results:
            news[x["address"]] = news.get(x["address"], 0) + int(x["new"])
    assert len(news) == PARTS
    assert set(news.values()) == {1}  # exactly one writer was told new, for every object
    with evstore.open(store_url) as store:
        assert store.has(list(news)) == []
