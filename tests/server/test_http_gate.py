"""GET of an object in one statement (issue 29): the token and the object read together,
awaited on the event loop (no worker thread), revocation still taking effect on the next
request, the token decided before the object; when the loop's statement cannot run, the
worker-thread path answers the same."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest
from serverkit import corrupt, make_tokens, start_thread

import evstore
from evstore.access.gate import LOOP_BYTES_MAX
from evstore.db.engine import Database
from evstore.db.loopread import LoopReads
from evstore.db.rawread import FALLBACK


def _count_statements(monkeypatch) -> list[tuple[str, str]]:
    """Every point read from now on: ``(where, thread name)``, where is loop or thread."""
    calls: list[tuple[str, str]] = []
    on_thread, on_loop = Database.point_row, LoopReads.row

    def thread_read(self, sql, params):
        calls.append(("thread", threading.current_thread().name))
        return on_thread(self, sql, params)

    async def loop_read(self, sql, params):
        calls.append(("loop", threading.current_thread().name))
        return await on_loop(self, sql, params)

    monkeypatch.setattr(Database, "point_row", thread_read)
    monkeypatch.setattr(LoopReads, "row", loop_read)
    return calls


def test_a_get_reads_token_and_object_in_one_statement_on_the_loop(store_url, monkeypatch):
    server = start_thread({None: store_url})
    try:
        server.tokens = make_tokens(store_url)
        with server.client("ingest") as c:
            address = c.put("/v1/objects", content=b"one statement").json()["address"]
        calls = _count_statements(monkeypatch)
        with server.client("read") as c:
            r = c.get(f"/v1/objects/{address}")
        assert r.status_code == 200 and r.content == b"one statement"
        # token, head and bytes: was three statements, then one in a worker thread; now one
        # on the thread that runs the server's event loop
        assert calls == [("loop", server.thread.name)], calls
        calls.clear()
        with server.client("read") as c:  # the token check of other routes: on the loop too
            assert c.get(f"/v1/objects/{address}/stat").status_code == 200
        assert calls and calls[0] == ("loop", server.thread.name), calls
    finally:
        server.stop()


def test_an_object_over_the_loop_bound_is_read_and_verified_by_the_general_path(
    store_url, monkeypatch
):
    data = os.urandom(LOOP_BYTES_MAX + 1)  # inline (under 1 MiB), too large to hash on the loop
    server = start_thread({None: store_url})
    try:
        server.tokens = make_tokens(store_url)
        with server.client("ingest") as c:
            address = c.put("/v1/objects", content=data).json()["address"]
            small = c.put("/v1/objects", content=data[:LOOP_BYTES_MAX]).json()["address"]
        calls = _count_statements(monkeypatch)
        with server.client("read") as c:
            assert c.get(f"/v1/objects/{small}").content == data[:LOOP_BYTES_MAX]
            assert [w for w, _ in calls] == ["loop"]
            r = c.get(f"/v1/objects/{address}")
            assert r.status_code == 200 and r.content == data
        corrupt(store_url, address)
        with server.client("read") as c:
            r = c.get(f"/v1/objects/{address}")
        assert r.status_code == 500 and r.json()["code"].startswith("corruption.")
        assert data not in r.content
    finally:
        server.stop()


def test_when_the_loop_statement_cannot_run_the_thread_path_answers_the_same(
    store_url, monkeypatch
):
    server = start_thread({None: store_url})
    try:
        server.tokens = make_tokens(store_url)
        with server.client("ingest") as c:
            address = c.put("/v1/objects", content=b"fallback").json()["address"]

        async def cannot(self, sql, params):
            return FALLBACK

        monkeypatch.setattr(LoopReads, "row", cannot)
        with server.client("read") as c:
            r = c.get(f"/v1/objects/{address}")
            assert r.status_code == 200 and r.content == b"fallback"
            assert c.get(f"/v1/objects/{address}/stat").status_code == 200
        with server.client(None) as c:
            wrong = {"Authorization": "Bearer evst_000000000000_" + "A" * 43}
            assert c.get(f"/v1/objects/{address}", headers=wrong).status_code == 401
            assert c.get(f"/v1/objects/{address}").status_code == 401
        with server.client("read") as c:
            assert c.put("/v1/objects", content=b"x").status_code == 403
    finally:
        server.stop()


def test_the_loop_connection_on_sqlite_never_waits_and_never_writes(tmp_path):
    url = f"sqlite:///{tmp_path / 'loop.db'}"
    evstore.open(url, create=True).close()
    with evstore.open(url) as store:
        reads = evstore.open_loop_reads(store)

        async def read() -> list[object]:
            try:
                return [
                    await reads.row("PRAGMA busy_timeout", ()),  # a lock: SQLITE_BUSY at once
                    await reads.row("PRAGMA query_only", ()),
                    await reads.row("DELETE FROM tokens", ()),  # refused: FALLBACK
                    await reads.row("SELECT count(*) FROM tokens", ()),  # a new connection
                ]
            finally:
                await reads.aclose()

        evstore.create_token(store, "read")
        timeout, query_only, write, count = asyncio.run(read())
        assert (timeout, query_only) == ((0,), (1,))
        assert write is FALLBACK and count == (1,)
        assert asyncio.run(reads.row("SELECT 1", ())) is FALLBACK  # closed


def test_a_loop_read_cancelled_mid_statement_leaves_no_broken_connection(store_url):
    if not store_url.startswith("postgresql"):
        pytest.skip("SQLite's loop statement is not awaited: nothing to cancel")
    with evstore.open(store_url) as store:
        reads = evstore.open_loop_reads(store, 1)  # one connection: the next read reuses it

        async def cancelled_then_read() -> object:
            try:
                slow = asyncio.ensure_future(reads.row("SELECT pg_sleep(3)", ()))
                await asyncio.sleep(0.5)
                slow.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await slow
                return await reads.row("SELECT 41 + 1", ())
            finally:
                await reads.aclose()

        assert asyncio.run(cancelled_then_read()) == (42,)


@pytest.mark.parametrize("how", ["library", "http"])
def test_a_revoked_token_is_refused_from_the_next_get_on(store_url, how):
    server = start_thread({None: store_url})
    try:
        server.tokens = make_tokens(store_url)
        with server.client("ingest") as c:
            address = c.put("/v1/objects", content=b"revocable").json()["address"]
        made = make_tokens(store_url)["read"]
        server.tokens["made"] = made
        url = f"/v1/objects/{address}"
        with server.client("made") as c:
            for _ in range(3):  # warm: any cache would now hold the token as live
                assert c.get(url).content == b"revocable"
            token_id = made.split("_")[1]
            if how == "library":  # another connection, as `evstore token revoke` does
                with evstore.open(store_url) as store:
                    evstore.revoke_token(store, token_id)
            else:
                with server.client("admin") as admin:
                    assert admin.delete(f"/v1/tokens/{token_id}").status_code == 200
            r = c.get(url)
            assert r.status_code == 401 and r.json()["code"] == "http.unauthorized"
            assert b"revocable" not in r.content
            assert c.head(url).status_code == 401
            assert c.get(url, headers={"If-None-Match": "*"}).status_code == 401
    finally:
        server.stop()


def test_a_bad_token_learns_nothing_of_a_corrupt_or_missing_object(store_url):
    server = start_thread({None: store_url})
    try:
        server.tokens = make_tokens(store_url)
        with server.client("ingest") as c:
            address = c.put("/v1/objects", content=b"damaged soon" * 4).json()["address"]
        corrupt(store_url, address)
        wrong = {"Authorization": "Bearer evst_000000000000_" + "A" * 43}
        missing = "blake3:" + "0" * 64
        with server.client(None) as c:
            for ref in (address, missing, "not-a-ref"):
                for headers in (wrong, {}):
                    r = c.get(f"/v1/objects/{ref}", headers=headers)
                    assert r.status_code == 401, (ref, r.text)
        with server.client("read") as c:
            assert c.get(f"/v1/objects/{address}").json()["code"].startswith("corruption.")
            assert c.get(f"/v1/objects/{missing}").json()["code"] == "not-found.blob"
            assert c.get("/v1/objects/not-a-ref").json()["code"] == "ref.syntax"
            etag = f'"{address}"'
            assert (
                c.get(f"/v1/objects/{address}", headers={"If-None-Match": etag}).status_code == 304
            )
    finally:
        server.stop()
