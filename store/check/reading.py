"""How ``evstore check`` reads stored bytes: inline rows by batch or range, chunked and
backend blobs streamed (store/check/checker.py's helpers).
"""  # noqa: D205

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa

from ..core.digests import Digest, Hasher
from ..db.tables import blob_chunks
from ..objects import blobs as _blobs
from ..objects.external import EXTERNAL

__all__ = ["SQLITE_IN", "chunks", "fetch", "inline_bytes", "range_bytes", "stream_digest"]

#: Bound parameters per IN list on SQLite.
SQLITE_IN = 500


def inline_bytes(conn: sa.Connection, addresses: Sequence[str]) -> dict[str, Any]:
    """``address -> data`` (as stored, unconverted) of the given blobs, a few queries a page."""
    found: dict[str, Any] = {}
    if not addresses:
        return found
    if conn.dialect.name == "postgresql":
        sql = "SELECT address, data FROM blobs WHERE address = ANY(%b)"
        found.update(fetch(conn, sql, (list(addresses),)))
        return found
    for i in range(0, len(addresses), SQLITE_IN):
        part = tuple(addresses[i : i + SQLITE_IN])
        sql = f"SELECT address, data FROM blobs WHERE address IN ({','.join('?' * len(part))})"
        found.update(fetch(conn, sql, part))
    return found


def fetch(conn: sa.Connection, sql: str, params: Any) -> list[Any]:
    """Every row of ``sql`` as plain tuples, through the driver's cursor in ``conn``'s
    transaction (no SQLAlchemy row objects: they cost more than the bytes they carry).
    A driver error leaves raw; :meth:`Database.read` classifies it like any other.
    """  # noqa: D205
    cur = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cur.execute(sql, params)
        return list(cur.fetchall())
    finally:
        cur.close()


def range_bytes(conn: sa.Connection, first: str, last: str) -> dict[str, Any]:
    """``address -> data`` of the inline blobs from ``first`` to ``last`` (one range scan)."""
    mark = "?" if conn.dialect.name == "sqlite" else "%s"
    sql = (
        f"SELECT address, data FROM blobs WHERE address >= {mark} AND address <= {mark}"
        " AND chunk_set IS NULL"
    )
    return dict(fetch(conn, sql, (first, last)))


def chunks(conn: sa.Connection, row: _blobs.BlobRow) -> Iterator[bytes]:
    """A chunked blob's chunks in order (one streamed query; stops at a missing seq), or a
    blob backend's object (``corruption.blob-missing`` when absent).
    """  # noqa: D205
    if row.chunk_set == EXTERNAL:
        yield from _blobs.iter_stored(conn, row.digest.blake3)
        return
    q = (
        sa.select(blob_chunks.c.seq, blob_chunks.c.data)
        .where(blob_chunks.c.chunk_set == row.chunk_set)
        .order_by(blob_chunks.c.seq)
    )
    result = conn.execution_options(stream_results=True, yield_per=4).execute(q)
    try:
        for want, c in enumerate(result):
            if c.seq != want:
                return
            yield _blobs.as_bytes(c.data, row.digest.blake3)
    finally:
        result.close()


def stream_digest(conn: sa.Connection, row: _blobs.BlobRow) -> Digest:
    """The digest of a chunked or backend blob's stored bytes, streamed."""
    h = Hasher()
    for chunk in chunks(conn, row):
        h.update(chunk)
    return h.digest()


# -- the two passes, a page at a time --------------------------------------------------------
