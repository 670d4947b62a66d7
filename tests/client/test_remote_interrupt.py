"""Issue 28: a client that leaves a remote ``check`` or ``audit`` midway stops the server's run.

Against a real ``evstore serve`` process (both backends): the client reads the first NDJSON
line of a long run, then closes its connection. The observable is the server process itself:
its CPU time must come to rest, and by then a check must have recorded fewer objects as
verified than the store holds (a run left going would record them all before resting), an
audit nothing at all (a finished audit is recorded in ``audits``). Objects, artifacts and
roots are unchanged. Also here: an audit's bad options are a 400 problem before any stream
starts, and the settings an admin may not set over HTTP.
"""

from __future__ import annotations

import json
import os
import time

import httpx
import pytest
from clientkit import ev, make_token

import evstore

#: Objects in the store: a run over them lasts far longer than the client stays.
N = 20_000
#: Objects for the check: it verifies a page of thousands at once and notices the client's
#: departure between pages, and on SQLite it verified 20,000 small objects before the
#: server learnt that its client had gone (2026-12-04, after batch verification).
CHECK_N = 100_000
#: CPU seconds per :data:`WINDOW` under which the server counts as at rest.
QUIET_S = 0.05
WINDOW_S = 1.0
#: Seconds the server gets to come to rest (a run left going ends well within it).
REST_LIMIT_S = 180.0


def _cpu_s(pid: int) -> float:
    """User plus system CPU seconds of process ``pid`` (/proc/PID/stat, fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _at_rest(pid: int) -> None:
    """Return once the process spends under QUIET_S CPU seconds in a WINDOW_S window."""
    deadline = time.monotonic() + REST_LIMIT_S
    before = _cpu_s(pid)
    while time.monotonic() < deadline:
        time.sleep(WINDOW_S)
        now = _cpu_s(pid)
        if now - before < QUIET_S:
            return
        before = now
    pytest.fail(f"the server still works {REST_LIMIT_S} s after its client left")


def _leave_after_first_line(url: str, route: str, token: str) -> dict:
    """POST ``route``, read one NDJSON line, close the connection; that line, parsed."""
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
        with client.stream("POST", url + route, json={}) as resp:
            assert resp.status_code == 200, resp.read()
            first = json.loads(next(resp.iter_lines()))
    return first


def _without(snap: dict, *tables: str) -> dict:
    return {k: v for k, v in snap.items() if k not in tables}


def test_a_client_leaving_a_remote_check_stops_the_servers_run(server, store_url, snapshot):
    admin = make_token(store_url, "admin")
    with evstore.open(store_url) as store:
        store.put_many([f"object {i}\n".encode() * 8 for i in range(CHECK_N)])
        before = snapshot(store)
    assert before["verified"] == []
    first = _leave_after_first_line(server.url, "/v1/check", admin)
    assert "progress" in first and first["progress"][0] < first["progress"][1] == CHECK_N
    _at_rest(server.proc.pid)
    with evstore.open(store_url) as store:
        after = snapshot(store)
    # the run stopped: the pages verified before it did stay recorded, the rest never came
    assert len(after["verified"]) < CHECK_N, "the server's check ran to its end"
    assert _without(after, "verified") == _without(before, "verified")
    # and the server serves the next run in full
    done = ev("--store", server.url, "--json", "check", "--no-record", token=admin)
    assert done.returncode == 0 and json.loads(done.stdout)["ok"] is True


def test_a_client_leaving_a_remote_audit_stops_the_servers_run(server, store_url, snapshot):
    admin = make_token(store_url, "admin")
    with evstore.open(store_url) as store:
        with store.retention.rooting("keep"):
            store.put_many([f"kept {i}\n".encode() * 8 for i in range(N)])
        before = snapshot(store)
    first = _leave_after_first_line(server.url, "/v1/audit", admin)
    assert "progress" in first and first["progress"][0] < first["progress"][1] == N
    _at_rest(server.proc.pid)
    with evstore.open(store_url) as store:
        # nothing recorded: no run in audits, no object in verified
        assert snapshot(store) == before, "the server's audit ran to its end"


#: Bad audit options: (body, code, pointer) of the 400 problem.
BAD_AUDITS = [
    ({"sample": 2}, "input.invalid", ""),
    ({"sample": 0}, "input.invalid", ""),
    ({"since": "not a time"}, "input.invalid", ""),
    ({"roots": ["Not A Root Name!"]}, "root.name", ""),
    ({"roots": "keep"}, "http.request", "/roots"),
    ({"sampel": 0.5}, "http.request", "/sampel"),
]


def test_an_audit_with_bad_options_is_a_problem_before_any_stream(server, store_url, snapshot):
    admin = make_token(store_url, "admin")
    with evstore.open(store_url) as store:
        with store.retention.rooting("keep"):
            store.put(b"kept\n")
        before = snapshot(store)
    head = {"Authorization": f"Bearer {admin}"}
    for body, code, pointer in BAD_AUDITS:
        resp = httpx.post(server.url + "/v1/audit", json=body, headers=head, timeout=60)
        assert resp.status_code == 400, (body, resp.text)
        assert resp.headers["content-type"].startswith("application/problem+json")
        problem = resp.json()
        assert (problem["code"], problem["pointer"]) == (code, pointer), body
    with evstore.open(store_url) as store:
        assert snapshot(store) == before


def test_a_setting_naming_a_server_file_is_refused_over_http(server, store_url, tmp_path, snapshot):
    admin = make_token(store_url, "admin")
    key = tmp_path / "log.key"
    with evstore.open(store_url) as store:
        before = snapshot(store)
    head = {"Authorization": f"Bearer {admin}"}
    resp = httpx.put(
        server.url + "/v1/config/log.key_file", json={"value": str(key)}, headers=head, timeout=60
    )
    assert resp.status_code == 403, resp.text
    assert resp.headers["content-type"].startswith("application/problem+json")
    assert resp.json()["code"] == "config.server-only"
    out = ev("--store", server.url, "--json", "config", "log.key_file", str(key), token=admin)
    assert out.returncode == 1
    assert json.loads(out.stdout)["error"]["code"] == "config.server-only"
    with evstore.open(store_url) as store:
        assert snapshot(store) == before
        assert store.config("log.key_file") == {"log.key_file": ""}
    resp = httpx.put(
        server.url + "/v1/config/blobs.backend",
        json={"value": f"file:{tmp_path / 'elsewhere'}"},
        headers=head,
        timeout=60,
    )
    assert resp.status_code == 403 and resp.json()["code"] == "config.server-only", resp.text
    assert not (tmp_path / "elsewhere").exists()
    policy = "log example.test/log+00000000+AQ\nwitness w https://witness.test/"
    resp = httpx.put(
        server.url + "/v1/config/log.witness_policy",
        json={"value": policy},
        headers=head,
        timeout=60,
    )
    assert resp.status_code == 403 and resp.json()["code"] == "config.server-only", resp.text
    with evstore.open(store_url) as store:
        assert snapshot(store) == before
    # reading it stays open to a read token; other settings are still set over HTTP
    assert ev("--store", server.url, "config", "log.key_file", token=server.read).returncode == 0
    got = ev("--store", server.url, "--json", "config", "gc.lease-seconds", "60", token=admin)
    assert got.returncode == 0 and json.loads(got.stdout) == {"gc.lease-seconds": 60}


def test_a_scope_refusal_names_no_document_place(server):
    out = ev("--store", server.url, "put", "-", input=b"x\n", token=server.read)
    assert out.returncode == 1
    assert b"error: http.forbidden: a read token cannot do this" in out.stderr
