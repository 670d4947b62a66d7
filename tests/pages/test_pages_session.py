"""The pages' sign-in cookie holds a derived session value, never the token (issue 23):
scoped to the pages' path, expiring, verified against the token's row, dead on revocation.
"""

from __future__ import annotations

import warnings

from pages_helpers import ingest_examples

import evstore


def _client(app):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    return TestClient(app)


def _sign_in(c, token: str, prefix: str = "/acme"):
    return c.post(
        f"{prefix}/ui/signin",
        data={"token": token, "next": f"{prefix}/ui/"},
        headers={"Sec-Fetch-Site": "same-origin"},
        follow_redirects=False,
    )


def test_the_cookie_is_a_session_that_revoking_the_token_ends(store_url):
    with evstore.open(store_url) as s:
        ids = ingest_examples(s)
        made = evstore.create_token(s, "read")
    token = made["token"]
    with _client(evstore.create_app({"acme": store_url})) as c:
        r = _sign_in(c, token)
        assert r.status_code == 303
        cookie = c.cookies.get("evstore_ui")
        assert cookie and cookie.startswith(f"s1.{made['id']}.")
        assert token not in cookie and token.split("_", 2)[2] not in cookie
        assert "Max-Age=" in r.headers["set-cookie"] and "HttpOnly" in r.headers["set-cookie"]
        assert c.get(f"/acme/ui/run/{ids['run']}").status_code == 200
        # The session opens the pages only: as a bearer token the API refuses it.
        r = c.get(f"/acme/v1/objects/{ids['run']}", headers={"Authorization": f"Bearer {cookie}"})
        assert r.status_code == 401
        with evstore.open(store_url) as s:
            evstore.revoke_token(s, made["id"])
        assert c.get(f"/acme/ui/run/{ids['run']}").status_code == 401
        assert _sign_in(c, token).status_code == 401  # a revoked token signs nothing in


def test_a_session_value_is_bound_to_its_token_audience_and_time(store):
    made = evstore.create_token(store, "read")
    value = evstore.create_session(store, made["token"], "/acme/ui", seconds=60, now=1_000_000)
    assert value is not None
    assert evstore.session_scope(store, value, "/acme/ui", now=1_000_030) == "read"
    assert evstore.session_scope(store, value, "/acme/ui", now=1_000_060) is None  # expired
    assert evstore.session_scope(store, value, "/beta/ui", now=1_000_030) is None  # elsewhere
    head, _, mac = value.rpartition(".")
    forged = head + "." + ("A" if mac[0] != "A" else "B") + mac[1:]
    assert evstore.session_scope(store, forged, "/acme/ui", now=1_000_030) is None
    later = value.replace(".1000060.", ".9000060.")  # a longer life is not the MAC's
    assert evstore.session_scope(store, later, "/acme/ui", now=1_000_030) is None
    assert evstore.create_session(store, "evst_" + "0" * 12 + "_" + "x" * 43, "/acme/ui") is None
    assert evstore.session_scope(store, made["token"], "/acme/ui") is None  # a token is no session
    other = evstore.create_token(store, "admin")
    mine = evstore.create_session(store, other["token"], "/acme/ui", seconds=60, now=1_000_000)
    assert mine is not None
    swapped = mine.replace(other["id"], made["id"])  # another token's id under this MAC
    assert evstore.session_scope(store, swapped, "/acme/ui", now=1_000_030) is None
