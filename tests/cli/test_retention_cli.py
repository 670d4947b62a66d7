"""retain, release, roots, gc, audit and --root through the real console script (issue 12)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from evstore.cli.main import cli

EXE = shutil.which("evstore") or str(Path(sys.executable).parent / "evstore")
REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "examples" / "manifests" / "manifest.json"
CONTENT = REPO / "examples" / "manifests" / "rendered-evidence.md"


def ev(url: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [EXE, "--store", url, *args], cwd=cwd, capture_output=True, timeout=120, check=False
    )


def js(r: subprocess.CompletedProcess[bytes]) -> dict:
    return json.loads(r.stdout)


def test_the_retention_commands_end_to_end(store_url, tmp_path):
    (tmp_path / "a.txt").write_bytes(b"run output\n")
    assert ev(store_url, "config", "gc.lease-seconds", "0", cwd=tmp_path).returncode == 0
    put = ev(store_url, "--json", "put", "--root", "run-7", "a.txt", cwd=tmp_path)
    assert put.returncode == 0, put.stderr
    blob = js(put)["address"]
    ing = ev(store_url, "--json", "ingest", "--root", "run-7", "--content", str(CONTENT),
             str(MANIFEST), cwd=tmp_path)  # fmt: skip
    assert ing.returncode == 0, ing.stderr
    manifest = js(ing)["artifacts"][0]["address"]
    roots = js(ev(store_url, "--json", "roots", cwd=tmp_path))["roots"]
    assert roots == [{"root": "run-7", "entries": 2, "held": 2, "until": None}]
    r = ev(store_url, "--json", "retain", manifest, "--root", "published", "--until", "30d",
           cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0 and js(r)["retained"] == [manifest]
    assert ev(store_url, "release", "--root", "run-7", cwd=tmp_path).returncode == 0
    dry = ev(store_url, "--json", "gc", "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0
    assert [o["address"] for o in js(dry)["objects"]] == [blob]
    assert js(dry)["bytes"] == len(b"run output\n")
    human = ev(store_url, "gc", "--dry-run", cwd=tmp_path)
    assert blob in human.stdout.decode() and b"would delete 1 object(s)" in human.stdout
    done = ev(store_url, "--json", "gc", "--vacuum", cwd=tmp_path)
    assert js(done)["count"] == 1 and js(done)["dry_run"] is False
    again = ev(store_url, "gc", cwd=tmp_path)  # the summary is the result: on stdout
    assert again.returncode == 0 and b"deleted 0 object(s), 0 bytes" in again.stdout
    history = js(ev(store_url, "--json", "roots", "--history", cwd=tmp_path))["events"]
    assert [e["action"] for e in history][:3] == ["collect", "release", "release"]
    assert {e["actor"] for e in history} == {"local"}
    audit = ev(store_url, "--json", "audit", "--junit", "audit.xml", cwd=tmp_path)
    assert audit.returncode == 0, audit.stdout
    report = js(audit)
    assert report["verdict"] == "pass"
    assert [r["root"] for r in report["roots"]] == ["published"]
    assert report["roots"][0]["entries"][0]["objects"] == 2
    assert not audit.stderr  # no progress under --json
    suites = ET.parse(tmp_path / "audit.xml").getroot()
    assert [s.get("name") for s in suites] == ["published"]
    runs = js(ev(store_url, "--json", "audits", cwd=tmp_path))["audits"]
    assert runs[0]["id"] == report["id"] and runs[0]["verdict"] == "pass"
    again = js(ev(store_url, "--json", "audit", "--history", cwd=tmp_path))["audits"]
    assert again == runs
    check = ev(store_url, "check", cwd=tmp_path)
    assert check.returncode == 0, check.stdout


def test_audit_exits_1_on_a_fault_and_bad_input_is_typed(store_url, tmp_path):
    import sqlalchemy as sa

    import evstore

    (tmp_path / "a.txt").write_bytes(b"to be damaged\n")
    blob = js(ev(store_url, "--json", "put", "a.txt", cwd=tmp_path))["address"]
    with evstore.open(store_url) as store, store.db.engine.begin() as conn:
        conn.execute(sa.text("UPDATE blobs SET data = :d WHERE address = :a"),
                     {"d": b"To be damaged\n", "a": blob[7:]})  # fmt: skip
    r = ev(store_url, "--json", "audit", cwd=tmp_path)
    assert r.returncode == 1
    assert [f["code"] for f in js(r)["faults"]] == ["corruption.digest"]
    human = ev(store_url, "audit", cwd=tmp_path)
    assert human.returncode == 1 and b"default: fail" in human.stdout
    for args, code in [
        (("retain", blob, "--root", "no spaces"), "root.name"),
        (("put", "--root", "", "a.txt"), "root.name"),
        (("release", "--root", "nobody"), "not-found.root"),
        (("audit", "--root", "nobody"), "not-found.root"),
        (("retain", blob, "--root", "r", "--until", "later"), "input.invalid"),
    ]:
        bad = ev(store_url, "--json", *args, cwd=tmp_path)
        assert bad.returncode == 1, (args, bad.stdout)
        assert js(bad)["error"]["code"] == code, bad.stdout


@pytest.mark.parametrize("history", [False, True])
def test_roots_human_output_in_process(store_url, tmp_path, history):
    runner = CliRunner()
    (tmp_path / "b.txt").write_bytes(b"b")
    r = runner.invoke(cli, ["--store", store_url, "put", "--root", "r1", str(tmp_path / "b.txt")])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["--store", store_url, "retain", "--root", "r2", r.output.split()[0]])
    assert r.exit_code == 0 and "r2" in r.output
    args = ["--store", store_url, "roots"] + (["--history"] if history else [])
    r = runner.invoke(cli, args)
    assert r.exit_code == 0
    if history:
        assert "retain  r2" in r.output
    else:
        assert "r1  1/1 held  until released" in r.output
    r = runner.invoke(cli, ["--store", store_url, "audit"])
    assert r.exit_code == 0 and "r1: pass" in r.output
    r = runner.invoke(cli, ["--store", store_url, "audits"])
    assert r.exit_code == 0 and "pass" in r.output


def test_gc_dry_run_says_what_leases_hold_and_until_when(store_url, tmp_path):
    """Issue 23: `gc --dry-run` said "would delete 0" with no reason while leases held."""
    runner = CliRunner()
    (tmp_path / "c.txt").write_bytes(b"held by its lease")

    def run(*args: str) -> str:
        r = runner.invoke(cli, ["--store", store_url, *args])
        assert r.exit_code == 0, r.output
        return r.output

    address = run("put", "--root", "r1", str(tmp_path / "c.txt")).split()[0]
    run("release", "--root", "r1")
    out = run("gc", "--dry-run")
    assert "would delete 0 object(s), 0 bytes" in out
    (line,) = [x for x in out.splitlines() if x.startswith("leased  ")]
    assert line.startswith(f"leased  {address}  17  until 20")
    assert "held by leases: 1 object(s), 17 bytes, until " in out
    assert json.loads(run("--json", "gc", "--dry-run"))["leased"][0]["address"] == address
    run("config", "gc.lease-seconds", "0")  # ends the leases taken before, too
    out = run("gc", "--dry-run")
    assert f"{address}  17" in out and "would delete 1 object(s), 17 bytes" in out
    assert "held by leases" not in out
