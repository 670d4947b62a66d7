"""Large blobs in a blob backend: a regular file is uploaded from itself, checked on the way,
and a verified read downloads once (issue 25), on both databases and both backends.
"""

from __future__ import annotations

import io
import os
import tempfile

import pytest
import sqlalchemy as sa

import evstore
from evstore.backends.base import blob_key
from evstore.backends.file import FileBackend
from evstore.backends.s3 import S3Backend
from evstore.backends.spec import open_backend
from evstore.db.tables import blobs
from evstore.objects import file_sources

#: A small piece size for the tests, so that a file of a few hundred KiB takes several.
PIECE = 64 << 10


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(file_sources, "PIECE", PIECE)


def _addresses(store) -> set[str]:
    with store.db.engine.connect() as conn:
        return {r[0] for r in conn.execute(sa.select(blobs.c.address))}


def _no_spool(monkeypatch):
    """Make any spool file of a put fail the test (a regular file needs none)."""

    def refused(*a, **k):
        raise AssertionError("a regular file was spooled")

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", refused)


def test_a_large_regular_file_is_uploaded_from_itself_from_where_it_stood(
    s, spec, tmp_path, monkeypatch, small_pieces
):
    data = os.urandom(5 * PIECE + 11)
    path = tmp_path / "big"
    path.write_bytes(b"HEADER!" + data)
    _no_spool(monkeypatch)
    with open(path, "rb") as f:
        f.seek(7)  # the stream's bytes from here on, as for any stream
        res = s.put(f)
    monkeypatch.undo()
    assert res.new and res.digest == evstore.digest_bytes(data)
    assert open_backend(spec).stat(blob_key(res.digest.blake3)) == len(data)
    assert s.get(res.digest.address) == data
    assert list(s.check()) == []
    with open(path, "rb") as f:
        f.seek(7)
        assert s.put(f).new is False


def test_a_file_of_one_piece_or_less_is_read_once_into_memory(s, spec, tmp_path, small_pieces):
    for size in (PIECE, 100):  # to the backend, and inline (under blobs.inline_max)
        path = tmp_path / f"f{size}"
        data = os.urandom(size)
        path.write_bytes(data)
        with open(path, "rb") as f:
            res = s.put(f)
        assert s.get(res.digest.address) == data
        assert s.stat(res.digest.address)["stored"] == ("backend" if size > 1024 else "inline")


@pytest.mark.parametrize("change", ["other bytes", "shorter", "emptied"])
def test_a_file_that_changes_during_its_upload_stores_nothing(
    s, spec, tmp_path, monkeypatch, small_pieces, change
):
    kept = s.put(os.urandom(3000)).digest.address
    path = tmp_path / "moving"
    data = os.urandom(4 * PIECE + 5)
    path.write_bytes(data)
    before = _addresses(s)
    backend = open_backend(spec)
    objects = {x.key for x in backend.list("")}
    first_read = file_sources.FileSource.pieces

    def changing(self):  # another program writes the file between the two reads
        if change == "other bytes":
            with open(path, "r+b") as w:
                w.seek(len(data) - 2)
                w.write(b"\x00\x01" if data[-2:] != b"\x00\x01" else b"\x02\x03")
        else:
            with open(path, "r+b") as w:
                w.truncate(0 if change == "emptied" else len(data) - PIECE)
        return first_read(self)

    monkeypatch.setattr(file_sources.FileSource, "pieces", changing)
    with open(path, "rb") as f, pytest.raises(evstore.InputError) as info:
        s.put(f)
    assert info.value.code == "input.changed"
    assert str(path) in str(info.value) and "nothing was stored" in str(info.value)
    assert _addresses(s) == before  # no row
    assert {x.key for x in backend.list("")} == objects  # no object became visible
    assert s.has([kept]) == []


def test_a_pipe_is_spooled_and_stored(s, spec):
    r, w = os.pipe()
    data = os.urandom(300_000)
    pid = os.fork()
    if pid == 0:  # the writer
        os.close(r)
        with os.fdopen(w, "wb") as out:
            out.write(data)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        assert not file_sources.regular_file(f)
        res = s.put(f)
    os.waitpid(pid, 0)
    assert s.get(res.digest.address) == data


def test_only_python_file_objects_over_regular_files_are_read_twice(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x")
    with open(path, "rb") as f, open(path, "rb", buffering=0) as raw:
        assert file_sources.regular_file(f) and file_sources.regular_file(raw)
    assert not file_sources.regular_file(io.BytesIO(b"x"))
    with tempfile.SpooledTemporaryFile() as spooled:
        assert not file_sources.regular_file(spooled)
    with open(path) as text:
        assert not file_sources.regular_file(text)
    with open(path, "rb") as closed:
        pass
    assert not file_sources.regular_file(closed)


def test_a_verified_read_downloads_the_object_once(s, spec, monkeypatch):
    data = os.urandom(3 * (1 << 20) + 7)
    res = s.put(data)
    reads = []
    cls = FileBackend if spec.startswith("file:") else S3Backend
    real = cls.iter_chunks

    def counted(self, key, size=1 << 20):
        reads.append(key)
        return real(self, key, size)

    monkeypatch.setattr(cls, "iter_chunks", counted)
    with s.open_blob(res.digest.address) as (digest, chunks):
        assert b"".join(chunks) == data and digest == res.digest
    assert reads == [blob_key(res.digest.blake3)]


def test_a_damaged_object_is_refused_before_any_chunk_and_leaves_no_spool(s, spec, tmp_path):
    data = os.urandom(2 * (1 << 20))
    res = s.put(data)
    open_backend(spec).put_bytes(blob_key(res.digest.blake3), bytes(len(data)))
    before = set(os.listdir(tempfile.gettempdir()))
    got = []
    with pytest.raises(evstore.CorruptionError) as info:
        with s.open_blob(res.digest.address) as (_, chunks):
            got.extend(chunks)
    assert info.value.code == "corruption.digest" and got == []
    assert {
        n for n in set(os.listdir(tempfile.gettempdir())) - before if "evstore-read" in n
    } == set()


def test_a_multipart_file_upload_at_the_real_piece_size(s, spec, tmp_path):
    data = os.urandom(2 * file_sources.PIECE + 3)  # three parts of an S3 multipart upload
    path = tmp_path / "large"
    path.write_bytes(data)
    with open(path, "rb") as f:
        res = s.put(f)
    with s.open_blob(res.digest.address) as (_, chunks):
        assert evstore.digest_bytes(b"".join(chunks)) == res.digest


def test_a_large_http_put_is_uploaded_from_the_servers_own_spool(
    store_url, spec, monkeypatch, tmp_path
):
    import sys
    from pathlib import Path

    import httpx

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
    from serverkit import make_tokens, start_thread

    with evstore.open(store_url) as st:
        st.set_config("blobs.backend", spec)
        st.set_config("blobs.inline_max", 1024)
    token = make_tokens(store_url)["ingest"]
    server = start_thread({None: store_url})
    try:
        big = os.urandom(9 << 20)  # over the server's in-memory limit (8 MiB): on disk
        _no_spool(monkeypatch)  # the body's file is read twice, never copied again
        headers = {"Authorization": f"Bearer {token}"}
        r = httpx.put(f"{server.base}/v1/objects", content=big, headers=headers, timeout=120)
        monkeypatch.undo()
        assert r.status_code == 201, r.text
        small = os.urandom(5000)  # held in memory by the server: spooled by the store
        r2 = httpx.put(f"{server.base}/v1/objects", content=small, headers=headers, timeout=60)
        assert r2.status_code == 201, r2.text
    finally:
        server.stop()
    with evstore.open(store_url) as st:
        assert st.get(r.json()["address"]) == big
        assert st.get(r2.json()["address"]) == small
