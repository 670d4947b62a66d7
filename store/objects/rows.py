"""Bulk row writes shared by every table the write path fills: insert-or-skip in key order.

:func:`insert_ignore` and :func:`insert_returning` write many rows in one statement batch,
skipping keys already present, in primary-key order (one lock order for every writer), and
report which keys this call inserted (PostgreSQL: ``INSERT ... SELECT unnest(...) ON
CONFLICT DO NOTHING RETURNING`` in bounded parts; SQLite: one ``executemany`` whose row count
proves all-or-none, a savepoint otherwise). Used by blobs, artifacts and bindings.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..db.engine import driver_rows, executemany_all_or_none

__all__ = ["insert_ignore", "insert_returning"]


def _in_key_order(table: sa.Table, rows: Sequence[dict[str, Any]]) -> list[str]:
    """The key columns of ``table`` present in ``rows``: its primary key, or the unique key
    named by ``table.info["write_key"]`` (``blobs``: the address; its ``id`` is assigned by
    the database, revision 0012).
    """  # noqa: D205
    cols = rows[0]
    names = table.info.get("write_key") or [c.name for c in table.primary_key.columns]
    return [n for n in names if n in cols]


def _sorted_rows(table: sa.Table, rows: Sequence[dict[str, Any]]) -> Sequence[dict[str, Any]]:
    # A stable sort: among rows of one key the first still wins.
    keys = _in_key_order(table, rows)
    if len(rows) > 1 and keys:
        return sorted(rows, key=operator.itemgetter(*keys))
    return rows


def insert_ignore(conn: Connection, table: sa.Table, rows: Sequence[dict[str, Any]]) -> None:
    """INSERT rows, skipping those whose primary key already exists (both backends).

    Concurrent writers of the same key both succeed: the loser's row is skipped, so no
    IntegrityError reaches the caller. Every row must have the same keys. The statement is
    compiled once per (table, columns, dialect) and run through the driver's executemany:
    per-row parameter processing in SQLAlchemy cost more than the insert itself (measured
    with bench/fragments.py).

    Rows are written in primary-key order (a stable sort: among rows of one key the first
    still wins), so concurrent writers of overlapping batches take their key locks in the
    same order and never deadlock on each other.
    """
    if not rows:
        return
    cols = tuple(rows[0])
    if conn.dialect.name == "postgresql" and _pg_types(table, cols) is not None:
        rows = _sorted_rows(table, rows)
        for part in _pg_parts(rows):
            driver_rows(conn, _pg_unnest_sql(table, cols, ()), _pg_arrays(part, cols))
        return
    sql = _insert_sql(conn.dialect.name, table.name, cols)
    driver_rows(conn, sql, _sorted_tuples(table, cols, rows), many=True)


def _sorted_tuples(
    table: sa.Table, cols: tuple[str, ...], rows: Sequence[dict[str, Any]]
) -> list[tuple[Any, ...]]:
    """``rows`` as parameter tuples in ``cols`` order, stably sorted by the primary key."""
    if len(cols) == 1:
        return [(r[cols[0]],) for r in rows]
    params = list(map(operator.itemgetter(*cols), rows))
    at = [cols.index(k) for k in _in_key_order(table, rows)]
    if len(params) > 1 and at:
        params.sort(key=operator.itemgetter(*at))
    return params


# PostgreSQL: one INSERT ... SELECT FROM unnest(arrays) per batch instead of one statement per
# row (psycopg's executemany pipelines a statement per row; measured by bench/fragments.py and
# bench/manifests.py, issue 16). Same rows, same order, same ON CONFLICT DO NOTHING.
_PG_TYPES: tuple[tuple[type[Any], str | None], ...] = (
    (sa.Enum, None),  # no text-to-enum assignment cast: such tables take executemany
    (sa.LargeBinary, "bytea"),
    (sa.BigInteger, "int8"),
    (sa.Integer, "int4"),
    (sa.Boolean, "bool"),
    (sa.String, "text"),  # Text and String(n) alike
)
#: Most rows, and about the most bytes, in one unnest statement.
_PG_ROWS, _PG_BYTES = 20_000, 32 << 20


def _pg_types(table: sa.Table, cols: tuple[str, ...]) -> tuple[str, ...] | None:
    """The PostgreSQL array element type of each column, or None if one is not mapped."""
    out = []
    for name in cols:
        col_type = table.c[name].type
        if isinstance(col_type, sa.DateTime):
            out.append("timestamptz" if col_type.timezone else "timestamp")
            continue
        pg = next((t for cls, t in _PG_TYPES if isinstance(col_type, cls)), None)
        if pg is None:
            return None
        out.append(pg)
    return tuple(out)


def _pg_unnest_sql(table: sa.Table, cols: tuple[str, ...], returning: Sequence[str]) -> str:
    key = ("postgresql-unnest", table.name, cols + ("->",) + tuple(returning))
    sql = _SQL_CACHE.get(key)
    if sql is None:
        types = _pg_types(table, cols)
        assert types is not None
        # Arrays travel in binary (%b): psycopg's text form of an array escapes every
        # element in Python (7-10x slower for 100k text, int8 or bytea elements) and, for
        # bytea, doubles the bytes as hex for the server to parse back (bench/core.py a).
        arrays = ", ".join(f"%b::{t}[]" for t in types)
        sql = (
            f"INSERT INTO {table.name} ({', '.join(cols)})"
            f" SELECT * FROM unnest({arrays}) ON CONFLICT DO NOTHING"
        )
        if returning:
            sql += f" RETURNING {', '.join(returning)}"
        _SQL_CACHE[key] = sql
    return sql


def _pg_parts(rows: Sequence[dict[str, Any]]) -> Iterator[Sequence[dict[str, Any]]]:
    """``rows`` in consecutive parts of at most :data:`_PG_ROWS` rows and ~_PG_BYTES bytes."""
    start, size = 0, 0
    for i, r in enumerate(rows):
        size += sum(len(v) for v in r.values() if isinstance(v, bytes))
        if i + 1 - start >= _PG_ROWS or size >= _PG_BYTES:
            yield rows[start : i + 1]
            start, size = i + 1, 0
    if start < len(rows):
        yield rows[start:]


def _pg_arrays(rows: Sequence[dict[str, Any]], cols: tuple[str, ...]) -> tuple[list[Any], ...]:
    return tuple([r[c] for r in rows] for c in cols)


_SQL_CACHE: dict[tuple[str, str, tuple[str, ...]], str] = {}  # statement texts only


def _insert_sql(dialect: str, table: str, cols: tuple[str, ...]) -> str:
    key = (dialect, table, cols)
    sql = _SQL_CACHE.get(key)
    if sql is None:
        mark = "?" if dialect == "sqlite" else "%s"
        sql = (
            f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join([mark] * len(cols))})"
            " ON CONFLICT DO NOTHING"
        )
        _SQL_CACHE[key] = sql
    return sql


#: Most bound parameters in one multi-row INSERT ... RETURNING (SQLite allows 32,766).
_MAX_PARAMS = 30_000


def insert_returning(
    conn: Connection, table: sa.Table, rows: Sequence[dict[str, Any]]
) -> set[tuple[Any, ...]]:
    """INSERT rows, skipping existing keys, and return the primary keys this call inserted.

    ``INSERT ... ON CONFLICT DO NOTHING RETURNING <key>`` on both backends (SQLite 3.35+):
    a row is "new" only when this statement wrote it, never because an earlier SELECT did
    not see it. Under concurrency exactly one writer of a key is told it is new: SQLite
    serialises writers, and PostgreSQL makes the second inserter of a key wait for the first
    to commit and then skip the row (or insert it, if the first rolled back).

    Rows are written in primary-key order (as :func:`insert_ignore`), in multi-row
    statements of at most :data:`_MAX_PARAMS` parameters. Duplicate keys within ``rows``:
    the first wins.

    Returns:
        The primary-key tuples (in the table's key-column order) of the rows written.
    """
    if not rows:
        return set()
    cols = tuple(rows[0])
    keys = _in_key_order(table, rows)
    assert keys, f"{table.name}: rows lack the primary key"
    if conn.dialect.name == "sqlite":
        found_all = _sqlite_insert_all_or_none(conn, table, cols, keys, rows)
        if found_all is not None:
            return found_all
    rows = _sorted_rows(table, rows)
    if conn.dialect.name == "postgresql" and _pg_types(table, cols) is not None:
        found: set[tuple[Any, ...]] = set()
        for chunk in _pg_parts(rows):
            sql = _pg_unnest_sql(table, cols, keys)
            found.update(driver_rows(conn, sql, _pg_arrays(chunk, cols)))
        return found
    mark = "?" if conn.dialect.name == "sqlite" else "%s"
    one = "(" + ", ".join([mark] * len(cols)) + ")"
    per = max(1, _MAX_PARAMS // len(cols))
    written: set[tuple[Any, ...]] = set()
    for i in range(0, len(rows), per):
        part = rows[i : i + per]
        sql = (
            f"INSERT INTO {table.name} ({', '.join(cols)}) VALUES "
            + ", ".join([one] * len(part))
            + f" ON CONFLICT DO NOTHING RETURNING {', '.join(keys)}"
        )
        params = tuple(r[c] for r in part for c in cols)
        written.update(driver_rows(conn, sql, params))
    return written


def _sqlite_insert_all_or_none(
    conn: Connection,
    table: sa.Table,
    cols: tuple[str, ...],
    keys: list[str],
    rows: Sequence[dict[str, Any]],
) -> set[tuple[Any, ...]] | None:
    """SQLite: the keys ``rows`` wrote when one ``executemany`` writes all or none of them.

    None (nothing written) for any other outcome (some stored, or a key repeated within
    ``rows``): the caller then asks ``RETURNING``
    (:func:`evstore.db.engine.executemany_all_or_none`).
    """
    params = _sorted_tuples(table, cols, rows)
    done = executemany_all_or_none(conn, _insert_sql("sqlite", table.name, cols), params)
    if done is None:
        return None
    if not done:
        return set()
    at = [cols.index(k) for k in keys]
    return set(zip(*[[p[i] for p in params] for i in at], strict=True))  # tuples built in C
