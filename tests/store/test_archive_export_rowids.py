"""An export reads inline blobs by the row ids its walk saw (SQLite, issue 29).

The id is a faster key for the same row in the same snapshot; a row under that id that
does not hold the asked-for address counts as missing (``not-found.blob``), and without
ids (or on PostgreSQL) the bytes are read by address as before.
"""

from __future__ import annotations

import pytest

import evstore
from evstore.archive import writing
from evstore.archive.closure import closure


def _walk(store: evstore.Store, n: int) -> tuple[dict, list]:
    puts = store.put_many([f"member {i}".encode() for i in range(n)])
    (root,) = store.ingest({"objects": [p.digest.address for p in puts]}).results
    cache: dict = {}
    with store.transactions.read() as conn:
        closure(conn, root.digest.blake3, cache)
    return cache, puts


def test_rows_read_by_id_or_by_address_are_the_same_bytes(store):
    cache, puts = _walk(store, 30)
    rows = [cache[p.digest.blake3].row for p in puts]
    rowids = {a: o.rowid for a, o in cache.items()}
    assert all(type(i) is int for i in rowids.values())
    with store.transactions.read() as conn:
        by_id = writing._fetch(conn, rows, rowids)
        by_address = writing._fetch(conn, rows)
    assert by_id == by_address == [f"member {i}".encode() for i in range(30)]


def test_an_id_whose_row_holds_another_address_is_not_found(store):
    if store.db.backend != "sqlite":
        pytest.skip("PostgreSQL reads by address")
    cache, puts = _walk(store, 3)
    rows = [cache[p.digest.blake3].row for p in puts]
    a, b = puts[0].digest.blake3, puts[1].digest.blake3
    swapped = {**{k: o.rowid for k, o in cache.items()}, a: cache[b].rowid}
    with store.transactions.read() as conn, pytest.raises(evstore.NotFound) as exc:
        writing._fetch(conn, rows, swapped)
    assert exc.value.code == "not-found.blob" and a in exc.value.message
    partial = {k: o.rowid for k, o in cache.items() if k != a}  # an id missing: by address
    with store.transactions.read() as conn:
        assert writing._fetch(conn, rows, partial)[0] == b"member 0"
