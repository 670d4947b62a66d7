"""The log commands through the real console script, on both backends, and in-process."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from evstore.cli.main import cli

EXE = shutil.which("evstore") or str(Path(sys.executable).parent / "evstore")


def _ev(url, *args, cwd, env=None):
    full = {k: v for k, v in os.environ.items() if k != "EVSTORE_LOG_KEY"}
    full.update(env or {})
    return subprocess.run(
        [EXE, "--store", url, *args], cwd=cwd, capture_output=True, env=full, timeout=120
    )


def test_the_log_workflow_through_the_console_script(store_url, tmp_path):
    def ev(*args, env=None):
        return _ev(store_url, *args, cwd=tmp_path, env=env)

    (tmp_path / "a.txt").write_bytes(b"evidence bytes")
    (tmp_path / "d.json").write_text('{"x": 1}')
    assert ev("put", "a.txt").returncode == 0
    assert ev("ingest", "d.json").returncode == 0
    r = ev("log", "--json")
    assert json.loads(r.stdout)["pending"] == 2 and json.loads(r.stdout)["size"] == 0
    r = ev("log", "integrate", "--json")  # no key anywhere: integrates, signs nothing
    out = json.loads(r.stdout)
    assert r.returncode == 0 and out["integrated"] == 2 and out["checkpoint"] is None
    r = ev("log", "--json")
    status = json.loads(r.stdout)
    assert r.returncode == 0 and status["size"] == 2 and status["checkpoint"] is None
    assert b"no signed checkpoint" in ev("log").stdout
    # no key yet: checkpoint fails typed
    r = ev("log", "checkpoint", "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["code"] == "log.key-file"
    r = ev("log", "key")
    assert r.returncode == 1 and b"log.no-key" in r.stderr
    # init-key: the path from the environment variable, a 0600 file, the setting recorded
    r = ev("log", "init-key", "--origin", "example.org/log", env={"EVSTORE_LOG_KEY": "k.key"})
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(os.stat(tmp_path / "k.key").st_mode) == 0o600
    vkey = ev("log", "key").stdout.decode().strip()
    assert vkey.startswith("example.org/log+") and vkey in r.stdout.decode()
    (tmp_path / "vkey").write_text(vkey + "\n")
    r = ev("log", "checkpoint")  # finds the key through the log.key_file setting
    assert r.returncode == 0 and r.stdout.decode().startswith("example.org/log\n2\n")
    assert json.loads(ev("log", "--json").stdout)["checkpoint"]["size"] == 2
    lines = ev("log", "entries", "--from", "1").stdout.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("1 ") and '"op": "ingest"' in lines[0]
    r = ev("log", "entries", "--json", "--to", "1")
    assert [e["index"] for e in json.loads(r.stdout)["entries"]] == [0]
    # prove by ref into a file; verify with no store (another directory, no EVSTORE_URL)
    address = ev("put", "a.txt").stdout.decode().split()[0]
    r = ev("prove", address, "-o", "p.txt")
    assert r.returncode == 0 and (tmp_path / "p.txt").read_text().startswith("c2sp.org/tlog-")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    verify = [EXE, "verify-proof", str(tmp_path / "p.txt"), "--key"]
    r = subprocess.run(
        [*verify, vkey, "--content", str(tmp_path / "a.txt")],
        cwd=elsewhere,
        capture_output=True,
        timeout=60,
    )
    assert r.returncode == 0 and b"ok: entry 0" in r.stdout
    assert not (elsewhere / "evstore.db").exists()
    r = subprocess.run(
        [*verify, str(tmp_path / "vkey"), "--content", str(tmp_path / "d.json"), "--json"],
        cwd=elsewhere,
        capture_output=True,
        timeout=60,
    )
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["code"] == "log.content-mismatch"
    # consistency: grow, sign, prove from size 1 and from the old checkpoint
    assert ev("put", "d.json").returncode == 0
    assert ev("log", "checkpoint", "--key", "k.key").returncode == 0
    r = ev("prove", "--consistency", "2", "-o", "c.json")
    assert r.returncode == 0
    r = subprocess.run(
        [*verify[:2], str(tmp_path / "c.json"), "--key", vkey],
        cwd=elsewhere,
        capture_output=True,
        timeout=60,
    )
    assert r.returncode == 0 and b"size 2" in r.stdout and b"signed" in r.stdout
    r = ev("prove", "--consistency", "1", "2", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["new_size"] == 2
    # a proof printed on stdout is at the latest checkpoint (size 3 now)
    printed = ev("prove", "--index", "0").stdout.decode()
    assert (
        printed.startswith("c2sp.org/tlog-proof@v1\n") and f"\n{vkey.split('+')[0]}\n3\n" in printed
    )
    # usage errors exit 2, typed errors 1
    assert ev("prove").returncode == 2
    assert ev("prove", "--consistency", "1", "x").returncode == 2
    assert ev("prove", "--consistency", "1", "--index", "0").returncode == 2
    assert ev("prove", "a", "b").returncode == 2
    r = ev("prove", "--index", "99", "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["code"] == "log.range"
    r = ev("log", "init-key", "other.key", "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["code"] == "log.key-exists"
    r = subprocess.run([*verify, "garbage+key"], cwd=elsewhere, capture_output=True, timeout=60)
    assert r.returncode == 1 and b"checkpoint.key" in r.stderr
    assert b"ok: no faults" in ev("check").stdout


def test_log_commands_in_process(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVSTORE_LOG_KEY", raising=False)
    url = f"sqlite:///{tmp_path / 'c.db'}"

    def run(*args):
        return CliRunner().invoke(cli, ["--store", url, *args], catch_exceptions=False)

    (tmp_path / "b").write_bytes(b"bytes")
    assert run("put", "b").exit_code == 0
    r = run("log", "init-key", "--json")
    assert r.exit_code == 1 and json.loads(r.stdout)["error"]["code"] == "log.key-file"
    assert run("log", "init-key", "key").exit_code == 0
    r = run("log", "checkpoint", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["new"] is True
    r = run("log")
    assert "latest checkpoint: size 1" in r.stdout and "entries: 1" in r.stdout
    assert run("log", "entries").stdout.startswith("0 {")
    r = run("prove", "--index", "0")
    assert r.exit_code == 0 and r.stdout.startswith("c2sp.org/tlog-proof@v1\n")
    (tmp_path / "p").write_text(r.stdout)
    vkey = run("log", "key").stdout.strip()
    r = run("verify-proof", "p", "--key", vkey, "--content", "b")
    assert r.exit_code == 0 and "the content is blake3:" in r.stdout
    r = run("prove", "--consistency", "0", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["old_size"] == 0
    r = run("prove", "--index", "0", "-o", "p2", "--json")
    assert r.exit_code == 0 and (tmp_path / "p2").read_text() == (tmp_path / "p").read_text()
