"""Issue 28: a remote put of many objects is one request and one transaction, as locally.

Against a real ``evstore serve`` process (both backends): the outputs of ``put`` of a
directory, of ``--batch N`` and of ``--stdin-paths`` equal the local ones; a request with one
bad part stores none of its parts; the Python API gives the local results.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

import evstore
from evstore.cli.main import cli


def _run(url: str, token: str | None, *args: str, stdin: bytes | None = None):
    env = {"EVSTORE_TOKEN": token or ""}
    got = CliRunner().invoke(cli, ["--store", url, *args], env=env, input=stdin)
    assert got.exception is None or isinstance(got.exception, SystemExit), got.exc_info
    return got.exit_code, got.stdout_bytes


def _tree(tmp: Path) -> Path:
    tree = tmp / "tree"
    (tree / "sub").mkdir(parents=True)
    for i in range(40):
        (tree / f"f{i:02}.txt").write_bytes(f"bulk file {i}\n".encode())
    (tree / "sub" / "big.bin").write_bytes(bytes(range(256)) * (40 << 10))  # 10 MiB
    (tree / "sub" / "empty").write_bytes(b"")
    return tree


def test_remote_bulk_put_gives_the_local_output(server, empty_url, tmp_path):
    tree = _tree(tmp_path)
    paths = "\n".join(str(p) for p in sorted(tree.glob("f1*"))).encode() + b"\n"
    assert _run(empty_url, None, "init")[0] == 0
    for args, stdin in (
        (["put", str(tree)], None),
        (["--json", "put", str(tree)], None),
        (["--json", "put", "--batch", "7", str(tree)], None),
        (["put", "--digests", str(tree / "f00.txt"), str(tree / "sub")], None),
        (["--json", "put", "--stdin-paths"], paths),
        (["--json", "put", str(tree / "nope.txt")], None),
    ):
        local = _run(empty_url, None, *args, stdin=stdin)
        remote = _run(server.url, server.ingest, *args, stdin=stdin)
        assert local == remote, (args, local, remote)
    assert _run(server.url, server.read, "--json", "put", str(tree))[0] == 1


def test_one_bad_part_stores_no_part(server, store_url):
    good, other = b"stored only with the rest\n", b"the second part\n"
    d1, d2 = evstore.digest_bytes(good), evstore.digest_bytes(other)
    wrong = evstore.digest_bytes(b"something else")
    head = {"Authorization": f"Bearer {server.ingest}"}
    first = f"{d1.size} {d1.address}\n".encode() + good
    bodies = {
        422: first + f"{d2.size} {wrong.address}\n".encode() + other,
        400: first + f"{d2.size} {d2.address}\n".encode() + other[:3],
    }
    for status, body in bodies.items():
        r = httpx.post(server.url + "/v1/objects/batch", content=body, headers=head, timeout=30)
        assert r.status_code == status, r.text
        code = r.json()["code"]
        assert code == ("put.digest-mismatch" if status == 422 else "http.request")
    with evstore.open(store_url) as local:
        assert local.has([d1.address, d2.address]) == [d1.address, d2.address]
    r = httpx.post(
        server.url + "/v1/objects/batch",
        content=f"{d1.size} {d1.address}\n".encode() + good,
        headers={"Authorization": f"Bearer {server.read}"},
        timeout=30,
    )
    assert r.status_code == 403
    with evstore.open(server.url, token=server.ingest) as remote:
        got = remote.put_many([good, io.BytesIO(other), b""], batch=2)
        assert [r.digest.address for r in got] == [
            d1.address,
            d2.address,
            evstore.digest_bytes(b"").address,
        ]
        assert [r.new for r in got] == [True, True, True]
        assert [r.new for r in remote.put_many([other, good])] == [False, False]
    with evstore.open(store_url) as local:
        assert local.get(d2.address) == other
        local.log.integrate()  # writes queue their entries; the tree lists integrated ones
        history = json.dumps(local.log.entries())
        assert d1.address in history


def _many(tag: str, n: int) -> list[bytes]:
    return [f"{tag} file {i:05d}\n".encode() * 3 for i in range(n)]


def test_a_remote_put_of_many_files_gives_the_local_results(server, empty_url, tmp_path):
    """Issue 28: thousands of parts (several of the library's chunks of 2,000 on the server,
    whose results go through its spool files) answer what a local put of them answers.
    """
    stored, fresh = _many("stored", 300), _many("fresh", 4_500)
    items = [*fresh[:2_500], *stored, *fresh[2_500:], *fresh[:200], b""]
    files = tmp_path / "files"
    files.mkdir()
    paths = []
    for i, data in enumerate(items):
        paths.append(files / f"{i:05d}")
        paths[-1].write_bytes(data)
    with evstore.open(empty_url, create=True) as local:
        local.put_many(stored)
        want = [(r.digest, r.new) for r in local.put_many(paths)]
    with evstore.open(server.url, token=server.ingest) as remote:
        assert [r.new for r in remote.put_many(stored)] == [True] * len(stored)
        got: list[evstore.PutResult] = []
        assert remote.put_many(paths, results=got.append) == len(items)
    assert [(r.digest, r.new) for r in got] == want
    assert sum(new for _, new in want) == len(fresh) + 1  # the repeats and stored: not new
    with evstore.open(server.store_url) as served:
        served.log.integrate()
        assert list(served.check(record=False)) == []


def test_a_remote_put_of_many_files_failing_late_stores_none(store_url, snapshot, monkeypatch):
    """All or nothing with thousands of parts: a fault after several chunks were written in
    the server's transaction (injected in this process's server thread) leaves no row.
    """
    from clientkit import start_thread

    from evstore.core.errors import error
    from evstore.objects import blob_batches

    real, calls = blob_batches.spill_entries, [0]

    def late_fault(conn):
        calls[0] += 1
        if calls[0] == 2:  # before the third chunk of 2,000
            raise error("input.invalid", "injected: a fault after two chunks were written")
        real(conn)

    monkeypatch.setattr(blob_batches, "spill_entries", late_fault)
    server = start_thread(store_url)
    try:
        with evstore.open(store_url) as store:
            before = snapshot(store)
        with evstore.open(server.url, token=server.ingest) as remote:
            with pytest.raises(evstore.InputError) as ei:
                remote.put_many(_many("late", 5_000))
            assert ei.value.code == "input.invalid"
            assert calls[0] == 2
            with evstore.open(store_url) as store:
                assert snapshot(store) == before
            monkeypatch.setattr(blob_batches, "spill_entries", real)
            got = remote.put_many(_many("late", 5_000))
        assert [r.new for r in got] == [True] * 5_000
    finally:
        server.stop()


#: The database packages a remote command must never load (their start-up, 0.12-0.2 s, was
#: a remote bulk put's margin over a local one: issue 28).
DATABASE_PACKAGES = ("sqlalchemy", "alembic", "psycopg")


def test_a_remote_put_loads_no_database_package(server, tmp_path):
    tree = _tree(tmp_path)
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "evstore", "--store", server.url]
        + ["put", str(tree)],
        env={**os.environ, "EVSTORE_TOKEN": server.ingest, "EVSTORE_URL": ""},
        capture_output=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count(b"blake3:") == 42
    modules = {
        line.rsplit("|", 1)[1].strip()
        for line in out.stderr.decode().splitlines()
        if line.startswith("import time:")
    }
    assert "evstore.client.remote" in modules  # the measurement saw the client load
    loaded = sorted(m for m in modules if m.split(".")[0] in DATABASE_PACKAGES)
    assert loaded == []
