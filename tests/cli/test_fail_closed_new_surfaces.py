"""Fail closed on what an attack of the second wave's commands found (console script)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXE = shutil.which("evstore") or str(Path(sys.executable).parent / "evstore")


def ev(*args, cwd, timeout=120):
    return subprocess.run([EXE, *args], cwd=cwd, capture_output=True, timeout=timeout)


@pytest.fixture
def logged(tmp_path):
    """A SQLite store with one document, a log key and a signed checkpoint."""
    (tmp_path / "a.json").write_text('{"a": 1}')
    assert ev("ingest", "a.json", cwd=tmp_path).returncode == 0
    assert ev("log", "init-key", "./k", cwd=tmp_path).returncode == 0
    assert ev("log", "checkpoint", cwd=tmp_path).returncode == 0
    (tmp_path / "v.key").write_bytes(ev("log", "key", cwd=tmp_path).stdout)
    return tmp_path


def _code(r) -> str:
    return json.loads(r.stdout)["error"]["code"]


def test_a_source_document_option_that_is_no_ref_is_refused(logged):
    (logged / "b.json").write_text('{"b": 2}')
    for command in ("ingest", "validate"):
        r = ev("--json", command, "--source-document", "nope", "b.json", cwd=logged)
        assert r.returncode == 1 and b"Traceback" not in r.stderr
        out = json.loads(r.stdout)
        codes = [out["error"]["code"]] if "error" in out else [f["code"] for f in out["faults"]]
        assert codes == ["ref.syntax"], out
    listed = json.loads(ev("--json", "ls", cwd=logged).stdout)["artifacts"]
    assert len(listed) == 1  # b.json was not stored


def test_an_unwritable_junit_report_is_refused_before_the_audit_is_recorded(logged):
    r = ev("--json", "audit", "--junit", str(logged / "missing" / "x.xml"), cwd=logged)
    assert r.returncode == 1 and _code(r) == "output.unwritable"
    assert json.loads(ev("--json", "audits", cwd=logged).stdout)["audits"] == []


def test_proof_files_are_read_strictly_and_boundedly(logged):
    assert ev("prove", "--consistency", "1", "-o", "c.json", cwd=logged).returncode == 0
    text = (logged / "c.json").read_text()
    assert ev("verify-proof", "c.json", "--key", "v.key", cwd=logged).returncode == 0
    doc = json.loads(text)
    (logged / "dup.json").write_text(text.replace('"old_size": 1', '"old_size": 0, "old_size": 1'))
    (logged / "bool.json").write_text(json.dumps({**doc, "old_size": True}))
    (logged / "text.json").write_text(json.dumps({**doc, "new_size": str(doc["new_size"])}))
    for name in ("dup.json", "bool.json", "text.json"):
        r = ev("--json", "verify-proof", name, "--key", "v.key", cwd=logged)
        assert r.returncode == 1 and _code(r) == "log.proof-malformed", name
    (logged / "huge.txt").write_bytes(b"0" * ((16 << 20) + 1))
    r = ev("--json", "verify-proof", "huge.txt", "--key", "v.key", cwd=logged)
    assert r.returncode == 1 and _code(r) == "input.invalid"


@pytest.mark.parametrize("args", [["log", "entries", "--to", str(10**23)],
                                  ["prove", "--consistency", "1", str(10**20)]])  # fmt: skip
def test_log_sizes_past_any_column_are_log_range(logged, args):
    r = ev("--json", *args, cwd=logged)
    assert r.returncode == 1 and _code(r) == "log.range" and b"Traceback" not in r.stderr
