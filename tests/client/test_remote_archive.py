"""Issue 28: archives and validate over the URL, against a real ``evstore serve`` process.

``archive export`` over HTTP writes the bytes a local export writes (the same tar, the same
directory); ``archive import`` over HTTP gives the local report and refusals and writes
nothing when refused or interrupted; ``validate`` with no server behind the URL checks the
contract rules alone, as with no store. Commands run in-process (CliRunner) against the
server process; both backends.
"""

from __future__ import annotations

import json
import socket
import urllib.parse
from pathlib import Path

from click.testing import CliRunner
from clientkit import ev, free_port, make_token, start_server, stop_server

import evstore
from evstore.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"


def _run(url: str, token: str | None, *args: str) -> tuple[int, bytes]:
    env = {"EVSTORE_TOKEN": token} if token else {"EVSTORE_TOKEN": ""}
    got = CliRunner().invoke(cli, ["--store", url, *args], env=env)
    assert got.exception is None or isinstance(got.exception, SystemExit), got.exc_info
    return got.exit_code, got.stdout_bytes


def _normal(result: tuple[int, bytes], *paths: Path) -> tuple:
    code, out = result
    for i, p in enumerate(paths):
        out = out.replace(str(p).encode(), f"PATH{i}".encode())
    try:
        return code, [json.loads(line) for line in out.splitlines()]
    except ValueError:
        return code, out


def _count(url: str) -> tuple[int, int]:
    out = json.loads(CliRunner().invoke(cli, ["--store", url, "--json", "ls", "--blobs"]).stdout)
    log = json.loads(CliRunner().invoke(cli, ["--store", url, "--json", "log"]).stdout)
    return len(out["blobs"]), log["size"]


def test_archives_over_http_give_the_local_bytes_reports_and_refusals(
    store_url, empty_url, tmp_path
):
    assert ev("--store", store_url, "init").returncode == 0
    assert ev("--store", empty_url, "init").returncode == 0
    bundle = ev("--store", store_url, "--json", "ingest-bundle", str(EX / "bundle"))
    assert bundle.returncode == 0, bundle.stdout
    run = json.loads(bundle.stdout)["run"]["address"]
    note = ev("--store", store_url, "--json", "ingest", str(EX / "json" / "run-note.json"))
    note_ref = json.loads(note.stdout)["artifacts"][0]["address"]
    src = ev("--store", store_url, "--json", "ls").stdout
    assert src
    srv = start_server(store_url, tmp_path)
    dst = start_server(empty_url, tmp_path)
    admin = make_token(store_url, "admin")
    try:
        # export: the same tar and directory, the same report, the same refusals
        a, b = tmp_path / "a.tar", tmp_path / "b.tar"
        ra = _run(store_url, None, "--json", "archive", "export", run, note_ref, "-o", str(a))
        rb = _run(srv.url, srv.read, "--json", "archive", "export", run, note_ref, "-o", str(b))
        assert ra[0] == 0 and _normal(ra, a) == _normal(rb, b)
        assert a.read_bytes() == b.read_bytes()
        ra = _run(store_url, None, "archive", "export", run, "-o", str(tmp_path / "da"))
        rb = _run(srv.url, srv.read, "archive", "export", run, "-o", str(tmp_path / "db"))
        assert _normal(ra, tmp_path / "da") == _normal(rb, tmp_path / "db")
        names = sorted(p.relative_to(tmp_path / "da") for p in (tmp_path / "da").rglob("*"))
        assert names == sorted(p.relative_to(tmp_path / "db") for p in (tmp_path / "db").rglob("*"))
        for n in names:
            if (tmp_path / "da" / n).is_file():
                assert (tmp_path / "da" / n).read_bytes() == (tmp_path / "db" / n).read_bytes()
        for args in (
            ["--json", "archive", "export", "blake3:" + "0" * 64, "-o", "OUT.tar"],
            ["--json", "archive", "export", "blake3:nope", "-o", "OUT.tar"],
            ["--json", "archive", "export", run, "-o", str(a)],  # exists
            ["--json", "archive", "export", run, "--with-proofs", "-o", "OUT.tar"],
        ):
            out = tmp_path / "OUT.tar"
            args = [str(out) if x == "OUT.tar" else x for x in args]
            ra = _run(store_url, None, *args)
            assert not out.exists()
            rb = _run(srv.url, srv.read, *args)
            assert ra[0] == 1 and _normal(ra) == _normal(rb), args
            assert not out.exists()
        # import: the local report, and nothing written by a refused one
        before = _count(empty_url)
        bad = tmp_path / "bad.tar"
        raw = bytearray(a.read_bytes())
        at = raw.rindex(b"blake3:") + 7  # an address inside a member: its digest breaks
        raw[at] = ord("0") if raw[at] != ord("0") else ord("1")
        bad.write_bytes(bytes(raw))
        empty = tmp_path / "empty.tar"  # was http.request over HTTP, archive.layout locally
        empty.write_bytes(b"")
        for args in (
            ["--json", "archive", "import", str(empty)],
            ["--json", "archive", "import", str(bad)],
            ["archive", "import", str(tmp_path / "missing.tar")],
            ["--json", "archive", "import", "--max-bytes", "10", str(a)],
            ["--json", "archive", "import", str(ROOT / "README.md")],
        ):
            ra = _run(store_url, None, *args)
            rb = _run(dst.url, dst.ingest, *args)
            assert ra[0] == 1 and _normal(ra) == _normal(rb), (args, ra, rb)
        assert _count(empty_url) == before
        for tok in (dst.read, None):
            code, out = _run(dst.url, tok, "--json", "archive", "import", str(a))
            assert code == 1
            assert json.loads(out)["error"]["code"] in ("http.forbidden", "http.unauthorized")
        assert _count(empty_url) == before
        # the local store holds the archive already: new_* 0 there, as on a second import
        rb = _run(dst.url, dst.ingest, "--json", "archive", "import", str(a))
        assert rb[0] == 0, rb
        report = json.loads(rb[1])
        assert report["archive"] == str(a) and report["new_artifacts"] > 0
        rb2 = _run(dst.url, dst.ingest, "--json", "archive", "import", str(tmp_path / "db"))
        assert json.loads(rb2[1])["new_blobs"] == 0
        ra = _run(store_url, None, "--json", "archive", "import", str(a))
        assert _normal(ra, a) == _normal(
            _run(dst.url, dst.ingest, "--json", "archive", "import", str(a)), a
        )
        assert admin
    finally:
        stop_server(srv.proc)
        stop_server(dst.proc)


def test_an_interrupted_archive_import_leaves_the_store_unchanged(
    server, store_url, tmp_path, snapshot
):
    note = tmp_path / "n.json"
    note.write_bytes((EX / "json" / "run-note.json").read_bytes())
    local = tmp_path / "l.db"
    assert ev("--store", f"sqlite:///{local}", "ingest", str(note)).returncode == 0
    ref = json.loads(ev("--store", f"sqlite:///{local}", "--json", "ls").stdout)
    ref = ref["artifacts"][0]["address"]
    tar = tmp_path / "x.tar"
    assert (
        ev("--store", f"sqlite:///{local}", "archive", "export", ref, "-o", str(tar)).returncode
        == 0
    )
    data = tar.read_bytes()
    before = _count(store_url)
    with evstore.open(store_url) as store:
        rows = snapshot(store)
    parts = urllib.parse.urlsplit(server.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as s:
        head = (
            f"POST /v1/archives HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            f"Authorization: Bearer {server.ingest}\r\nContent-Type: application/x-tar\r\n"
            f"Content-Length: {len(data)}\r\n\r\n"
        )
        s.sendall(head.encode() + data[: len(data) // 2])  # then the client goes away
    # the server is still up and the store holds nothing of the half-sent archive
    assert _run(server.url, server.read, "--json", "ls")[0] == 0
    assert _count(store_url) == before
    with evstore.open(store_url) as store:
        assert snapshot(store) == rows  # every row and byte as before
    code, out = _run(server.url, server.ingest, "--json", "archive", "import", str(tar))
    assert code == 0 and json.loads(out)["new_artifacts"] == 1


def test_an_export_with_proofs_over_http_is_the_local_tar(server, store_url, tmp_path):
    note = tmp_path / "n.json"
    note.write_bytes((EX / "json" / "run-note.json").read_bytes())
    hello = tmp_path / "h.txt"
    hello.write_bytes(b"exported with its proof\n")
    key = tmp_path / "log.key"
    put = ev("--store", store_url, "put", str(hello))
    ingest = ev("--store", store_url, "--json", "ingest", str(note))
    assert put.returncode == 0 and ingest.returncode == 0, ingest
    refs = [put.stdout.decode().strip(), json.loads(ingest.stdout)["artifacts"][0]["address"]]
    assert ev("--store", store_url, "log", "init-key", str(key)).returncode == 0
    assert ev("--store", store_url, "log", "checkpoint").returncode == 0
    a, b = tmp_path / "a.tar", tmp_path / "b.tar"
    args = ["--json", "archive", "export", *refs, "--with-proofs", "-o"]
    ra = _run(store_url, None, *args, str(a))
    rb = _run(server.url, server.read, *args, str(b))
    assert ra[0] == 0 and _normal(ra, a) == _normal(rb, b), (ra, rb)
    assert a.read_bytes() == b.read_bytes()  # the same checkpoint, proofs, bytes
    assert b"application/vnd.evstore.tlog-proof.v1" in b.read_bytes()
    # the remote tar's proofs verify offline under the log's verifier key
    vkey = ev("--store", store_url, "log", "key").stdout.decode().strip()
    verify = ev("archive", "verify", str(b), "--key", vkey)
    assert verify.returncode == 0, verify


def test_validate_with_no_server_checks_the_contract_rules_alone(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    package = sorted((EX / "packages").glob("*.json"))[0]
    nothing = f"sqlite:///{tmp_path / 'none.db'}"
    for args in (
        ["--json", "validate", str(package)],
        ["--json", "validate", str(package), str(ROOT / "README.md")],
        ["validate", str(package)],
    ):
        ra = ev("--store", nothing, *args)
        rb = ev("--store", url, *args)
        assert (ra.returncode, ra.stdout) == (rb.returncode, rb.stdout), args
        if "--json" in args:
            assert json.loads(rb.stdout)["bindings_checked"] is False
        else:
            assert b"no server reachable" in rb.stderr
            assert b"bindings were not checked" in rb.stderr
    assert not (tmp_path / "none.db").exists()
