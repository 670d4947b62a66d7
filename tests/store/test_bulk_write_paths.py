"""The bulk write paths of issue 16 on both backends: same rows, same answers as the row paths.

A batch of new blobs takes the fast paths (SQLite: one ``executemany`` whose row count says
all or none were written; PostgreSQL: binary COPY of the roots, leases and log rows of blobs
the transaction inserted); anything else (some stored before, a key repeated, a root that
exists already) must fall back and still give exact ``new`` flags and exactly one root,
lease and log entry per object.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

import evstore
from evstore.db.tables import leases, log_entries, roots
from evstore.objects import blob_inserts
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


def _ids_taken_and_stored(
    store: evstore.Store, items: list[bytes], from_insert: bool = True
) -> tuple[dict, dict, set]:
    """The ids a put's transaction holds for its blobs before its commit (issue 29: taken
    from the insert on SQLite), the ids the table gives them after it, and the addresses."""
    from evstore.objects.leases import pending

    def work(conn: sa.Connection) -> tuple[dict, set]:
        results = blobs_mod.put_many(conn, items)
        taken = dict(pending(conn).ids)  # before the commit's roots and leases look any up
        return taken, {r.digest.blake3 for r in results if r.new}

    put = {blobs_mod.digest_bytes(d).blake3 for d in items}

    taken, new = store.db.run_transaction(work)
    if from_insert and store.db.backend == "sqlite":  # every new blob's id from its insert
        assert new <= set(taken)
    with store.db.read() as conn:
        rows = conn.execute(sa.text("SELECT address, id FROM blobs")).all()
    assert set(taken) <= put
    stored = {a: i for a, i in rows if a in taken}
    return taken, stored, put


def _roots_and_leases_name(store: evstore.Store) -> tuple[set, set]:
    with store.db.read() as conn:
        rooted = conn.execute(
            sa.text("SELECT b.address FROM roots r JOIN blobs b ON b.id = r.blob")
        ).all()
        leased = conn.execute(
            sa.text("SELECT b.address FROM leases l JOIN blobs b ON b.id = l.blob")
        ).all()
    return {a for (a,) in rooted}, {a for (a,) in leased}


def test_the_ids_a_put_names_its_blobs_by_are_the_ids_they_got(store):
    """Roots and leases name a blob by its id (revision 0012); on SQLite a put takes the ids
    of its new blobs from the insert instead of reading them back by address (issue 29).
    Whatever the table's ids were before (empty, gaps, its largest id deleted and reused),
    every id the transaction holds is the one the row got."""
    put: set[str] = set()
    batches = [
        [f"first {i}".encode() for i in range(N)],  # an empty table
        [f"second {i}".encode() for i in range(3)],  # a small batch
        [f"first {i}".encode() for i in range(0, N, 2)] + [b"one new among stored"],  # mixed
    ]
    for items in batches:
        taken, stored, addresses = _ids_taken_and_stored(store, items)
        assert taken == stored
        put |= addresses
    # The largest ids deleted (gc would), so the next insert reuses them on SQLite.
    with store.db.engine.begin() as conn:
        top = conn.execute(sa.text("SELECT address FROM blobs ORDER BY id DESC LIMIT 2")).all()
        gone = [a for (a,) in top]
        for table in ("roots", "leases"):
            conn.execute(
                sa.text(
                    f"DELETE FROM {table} WHERE blob IN (SELECT id FROM blobs"
                    " WHERE address IN (:a, :b))"
                ),
                {"a": gone[0], "b": gone[1]},
            )
        conn.execute(
            sa.text("DELETE FROM blobs WHERE address IN (:a, :b)"), {"a": gone[0], "b": gone[1]}
        )
    put -= set(gone)
    taken, stored, addresses = _ids_taken_and_stored(store, [b"third %d" % i for i in range(N)])
    assert taken == stored
    put |= addresses
    assert _roots_and_leases_name(store) == (put, put)
    assert list(store.check(record=False)) == []


def test_a_table_at_the_largest_id_makes_a_put_look_its_ids_up(store):
    """At the largest possible id SQLite picks new ids at random: the put cannot take them
    from the insert, so it looks them up, and every root and lease still names its blob."""
    mark = "?" if store.db.backend == "sqlite" else "%s"
    with store.db.engine.begin() as conn:
        conn.exec_driver_sql(
            f"INSERT INTO blobs (id, address, sha256, size, data) VALUES ({mark}, {mark},"
            f" {mark}, 0, {mark})",
            (
                2**63 - 1,
                "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
                "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                b"",
            ),
        )
    items = [f"random id {i}".encode() for i in range(N)]
    taken, stored, addresses = _ids_taken_and_stored(store, items, from_insert=False)
    assert taken == stored == {}  # none taken from the insert: looked up at the commit
    assert _roots_and_leases_name(store) == (addresses, addresses)


def test_an_insert_that_meets_stored_rows_says_which_it_wrote(store):
    """SQLite's blob insert (no savepoint) tells the rows it wrote by their ids above the
    largest before it, when some were stored after all (a put's lookup normally rules it out)."""
    if store.db.backend != "sqlite":
        pytest.skip("SQLite's insert path; PostgreSQL's bulk path is COPY (tests above)")
    stored = store.put_many([f"stored {i}".encode() for i in range(5)])
    rows = []
    for data in [f"stored {i}".encode() for i in range(5)] + [b"new %d" % i for i in range(9)]:
        dg = blobs_mod.digest_bytes(data)
        rows.append({"address": dg.blake3, "sha256": dg.sha256, "size": dg.size, "data": data})
        rows[-1]["chunk_set"] = None
    rows.sort(key=lambda r: r["address"])

    def work(conn: sa.Connection) -> tuple[set, dict]:
        return blob_inserts.sqlite_insert_blobs(conn, rows)

    written, ids = store.db.run_transaction(work)
    assert written == {r["address"] for r in rows} - {r.digest.blake3 for r in stored}
    with store.db.read() as conn:
        table = dict(conn.execute(sa.text("SELECT address, id FROM blobs")).all())
    assert ids == {a: table[a] for a in written}
