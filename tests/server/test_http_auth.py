"""Tokens: the CLI commands, and 401/403 for wrong, revoked, missing, short and foreign tokens."""

from __future__ import annotations

import json
import subprocess

from serverkit import EVSTORE, make_tokens, start_process

import evstore


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([EVSTORE, *args], capture_output=True, text=True, timeout=60)


def _code(r) -> str:
    assert r.headers["content-type"] == "application/problem+json"
    return r.json()["code"]


def test_token_commands_show_once_store_hashed_and_revoke(store_url, snapshot):
    made = _run(
        "--store", store_url, "--json", "token", "create", "--scope", "ingest", "--name", "ci"
    )
    assert made.returncode == 0, made.stderr
    out = json.loads(made.stdout)
    assert out["scope"] == "ingest" and out["name"] == "ci" and out["token"].startswith("evst_")
    human = _run("--store", store_url, "token", "create", "--scope", "read")
    assert human.stdout.strip().startswith("evst_") and "not shown again" in human.stderr
    listed = json.loads(_run("--store", store_url, "--json", "token", "ls").stdout)["tokens"]
    assert [t["scope"] for t in listed] == ["ingest", "read"]
    assert all("token" not in t and t["revoked_at"] is None for t in listed)
    with evstore.open(store_url) as store, store.db.engine.connect() as conn:
        stored = conn.exec_driver_sql("SELECT secret_sha256 FROM tokens").scalars().all()
    assert out["token"] not in stored and all(len(s) == 64 for s in stored)
    with evstore.open(store_url) as store:
        assert evstore.token_scope(store, out["token"]) == "ingest"
    rev = _run("--store", store_url, "--json", "token", "revoke", out["id"])
    assert rev.returncode == 0 and json.loads(rev.stdout)["revoked"] is True
    with evstore.open(store_url) as store:
        assert evstore.token_scope(store, out["token"]) is None
    again = _run("--store", store_url, "token", "revoke", out["id"])
    assert again.returncode == 0
    human_ls = _run("--store", store_url, "token", "ls").stdout
    assert "revoked" in human_ls and "live" in human_ls
    with evstore.open(store_url) as store:
        before = snapshot(store)
    missing = _run("--store", store_url, "--json", "token", "revoke", "0" * 12)
    assert (
        missing.returncode == 1 and json.loads(missing.stdout)["error"]["code"] == "not-found.token"
    )
    bad = _run("--store", store_url, "--json", "token", "revoke", "../x")
    assert bad.returncode == 1 and json.loads(bad.stdout)["error"]["code"] == "not-found.token"
    usage = _run("--store", store_url, "token", "create", "--scope", "root")
    assert usage.returncode == 2
    with evstore.open(store_url) as store:
        assert snapshot(store) == before
        try:
            evstore.create_token(store, "root")
        except evstore.InputError as err:
            assert err.code == "token.scope"
        else:
            raise AssertionError("a bad scope was accepted")


def test_401_403_for_every_kind_of_bad_token(served_any, store_url):
    served = served_any
    with served.client("ingest") as c:
        address = c.put("/v1/objects", content=b"guarded").json()["address"]
    url = f"/v1/objects/{address}"
    revoked = make_tokens(store_url)["read"]
    with evstore.open(store_url) as store:
        rid = revoked.split("_")[1]
        evstore.revoke_token(store, rid)
    bad = {
        "missing": {},
        "wrong": {"Authorization": "Bearer evst_000000000000_" + "A" * 43},
        "garbage": {"Authorization": "Bearer x"},
        "scheme": {"Authorization": f"Basic {served.tokens['admin']}"},
        "revoked": {"Authorization": f"Bearer {revoked}"},
    }
    with served.client(None) as c:
        for why, headers in bad.items():
            r = c.get(url, headers=headers)
            assert r.status_code == 401, why
            assert r.headers["www-authenticate"].startswith("Bearer"), why
            assert _code(r) == "http.unauthorized" and r.content.find(b"guarded") < 0
            assert c.put("/v1/objects", content=b"x", headers=headers).status_code == 401
        ok = {"Authorization": f"Bearer {served.tokens['read']}"}
        assert c.get(url, headers=ok).content == b"guarded"
        assert c.get("/v1").status_code == 200  # the about route needs no token
        for path, method in (
            ("/v1/objects", "PUT"),
            ("/v1/ingest", "POST"),
            ("/v1/bundles", "POST"),
        ):
            r = c.request(method, path, headers=ok, content=b"{}")
            assert r.status_code == 403 and _code(r) == "http.forbidden"
            assert "insufficient_scope" in r.headers["www-authenticate"]
        ingest = {"Authorization": f"Bearer {served.tokens['ingest']}"}
        r = c.get("/v1/tokens", headers=ingest)
        assert r.status_code == 403
        assert c.get(url, headers=ingest).status_code == 200  # ingest includes read


def test_admin_manages_tokens_remotely(served_any):
    served = served_any
    with served.client("admin") as c:
        made = c.post("/v1/tokens", json={"scope": "read", "name": "remote"})
        assert made.status_code == 201
        token = made.json()["token"]
        ids = [t["id"] for t in c.get("/v1/tokens").json()["tokens"]]
        assert made.json()["id"] in ids
        assert _code(c.post("/v1/tokens", json={"scope": "root"})) == "token.scope"
        assert _code(c.post("/v1/tokens", json={"name": 1})) == "http.request"
        before = len(c.get("/v1/tokens").json()["tokens"])
        extra = c.post("/v1/tokens", json={"scope": "admin", "expires": "never"})
        assert _code(extra) == "http.request" and extra.json()["pointer"] == "/expires"
        assert len(c.get("/v1/tokens").json()["tokens"]) == before  # nothing made
        assert c.delete(f"/v1/tokens/{made.json()['id']}").json()["revoked"] is True
        assert c.delete("/v1/tokens/" + "f" * 12).status_code == 404
    with served.client(None) as anon:
        r = anon.get("/v1/ls", headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 401


def test_named_stores_are_apart(store_url, empty_url, tmp_path):
    evstore.init(empty_url)
    a, b = make_tokens(store_url), make_tokens(empty_url)
    server = start_process(
        ["serve", f"acme={store_url}", f"beta={empty_url}", "--no-access-log"], tmp_path
    )
    try:
        base = server.base
        import httpx

        with httpx.Client(base_url=base, timeout=60) as c:
            ha = {"Authorization": f"Bearer {a['admin']}"}
            hb = {"Authorization": f"Bearer {b['admin']}"}
            assert c.get("/acme/v1").json()["store"] == "acme"
            assert c.get("/beta/v1").json()["store"] == "beta"
            address = c.put("/acme/v1/objects", content=b"acme only", headers=ha).json()["address"]
            assert c.get(f"/acme/v1/objects/{address}", headers=ha).content == b"acme only"
            # beta's token means nothing to acme, and acme's bytes are unknown to beta
            r = c.get(f"/acme/v1/objects/{address}", headers=hb)
            assert r.status_code == 401 and _code(r) == "http.unauthorized"
            assert c.get(f"/beta/v1/objects/{address}", headers=hb).status_code == 404
            again = c.put("/beta/v1/objects", content=b"acme only", headers=hb)
            assert again.status_code == 201 and again.json()["new"] is True
            assert _code(c.get("/v1")) == "http.route"
            assert _code(c.get("/gamma/v1")) == "http.route"
            spec = c.get("/acme/openapi.json").json()
            assert spec["servers"][0]["url"] == "/acme"
    finally:
        assert server.stop() == 0


def test_serve_fails_typed_for_a_missing_store_or_bad_names(empty_url, tmp_path):
    r = _run("--store", empty_url, "--json", "serve", "--port", "0")
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["code"] == "store.missing"
    r = _run("--json", "serve", "v1=sqlite:///x.db", "--port", "0")
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["code"] == "input.invalid"
    r = _run("serve", "sqlite:///a.db", "b=sqlite:///b.db")
    assert r.returncode == 2


def test_token_and_serve_commands_in_process(store_url, monkeypatch):
    # The same commands through click's runner (the console script runs above), for coverage.
    from click.testing import CliRunner

    from evstore.cli.main import cli
    from evstore.cli.server import parse_stores

    runner = CliRunner()
    made = runner.invoke(
        cli, ["--store", store_url, "--json", "token", "create", "--scope", "read"]
    )
    assert made.exit_code == 0, made.output
    token_id = json.loads(made.output)["id"]
    listed = runner.invoke(cli, ["--store", store_url, "token", "ls"])
    assert token_id in listed.output and "live" in listed.output
    assert runner.invoke(cli, ["--store", store_url, "token", "revoke", token_id]).exit_code == 0
    assert parse_stores((), "sqlite:///d.db") == {None: "sqlite:///d.db"}
    assert parse_stores(("a=sqlite:///a.db", "b=postgresql://h/b?sslmode=require"), "") == {
        "a": "sqlite:///a.db",
        "b": "postgresql://h/b?sslmode=require",
    }
    assert parse_stores(("postgresql://h/b?x=1",), "") == {None: "postgresql://h/b?x=1"}
    calls = []
    monkeypatch.setattr(evstore, "serve", lambda stores, **kw: calls.append((stores, kw)))
    ran = runner.invoke(cli, ["--store", store_url, "serve", "--port", "0", "--public-read"])
    assert ran.exit_code == 0, ran.output
    assert calls[0][0] == {None: store_url} and calls[0][1]["public_read"] is True
    dup = runner.invoke(cli, ["serve", "a=sqlite:///a.db", "a=sqlite:///b.db"])
    assert dup.exit_code == 2
