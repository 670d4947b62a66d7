"""GET of an object in one statement (issue 29): the token and the object read together,
revocation still taking effect on the next request, the token decided before the object."""

from __future__ import annotations

import pytest
from serverkit import corrupt, make_tokens, start_thread

import evstore
from evstore.db.engine import Database


def test_a_get_reads_token_and_object_in_one_statement(store_url, monkeypatch):
    server = start_thread({None: store_url})
    try:
        server.tokens = make_tokens(store_url)
        with server.client("ingest") as c:
            address = c.put("/v1/objects", content=b"one statement").json()["address"]
        calls: list[str] = []
        real = Database.point_row

        def counted(self, sql, params):
            calls.append(sql)
            return real(self, sql, params)

        monkeypatch.setattr(Database, "point_row", counted)
        with server.client("read") as c:
            r = c.get(f"/v1/objects/{address}")
        assert r.status_code == 200 and r.content == b"one statement"
        assert len(calls) == 1, calls  # token, head and bytes: was three statements
    finally:
        server.stop()


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
