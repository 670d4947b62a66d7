"""A put of bytes already stored (issue 29): one lookup per batch, stored copies compared.

Every item is looked up first with its stored inline bytes; an intact copy is not written
again, a copy whose bytes differ is repaired, whichever batch path (SQLite's insert, and
PostgreSQL's COPY from 1,000 distinct items) the new items of the call take. Both backends.
"""

from __future__ import annotations

import os

import pytest
import sqlalchemy as sa

from evstore.db.tables import blobs


def _tamper(store, address: str, data: bytes) -> None:
    with store.db.engine.begin() as conn:
        conn.execute(sa.update(blobs).where(blobs.c.address == address).values(data=data))


@pytest.mark.parametrize("n", [5, 1000])
def test_reput_keeps_intact_copies_repairs_a_corrupt_one_and_stores_the_new(store, n):
    items = [b"item %05d " % i * (1 + i % 5) for i in range(n)]
    first = store.put_many(items)
    assert all(r.new for r in first)
    middle, short = n // 2, n // 2 + 1
    _tamper(store, first[middle].digest.blake3, b"X" + items[middle][1:])  # same size
    _tamper(store, first[short].digest.blake3, items[short][:-2])  # truncated
    assert sorted(f.code for f in store.check()) == ["corruption.digest", "corruption.size"]
    fresh = b"not stored before"
    again = store.put_many([*items, fresh, items[0]])
    assert [r.new for r in again] == [False] * n + [True, False]
    assert [r.digest for r in again[:n]] == [r.digest for r in first]
    assert store.get(first[middle].digest.address) == items[middle]
    assert store.get(first[short].digest.address) == items[short]
    assert store.get(again[n].digest.address) == fresh
    assert list(store.check()) == []


def test_put_of_paths_reads_regular_files_and_pipes_to_their_end(store, tmp_path):
    """A regular file is read in one call (its size, no byte more); a pipe, whose size says
    nothing, is read until it ends: each put stores the whole content."""
    import threading
    from pathlib import Path

    plain = tmp_path / "plain"
    plain.write_bytes(b"p" * 3000)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    parts = [b"first part ", b"x" * 70_000, b" last"]

    def feed() -> None:
        with open(fifo, "wb", buffering=0) as w:
            for part in parts:
                w.write(part)

    writer = threading.Thread(target=feed)
    writer.start()
    got = store.put_many([Path(plain), Path(empty), Path(fifo)])
    writer.join(timeout=30)
    assert [store.get(r.digest.address) for r in got] == [b"p" * 3000, b"", b"".join(parts)]
