"""A streamed put retried on contention stores exactly the bytes it was given (issue 23).

A lock is held on the table the put writes first (``blob_chunks``) or last (``blobs``) on
PostgreSQL, or on the whole database on SQLite, for longer than the store waits for a lock;
the put meets a retryable ``store.busy``, its transaction runs again, and the stream it was
given has already been read. (SQLite takes its write lock with ``BEGIN IMMEDIATE`` before
the put reads anything, so there a retry finds the stream untouched: the SQLite cases
check that this stays so.) The store must rewind a seekable stream (or refuse a one-shot
stream with the retryable code), never commit the rest of the stream under its address.
"""

from __future__ import annotations

import hashlib
import io
import sqlite3
import threading
import time

import psycopg
import pytest

import evstore
from evstore.core.digests import digest_bytes
from evstore.db import engine as evdb

#: Larger than one chunk (1 MiB), so the put writes chunk rows before it can fail.
PAYLOAD = bytes(range(256)) * (3_000_000 // 256)
#: How long the blocker holds its lock (seconds): several lock waits of the put.
HOLD_S = 1.2


def _short_lock_waits(store_url: str, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make a waiting write fail fast with a retryable error (not after 30 s)."""
    if backend == "sqlite":
        monkeypatch.setattr(evdb, "BUSY_TIMEOUT_MS", 150)
    else:
        name = store_url.rsplit("/", 1)[1]
        admin = store_url.rsplit("/", 1)[0] + "/test"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"ALTER DATABASE {name} SET lock_timeout = '150ms'")


def _hold_lock(store_url: str, backend: str, table: str, ready: threading.Event) -> None:
    """Hold a write lock (SQLite: the database; PostgreSQL: ``table``) for :data:`HOLD_S`."""
    if backend == "sqlite":
        conn = sqlite3.connect(store_url.removeprefix("sqlite:///"), isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        ready.set()
        time.sleep(HOLD_S)
        conn.execute("ROLLBACK")
        conn.close()
        return
    with psycopg.connect(store_url) as conn:
        conn.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        ready.set()
        time.sleep(HOLD_S)
        conn.rollback()


def _contended(store_url, backend, table, call):
    ready = threading.Event()
    blocker = threading.Thread(target=_hold_lock, args=(store_url, backend, table, ready))
    blocker.start()
    try:
        assert ready.wait(10)
        return call()
    finally:
        blocker.join(30)


@pytest.mark.parametrize("table", ["blob_chunks", "blobs"])
def test_a_retried_streamed_put_stores_the_whole_stream(
    store_url, backend, table, monkeypatch, snapshot
):
    if backend == "sqlite" and table == "blobs":
        pytest.skip("SQLite locks the whole database: the blob_chunks case covers it")
    _short_lock_waits(store_url, backend, monkeypatch)
    want = digest_bytes(PAYLOAD)
    with evstore.open(store_url) as store:
        res = _contended(store_url, backend, table, lambda: store.put(io.BytesIO(PAYLOAD)))
        assert res.digest.blake3 == want.blake3
        assert res.digest.size == len(PAYLOAD)
        assert store.get(want.address) == PAYLOAD
        # Nothing else was stored: the only blob is the whole stream.
        assert [b["address"] for b in store.iter_blobs()] == [want.address]


def test_a_retried_put_many_of_streams_stores_each_whole_stream(store_url, backend, monkeypatch):
    _short_lock_waits(store_url, backend, monkeypatch)
    second = PAYLOAD[::-1]
    with evstore.open(store_url) as store:
        res = _contended(
            store_url,
            backend,
            "blob_chunks",
            lambda: store.put_many([io.BytesIO(PAYLOAD), b"small", io.BytesIO(second)]),
        )
        assert [r.digest.sha256 for r in res] == [
            hashlib.sha256(x).hexdigest() for x in (PAYLOAD, b"small", second)
        ]
        assert store.get(res[2].digest.address) == second


class _OneShot(io.RawIOBase):
    """A stream that cannot seek (stdin, a pipe)."""

    def __init__(self, data: bytes) -> None:
        self.inner = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        chunk = self.inner.read(len(b))
        b[: len(chunk)] = chunk
        return len(chunk)


def test_a_one_shot_stream_meeting_contention_is_busy_and_writes_nothing(
    store_url, backend, monkeypatch, snapshot
):
    _short_lock_waits(store_url, backend, monkeypatch)
    with evstore.open(store_url) as store:
        before = snapshot(store)
        if backend == "sqlite":  # the lock comes before the first read: a retry is safe
            res = _contended(store_url, backend, "", lambda: store.put(_OneShot(PAYLOAD)))
            assert res.digest == digest_bytes(PAYLOAD)
            return
        with pytest.raises(evstore.StoreStateError) as info:
            _contended(store_url, backend, "blob_chunks", lambda: store.put(_OneShot(PAYLOAD)))
        assert info.value.code == "store.busy"
        assert snapshot(store) == before


def test_expect_is_checked_against_what_commits(store):
    with pytest.raises(evstore.InputError) as info:
        store.put(io.BytesIO(b"abc"), expect=digest_bytes(b"abd").address)
    assert info.value.code == "put.digest-mismatch"
    assert store.has([digest_bytes(b"abc").address]) == [digest_bytes(b"abc").address]
    assert store.put(b"abc", expect="sha256:" + digest_bytes(b"abc").sha256).new


def test_has_refuses_a_bare_ref_instead_of_reading_its_characters(store):
    with pytest.raises(evstore.InputError) as info:
        store.has(digest_bytes(b"abc").address)
    assert info.value.code == "input.invalid"
    assert "has([ref])" in str(info.value)
