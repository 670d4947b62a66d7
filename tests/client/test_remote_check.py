"""Issue 28: ``check`` over the URL runs on the server and streams its faults (admin scope).

A real ``evstore serve`` process (both backends); the outputs and exit codes of ``check`` by
the database URL and by the server's URL must be equal, faults included.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
from click.testing import CliRunner
from clientkit import make_token

import evstore
from evstore.cli.main import cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from serverkit import corrupt

EX = Path(__file__).resolve().parents[2] / "examples"


def _run(url: str, token: str | None, *args: str) -> tuple[int, bytes]:
    got = CliRunner().invoke(cli, ["--store", url, *args], env={"EVSTORE_TOKEN": token or ""})
    assert got.exception is None or isinstance(got.exception, SystemExit), got.exc_info
    return got.exit_code, got.stdout_bytes


def _normal(result: tuple[int, bytes]) -> tuple:
    code, out = result
    try:
        return code, [json.loads(line) for line in out.splitlines()]
    except ValueError:
        return result


def test_check_over_http_gives_the_local_output(server, store_url, tmp_path):
    admin = make_token(store_url, "admin")
    with evstore.open(store_url) as store:
        bad = store.put(b"to be damaged\n").digest.address
        store.put(b"kept whole\n")
        store.ingest([evstore.Document((EX / "json" / "run-note.json").read_bytes())])
    for args in (["check"], ["--json", "check"], ["--json", "check", "--kind", "nope"]):
        local, remote = _run(store_url, None, *args), _run(server.url, admin, *args)
        assert _normal(local) == _normal(remote), (args, local, remote)
    corrupt(store_url, bad)
    for args in (
        ["check"],
        ["--json", "check"],
        ["--json", "check", "--kind", "blob", "--no-record"],
        ["check", "--sample", "0"],
    ):
        local, remote = _run(store_url, None, *args), _run(server.url, admin, *args)
        assert _normal(local) == _normal(remote), (args, local, remote)
    assert _run(server.url, admin, "check")[0] == 1
    assert bad.encode() in _run(server.url, admin, "check")[1]
    for tok in (server.read, server.ingest):
        code, out = _run(server.url, tok, "--json", "check")
        assert code == 1 and json.loads(out)["error"]["code"] == "http.forbidden"


def test_a_client_that_goes_away_leaves_the_server_serving(server, store_url):
    admin = make_token(store_url, "admin")
    with evstore.open(store_url) as store:
        store.put_many([f"object {i}\n".encode() for i in range(200)])
    head = {"Authorization": f"Bearer {admin}"}
    with httpx.stream("POST", server.url + "/v1/check", json={}, headers=head, timeout=30) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("application/x-ndjson")
        first = next(resp.iter_lines())
        assert json.loads(first)  # a progress or end line
    # the next run answers in full
    code, out = _run(server.url, admin, "--json", "check")
    assert code == 0 and json.loads(out)["ok"] is True
