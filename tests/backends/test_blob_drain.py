"""The drain of the deletion queue in batches (issue 25): one recheck, one bulk delete.

Each batch locks its queue rows, reads the rows of their addresses in one statement and
sends each backend one bulk delete; what a row still needs is kept, what a backend cannot
delete stays queued. Both databases; a directory and a real SeaweedFS bucket.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil

import pytest
import sqlalchemy as sa

import evstore
from evstore.backends.base import blob_key
from evstore.backends.spec import open_backend
from evstore.db.tables import blob_deletions
from evstore.objects.external import drain_deletions

INLINE_MAX = 1024


def _past() -> dt.datetime:
    return dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)


def _setup(store, spec: str, n: int, delay: int) -> list[bytes]:
    """``n`` blobs in the backend ``spec``, collected: their keys queued with ``delay``."""
    store.set_config("blobs.backend", spec)
    store.set_config("blobs.inline_max", INLINE_MAX)
    store.set_config("gc.lease-seconds", 0)
    store.set_config("blobs.deletion_delay_seconds", delay)
    data = [os.urandom(2 * INLINE_MAX) for _ in range(n)]
    with store.retention.rooting("tmp"):
        store.put_many(data)
    store.retention.release("tmp")
    assert store.retention.gc().count == n
    return data


def _queued(store) -> list[tuple[str, str]]:
    with store.db.engine.connect() as conn:
        q = sa.select(blob_deletions.c.backend, blob_deletions.c.key)
        return sorted((r[0], r[1]) for r in conn.execute(q))


def _due(store) -> None:
    with store.db.engine.begin() as conn:
        conn.execute(sa.update(blob_deletions).values(not_before=_past()))


def _key(data: bytes) -> str:
    return blob_key(evstore.digest_bytes(data).blake3)


def test_a_drain_in_batches_deletes_what_no_row_needs_and_keeps_the_rest(store, spec):
    data = _setup(store, spec, 7, 3600)
    keys = sorted(_key(d) for d in data)
    assert _queued(store) == [(spec, k) for k in keys]
    back = data[:2]
    assert [r.new for r in store.put_many(back)] == [True, True]  # cancels their deletions
    assert len(_queued(store)) == 5
    with store.db.engine.begin() as conn:  # queued again (another spelling would do this)
        conn.execute(
            sa.insert(blob_deletions),
            [{"backend": spec, "key": _key(d), "not_before": _past()} for d in back],
        )
    _due(store)
    settled, deleted = drain_deletions(store.transactions, batch=3)  # batches of 3, 3, 1
    assert (settled, deleted) == (7, 5)
    assert _queued(store) == []
    backend = open_backend(spec)
    assert sorted(x.key for x in backend.list("blake3")) == sorted(_key(d) for d in back)
    for d in back:
        assert store.get(evstore.digest_bytes(d).address) == d
    assert list(store.check()) == []


def test_a_key_the_backend_cannot_delete_stays_queued_and_the_rest_go(store, tmp_path):
    (tmp_path / "blobs").mkdir()
    spec = f"file:{tmp_path / 'blobs'}"
    data = _setup(store, spec, 3, 3600)
    stuck = sorted(_key(d) for d in data)[1]
    path = tmp_path / "blobs" / stuck
    path.unlink()
    path.mkdir()  # a directory where the object was: the backend cannot delete it
    (path / "inside").write_bytes(b"x")
    _due(store)
    with pytest.raises(evstore.StoreStateError) as info:
        store.retention.gc()
    assert info.value.code == "blobs.backend"
    assert _queued(store) == [(spec, stuck)]  # the others were settled and committed
    assert [open_backend(spec).stat(_key(d)) for d in data if _key(d) != stuck] == [None, None]
    shutil.rmtree(path)
    report = store.retention.gc()  # the next run drains it
    assert (report.backend_deleted, report.backend_kept) == (1, 0)
    assert _queued(store) == []


def test_an_unreachable_backend_keeps_its_rows_queued_while_others_drain(
    store, tmp_path, s3_credentials
):
    (tmp_path / "blobs").mkdir()
    spec = f"file:{tmp_path / 'blobs'}"
    data = _setup(store, spec, 2, 0)  # drained by the gc itself
    assert _queued(store) == []
    assert list(open_backend(spec).list("blake3")) == []
    down = "s3://evstore-down/x?endpoint=http://127.0.0.1:9&region=us-east-1"
    gone = _setup(store, spec, 2, 3600)
    with store.db.engine.begin() as conn:
        conn.execute(
            sa.insert(blob_deletions),
            {"backend": down, "key": _key(data[0]), "not_before": _past()},
        )
    _due(store)
    with pytest.raises(evstore.StoreStateError) as info:
        drain_deletions(store.transactions)
    assert info.value.code == "blobs.unreachable"
    assert _queued(store) == [(down, _key(data[0]))]
    assert all(open_backend(spec).stat(_key(d)) is None for d in gone)
