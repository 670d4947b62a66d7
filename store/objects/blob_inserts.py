"""The bulk inserts of new rows into ``blobs``, one per dialect (for ``put_many``).

SQLite: one ``executemany`` with no savepoint, the new rows' ids taken from the insert
(:func:`sqlite_insert_blobs`); PostgreSQL: a binary COPY inside a savepoint, falling back to
a staging table and ``INSERT ... ON CONFLICT DO NOTHING`` when a concurrent writer stored
some of the same blobs (:func:`copy_blobs`). Both return the addresses they wrote; the
caller decides ``new`` from that alone (docs/design.md).
"""

from __future__ import annotations

import operator
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.engine import copy_rows, driver_rows, raw_driver
from ..db.tables import blobs
from .rows import insert_returning

__all__ = ["copy_blobs", "sqlite_insert_blobs"]


def sqlite_insert_blobs(
    conn: Connection, rows: list[dict[str, Any]]
) -> tuple[set[str], dict[str, int]]:
    """SQLite: insert ``rows`` (sorted by address, distinct); ``(addresses written, ids)``.

    ``ids`` (``address -> blobs.id``) comes from the insert (issue 29: reading the ids back
    by address was a random probe of the address index per new blob). SQLite gives a row
    inserted without an id one more than the largest id in the table (sqlite.org/autoinc.html)
    and runs one writer at a time, so with ``top`` the largest id before the insert, the rows
    it wrote are exactly those with an id above ``top``: ``top + 1 ...`` in insertion
    (address) order when it wrote all of them and the largest id grew by their number, else
    read back by ``id > top`` (one range read). Near the largest possible id, where SQLite
    picks ids at random, the rows go through :func:`insert_returning` instead and ``ids`` is
    empty (the roots and leases look them up by address, ``leases.blob_ids``).

    One ``executemany`` of ``INSERT ... ON CONFLICT DO NOTHING`` and no savepoint: a
    savepoint over a batch's inserts journals every page they first change (at 1M stored
    blobs about 5,000 random index pages per 2,000 blobs, spilled to a temporary file),
    which cost about 30 % of a put's CPU (docs/benchmarks.md, issue 29). It is not needed:
    the id range says which rows were written, whatever the count.
    """
    top = int(driver_rows(conn, _MAX_ID)[0][0] or 0)
    if top > _MAX_ROWID - 2 * len(rows):
        return {k[0] for k in insert_returning(conn, blobs, rows)}, {}
    cols = tuple(rows[0])
    sql = (
        f"INSERT INTO blobs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
        " ON CONFLICT DO NOTHING"
    )
    params = list(map(operator.itemgetter(*cols), rows))
    with raw_driver(conn) as raw:
        cur = raw.cursor()
        try:
            cur.executemany(sql, params)
            count = cur.rowcount
        finally:
            cur.close()
    if count == len(rows) and driver_rows(conn, _MAX_ID)[0][0] == top + len(rows):
        return {r["address"] for r in rows}, {r["address"]: top + 1 + i for i, r in enumerate(rows)}
    ids = {str(a): int(i) for a, i in driver_rows(conn, _ADDED_SINCE, (top,))}
    return set(ids), ids


_MAX_ID = "SELECT max(id) FROM blobs"
_ADDED_SINCE = "SELECT address, id FROM blobs WHERE id > ?"
#: The largest id SQLite gives without picking at random.
_MAX_ROWID = 2**63 - 1


_BLOB_COLUMNS = ("address", "sha256", "size", "data", "chunk_set")
_BLOB_TYPES = ("varchar", "varchar", "int8", "bytea", "int8")


def copy_blobs(conn: Connection, rows: list[dict[str, Any]]) -> set[str]:
    """PostgreSQL bulk path: binary COPY straight into ``blobs`` inside a savepoint.

    COPY cannot skip duplicates, and a concurrent writer may have stored some of the same
    blobs since we looked: on a unique-key violation the savepoint is rolled back and the rows
    go through a staging table and ``INSERT ... ON CONFLICT DO NOTHING`` instead.

    Both COPYs go through :func:`evstore.db.engine.copy_rows`: any other driver error (deadlock,
    lock or statement timeout, lost connection) leaves as SQLAlchemy's wrapper of it, which
    the transaction's error boundary classifies, retries or translates like any statement's
    (:meth:`evstore.db.engine.Database.run_transaction`).

    Returns:
        The addresses this call inserted (all of them when the direct COPY succeeded).
    """
    import psycopg

    tuples = [tuple(r[c] for c in _BLOB_COLUMNS) for r in rows]
    try:
        with conn.begin_nested():
            copy_rows(conn, "blobs", _BLOB_COLUMNS, _BLOB_TYPES, tuples)
        return {r["address"] for r in rows}
    except sa.exc.IntegrityError as exc:
        if not isinstance(exc.orig, psycopg.errors.UniqueViolation):
            raise
    driver_rows(
        conn,
        "CREATE TEMP TABLE IF NOT EXISTS evstore_blob_stage (address varchar(64),"
        " sha256 varchar(64), size bigint, data bytea, chunk_set bigint)"
        " ON COMMIT DELETE ROWS",
    )
    copy_rows(conn, "evstore_blob_stage", _BLOB_COLUMNS, _BLOB_TYPES, tuples)
    columns = ", ".join(_BLOB_COLUMNS)
    written = {
        r[0]
        for r in driver_rows(
            conn,
            f"INSERT INTO blobs ({columns}) SELECT {columns} FROM evstore_blob_stage"
            " ORDER BY address ON CONFLICT DO NOTHING RETURNING address",
        )
    }
    driver_rows(conn, "DELETE FROM evstore_blob_stage")
    return written
