"""put_many with a blob backend (issue 25): the large items as one batch.

One statement cancels the queued deletions of all their keys, the uploads and stats run
concurrently in a bounded pool, and the rows go in one insert only after every object is
in the backend with its size. Results keep the items' order and ``new`` flags. Both
databases; a directory and a real SeaweedFS bucket.
"""

from __future__ import annotations

import os
import threading
import time

import pytest
import sqlalchemy as sa

import evstore
from evstore.backends.base import blob_key
from evstore.backends.file import FileBackend
from evstore.backends.s3 import S3Backend
from evstore.backends.spec import open_backend
from evstore.db.tables import blob_deletions, blobs
from evstore.objects.external import UPLOADS_IN_FLIGHT

INLINE_MAX = 1024


def _big() -> bytes:
    return os.urandom(2 * INLINE_MAX + 5)


def _key(data: bytes) -> str:
    return blob_key(evstore.digest_bytes(data).blake3)


def _rows(store) -> set[str]:
    with store.db.engine.connect() as conn:
        return {r[0] for r in conn.execute(sa.select(blobs.c.address))}


def test_a_batch_keeps_order_new_flags_repairs_and_cancels_pending_deletions(s, spec):
    backend = open_backend(spec)
    stored, damaged, queued = _big(), _big(), _big()
    s.put_many([stored, damaged])
    backend.put_bytes(_key(damaged), bytes(len(damaged)))  # same size, other bytes
    s.set_config("blobs.deletion_delay_seconds", 3600)
    with s.retention.rooting("tmp"):
        s.put(queued)
    s.retention.release("tmp")
    s.retention.gc()
    with s.db.engine.connect() as conn:
        assert [r[0] for r in conn.execute(sa.select(blob_deletions.c.key))] == [_key(queued)]
    a, b = _big(), _big()
    items = [a, b"small", stored, b, a, damaged, queued, b"small"]
    s.log.integrate()
    size = s.log.status()["size"]
    results = s.put_many(items)
    assert [r.digest for r in results] == [evstore.digest_bytes(d) for d in items]
    assert [r.new for r in results] == [True, True, False, True, False, False, True, False]
    with s.db.engine.connect() as conn:
        assert conn.execute(sa.select(blob_deletions.c.key)).all() == []  # cancelled
    for d in items:
        assert s.get(evstore.digest_bytes(d).address) == d
    for d in (a, b, stored, damaged, queued):
        assert backend.stat(_key(d)) == len(d)
    s.log.integrate()
    logged = [e["entry"]["address"] for e in s.log.entries(size)]
    assert sorted(logged) == sorted(
        evstore.digest_bytes(d).address for d in (a, b, queued, b"small")
    )
    assert list(s.check()) == []


def test_uploads_run_concurrently_bounded_and_a_failed_one_writes_no_row(s, spec, monkeypatch):
    cls = FileBackend if spec.startswith("file:") else S3Backend
    real = cls.put_bytes
    lock = threading.Lock()
    running = [0, 0]  # now, most at once
    refused: set[str] = set()

    def put_bytes(self, key, data):
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
        try:
            time.sleep(0.05)  # long enough for the pool's others to start meanwhile
            if key in refused:
                raise evstore.StoreStateError("refused", code="blobs.backend")
            return real(self, key, data)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(cls, "put_bytes", put_bytes)
    items = [_big() for _ in range(3 * UPLOADS_IN_FLIGHT)]
    before = _rows(s)
    assert all(r.new for r in s.put_many(items))
    assert 1 < running[1] <= UPLOADS_IN_FLIGHT
    more = [_big() for _ in range(2 * UPLOADS_IN_FLIGHT)]
    refused.add(_key(more[5]))
    with pytest.raises(evstore.StoreStateError) as info:
        s.put_many(more)
    assert info.value.code == "blobs.backend"
    assert _rows(s) == before | {evstore.digest_bytes(d).blake3 for d in items}  # none of more
    assert running[0] == 0  # no upload goes on after the put returned
    refused.clear()
    assert all(r.new for r in s.put_many(more))  # the retry stores them all
    assert list(s.check()) == []
