"""A store whose large blobs live in a blob backend (issue 25), on both databases.

Every test runs four ways: {SQLite, PostgreSQL} x {a directory, a real SeaweedFS bucket}.
``blobs.inline_max`` is set low (1 KiB) so small payloads exercise the backend path.
"""

from __future__ import annotations

import datetime as dt
import io
import os

import pytest
import sqlalchemy as sa

import evstore
from evstore.backends.base import blob_key
from evstore.backends.spec import open_backend
from evstore.db.tables import blob_deletions, blobs

INLINE_MAX = 1024


def _past() -> dt.datetime:
    return dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)


def _row(store, address: str):
    with store.db.engine.connect() as conn:
        return conn.execute(
            sa.select(blobs.c.data, blobs.c.chunk_set, blobs.c.stored_in).where(
                blobs.c.address == address
            )
        ).first()


def _queued(store) -> list[str]:
    with store.db.engine.connect() as conn:
        return sorted(r[0] for r in conn.execute(sa.select(blob_deletions.c.key)))


def test_a_large_blob_lives_in_the_backend_and_a_small_one_in_the_database(s, spec):
    big = os.urandom(5 * INLINE_MAX + 3)
    res = s.put(io.BytesIO(big))
    many = s.put_many([b"small", os.urandom(3 * INLINE_MAX)])
    backend = open_backend(spec)
    for r, data in ((res, big), (many[1], None)):
        row = _row(s, r.digest.blake3)
        assert row.data is None and row.chunk_set == -1 and row.stored_in == spec
        assert backend.stat(blob_key(r.digest.blake3)) == r.digest.size
        if data is not None:
            assert s.get(r.digest.address) == data
    small = _row(s, many[0].digest.blake3)
    assert small.stored_in is None and small.data == b"small"
    assert s.stat(res.digest.address)["stored"] == "backend"
    assert s.has([res.digest.address, many[1].digest.address]) == []
    with s.open_blob(res.digest.address) as (_, chunks):
        assert b"".join(chunks) == big
    assert list(s.check()) == []
    assert s.put(big).new is False  # stored once


def test_damaged_or_missing_bytes_in_the_backend_are_never_served(s, spec):
    data = os.urandom(4 * INLINE_MAX)
    res = s.put(data)
    key = blob_key(res.digest.blake3)
    backend = open_backend(spec)
    backend.put_bytes(key, bytes(len(data)))  # same size, other bytes
    with pytest.raises(evstore.CorruptionError) as info:
        s.get(res.digest.address)
    assert info.value.code == "corruption.digest"
    assert [f.code for f in s.check()] == ["corruption.digest"]
    assert s.has([res.digest.address]) == [res.digest.address]
    assert s.put(data).new is False  # a put of the right bytes repairs the object
    assert s.get(res.digest.address) == data
    backend.delete(key)
    with pytest.raises(evstore.CorruptionError) as info:
        s.get(res.digest.address)
    assert info.value.code == "corruption.blob-missing"
    assert [f.code for f in s.check()] == ["corruption.blob-missing"]


def test_gc_deletes_the_row_then_the_bytes_after_the_delay(s, spec):
    backend = open_backend(spec)
    s.set_config("blobs.deletion_delay_seconds", 3600)
    with s.retention.rooting("tmp"):
        res = s.put(os.urandom(2 * INLINE_MAX))
    key = blob_key(res.digest.blake3)
    s.retention.release("tmp")
    assert [o["address"] for o in s.retention.gc().objects] == [res.digest.address]
    assert _row(s, res.digest.blake3) is None
    assert _queued(s) == [key]
    assert backend.stat(key) == res.digest.size  # not before the delay
    s.set_config("blobs.deletion_delay_seconds", 0)
    with s.db.engine.begin() as conn:  # the queued time passes
        conn.execute(sa.update(blob_deletions).values(not_before=_past()))
    report = s.retention.gc()
    assert (report.backend_deleted, report.backend_kept) == (1, 0)
    assert report.to_dict()["backend_deleted"] == 1
    assert _queued(s) == []
    assert backend.stat(key) is None


def test_a_put_during_a_pending_deletion_cancels_it(s, spec):
    backend = open_backend(spec)
    s.set_config("blobs.deletion_delay_seconds", 0)
    data = os.urandom(2 * INLINE_MAX)
    with s.retention.rooting("tmp"):
        res = s.put(data)
    key = blob_key(res.digest.blake3)
    s.set_config("blobs.deletion_delay_seconds", 3600)
    s.retention.release("tmp")
    s.retention.gc()
    assert _queued(s) == [key]
    assert s.put(data).new is True  # the row is back; the deletion is cancelled
    assert _queued(s) == []
    with s.db.engine.begin() as conn:
        conn.execute(
            sa.insert(blob_deletions),
            {"backend": spec, "key": key, "not_before": _past()},
        )
    s.retention.gc()  # drains: the row names the object, so it stays
    assert backend.stat(key) == res.digest.size
    assert s.get(res.digest.address) == data
    assert list(s.check()) == []


def test_a_put_after_the_bytes_were_deleted_uploads_them_again(s, spec):
    backend = open_backend(spec)
    s.set_config("blobs.deletion_delay_seconds", 0)
    data = os.urandom(2 * INLINE_MAX)
    with s.retention.rooting("tmp"):
        res = s.put(data)
    s.retention.release("tmp")
    s.retention.gc()
    assert backend.stat(blob_key(res.digest.blake3)) is None
    assert s.put(io.BytesIO(data)).new is True
    assert s.get(res.digest.address) == data


def test_a_malformed_backend_setting_is_refused(s):
    with pytest.raises(evstore.InputError) as info:
        s.set_config("blobs.backend", "gs://nope")
    assert info.value.code == "blobs.spec"


def test_two_spellings_of_one_directory_never_delete_a_live_blob(store, tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    store.set_config("blobs.backend", f"file:{tmp_path / 'real'}")
    store.set_config("blobs.inline_max", INLINE_MAX)
    store.set_config("blobs.orphan_grace_seconds", 0)
    store.set_config("blobs.deletion_delay_seconds", 0)
    data = os.urandom(2 * INLINE_MAX)
    res = store.put(data)
    store.set_config("blobs.backend", f"file:{tmp_path / 'link'}")
    assert list(store.check()) == []
    store.retention.gc()
    assert store.get(res.digest.address) == data


def test_init_with_a_bad_backend_creates_nothing(tmp_path):
    url = f"sqlite:///{tmp_path / 'new.db'}"
    with pytest.raises(evstore.InputError) as info:
        evstore.init(url, blobs="gs://nope")
    assert info.value.code == "blobs.spec"
    assert not (tmp_path / "new.db").exists()
    with pytest.raises(evstore.StoreStateError):
        evstore.init(f"sqlite:///{tmp_path / 'no' / 'dir.db'}", blobs=f"file:{tmp_path / 'x/y'}")
    assert not (tmp_path / "x").exists()  # a refused init leaves no folder it made
    r = evstore.init(url, blobs=f"file:{tmp_path / 'b'}")
    assert r["blobs"] == f"file:{tmp_path / 'b'}" and (tmp_path / "b").is_dir()
    with evstore.open(url) as store:
        assert store.config()["blobs.backend"] == r["blobs"]


def test_an_object_no_row_names_is_reported_after_the_grace_and_left_alone(s, spec):
    backend = open_backend(spec)
    stray = blob_key("0f" * 32)
    backend.put_bytes(stray, b"an upload whose row never committed")
    assert list(s.check()) == []  # younger than the grace: an upload may be in flight
    s.set_config("blobs.orphan_grace_seconds", 0)
    faults = list(s.check())
    assert [(f.code, f.details["key"]) for f in faults] == [("check.blob-orphan", stray)]
    s.retention.gc()  # gc never deletes an object it did not queue: a put may be reusing it
    assert backend.stat(stray) is not None


def test_a_missing_backend_object_is_missing_to_has(s, spec):
    res = s.put(os.urandom(2 * INLINE_MAX))
    open_backend(spec).delete(blob_key(res.digest.blake3))
    assert s.has([res.digest.address]) == [res.digest.address]


def test_a_put_refused_by_expect_leaves_no_orphan(s, spec):
    backend = open_backend(spec)
    s.set_config("blobs.deletion_delay_seconds", 0)
    s.set_config("blobs.orphan_grace_seconds", 0)
    data = os.urandom(3 * INLINE_MAX)
    key = blob_key(evstore.digest_bytes(data).blake3)
    wrong = evstore.digest_bytes(b"other bytes")
    for expect in (wrong.address, "sha256:" + wrong.sha256):
        with pytest.raises(evstore.InputError) as info:
            s.put(data, expect=expect)
        assert info.value.code == "put.digest-mismatch"
        assert _row(s, key.rsplit("/", 1)[-1]) is None
        assert _queued(s) == [key]  # the uploaded object waits for the drain
    with s.db.engine.begin() as conn:
        conn.execute(sa.update(blob_deletions).values(not_before=_past()))
    assert s.retention.gc().backend_deleted == 1
    assert backend.stat(key) is None
    assert list(s.check()) == []
    assert s.put(data, expect=evstore.digest_bytes(data).address).new  # a right expect stores
    assert s.get(evstore.digest_bytes(data).address) == data
