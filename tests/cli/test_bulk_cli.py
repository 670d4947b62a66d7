"""Bulk and batch forms of the CLI (issue 10), run through the real console script."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import blake3
import pytest

EXE = Path(sys.executable).with_name("evstore")


@pytest.fixture
def ev(store_url, tmp_path):
    """Run ``evstore --store URL ARGS`` as a process (10 s bound); returns CompletedProcess."""
    if not EXE.exists():
        pytest.fail(f"console script missing at {EXE}")

    def run(*args: str, input: bytes | None = None, url: str = store_url):
        return subprocess.run(
            [str(EXE), "--store", url, *args],
            input=input,
            capture_output=True,
            timeout=60,
            cwd=tmp_path,
        )

    run.url = store_url
    return run


def _tree(root: Path) -> dict[str, bytes]:
    files = {
        "a.txt": b"alpha\n",
        "b.bin": b"\x00\xff beta",
        "sub/c.txt": b"gamma\n",
        "sub/deep/d.txt": b"delta\n",
        "sub/skip.log": b"log\n",
    }
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return files


def _json(p) -> dict:
    assert b"Traceback" not in p.stderr, p.stderr
    return json.loads(p.stdout)


def test_put_directory_globs_and_stdin_paths(ev, tmp_path):
    files = _tree(tmp_path / "d")
    p = ev("--json", "put", str(tmp_path / "d"), "--include", "*.txt", "--exclude", "sub/deep/*")
    assert p.returncode == 0, p.stderr
    out = _json(p)
    got = {Path(r["path"]).relative_to(tmp_path / "d").as_posix(): r for r in out["results"]}
    assert sorted(got) == ["a.txt", "sub/c.txt"]  # *.txt only, sub/deep/* excluded
    assert out["files"] == 2 and out["new"] == 2
    for rel, r in got.items():
        assert r["address"] == "blake3:" + blake3.blake3(files[rel]).hexdigest()

    # NUL-separated paths on stdin (a name with a newline in it survives -z)
    odd = tmp_path / "d" / "odd\nname.bin"
    odd.write_bytes(b"odd")
    listing = b"\0".join(str(tmp_path / "d" / r).encode() for r in ("b.bin", "sub/skip.log"))
    p = ev("--json", "put", "--stdin-paths", "-z", input=listing + b"\0" + str(odd).encode())
    assert p.returncode == 0, p.stderr
    assert [r["new"] for r in _json(p)["results"]] == [True, True, True]
    g = ev("get", "blake3:" + blake3.blake3(b"odd").hexdigest())
    assert g.returncode == 0 and g.stdout == b"odd"

    # newline-separated, human output: "<address>  <path>" per file
    p = ev("put", "--stdin-paths", input=f"{tmp_path / 'd' / 'a.txt'}\n".encode())
    assert p.returncode == 0
    assert p.stdout.decode().split() == [
        "blake3:" + blake3.blake3(files["a.txt"]).hexdigest(),
        str(tmp_path / "d" / "a.txt"),
    ]


def test_put_bulk_is_all_or_nothing_and_batches_commit(ev, tmp_path):
    paths = []
    for i in range(10):
        p = tmp_path / f"f{i}.bin"
        p.write_bytes(f"file {i}".encode())
        paths.append(str(p))
    listing = paths[:5] + [str(tmp_path / "gone.bin")] + paths[5:]
    stdin = "\n".join(listing).encode()
    p = ev("--json", "put", "--stdin-paths", input=stdin)
    assert p.returncode == 1
    assert _json(p)["error"]["code"] == "input.unreadable"
    assert _json(ev("--json", "ls", "--blobs"))["blobs"] == []  # nothing written

    p = ev("--json", "put", "--stdin-paths", "--batch", "2", input=stdin)
    assert p.returncode == 1
    err = _json(p)["error"]
    assert err["code"] == "input.unreadable"
    assert err["details"]["committed_batches"] == 2 and err["details"]["committed_items"] == 4
    assert "batches 1-2 were committed" in err["message"]
    assert len(_json(ev("--json", "ls", "--blobs"))["blobs"]) == 4

    h = ev("put", "--stdin-paths", "--batch", "2", input=stdin)
    assert h.returncode == 1 and b"batches 1-2 were committed" in h.stderr


def test_put_refuses_missing_argument_before_creating_a_store(tmp_path):
    url = f"sqlite:///{tmp_path / 'new.db'}"
    p = subprocess.run(
        [str(EXE), "--json", "--store", url, "put", str(tmp_path), str(tmp_path / "nope")],
        capture_output=True,
        timeout=60,
    )
    assert p.returncode == 1 and _json(p)["error"]["code"] == "input.unreadable"
    assert not (tmp_path / "new.db").exists()
    p = subprocess.run(
        [str(EXE), "--store", url, "put"], capture_output=True, timeout=60
    )  # no FILES, no --stdin-paths
    assert p.returncode == 2 and not (tmp_path / "new.db").exists()


def test_ingest_batches_a_bad_document_in_batch_3_of_5(ev, tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    for i in range(10):
        (d / f"{i:02d}.json").write_bytes(b"{bad" if i == 5 else f'{{"n": {i}}}'.encode())
    (d / "notes.txt").write_bytes(b"not json, not included by default")

    p = ev("--json", "ingest", str(d))  # one transaction: nothing written
    assert p.returncode == 1
    err = _json(p)["error"]
    assert err["code"].startswith("json.") and err["path"].endswith("05.json")
    assert "committed_batches" not in err.get("details", {})
    assert _json(ev("--json", "ls"))["artifacts"] == []

    p = ev("--json", "ingest", str(d), "--batch", "2")  # batch 3 of 5 holds 04 and 05
    assert p.returncode == 1
    err = _json(p)["error"]
    assert err["details"]["batch"] == 3 and err["details"]["committed_batches"] == 2
    assert err["details"]["committed_items"] == 4
    assert "batch 3 was rolled back; batches 1-2 were committed" in err["message"]
    assert len(_json(ev("--json", "ls"))["artifacts"]) == 4

    (d / "05.json").write_bytes(b'{"n": 5}')
    p = ev("--json", "ingest", "--stdin-paths", "--batch", "3", input=str(d).encode() + b"\n")
    assert p.returncode == 0, p.stderr
    assert [r["new"] for r in _json(p)["artifacts"]] == [False] * 4 + [True] * 6


def test_ingest_batch_rules_hold_per_batch(ev, tmp_path):
    """Supplied content must be used in each batch (a rule that spans the command)."""
    content = tmp_path / "content.txt"
    content.write_bytes(b"unused bytes")
    doc = tmp_path / "x.json"
    doc.write_bytes(b'{"x": 1}')
    p = ev("--json", "ingest", str(doc), "--content", str(content), "--batch", "1")
    assert p.returncode == 1
    err = _json(p)["error"]
    assert err["code"] == "input.unused-content" and err["details"]["committed_batches"] == 0
    assert _json(ev("--json", "ls"))["artifacts"] == []


def test_has_stdin_and_cat_batch_framing(ev, tmp_path):
    blobs = [b"one\n", b"", b"\x00two\xff" * 1000]
    addrs = []
    for i, data in enumerate(blobs):
        f = tmp_path / f"b{i}"
        f.write_bytes(data)
        addrs.append(_json(ev("--json", "put", str(f)))["address"])
    sha = "sha256:" + hashlib.sha256(blobs[2]).hexdigest()
    absent = "blake3:" + "0" * 64

    p = ev("has", "-", input="\n".join([*addrs, sha]).encode() + b"\n")
    assert p.returncode == 0 and p.stdout.strip() == b""  # nothing missing
    p = ev("--json", "has", "-", input=f"{addrs[0]}\n\n{absent}\n".encode())
    assert p.returncode == 1 and _json(p) == {"ok": False, "missing": [absent]}
    p = ev("--json", "has", "-", input=b"blake3:xyz\n")
    assert p.returncode == 1 and _json(p)["error"]["code"] == "ref.syntax"

    refs = [addrs[0], absent, addrs[1], "nope", sha]
    p = ev("cat-batch", input="\n".join(refs).encode() + b"\n")
    assert p.returncode == 1  # one missing, one malformed
    expected = (
        f"{addrs[0]} 4\n".encode()
        + blobs[0]
        + b"\n"
        + f"{absent} missing\n".encode()
        + f"{addrs[1]} 0\n\n".encode()
        + b"nope error ref.syntax\n"
        + f"{sha} {len(blobs[2])}\n".encode()
        + blobs[2]
        + b"\n"
    )
    assert p.stdout == expected
    p = ev("cat-batch", input=f"{addrs[0]}\n".encode())
    assert p.returncode == 0 and p.stdout == f"{addrs[0]} 4\none\n\n".encode()


def test_cat_batch_verifies_before_emitting(tmp_path):
    import sqlite3

    url = f"sqlite:///{tmp_path / 's.db'}"
    f = tmp_path / "f"
    f.write_bytes(b"precious")
    run = lambda *a, **k: subprocess.run(  # noqa: E731
        [str(EXE), "--store", url, *a], capture_output=True, timeout=60, **k
    )
    addr = run("put", str(f)).stdout.decode().strip()
    with sqlite3.connect(tmp_path / "s.db") as c:
        c.execute("UPDATE blobs SET data = ? WHERE address = ?", (b"tampered", addr[7:]))
    p = run("cat-batch", input=addr.encode() + b"\n")
    assert p.returncode == 1
    assert p.stdout == f"{addr} error corruption.digest\n".encode()
    m = tmp_path / "sums"
    m.write_text(f"{hashlib.sha256(b'precious').hexdigest()}  f\n")
    p = run("--json", "verify-list", "-a", "sha256", str(m))
    assert p.returncode == 1
    assert [x["code"] for x in _json(p)["faults"]] == ["corruption.digest"]


def test_verify_list_sha256sum_and_b3sum_manifests(ev, tmp_path):
    data = {"a.txt": b"alpha\n", "b.bin": b"\x00beta"}
    for name, b in data.items():
        (tmp_path / name).write_bytes(b)
        assert ev("put", str(tmp_path / name)).returncode == 0
    sha_lines = [f"{hashlib.sha256(b).hexdigest()}  {n}" for n, b in data.items()]
    b3_lines = [f"{blake3.blake3(b).hexdigest()} *{n}" for n, b in data.items()]
    (tmp_path / "SHA256SUMS").write_text("\n".join(sha_lines) + "\n")
    (tmp_path / "B3SUMS").write_text("\n".join(b3_lines) + "\n")
    p = ev("verify-list", "-a", "sha256", str(tmp_path / "SHA256SUMS"))
    assert p.returncode == 0 and p.stdout == b"verified: 2 digest(s)\n"
    p = ev("--json", "verify-list", "--algorithm", "blake3", str(tmp_path / "B3SUMS"))
    assert p.returncode == 0 and _json(p) == {"ok": True, "checked": 2, "faults": []}
    tagged = f"BLAKE3 (a.txt) = {blake3.blake3(data['a.txt']).hexdigest()}\n"
    assert ev("verify-list", "-", input=tagged.encode()).returncode == 0

    ghost = hashlib.sha256(b"never stored").hexdigest()
    bad = sha_lines + [f"{ghost}  ghost.txt", "garbage line"]
    (tmp_path / "bad").write_text("\n".join(bad) + "\n")
    p = ev("verify-list", "-a", "sha256", str(tmp_path / "bad"))
    assert p.returncode == 1
    lines = p.stdout.decode().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"line 3: ghost.txt: not-found.blob sha256:{ghost}")
    assert lines[1].startswith("line 4: input.invalid")
    p = ev("--json", "verify-list", str(tmp_path / "SHA256SUMS"))  # untagged, no -a
    assert p.returncode == 1 and len(_json(p)["faults"]) == 2
    assert "-a sha256" in _json(p)["faults"][0]["message"]


def test_ls_blobs_pages_and_jsonl(ev, tmp_path):
    addrs = set()
    for i in range(5):
        f = tmp_path / f"x{i}"
        f.write_bytes(f"blob {i}".encode())
        addrs.add(_json(ev("--json", "put", str(f)))["address"])
    doc = tmp_path / "doc.json"
    doc.write_bytes(b'{"k": 1}')
    art = _json(ev("--json", "ingest", str(doc)))["artifacts"][0]["address"]
    addrs.add(art)

    # default ls: artifacts only, unchanged shape
    out = _json(ev("--json", "ls"))
    assert list(out) == ["artifacts"] and [a["address"] for a in out["artifacts"]] == [art]
    assert ev("ls").stdout.decode().split()[:2] == [art, "json"]

    seen, cursor, pages = [], None, 0
    while pages < 10:
        args = ["--json", "ls", "--blobs", "--limit", "4"]
        page = _json(ev(*args, *(["--after", cursor] if cursor else [])))
        seen += [b["address"] for b in page["blobs"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == 2 and seen == sorted(addrs)
    p = ev("ls", "--blobs", "--jsonl")
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert [r["address"] for r in rows] == sorted(addrs) and all("size" in r for r in rows)
    p = ev("ls", "--jsonl", "--limit", "1")
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert rows == [out["artifacts"][0]]  # one artifact only: no next_cursor line
    p = ev("--json", "ls", "--blobs", "--after", "bogus")
    assert p.returncode == 1 and _json(p)["error"]["code"] == "input.invalid"
    p = ev("ls", "--jsonl", "--json")  # one object, or one per line: never both promises
    assert p.returncode == 2 and _json(p)["error"]["code"] == "usage"


def test_interrupt_keeps_committed_batches_and_says_so(tmp_path):
    import signal
    import sqlite3
    import time

    db = tmp_path / "s.db"
    url = f"sqlite:///{db}"
    subprocess.run([str(EXE), "--store", url, "init"], check=True, capture_output=True, timeout=60)
    paths = []
    for i in range(2):
        p = tmp_path / f"f{i}"
        p.write_bytes(b"batch %d" % i)
        paths.append(p)
    proc = subprocess.Popen(
        [str(EXE), "--store", url, "put", "--stdin-paths", "--batch", "1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # Ctrl-C's default even when this suite runs in a background job, which starts its
        # children with SIGINT ignored (and Python then keeps it ignored).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"".join(f"{p}\n".encode() for p in paths))
        proc.stdin.flush()  # stdin stays open: the command waits for more paths
        deadline = time.monotonic() + 60
        count = 0
        while time.monotonic() < deadline:
            with sqlite3.connect(db) as c:
                count = c.execute("SELECT count(*) FROM blobs").fetchone()[0]
            if count == 2:
                break
            time.sleep(0.1)
        assert count == 2
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode != 0
    assert b"interrupted: 2 batch(es) committed (2 files)" in err and b"Traceback" not in err
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT count(*) FROM blobs").fetchone()[0] == 2


def test_bulk_output_on_a_stdout_that_is_not_utf8_is_escaped_not_a_crash(store_url, tmp_path):
    """Issue 23: a cp1252 stdout (a redirected Windows console) took a UnicodeEncodeError
    after the data was stored; what it cannot encode is escaped, and -q drops the summary."""
    import os

    d = tmp_path / "d"
    d.mkdir()
    names = {"caf\u00e9 \u20ac.txt": b"euro", "\U0001f600.txt": b"smile", "plain.txt": b"plain"}
    for name, data in names.items():
        (d / name).write_bytes(data)
    (d / "\U0001f4c4.json").write_text('{"note": "\U0001f600"}', encoding="utf-8")
    env = {**os.environ, "PYTHONIOENCODING": "cp1252"}

    def run(*args: str, input: bytes | None = None):
        return subprocess.run(
            [str(EXE), "--store", store_url, *args],
            input=input,
            capture_output=True,
            timeout=60,
            cwd=tmp_path,
            env=env,
        )

    p = run("put", str(d), "--include", "*.txt")
    assert p.returncode == 0 and b"Traceback" not in p.stderr, p.stderr
    out = p.stdout.decode("cp1252")  # what the console shows: cp1252 text
    assert f"{d}/caf\u00e9 \u20ac.txt" in out  # what cp1252 has is written as it is
    assert f"{d}/\\U0001f600.txt" in out  # what it lacks is escaped
    assert p.stderr.decode("cp1252").strip() == "stored 3 file(s), 3 new"
    for data in names.values():  # stored, and readable by the address printed
        address = "blake3:" + blake3.blake3(data).hexdigest()
        assert address in out and run("get", address).stdout == data

    q = run("put", str(d), "--include", "*.txt", "--batch", "1", "-q")
    assert q.returncode == 0 and q.stderr == b"", q.stderr  # -q: no "stored N file(s)" note
    assert q.stdout == p.stdout  # the same lines, the same escapes

    j = run("--json", "put", str(d), "--include", "*.txt")
    assert j.returncode == 0 and j.stdout.isascii()  # JSON escapes: valid in any encoding
    assert {Path(r["path"]).name for r in json.loads(j.stdout)["results"]} == set(names)

    i = run("ingest", str(d), "--batch", "1")
    assert i.returncode == 0 and b"Traceback" not in i.stderr, i.stderr
    bad = tmp_path / "dup \U0001f600.json"
    bad.write_text('{"a": 1, "a": 2}', encoding="utf-8")
    v = run("validate", str(d / "\U0001f4c4.json"), str(bad))  # a fault names its file
    assert v.returncode == 1 and b"Traceback" not in v.stderr, v.stderr
    assert f"{tmp_path}/dup \\U0001f600.json: json.duplicate-key" in v.stdout.decode("cp1252")

    (d / "SUMS").write_text(f"{'0' * 64}  \U0001f600 \u00e9.txt\n", encoding="utf-8")
    f = run("verify-list", "-a", "sha256", str(d / "SUMS"))
    assert f.returncode == 1 and b"Traceback" not in f.stderr, f.stderr
    assert "\\U0001f600 \u00e9.txt: not-found.blob" in f.stdout.decode("cp1252")
