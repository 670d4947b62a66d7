"""The bulk and batch commands run in-process (click's CliRunner), on both backends.

tests/cli/test_bulk_cli.py drives the same commands through the real console script; these
run them in the test process so that their code paths are measured by coverage too.
"""

from __future__ import annotations

import hashlib
import json
import runpy
import sys
from pathlib import Path

import blake3
import pytest
from click.testing import CliRunner

import evstore
from evstore.cli.main import cli


def run(url: str, *args: str, input: bytes | str | None = None):
    return CliRunner().invoke(cli, ["--store", url, *args], input=input)


def test_cat_batch_frames_every_object_and_marks_missing_and_bad_refs(store_url):
    with evstore.open(store_url) as s:
        a, b = (s.put(x).digest for x in (b"alpha", b"beta\n"))
    missing = "blake3:" + "0" * 64
    refs = f"{a.address}\nsha256:{b.sha256}\n{missing}\nnot-a-ref\n\n"
    r = run(store_url, "cat-batch", input=refs)
    assert r.exit_code == 1
    out = r.stdout_bytes
    assert out.startswith(f"{a.address} 5\n".encode() + b"alpha\n")
    assert f"sha256:{b.sha256} 5\n".encode() + b"beta\n\n" in out
    assert f"{missing} missing\n".encode() in out
    assert b"not-a-ref error ref.syntax\n" in out


def test_has_reads_refs_from_stdin(store_url):
    with evstore.open(store_url) as s:
        a = s.put(b"present").digest
    missing = "blake3:" + "f" * 64
    r = run(store_url, "--json", "has", "-", input=f"{a.address}\n{missing}\n")
    body = json.loads(r.stdout)
    assert r.exit_code == 1, r.stdout
    assert json.dumps(body).count(missing) >= 1


def test_verify_list_checks_sha256sum_and_b3sum_lists(store_url, tmp_path):
    data = {"one.txt": b"one\n", "two.txt": b"two\n"}
    with evstore.open(store_url) as s:
        for v in data.values():
            s.put(v)
    sha = "".join(f"{hashlib.sha256(v).hexdigest()}  {k}\n" for k, v in data.items())
    (tmp_path / "SHA256SUMS").write_text(sha)
    r = run(store_url, "verify-list", "-a", "sha256", str(tmp_path / "SHA256SUMS"))
    assert r.exit_code == 0, r.output
    tagged = "".join(f"BLAKE3 ({k}) = {blake3.blake3(v).hexdigest()}\n" for k, v in data.items())
    r = run(store_url, "verify-list", "-", input=tagged)
    assert r.exit_code == 0, r.output
    bad = f"{hashlib.sha256(b'never stored').hexdigest()} *absent.bin\n" + sha
    r = run(store_url, "--json", "verify-list", "-a", "sha256", "-", input=bad)
    assert r.exit_code == 1
    assert "absent.bin" in r.stdout


def test_put_walks_a_directory_with_globs_and_reads_nul_separated_paths(store_url, tmp_path):
    tree = tmp_path / "run"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.txt").write_bytes(b"a")
    (tree / "sub" / "b.txt").write_bytes(b"b")
    (tree / "skip.log").write_bytes(b"log")
    r = run(store_url, "--json", "put", str(tree), "--include", "*.txt")
    out = json.loads(r.stdout)
    assert r.exit_code == 0, r.output
    assert sorted(Path(x["path"]).name for x in out["results"]) == ["a.txt", "b.txt"]
    listing = f"{tree / 'skip.log'}\0{tree / 'a.txt'}\0".encode()
    r = run(store_url, "--json", "put", "--stdin-paths", "-z", input=listing)
    out = json.loads(r.stdout)
    assert r.exit_code == 0, r.output
    assert [Path(x["path"]).name for x in out["results"]] == ["skip.log", "a.txt"]
    assert [x["new"] for x in out["results"]] == [True, False]


def test_put_of_many_paths_prints_each_form_its_options_ask_for(store_url, tmp_path):
    """The human lines name the address (and, with --digests, the SHA-256 forms); --json
    gives every digest form. The other forms are only encoded when asked for (issue 29)."""
    files = [tmp_path / "a.bin", tmp_path / "b.bin"]
    for i, f in enumerate(files):
        f.write_bytes(b"content %d" % i)
    listing = "".join(f"{f}\n" for f in files)
    b3 = [blake3.blake3(f.read_bytes()).hexdigest() for f in files]
    sha = [hashlib.sha256(f.read_bytes()).hexdigest() for f in files]
    r = run(store_url, "put", "--stdin-paths", input=listing)
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [f"blake3:{h}  {f}" for h, f in zip(b3, files, strict=True)]
    r = run(store_url, "put", "--stdin-paths", "--digests", input=listing)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0::3] == [f"blake3:{h}  {f}" for h, f in zip(b3, files, strict=True)]
    assert [x.strip() for x in lines[1::3]] == [f"sha256:{h}" for h in sha]
    r = run(store_url, "--json", "put", "--stdin-paths", input=listing)
    rows = json.loads(r.stdout)["results"]
    assert [x["sha256"] for x in rows] == [f"sha256:{h}" for h in sha]
    assert all(x["object_store"] == "object-store:" + x["sha256_b64u"] for x in rows)
    assert [x["size"] for x in rows] == [9, 9]


def test_ingest_batches_commit_before_a_bad_document(store_url, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(5):
        (docs / f"d{i}.json").write_text(json.dumps({"n": i}))
    (docs / "d5.json").write_text('{"n": 5, "n": 6}')  # duplicate key: json.duplicate-key
    r = run(store_url, "--json", "ingest", str(docs), "--batch", "2")
    assert r.exit_code == 1
    err = json.loads(r.stdout)["error"]
    assert err["code"] == "json.duplicate-key"
    with evstore.open(store_url) as s:
        assert len(s.ls("json")) == 4  # batches 1 and 2 committed, the third refused


def test_ls_pages_blobs_and_streams_json_lines(store_url):
    with evstore.open(store_url) as s:
        for i in range(5):
            s.put(b"blob %d" % i)
    r = run(store_url, "ls", "--blobs", "--limit", "2", "--jsonl")
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(lines) == 3 and "next_cursor" in lines[-1]
    r2 = run(
        store_url, "ls", "--blobs", "--limit", "10", "--after", lines[-1]["next_cursor"], "--jsonl"
    )
    rest = [json.loads(x) for x in r2.stdout.splitlines()]
    assert len(rest) == 3 and "next_cursor" not in rest[-1]


def test_python_m_evstore_runs_the_cli(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["evstore", "--help"])
    with pytest.raises(SystemExit) as exc:
        runpy.run_module("evstore", run_name="__main__")
    assert exc.value.code == 0
    assert "Usage" in capsys.readouterr().out


def test_ls_pages_artifacts_in_json_and_human_forms(store_url):
    with evstore.open(store_url) as s:
        s.ingest([evstore.Document(json.dumps({"i": i}).encode(), kind="json") for i in range(3)])
    r = run(store_url, "--json", "ls", "--limit", "2")
    body = json.loads(r.stdout)
    assert r.exit_code == 0 and len(body["artifacts"]) == 2 and body["next_cursor"]
    r = run(store_url, "--json", "ls", "--limit", "2", "--after", body["next_cursor"])
    tail = json.loads(r.stdout)
    assert len(tail["artifacts"]) == 1 and tail["next_cursor"] is None
    r = run(store_url, "ls", "--blobs", "--limit", "1")
    assert r.exit_code == 0 and len(r.stdout.splitlines()) == 1
    assert "next: " in r.stderr


def test_progress_bar_draws_on_stderr_and_echoes_lines_above_it(capsys):
    from evstore.cli.common import Ctx, progress

    with progress(Ctx("sqlite:///x.db", False), "check") as bar:
        bar.enabled = True  # as on a terminal
        bar(1, 4)
        bar.echo("a fault line")
        bar(4, 4)
    with progress(Ctx("sqlite:///x.db", False), "get x", unit="bytes") as bar:
        bar.enabled = True
        bar(1 << 20, 2 << 20)
    out = capsys.readouterr()
    assert "a fault line" in out.out
    assert "check" in out.err and "get x" in out.err
    with progress(Ctx("sqlite:///x.db", True), "quiet") as bar:  # --json: never a bar
        assert not bar.enabled
        bar(1, 2)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "since",
    [
        "10000000d",
        "1000000000000000000000s",
        "0001-01-01T00:00:00+14:00",
        "9999-12-31T23:59:59-14:00",
    ],
)
def test_check_since_beyond_the_calendar_is_a_typed_input_error(store_url, since):
    r = run(store_url, "--json", "check", "--no-record", "--since", since)
    assert r.exit_code == 1
    err = json.loads(r.stdout)["error"]
    assert (err["code"], err["details"]["option"]) == ("input.invalid", "since")


def test_a_batch_size_beyond_the_platform_is_a_usage_error(store_url, tmp_path):
    f = tmp_path / "d.json"
    f.write_text("{}")
    r = run(store_url, "ingest", "--batch", str(sys.maxsize + 1), str(f))
    assert r.exit_code == 2


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs /proc/self/mem (Linux)")
def test_put_of_a_file_that_fails_to_read_is_input_unreadable(store_url, snapshot):
    with evstore.open(store_url) as s:
        before = snapshot(s)
    r = run(store_url, "--json", "put", "/proc/self/mem")
    assert r.exit_code == 1
    assert json.loads(r.stdout)["error"]["code"] == "input.unreadable"
    with evstore.open(store_url) as s:
        assert snapshot(s) == before


def test_cat_batch_answers_a_non_utf8_line_with_an_error_frame(store_url):
    r = run(store_url, "cat-batch", input=b"\xff\xfe\n")
    assert r.exit_code == 1
    assert r.stdout_bytes == b"\xff\xfe error ref.syntax\n"


def test_quiet_drops_the_summary_notes_of_bulk_put_and_check(store_url, tmp_path):
    """Issue 23: -q drops notes on stderr; bulk put's "stored N file(s)" and check's notes too."""
    d = tmp_path / "d"  # the SQLite store lies in tmp_path
    d.mkdir()
    for name in ("a.txt", "b.txt"):
        (d / name).write_bytes(name.encode())
    loud = run(store_url, "put", str(d))
    assert loud.exit_code == 0 and loud.stderr == "stored 2 file(s), 2 new\n"
    quiet = run(store_url, "put", str(d), "-q")
    assert quiet.exit_code == 0 and quiet.stderr == "", quiet.stderr
    assert quiet.stdout == loud.stdout  # the results stay
    checked = run(store_url, "check", "--sample", "1", "--seed", "1")
    assert checked.exit_code == 0 and "checked 2 object(s)" in checked.stderr
    quiet = run(store_url, "-q", "check", "--sample", "1", "--seed", "1")
    assert quiet.exit_code == 0 and quiet.stderr == "", quiet.stderr


def test_output_a_cp1252_stdout_cannot_encode_is_escaped(store_url, tmp_path):
    """Issue 23: in process too, a stdout whose encoding lacks a character escapes it."""
    d = tmp_path / "d"  # the SQLite store lies in tmp_path
    d.mkdir()
    (d / "\U0001f600 caf\u00e9.txt").write_bytes(b"smile")
    runner = CliRunner(charset="cp1252")
    r = runner.invoke(cli, ["--store", store_url, "put", str(d)])
    assert r.exit_code == 0, r.output
    address = "blake3:" + blake3.blake3(b"smile").hexdigest()
    line = f"{address}  {d}/\\U0001f600 caf\u00e9.txt\n".encode("cp1252")
    assert r.stdout_bytes == line
    j = runner.invoke(cli, ["--store", store_url, "--json", "put", str(d)])
    assert j.exit_code == 0 and j.stdout_bytes.isascii()
    assert json.loads(j.stdout_bytes)["results"][0]["path"].endswith("\U0001f600 caf\u00e9.txt")
