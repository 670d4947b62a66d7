"""The bulk write paths of issue 16 on both backends: same rows, same answers as the row paths.

A batch of new blobs takes the fast paths (SQLite: one ``executemany`` whose row count says
all or none were written; PostgreSQL: binary COPY of the roots, leases and log rows of blobs
the transaction inserted); anything else (some stored before, a key repeated, a root that
exists already) must fall back and still give exact ``new`` flags and exactly one root,
lease and log entry per object.
"""

from __future__ import annotations

import sqlalchemy as sa

import evstore
from evstore.db.tables import leases, log_entries, roots
from evstore.objects import blobs as blobs_mod

N = 600  # above the COPY threshold (evstore.db.engine.COPY_MIN_ROWS) and SQLite's list size


def _count(store: evstore.Store, table: sa.Table) -> int:
    store.log.integrate()  # queued log entries join log_entries
    with store.db.read() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


def test_mixed_batches_root_lease_and_log_each_new_blob_once(store):
    first = [f"old {i}".encode() for i in range(N)]
    assert all(r.new for r in store.put_many(first))
    second = [f"new {i}".encode() for i in range(N)]
    mixed = [x for pair in zip(first, second, strict=True) for x in pair]
    results = store.put_many(mixed)
    assert [r.new for r in results] == [False, True] * N
    assert _count(store, roots) == _count(store, leases) == 2 * N
    assert _count(store, log_entries) == 2 * N  # one put entry per new blob, none for repeats
    assert list(store.check(record=False)) == []


def test_a_key_repeated_within_one_batch_is_new_once(store):
    a, b = b"repeated item", b"other item"
    assert [r.new for r in store.put_many([a, a, b])] == [True, False, True]
    assert [r.new for r in store.put_many([b, a, b"third"])] == [False, False, True]
    assert _count(store, log_entries) == 3
    assert list(store.check(record=False)) == []


def test_a_fresh_blob_already_rooted_in_its_transaction_falls_back(store):
    """A root row the fast path does not expect is skipped by the checked insert, not an error."""
    items = [f"fresh {i}".encode() for i in range(N)]
    mark = "?" if store.db.backend == "sqlite" else "%s"

    def work(conn: sa.Connection) -> list[bool]:
        results = blobs_mod.put_many(conn, items)
        conn.exec_driver_sql(
            f"INSERT INTO roots (name, blob) SELECT {mark}, id FROM blobs WHERE address = {mark}",
            ("default", results[7].digest.blake3),
        )
        return [r.new for r in results]

    assert all(store.db.run_transaction(work))
    assert _count(store, roots) == N
    assert _count(store, leases) == N
    assert list(store.check(record=False)) == []
