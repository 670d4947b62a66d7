"""Storage faults on a running store: read-only SQLite stores, a replaced or deleted store
file, readers beside a long write, a terminated PostgreSQL backend. Every one ends in a typed
``store.*`` error (exit 1, no traceback) or, for reads, in the right answer."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import evstore
from evstore import Document
from evstore.cli.main import cli
from evstore.core.errors import StoreStateError

PG_ONLY = pytest.mark.parametrize("backend", ["postgresql"])
SQLITE_ONLY = pytest.mark.parametrize("backend", ["sqlite"])


def _cli(url: str, *args: str, input: bytes | None = None) -> tuple[int, dict]:
    r = CliRunner().invoke(cli, ["--store", url, "--json", *args], input=input)
    assert "Traceback" not in r.output, r.output
    return r.exit_code, json.loads(r.stdout)


def _fill(url: str) -> dict[str, str]:
    with evstore.open(url) as s:
        blob = s.put(b"raw bytes")
        art = s.ingest([Document(b'{"a read-only store": true}')]).results[0]
    return {
        "blob": blob.digest.address,
        "sha": "sha256:" + blob.digest.sha256,
        "art": art.digest.address,
    }


# ---------------------------------------------------------------------------------------
# A read-only SQLite store: every read command reads it, every write is store.read-only
# ---------------------------------------------------------------------------------------


@SQLITE_ONLY
@pytest.mark.parametrize("option", ["mode=ro", "immutable=1"])
def test_a_read_only_sqlite_store_serves_every_read_command(store_url, snapshot, option, tmp_path):
    refs = _fill(store_url)
    url = f"{store_url}?{option}"
    with evstore.open(store_url) as s:
        before = snapshot(s)
    r = CliRunner().invoke(cli, ["--store", url, "get", refs["blob"]])
    assert (r.exit_code, r.stdout_bytes) == (0, b"raw bytes")
    code, out = _cli(url, "stat", refs["sha"])
    assert code == 0 and out["address"] == refs["blob"]
    assert _cli(url, "has", refs["blob"], refs["sha"], refs["art"]) == (
        0,
        {"ok": True, "missing": []},
    )
    code, out = _cli(url, "ls")
    assert code == 0 and {a["address"] for a in out["artifacts"]} == {refs["art"]}
    code, out = _cli(url, "check")
    assert code == 0, out
    assert _cli(url, "config")[0] == 0
    with evstore.open(url) as s:
        assert s.load(refs["art"]) == {"a read-only store": True}
        assert s.get(refs["blob"]) == b"raw bytes"
    # writes: store.read-only, exit 1, nothing written
    new = tmp_path / "new.bin"
    new.write_bytes(b"never written")
    code, out = _cli(url, "put", str(new))
    assert (code, out["error"]["code"]) == (1, "store.read-only")
    doc = tmp_path / "doc.json"
    doc.write_bytes(b'{"never": "written"}')
    code, out = _cli(url, "ingest", str(doc))
    assert (code, out["error"]["code"]) == (1, "store.read-only")
    code, out = _cli(url, "migrate")
    assert (code, out["error"]["code"]) == (1, "store.read-only")
    with evstore.open(store_url) as s:
        assert snapshot(s) == before


@SQLITE_ONLY
def test_read_only_options_are_sqlite_only_and_few(store_url, tmp_path):
    for bad in ("?mode=rw", "?cache=shared", "?mode=ro&cache=shared"):
        with pytest.raises(StoreStateError) as info:
            evstore.open(store_url + bad)
        assert info.value.code == "store.url"
    with pytest.raises(StoreStateError) as info:
        evstore.open(f"sqlite:///{tmp_path / 'none.db'}?mode=ro", create=True)
    assert info.value.code == "store.read-only"


def _nobody_can_run_python() -> str | None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return "needs root and setpriv to drop to an unprivileged user"
    probe = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            sys.executable,
            "-c",
            "import evstore",
        ],
        capture_output=True,
        timeout=60,
    )
    return None if probe.returncode == 0 else "the unprivileged user cannot import evstore"


READ_AS_NOBODY = r"""
import json, sys
import evstore
path, blob = sys.argv[1], sys.argv[2]
out = {}
with evstore.open(path) as s:
    out["get"] = s.get(blob).decode()
    out["ls"] = len(s.ls())
    out["has"] = s.has([blob])
    out["check"] = [f.code for f in s.check()]
try:
    with evstore.open(path) as s:
        s.put(b"refused")
except evstore.EvstoreError as exc:
    out["put"] = exc.code
print(json.dumps(out))
"""


@SQLITE_ONLY
def test_a_store_in_a_read_only_folder_is_read_by_an_unprivileged_user(store_url):
    """A file and folder this process cannot write (tests run as root: drop to nobody)."""
    why = _nobody_can_run_python()
    if why is not None:
        pytest.skip(why)
    refs = _fill(store_url)
    folder = Path(tempfile.mkdtemp(prefix="evstore-ro-"))
    try:
        folder.chmod(0o755)  # root's: nobody may read, not write
        path = folder / "store.db"
        shutil.copyfile(store_url.removeprefix("sqlite:///"), path)
        path.chmod(0o644)
        r = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                sys.executable,
                "-c",
                READ_AS_NOBODY,
                str(path),
                refs["blob"],
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert out == {
            "get": "raw bytes",
            "ls": 1,
            "has": [],
            "check": [],
            "put": "store.read-only",
        }
        assert sorted(p.name for p in folder.iterdir()) == ["store.db"]
    finally:
        shutil.rmtree(folder)


# ---------------------------------------------------------------------------------------
# The store file deleted or replaced under a running process
# ---------------------------------------------------------------------------------------


@SQLITE_ONLY
@pytest.mark.parametrize("how", ["replaced", "deleted"])
def test_a_replaced_or_deleted_store_file_is_refused_before_any_write(store_url, tmp_path, how):
    path = Path(store_url.removeprefix("sqlite:///"))
    other = tmp_path / "other.db"
    shutil.copyfile(path, other)
    with evstore.open(f"sqlite:///{other}") as o:
        kept = o.put(b"the other store's content").digest.address
    with evstore.open(store_url) as s:
        s.put(b"before")
        if how == "replaced":
            os.replace(other, path)  # another store moved over this one's name
        else:
            path.unlink()
            for side in ("-wal", "-shm"):
                Path(f"{path}{side}").unlink(missing_ok=True)
        for write in (
            lambda: s.put(b"after"),
            lambda: s.put_many([b"after %d" % i for i in range(5)]),
            lambda: s.ingest([Document(b'{"after": 1}')]),
        ):
            with pytest.raises(StoreStateError) as info:
                write()
            assert info.value.code == "store.replaced"
        with pytest.raises(StoreStateError) as info:
            s.get(kept)
        assert info.value.code == "store.replaced"
    if how == "replaced":
        with evstore.open(store_url) as fresh:  # the file now at the path: the other store
            assert fresh.get(kept) == b"the other store's content"
            assert fresh.has([evstore.digest_bytes(b"after").address]) != []
            assert list(fresh.check()) == []


# ---------------------------------------------------------------------------------------
# SQLite readers never wait for a writer
# ---------------------------------------------------------------------------------------


@SQLITE_ONLY
def test_sqlite_readers_do_not_wait_for_a_long_write(store_url):
    refs = _fill(store_url)
    holder = sqlite3.connect(store_url.removeprefix("sqlite:///"), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO settings (name, value) VALUES ('x.held', '1')")
    try:
        started = time.monotonic()
        with evstore.open(store_url) as s:
            assert s.get(refs["blob"]) == b"raw bytes"
            assert s.get(refs["sha"]) == b"raw bytes"
            assert s.stat(refs["blob"])["size"] == 9
            assert s.has([refs["blob"], refs["art"]]) == []
            assert [a.address for a in s.ls()] == [refs["art"]]
            assert s.load(refs["art"]) == {"a read-only store": True}
        code, out = _cli(store_url, "ls")
        assert code == 0 and len(out["artifacts"]) == 1
        assert time.monotonic() - started < 5  # the busy timeout is 30 s
    finally:
        holder.execute("ROLLBACK")
        holder.close()


# ---------------------------------------------------------------------------------------
# PostgreSQL: a terminated backend, a statement timeout during an ingest
# ---------------------------------------------------------------------------------------

TERMINATED = r"""
import sys
import psycopg
import evstore
url = sys.argv[1]
with evstore.open(url) as s:
    s.put(b"warm the pool")
    with psycopg.connect(url, autocommit=True) as admin:
        n = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()[0]
    assert n >= 1, n
    print(s.put(b"after the termination").new, s.get(s.put(b"x").digest.address) == b"x")
"""


@PG_ONLY
def test_pg_terminated_idle_connection_next_call_works_without_a_traceback(store_url):
    r = subprocess.run(
        [sys.executable, "-c", TERMINATED, store_url], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True"]
    assert "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) <= 1, r.stderr


@PG_ONLY
def test_pg_statement_timeout_during_an_ingest_is_typed(store_url, snapshot, tmp_path, monkeypatch):
    docs = []
    for i in range(300):
        p = tmp_path / f"d{i}.json"
        p.write_bytes(b'{"n": %d, "pad": "%s"}' % (i, b"x" * 2000))
        docs.append(str(p))
    with evstore.open(store_url) as s:
        before = snapshot(s)
    monkeypatch.setenv("PGOPTIONS", "-c statement_timeout=1")
    code, out = _cli(store_url, "ingest", *docs)
    assert code == 1
    assert out["error"]["code"] == "store.timeout", out
    monkeypatch.delenv("PGOPTIONS")
    with evstore.open(store_url) as s:
        assert snapshot(s) == before


def test_the_pool_logs_a_broken_connection_as_one_warning_line(caplog):
    """SQLAlchemy's pool logs a traceback when a connection breaks; evstore makes it one line."""
    import logging

    import sqlalchemy.pool

    import evstore.db.engine  # noqa: F401 - installs the filter

    log = logging.getLogger("sqlalchemy.pool.impl.QueuePool")
    assert isinstance(sqlalchemy.pool.QueuePool, type)
    with caplog.at_level(logging.WARNING, logger="sqlalchemy.pool"):
        try:
            raise RuntimeError("terminating connection due to administrator command\nmore")
        except RuntimeError:
            log.error("Exception during reset or similar", exc_info=True)
    [record] = caplog.records
    assert record.levelname == "WARNING"
    assert record.exc_info is None
    text = caplog.text.strip()
    assert len(text.splitlines()) == 1
    assert "RuntimeError: terminating connection due to administrator command" in text
    assert "Traceback" not in text
