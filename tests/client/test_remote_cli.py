"""`evstore --store http://...` gives what `evstore --store DATABASE-URL` gives (both backends).

A real `evstore serve` subprocess serves store B. Writes run on a local store A and, over
HTTP, on B: their outputs must be equal (same addresses, same new flags, same reports and
faults). Reads then run on B twice, by its database URL and over HTTP: equal outputs, exit
codes and files, errors included.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from clientkit import ev, start_server, start_thread, stop_server

from evstore.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"
REVISION = "d4dfd3fad5456c856258ee789f3b69c938346814d31896c19374b76af230b9d0"
PACKAGE_ID = "7d3e9f10-2a4b-4c6d-8e0f-1a2b3c4d5e6f"
QUOTE = "93419b0163a94a8710dfe3acaec0b8e1e9512dd1b9e923816f81bce546673acf"
MISSING = "blake3:" + "0" * 64


def _inputs(tmp: Path) -> dict[str, Path]:
    (tmp / "in").mkdir()
    hello = tmp / "in" / "hello.txt"
    hello.write_bytes(b"hello\n")
    tree = tmp / "in" / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.bin").write_bytes(bytes(range(256)) * 5)
    (tree / "sub" / "b.txt").write_bytes(b"b\n")
    dup = tmp / "in" / "dup.json"
    dup.write_bytes(b'{"a": 1, "a": 2}')
    bad = tmp / "in" / "bad-package.json"
    package = json.loads((EX / "packages" / "01-package-launch.json").read_bytes())
    del package["id"]
    bad.write_text(json.dumps(package))
    return {"hello": hello, "tree": tree, "dup": dup, "bad": bad}


def _writes(f: dict[str, Path]) -> list[tuple[list[str], bytes | None]]:
    frag = EX / "fragments"
    scope = ["--host-id", "EX-HOST-001", "--tenant-id", "EX-TENANT-001"]
    scope += ["--authorization-scope-id", "EX-AUTH-SCOPE-001"]
    packages = sorted(str(p) for p in (EX / "packages").glob("*.json"))
    return [
        (["put", str(f["hello"])], None),
        (["put", str(f["hello"]), "--digests"], None),
        (["--json", "put", "-"], b"from stdin\n"),
        (["put", str(f["tree"])], None),
        (["--json", "put", str(f["tree"]), "--batch", "1"], None),
        (["ingest", str(EX / "json" / "run-note.json")], None),
        (["ingest", str(EX / "json" / "run-note.json"), "--digests"], None),
        (
            ["ingest-source", "--document-id", "EX-DOC-0001", "--fragment-id", "clause-3"]
            + ["--revision-checksum", REVISION, str(frag / "clause-3.txt")],
            None,
        ),  # fmt: skip
        (["ingest", str(frag / "fee-extraction-output.json"), *scope], None),
        (
            ["--json", "ingest", "--content", str(EX / "manifests" / "rendered-evidence.md")]
            + [str(EX / "manifests" / "manifest.json")],
            None,
        ),  # fmt: skip
        (["ingest", "--digests", *packages], None),
        (["--json", "ingest", "--batch", "2", str(EX / "packages")], None),
        (["--json", "ingest-bundle", str(EX / "bundle")], None),
        (["--json", "ingest", str(f["dup"])], None),
        (["--json", "ingest", str(f["bad"])], None),
        (["--json", "ingest", "-"], b'{"x": 1}'),
        (["--json", "validate", packages[0]], None),
        (["--json", "validate", str(f["bad"]), str(f["dup"]), packages[0]], None),
        (["validate", str(f["bad"])], None),
    ]


def _reads(b_url: str, tmp: Path, f: dict[str, Path]) -> list[tuple[list[str], bytes | None]]:
    def j(*args: str) -> dict:
        out = CliRunner().invoke(cli, ["--store", b_url, "--json", *args])
        assert out.exit_code == 0, out.output
        return json.loads(out.stdout)

    hello = j("stat", "blake3:8e4c7c1b99dbfd50e7a95185fead5ee1448fa904a2fdd778eaf5f2dbfd629a99")
    run = j("runs")["runs"][0]["address"]
    src = j("find", "--attr", "source_id=session-alpha", "--kind", "source-document")
    src = src["artifacts"][0]["address"]
    fragment = j("find", "--quote-sha256", QUOTE)["artifacts"][0]["address"]
    manifest = json.loads((EX / "manifests" / "manifest.json").read_bytes())["manifest/ref"]
    package = j("find", "--package-id", PACKAGE_ID)["artifacts"][0]["address"]
    page = j("ls", "--limit", "2")["next_cursor"]
    workspace = json.loads((EX / "packages" / "01-package-launch.json").read_bytes())
    workspace = workspace["workspace_id"]
    refs = f"{hello['address']}\n{hello['sha256']}\n{MISSING}\nnot-a-ref\n".encode()
    sums = f"{hello['sha256'][7:]}  hello.txt\n{'1' * 64}  gone.txt\n".encode()
    return [
        (["get", hello["address"]], None),
        (["get", hello["sha256_b64u"]], None),
        (["get", hello["object_store"]], None),
        (["--json", "get", hello["sha256"], "-o", "OUT"], None),
        (["stat", hello["object_store"]], None),
        (["stat", "--verify", "--digests", package], None),
        (["--json", "stat", package], None),
        (["has", hello["address"], MISSING], None),
        (["--json", "has", "-"], f"{hello['sha256']}\n{MISSING}\n".encode()),
        (["cat-batch"], refs),
        (["verify-list", "-a", "sha256", "-"], sums),
        (["find", "--quote-sha256", QUOTE], None),
        (["--json", "find", "--package-id", PACKAGE_ID.upper()], None),
        (["find", "--manifest-ref", manifest], None),
        (["find", "--attr", "source_id=session-alpha", "--kind", "source-document"], None),
        (["--json", "find", "--key", "no-such-key"], None),
        (["ls"], None),
        (["--json", "ls", "--kind", "package"], None),
        (["ls", "--workspace", workspace], None),
        (["--json", "ls", "--blobs"], None),
        (["--json", "ls", "--limit", "2"], None),
        (["--json", "ls", "--limit", "3", "--after", page], None),
        (["ls", "--jsonl", "--blobs", "--limit", "4"], None),
        (["--json", "ls", "--after", "nonsense"], None),
        (["refs", "--all", src], None),
        (["--json", "refs", hello["address"]], None),
        (["closure", run], None),
        (["--json", "closure", src], None),
        (["runs"], None),
        (["--json", "runs"], None),
        (["quote", fragment], None),
        (["--json", "quote", fragment], None),
        (["--json", "quote", hello["address"]], None),
        (["fragments", "--document-id", "EX-DOC-0001"], None),
        (
            ["--json", "fragment-sources", "--document-id", "EX-DOC-0001"]
            + ["--fragment-id", "clause-3"],
            None,
        ),  # fmt: skip
        (["fragment-sources", "--document-id", "EX-DOC-0001", "--fragment-id", "clause-3"], None),
        (["excerpt", src, "--ref", "31:31", "--ref", "33:33", "--window", "1"], None),
        (["--json", "excerpt", src, "--ref", "12:40"], None),
        (["--json", "excerpt", src, "--ref", "99:99"], None),
        (["--json", "excerpt", hello["address"]], None),
        (["export", PACKAGE_ID], None),
        (["export", package, "-o", "OUT"], None),
        (["--json", "export", "00000000-0000-4000-8000-000000000000"], None),
        (["manifest", "content", manifest], None),
        (["--json", "manifest", "content", "corpus-evidence-manifest:sha256:" + "0" * 64], None),
        (["--json", "get", MISSING], None),
        (["--json", "get", "blake3:NOPE"], None),
        (["--json", "stat", MISSING], None),
        (["--json", "closure", MISSING], None),
    ]


def _run(url: str, token: str | None, args: list[str], stdin: bytes | None, out: Path, sub=False):
    """(exit code, stdout, the -o file's bytes) of one command: in-process, or the real
    console script (``sub``)."""
    args = [str(out) if a == "OUT" else a for a in args]
    if sub:
        res = ev("--store", url, *args, token=token, input=stdin)
        code, stdout = res.returncode, res.stdout
    else:
        env = {"EVSTORE_TOKEN": token} if token else {}
        got = CliRunner().invoke(cli, ["--store", url, *args], input=stdin, env=env)
        code, stdout = got.exit_code, got.stdout_bytes
        assert got.exception is None or isinstance(got.exception, SystemExit), got.exc_info
    written = out.read_bytes() if out.exists() else None
    if out.exists():
        out.unlink()
    return code, stdout.replace(str(out).encode(), b"OUT"), written


def _normal(result):
    """JSON output as parsed values (the server's problem documents sort the members of
    ``details``; the local CLI keeps their order), anything else as bytes."""
    code, stdout, written = result
    try:
        return code, [json.loads(line) for line in stdout.splitlines()], written
    except ValueError:
        return result


def _compare(label, a, b, mismatches):
    if _normal(a) != _normal(b):
        mismatches.append(f"{label}\n  local:  {a!r}\n  remote: {b!r}")


def test_remote_cli_gives_the_local_output(store_url, empty_url, tmp_path):
    # In-process commands against the app on uvicorn in a thread (coverage sees both sides);
    # the console script against a server process is the next test.
    f = _inputs(tmp_path)
    a_url, b_url = store_url, empty_url
    assert ev("--store", b_url, "init").returncode == 0
    server = start_thread(b_url)
    try:
        mismatches: list[str] = []
        for args, stdin in _writes(f):
            local = _run(a_url, None, args, stdin, tmp_path / "out-a")
            remote = _run(server.url, server.ingest, args, stdin, tmp_path / "out-b")
            _compare(" ".join(args), local, remote, mismatches)
        for args, stdin in _reads(b_url, tmp_path, f):
            local = _run(b_url, None, args, stdin, tmp_path / "out-a")
            remote = _run(server.url, server.read, args, stdin, tmp_path / "out-b")
            _compare(" ".join(args), local, remote, mismatches)
            assert b"Traceback" not in remote[1]
        assert not mismatches, "\n".join(mismatches)
    finally:
        server.stop()


#: Commands run through the real console script too (the user path), on both sides.
USER_PATH = ("put", "get", "stat", "ingest", "ls", "quote", "cat-batch")


def test_the_console_script_over_http_gives_the_local_output(store_url, empty_url, tmp_path):
    f = _inputs(tmp_path)
    assert ev("--store", empty_url, "init").returncode == 0
    server = start_server(empty_url, tmp_path)
    try:
        mismatches: list[str] = []
        writes = _writes(f)
        bundle = next(i for i, (a, _) in enumerate(writes) if "ingest-bundle" in a)
        for args, stdin in writes[: bundle + 1]:  # everything the reads below need
            local = _run(store_url, None, args, stdin, tmp_path / "out-a")
            remote = _run(server.url, server.ingest, args, stdin, tmp_path / "out-b")
            _compare(" ".join(args), local, remote, mismatches)
        chosen = [r for r in _reads(empty_url, tmp_path, f) if set(r[0]) & set(USER_PATH)]
        for args, stdin in chosen[:12]:
            local = _run(empty_url, None, args, stdin, tmp_path / "out-a", sub=True)
            remote = _run(server.url, server.read, args, stdin, tmp_path / "out-b", sub=True)
            _compare(" ".join(args), local, remote, mismatches)
        assert len(chosen) >= 10 and not mismatches, "\n".join(mismatches)
    finally:
        stop_server(server.proc)


def test_database_commands_say_they_need_the_database(server):
    for args in (["init"], ["migrate"], ["serve"]):
        out = ev("--store", server.url, "--json", *args, token=server.read)
        assert out.returncode == 1, args
        err = json.loads(out.stdout)["error"]
        assert err["code"] == "remote.unsupported" and err["details"]["command"] in args, err


def test_tokens_and_their_faults_over_the_cli(server, tmp_path):
    hello = tmp_path / "h.txt"
    hello.write_bytes(b"token test\n")
    out = ev("--store", server.url, "--json", "put", str(hello))
    assert out.returncode == 1
    assert json.loads(out.stdout)["error"]["code"] == "http.unauthorized"
    out = ev("--store", server.url, "--json", "put", str(hello), token=server.read)
    assert out.returncode == 1
    assert json.loads(out.stdout)["error"]["code"] == "http.forbidden"
    out = ev("--store", server.url, "put", str(hello), token="wrong-" + server.read)
    assert out.returncode == 1 and b"http.unauthorized" in out.stderr
    assert server.read.encode() not in out.stderr + out.stdout
    out = ev("--store", server.url, "put", str(hello), token=server.ingest)
    assert out.returncode == 0
    out = ev("--store", server.url, "get", out.stdout.decode().strip(), token=server.read)
    assert out.stdout == b"token test\n"


def test_an_unreachable_server_is_a_typed_error_naming_the_url(tmp_path):
    from clientkit import free_port

    url = f"http://127.0.0.1:{free_port()}/acme"
    out = ev("--store", url, "--json", "stat", MISSING, token="sekrit-token")
    assert out.returncode == 1
    err = json.loads(out.stdout)["error"]
    assert err["code"] == "remote.unreachable" and err["details"]["url"] == url
    assert b"sekrit" not in out.stdout + out.stderr
    out = ev("--store", url, "get", MISSING, "-o", str(tmp_path / "x"))
    assert out.returncode == 1 and b"remote.unreachable" in out.stderr
    assert b"Traceback" not in out.stderr and not (tmp_path / "x").exists()


def test_named_stores_are_reached_by_their_prefix(store_url, tmp_path):
    # One process serving the store as "acme": the client's URL carries the name.
    from clientkit import make_token

    token = make_token(store_url, "ingest")
    url, proc = _named_server(store_url, tmp_path)
    try:
        hello = tmp_path / "n.txt"
        hello.write_bytes(b"named\n")
        out = ev("--store", url + "/acme", "put", str(hello), token=token)
        assert out.returncode == 0, out.stderr
        got = ev("--store", url + "/acme", "get", out.stdout.decode().strip())  # public read
        assert got.stdout == b"named\n"
        out = ev("--store", url + "/nope", "--json", "stat", MISSING, token=token)
        assert out.returncode == 1
        fault = json.loads(out.stdout)["error"]
        assert fault["code"] == "http.route"
        assert f"no evstore store is served at {url}/nope" in fault["message"]
    finally:
        stop_server(proc)


def _named_server(store_url: str, tmp: Path):
    import subprocess
    import time

    import httpx
    from clientkit import EXE, free_port

    port = free_port()
    with (tmp / "named.log").open("wb") as log:
        proc = subprocess.Popen(
            [EXE, "serve", f"acme={store_url}", "--host", "127.0.0.1", "--port", str(port)]
            + ["--no-access-log", "--public-read"],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/acme/v1", timeout=2).status_code == 200:
                return url, proc
        except httpx.HTTPError:
            time.sleep(0.1)
    stop_server(proc)
    pytest.fail("the named server did not start")


@pytest.mark.parametrize("backend", ["sqlite"])
def test_evstore_open_over_http_has_the_store_api(store_url, tmp_path, backend):
    import evstore

    srv = start_server(store_url, tmp_path)
    try:
        with evstore.open(srv.url, token=srv.ingest) as remote:
            put = remote.put(b"api bytes")
            assert remote.get(put.digest.address) == b"api bytes"
            assert remote.has([put.digest.address, MISSING]) == [MISSING]
            doc = (EX / "json" / "run-note.json").read_bytes()
            report = remote.ingest([evstore.Document(doc, name="note")])
            address = report.results[0].digest.address
            assert remote.load(address) == evstore.loads(doc)
            assert [a.address for a in remote.iter_artifacts()] == [address]
            assert [b["address"] for b in remote.iter_blobs(limit=1)] == sorted(
                [put.digest.address, address]
            )[:1]
            assert remote.info()["backend"] == backend
            with pytest.raises(evstore.InputError) as exc:
                remote.check()  # run by the server: admin only
            assert exc.value.code == "http.forbidden"
            with pytest.raises(evstore.StoreStateError) as exc:
                remote.transaction(print)
            assert exc.value.code == "remote.unsupported"
        with evstore.open(store_url) as local:
            assert local.get(put.digest.address) == b"api bytes"
    finally:
        stop_server(srv.proc)
    shutil.rmtree(tmp_path / "in", ignore_errors=True)
