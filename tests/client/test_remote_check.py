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


def _timeless(result: tuple[int, bytes]) -> tuple:
    """Output with run ids and times blanked (each run is its own)."""
    import re

    code, out = result
    text = re.sub(rb"audit \d+:", b"audit N:", out)
    text = re.sub(rb'"id": \d+', b'"id": 0', text)
    text = re.sub(rb'"(started_at|finished_at)": "[^"]*"', b'"\\1": "T"', text)
    text = re.sub(rb'timestamp="[^"]*"|time="[^"]*"', b"", text)
    return code, text


def test_audit_over_http_is_run_and_recorded_by_the_server(server, store_url, tmp_path):
    admin = make_token(store_url, "admin")
    with evstore.open(store_url) as store:
        kept = store.put(b"kept by a root\n").digest.address
        bad = store.put(b"damaged under a root\n").digest.address
        store.retention.retain([kept, bad], "keep")
    for args in (
        ["audit", "--root", "keep"],
        ["--json", "audit", "--no-record"],
        ["--json", "audit", "--root", "nope"],
        ["--json", "audit", "--sample", "7"],
    ):
        local, remote = _run(store_url, None, *args), _run(server.url, admin, *args)
        assert _timeless(local) == _timeless(remote), (args, local, remote)
    corrupt(store_url, bad)
    ja, jb = tmp_path / "a.xml", tmp_path / "b.xml"
    local = _run(store_url, None, "audit", "--root", "keep", "--junit", str(ja))
    remote = _run(server.url, admin, "audit", "--root", "keep", "--junit", str(jb))
    assert local[0] == 1 and _timeless(local) == _timeless(remote)
    assert _timeless((0, ja.read_bytes())) == _timeless((0, jb.read_bytes()))
    # recorded like a local run, listed over HTTP as locally
    runs = json.loads(_run(server.url, server.read, "--json", "audits")[1])["audits"]
    assert runs == json.loads(_run(store_url, None, "--json", "audits")[1])["audits"]
    assert runs[0]["verdict"] == "fail" and len(runs) == 4  # two local, two remote recorded
    for tok in (server.read, server.ingest):
        code, out = _run(server.url, tok, "--json", "audit")
        assert code == 1 and json.loads(out)["error"]["code"] == "http.forbidden"
