"""Issue 28: the log, settings and tokens over the URL give what they give beside the database.

A real ``evstore serve`` process (both backends) serves the test's store; every command runs
through the console script twice, with the database URL and with the server's URL, and the
outputs, exit codes and written files must be equal. Scopes: a read token is refused for the
admin commands, an ingest token too.
"""

from __future__ import annotations

import json
from pathlib import Path

from clientkit import ev, make_token, start_server, stop_server


def _same(db_url: str, http_url: str, token: str, args: list[str], tmp: Path) -> tuple:
    """Run ``args`` on both URLs; assert equal exit codes, stdout and -o files (``OUT``)."""
    got = []
    for url, tok, name in ((db_url, None, "a"), (http_url, token, "b")):
        out = tmp / f"out-{name}"
        res = ev("--store", url, *[str(out) if a == "OUT" else a for a in args], token=tok)
        written = out.read_bytes() if out.exists() else None
        if out.exists():
            out.unlink()
        assert b"Traceback" not in res.stderr, res.stderr
        got.append((res.returncode, res.stdout.replace(str(out).encode(), b"OUT"), written))
    assert _normal(got[0]) == _normal(got[1]), f"{args}\n  local:  {got[0]!r}\n  remote: {got[1]!r}"
    return got[1]


def _normal(result: tuple) -> tuple:
    """JSON output as values (a problem document's ``details`` come sorted), else bytes."""
    code, stdout, written = result
    try:
        return code, [json.loads(line) for line in stdout.splitlines()], written
    except ValueError:
        return result


def _error(res) -> dict:
    assert res.returncode == 1, res
    return json.loads(res.stdout)["error"]


def test_the_log_over_http_gives_the_local_output(store_url, tmp_path):
    hello = tmp_path / "h.txt"
    hello.write_bytes(b"logged over http\n")
    key = tmp_path / "log.key"
    assert ev("--store", store_url, "init").returncode == 0
    address = ev("--store", store_url, "put", str(hello)).stdout.decode().strip()
    assert ev("--store", store_url, "log", "init-key", str(key)).returncode == 0
    assert ev("--store", store_url, "log", "checkpoint").returncode == 0
    srv = start_server(store_url, tmp_path, "--log-key", str(key), "--checkpoint-every", "3600")
    admin = make_token(store_url, "admin")
    try:
        for args in (
            ["log"],
            ["--json", "log"],
            ["log", "key"],
            ["log", "entries"],
            ["--json", "log", "entries", "--from", "1", "--to", "2"],
            ["--json", "log", "entries", "--from", "2", "--to", "1"],
            ["prove", address],
            ["--json", "prove", "--index", "0"],
            ["--json", "prove", "--index", "99"],
            ["--json", "prove", "blake3:" + "0" * 64],
            ["--json", "prove", "blake3:nope"],
            ["prove", "--consistency", "0"],
            ["--json", "prove", "--consistency", "5"],
        ):
            _same(store_url, srv.url, srv.read, args, tmp_path)
        # proof files: byte-identical, and they verify offline
        _, _, proof = _same(store_url, srv.url, srv.read, ["prove", address, "-o", "OUT"], tmp_path)
        _same(store_url, srv.url, srv.read, ["prove", "--consistency", "1", "-o", "OUT"], tmp_path)
        vkey = ev("--store", store_url, "log", "key").stdout.decode().strip()
        (tmp_path / "p.proof").write_bytes(proof)
        ok = ev("verify-proof", str(tmp_path / "p.proof"), "--key", vkey, "--content", str(hello))
        assert ok.returncode == 0, ok.stderr
        # a checkpoint signed on request: admin only, with the server's key
        hello.write_bytes(b"a second object\n")
        assert ev("--store", srv.url, "put", str(hello), token=srv.ingest).returncode == 0
        for tok in (srv.read, srv.ingest):
            err = _error(ev("--store", srv.url, "--json", "log", "checkpoint", token=tok))
            assert err["code"] == "http.forbidden"
        err = _error(
            ev("--store", srv.url, "--json", "log", "checkpoint", "--key", str(key), token=admin)
        )
        assert err["code"] == "input.invalid"
        signed = ev("--store", srv.url, "--json", "log", "checkpoint", token=admin)
        assert signed.returncode == 0, signed.stdout
        signed_doc = json.loads(signed.stdout)
        assert signed_doc["new"] is True and signed_doc["size"] == 2  # two puts
        local = json.loads(ev("--store", store_url, "--json", "log").stdout)
        assert local["checkpoint"]["note"] == signed_doc["note"]
        again = json.loads(
            ev("--store", srv.url, "--json", "log", "checkpoint", token=admin).stdout
        )
        assert again["new"] is False and again["note"] == signed_doc["note"]
        err = _error(ev("--store", srv.url, "--json", "log", "init-key", "x", token=admin))
        assert err["code"] == "remote.unsupported" and err["details"]["command"] == "log init-key"
    finally:
        stop_server(srv.proc)


def test_a_server_without_a_log_key_refuses_to_sign(server, store_url, tmp_path):
    admin = make_token(store_url, "admin")
    before = json.loads(ev("--store", store_url, "--json", "log").stdout)
    err = _error(ev("--store", server.url, "--json", "log", "checkpoint", token=admin))
    assert err["code"] == "log.server-no-key" and "--log-key" in err["message"]
    assert json.loads(ev("--store", store_url, "--json", "log").stdout) == before


def test_settings_and_tokens_over_http(server, store_url, tmp_path):
    admin = make_token(store_url, "admin")
    for args in (
        ["config"],
        ["--json", "config"],
        ["config", "gc.lease-seconds"],
        ["--json", "config", "no.such"],
        ["--json", "config", "gc.lease-seconds", "soon"],
        ["--json", "config", "no.such", "1"],
        ["--json", "token", "revoke", "000000000000"],
        ["token", "revoke", "not-an-id"],
        ["--json", "token", "create", "--scope", "root"],
    ):
        _same(store_url, server.url, admin, args, tmp_path)
    # a setting written over HTTP is the database's
    _same(store_url, server.url, admin, ["config", "gc.lease-seconds", "120"], tmp_path)
    out = ev("--store", server.url, "config", "gc.lease-seconds", "77", token=admin)
    assert out.stdout == b"gc.lease-seconds = 77\n"
    assert ev("--store", store_url, "config", "gc.lease-seconds").stdout == out.stdout
    # scopes: read reads settings; setting them and tokens need admin
    assert ev("--store", server.url, "config", token=server.read).returncode == 0
    for tok in (server.read, server.ingest):
        for args in (["config", "gc.lease-seconds", "5"], ["token", "ls"]):
            err = _error(ev("--store", server.url, "--json", *args, token=tok))
            assert err["code"] == "http.forbidden", (args, err)
    assert ev("--store", store_url, "config", "gc.lease-seconds").stdout == out.stdout
    # tokens: made over HTTP, listed as locally, revoked from the next request on
    made = json.loads(
        ev(
            "--store", server.url, "--json", "token", "create", "--scope", "read",
            "--name", "remote", token=admin,
        ).stdout
    )  # fmt: skip
    assert made["scope"] == "read" and made["name"] == "remote"
    _same(store_url, server.url, admin, ["token", "ls"], tmp_path)
    assert ev("--store", server.url, "config", token=made["token"]).returncode == 0
    revoked = ev("--store", server.url, "--json", "token", "revoke", made["id"], token=admin)
    assert json.loads(revoked.stdout)["revoked"] is True
    err = _error(ev("--store", server.url, "--json", "config", token=made["token"]))
    assert err["code"] == "http.unauthorized"


def test_commands_beside_the_database_name_their_reason(server):
    for args, why in (
        (["init"], "creates the database"),
        (["migrate"], "changes the schema"),
        (["serve"], "opens the database"),
        (["gc", "--vacuum"], "VACUUM"),
    ):
        err = _error(ev("--store", server.url, "--json", *args, token=server.ingest))
        assert err["code"] == "remote.unsupported" and why in err["message"], (args, err)
