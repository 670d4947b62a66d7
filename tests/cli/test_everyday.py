"""Everyday details through the real console script (subprocess): global options after the
command, python -m evstore, -q, Ctrl-C, failed commands that leave nothing, validate with no
store, stat without re-hashing, get -o in one read, progress only on a terminal."""

import json
import os
import pty
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

EXE = shutil.which("evstore") or str(Path(sys.executable).parent / "evstore")


def ev(*args, cwd, input=None, timeout=60):
    return subprocess.run(
        [EXE, *args], cwd=cwd, input=input, capture_output=True, timeout=timeout, check=False
    )


@pytest.fixture
def work(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"hello\n")
    return tmp_path


def test_global_options_after_the_command_and_python_m(work):
    url = f"sqlite:///{work}/s.db"
    r = ev("put", "a.txt", "--store", url, "--json", cwd=work)
    assert r.returncode == 0, r.stderr
    address = json.loads(r.stdout)["address"]
    r = ev("ls", "--json", f"--store={url}", cwd=work)
    assert r.returncode == 0 and json.loads(r.stdout) == {"artifacts": []}
    r = ev("has", address, "--json", "--store", url, cwd=work)
    assert json.loads(r.stdout) == {"ok": True, "missing": []}
    # A value that looks like a global option stays the command's (after --).
    r = ev("--store", url, "has", "--", "--json", cwd=work)
    assert r.returncode == 1 and b"ref.syntax" in r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "evstore", "--store", url, "stat", address, "--json"],
        cwd=work,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 0 and json.loads(r.stdout)["address"] == address
    # -q drops the note on stderr; the result stays.
    r = ev("put", "a.txt", "--store", url, cwd=work)
    assert b"already stored" in r.stderr
    r = ev("put", "a.txt", "--store", url, "-q", cwd=work)
    assert r.stderr == b"" and r.stdout.strip().decode() == address
    r = ev("-v", "--store", url, "stat", address, cwd=work)
    assert f"store: {url}".encode() in r.stderr


def test_failed_commands_create_no_store_and_no_folder(work):
    before = sorted(p.name for p in work.iterdir())
    for args in (
        ["put", "nofile.txt"],
        ["ingest", "nofile.json"],
        ["ingest-bundle", "/nonexistent"],
        ["--store", f"sqlite:///{work}/mistyped/s.db", "init"],
        ["--store", f"sqlite:///{work}/mistyped/s.db", "put", "a.txt"],
    ):
        r = ev("--json", *args, cwd=work)
        assert r.returncode == 1, (args, r.stdout)
        assert json.loads(r.stdout)["ok"] is False
        assert sorted(p.name for p in work.iterdir()) == before, args
    r = ev("--json", "--store", f"sqlite:///{work}/mistyped/s.db", "init", cwd=work)
    assert json.loads(r.stdout)["error"]["code"] == "store.url"


def test_validate_without_a_store_checks_contract_rules_only(work):
    good = work / "note.json"
    good.write_text('{"a": 1}')
    bad = work / "bad.json"
    bad.write_text('{"a": 1, "a": 2}')
    r = ev("validate", "note.json", cwd=work)
    assert r.returncode == 0, r.stderr
    assert b"bindings were not checked" in r.stderr and b"valid: 1" in r.stdout
    r = ev("-q", "validate", "note.json", cwd=work)
    assert r.returncode == 0 and r.stderr == b""
    out = json.loads(ev("--json", "validate", "note.json", cwd=work).stdout)
    assert out["bindings_checked"] is False and out["artifacts"][0]["new"] is None
    r = ev("--json", "validate", "note.json", "bad.json", cwd=work)
    out = json.loads(r.stdout)
    assert r.returncode == 1 and out["bindings_checked"] is False
    assert [f["code"] for f in out["faults"]] == ["json.duplicate-key"]
    assert not (work / "evstore.db").exists()
    ev("init", cwd=work)
    out = json.loads(ev("--json", "validate", "note.json", cwd=work).stdout)
    assert out["bindings_checked"] is True and out["artifacts"][0]["new"] is True


def _corrupt(db: Path, address: str) -> None:
    with sqlite3.connect(db) as conn:
        n = conn.execute(
            "UPDATE blobs SET data = ? WHERE address = ?", (b"HELLO\n", address)
        ).rowcount
        assert n == 1


def test_stat_reads_recorded_digests_and_get_o_verifies_in_one_read(work):
    r = ev("--json", "put", "a.txt", cwd=work)
    address = json.loads(r.stdout)["address"]
    out = json.loads(ev("--json", "stat", address, cwd=work).stdout)
    assert out["verified"] is False and out["size"] == 6
    assert json.loads(ev("--json", "stat", "--verify", address, cwd=work).stdout)["verified"]
    r = ev("get", address, "-o", "copy.txt", cwd=work)
    assert r.returncode == 0 and (work / "copy.txt").read_bytes() == b"hello\n"
    _corrupt(work / "evstore.db", address.removeprefix("blake3:"))
    # stat without --verify reads the row only; --verify re-hashes and refuses.
    assert ev("stat", address, cwd=work).returncode == 0
    r = ev("--json", "stat", "--verify", address, cwd=work)
    assert json.loads(r.stdout)["error"]["code"] == "corruption.digest"
    before = sorted(p.name for p in work.iterdir())
    for target in ("out.txt", "copy.txt"):
        r = ev("--json", "get", address, "-o", target, cwd=work)
        assert r.returncode == 1
        assert json.loads(r.stdout)["error"]["code"] == "corruption.digest"
    # No output file, no temporary left behind, the old copy.txt untouched.
    assert sorted(p.name for p in work.iterdir()) == before
    assert (work / "copy.txt").read_bytes() == b"hello\n"
    r = ev("get", address, cwd=work)
    assert r.returncode == 1 and r.stdout == b""


def _rows(db: Path) -> list:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT address, size FROM blobs ORDER BY address").fetchall()


def test_ctrl_c_exits_130_with_an_interrupted_error_and_the_store_unchanged(work):
    assert ev("put", "a.txt", cwd=work).returncode == 0
    before = _rows(work / "evstore.db")
    proc = subprocess.Popen(
        [EXE, "--json", "put", "-"],
        cwd=work,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # Ctrl-C's default even when this suite runs in a background job, which starts its
        # children with SIGINT ignored (and Python then keeps it ignored).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        proc.stdin.write(b"x" * (3 << 20))  # past one chunk: the put is under way
        proc.stdin.flush()
        time.sleep(2.0)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        for f in (proc.stdin, proc.stdout, proc.stderr):
            f.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 130, err
    assert json.loads(out)["error"]["code"] == "interrupted.signal"
    assert b"Traceback" not in err
    assert _rows(work / "evstore.db") == before


def _on_a_terminal(args, cwd, limit=60.0, stdin=subprocess.DEVNULL):
    """Run the console script with stderr on a pseudo-terminal; (stdout, terminal output)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [EXE, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=slave, stdin=stdin
    )
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    with proc.stdout:
        out = proc.stdout.read()
    proc.wait(timeout=10)
    return proc.returncode, out, seen


def test_progress_on_a_terminal_only_and_faults_on_their_own_lines(work):
    for i in range(3):
        (work / f"b{i}.txt").write_bytes(b"blob %d\n" % i)
        assert ev("put", f"b{i}.txt", cwd=work).returncode == 0
    r = ev("check", cwd=work)
    assert r.returncode == 0 and r.stderr == b""  # not a terminal: no progress
    rc, out, tty = _on_a_terminal(["check"], work)
    assert rc == 0 and b"check" in tty and b"100%" in tty
    assert out.strip() == b"ok: no faults"
    rc, out, tty = _on_a_terminal(["--json", "check"], work)
    assert tty == b"" and json.loads(out)["ok"] is True
    rc, out, tty = _on_a_terminal(["-q", "check"], work)
    assert tty == b""
    address = json.loads(ev("--json", "put", "a.txt", cwd=work).stdout)["address"]
    _corrupt(work / "evstore.db", address.removeprefix("blake3:"))
    rc, out, tty = _on_a_terminal(["check"], work)
    assert rc == 1
    fault = [ln for ln in out.splitlines() if b"corruption.digest" in ln]
    assert len(fault) == 1 and fault[0].startswith(address.encode() + b" corruption.digest")


def test_progress_of_a_bundle_and_of_large_put_and_get(work):
    bundle = Path(__file__).resolve().parents[2] / "examples" / "bundle"
    rc, out, tty = _on_a_terminal(["ingest-bundle", str(bundle)], work)
    assert rc == 0 and b"ingest-bundle" in tty and b"100%" in tty
    assert b"run  (new)" in out
    big = work / "big.bin"
    big.write_bytes(os.urandom(9 << 20))  # past PROGRESS_MIN (8 MiB)
    rc, out, tty = _on_a_terminal(["put", "big.bin"], work)
    assert rc == 0 and b"put big.bin" in tty and b"9.4" in tty  # 9.4 MB done
    address = out.strip().decode()
    rc, out, tty = _on_a_terminal(["get", address, "-o", "copy.bin"], work)
    assert rc == 0 and b"get copy.bin" in tty
    assert (work / "copy.bin").read_bytes() == big.read_bytes()
    r = ev("put", "big.bin", cwd=work)  # not a terminal: nothing but the note
    assert r.stderr == b"already stored (not new)\n"


def test_progress_of_bulk_put_and_ingest(work):
    """Bulk put and ingest show a bar with its total (so a percentage and an ETA) on a
    terminal, and nothing otherwise."""
    files = work / "many"
    files.mkdir()
    for i in range(30):
        (files / f"f{i:02d}.json").write_text(json.dumps({"n": i}))
    rc, out, tty = _on_a_terminal(["put", "many"], work)
    assert rc == 0 and b"put" in tty and b"30/30" in tty and b"100%" in tty
    assert out.count(b"many/f") == 30
    rc, out, tty = _on_a_terminal(["ingest", "many", "--batch", "7"], work)
    assert rc == 0 and b"ingest" in tty and b"30/30" in tty and b"100%" in tty
    listing = work / "paths.txt"
    listing.write_text("".join(f"many/f{i:02d}.json\n" for i in range(12)))
    with listing.open("rb") as fh:
        rc, out, tty = _on_a_terminal(["put", "--stdin-paths"], work, stdin=fh)
    assert rc == 0 and b"12/12" in tty and out.count(b"many/f") == 12
    r = ev("ingest", "many", cwd=work)  # not a terminal: no bar on stderr
    assert r.returncode == 0 and r.stderr == b""


def test_a_command_option_named_like_a_global_one_stays_the_commands():
    import click

    from evstore.cli.main import hoist_global_options

    @click.group()
    def grp():
        pass

    @grp.command()
    @click.option("--json", "own", is_flag=True)
    @click.option("--kind")
    def mine(own, kind):
        pass

    @grp.command()
    @click.option("--kind")
    def other(kind):
        pass

    assert hoist_global_options(grp, ["mine", "--json", "--store", "u"]) == [
        "--store",
        "u",
        "mine",
        "--json",
    ]
    assert hoist_global_options(grp, ["other", "--kind", "--json", "--json", "-q"]) == [
        "--json",
        "-q",
        "other",
        "--kind",
        "--json",
    ]
    assert hoist_global_options(grp, ["--store", "u", "other", "--", "--json"]) == [
        "--store",
        "u",
        "other",
        "--",
        "--json",
    ]


def test_documented_shell_completion_works(work):
    env = {**os.environ, "_EVSTORE_COMPLETE": "bash_source"}
    r = subprocess.run([EXE], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0 and "_evstore_completion" in r.stdout
    env = {
        **env,
        "_EVSTORE_COMPLETE": "bash_complete",
        "COMP_WORDS": "evstore in",
        "COMP_CWORD": "1",
    }
    r = subprocess.run([EXE], env=env, capture_output=True, text=True, timeout=60, check=False)
    got = r.stdout.split()
    assert {"plain,ingest", "plain,ingest-bundle", "plain,ingest-source", "plain,init"} <= set(got)
    assert all(x.startswith("plain,in") for x in got)
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert 'eval "$(_EVSTORE_COMPLETE=bash_source evstore)"' in readme


def _shell(cmd, cwd):
    return subprocess.run(["/bin/sh", "-c", cmd], cwd=cwd, capture_output=True, timeout=60)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_an_unwritable_or_closed_stdout_and_a_closed_stdin_are_typed_errors(work):
    """A full disk behind stdout, a closed stdout or stdin: a typed error and exit 1, never a
    traceback nor exit 0; under --json the error object goes to stderr when stdout failed."""
    (work / "a.txt").write_bytes(b"hello\n")
    address = ev("put", "a.txt", cwd=work).stdout.decode().strip()
    for cmd, code in [
        (f"'{EXE}' get {address} >/dev/full", "output.unwritable"),
        (f"'{EXE}' ls --blobs >/dev/full", "output.unwritable"),
        (f"'{EXE}' put - <a.txt >/dev/full", "output.unwritable"),
        (f"'{EXE}' get {address} >&-", "output.unwritable"),
        (f"'{EXE}' has - <&-", "input.unreadable"),
        (f"'{EXE}' ingest - <&-", "input.unreadable"),
    ]:
        r = _shell(cmd, work)
        assert r.returncode == 1, (cmd, r)
        assert f"error: {code}".encode() in r.stderr and b"Traceback" not in r.stderr, (cmd, r)
    r = _shell(f"'{EXE}' --json stat {address} >&-", work)
    assert r.returncode == 1 and b"Traceback" not in r.stderr
    assert json.loads(r.stderr)["error"]["code"] == "output.unwritable"
    r = _shell(f"'{EXE}' --json ls --blobs >/dev/full", work)
    assert r.returncode == 1 and json.loads(r.stderr)["error"]["code"] == "output.unwritable"


def test_a_reader_that_leaves_early_gets_no_traceback(work):
    """`evstore get BIG | head -c1`: the broken pipe ends the command quietly with exit 1."""
    (work / "big.bin").write_bytes(os.urandom(4 << 20))
    address = ev("put", "big.bin", cwd=work).stdout.decode().strip()
    proc = subprocess.Popen(
        [EXE, "get", address], cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.read(1)
    proc.stdout.close()
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 1
    assert err == b""


def test_an_empty_output_name_is_a_usage_error_not_stdout(work):
    (work / "a.txt").write_bytes(b"hello\n")
    address = ev("put", "a.txt", cwd=work).stdout.decode().strip()
    for args in (["get", address, "-o", ""], ["export", address, "--output", ""]):
        r = ev(*args, cwd=work)
        assert r.returncode == 2 and r.stdout == b"", (args, r)
        assert b"file name is empty" in r.stderr
    r = ev("archive", "export", address, "-o", "", cwd=work)
    assert r.returncode == 2 and b"file name is empty" in r.stderr
