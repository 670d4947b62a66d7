"""Floors on PostgreSQL (issue 29): the least work any PostgreSQL-backed store must do.

A benchmark's ceiling bounds what evstore could reach if storage cost nothing; a floor is
the other side of the bound: the bytes a request must fetch from PostgreSQL, fetched with
the fastest means at hand (psycopg 3 directly, no evstore code, no SQLAlchemy, no hashing),
on the tables evstore's own migration created. If ``ceiling / floor`` is below a target,
no implementation keeping its bytes in PostgreSQL can meet that target on this machine.

The readers here take the ``blobs`` row of ``address`` (the BLAKE3 hex, with or without
``blake3:``; its ``chunk_set``) and the chunk rows of ``blob_chunks`` (``data bytea``, about
1 MiB each, ``seq`` from 0), as store/objects/blobs.py ``_iter_raw`` does, in one
transaction, and yield each chunk's bytes (``bytes`` or a ``memoryview`` of the driver's
buffer, valid as long as it is referenced).

    read_per_statement    one prepared statement per chunk (evstore's way)
    read_per_statement_n  ``n`` chunks per statement
    read_cursor           a server-side cursor fetching ``n`` rows at a time
    read_copy             one ``COPY (SELECT ...) TO STDOUT (FORMAT binary)``: each row arrives
                          as one CopyData message, cut here without copying
    aread_copy            the same on an async connection (for the ASGI floor apps)

Each raises ``LookupError`` when the address has no chunked blob, ``ValueError`` on a COPY
stream of a shape other than one ``bytea`` column.
"""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator, Iterator
from typing import Any

__all__ = [
    "READERS",
    "aread_copy",
    "read_copy",
    "read_cursor",
    "read_per_statement",
    "read_per_statement_n",
]

_ROW_SQL = "SELECT chunk_set FROM blobs WHERE address = %s"
_ONE_SQL = "SELECT data FROM blob_chunks WHERE chunk_set = %s AND seq = %s"
_N_SQL = "SELECT data FROM blob_chunks WHERE chunk_set = %s AND seq >= %s AND seq < %s ORDER BY seq"
_ALL_SQL = "SELECT data FROM blob_chunks WHERE chunk_set = {} ORDER BY seq"
#: PostgreSQL's binary COPY header: the 11-byte signature, 4 bytes of flags, then the length
#: of a header extension (4 bytes) and the extension itself.
_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_I16 = struct.Struct("!h")
_I32 = struct.Struct("!i")


def _chunk_set(cur: Any, address: str) -> int:
    row = cur.execute(_ROW_SQL, (address.removeprefix("blake3:"),), prepare=True).fetchone()
    if row is None or row[0] is None:
        raise LookupError(f"no chunked blob {address}")
    return int(row[0])


def read_per_statement(conn: Any, address: str, n: int = 1) -> Iterator[bytes]:
    """One prepared statement per chunk, results in binary (evstore's ``_iter_raw``)."""
    with conn.transaction(), conn.cursor(binary=True) as cur:
        cs = _chunk_set(cur, address)
        seq = 0
        while True:
            row = cur.execute(_ONE_SQL, (cs, seq), prepare=True).fetchone()
            if row is None:
                return
            yield row[0]
            seq += 1


def read_per_statement_n(conn: Any, address: str, n: int = 8) -> Iterator[bytes]:
    """``n`` chunks per prepared statement, results in binary."""
    with conn.transaction(), conn.cursor(binary=True) as cur:
        cs = _chunk_set(cur, address)
        seq = 0
        while True:
            rows = cur.execute(_N_SQL, (cs, seq, seq + n), prepare=True).fetchall()
            for (data,) in rows:
                yield data
            if len(rows) < n:
                return
            seq += n


def read_cursor(conn: Any, address: str, n: int = 4) -> Iterator[bytes]:
    """A server-side (named) cursor over all the chunks, fetching ``n`` rows at a time."""
    with conn.transaction():
        with conn.cursor() as cur:
            cs = _chunk_set(cur, address)
        with conn.cursor("floor", binary=True) as cur:
            cur.itersize = n
            cur.execute(_ALL_SQL.format(cs))
            for (data,) in cur:
                yield data


class _CopyCutter:
    """Cuts a binary COPY stream of one ``bytea`` column into the values, without copying.

    PostgreSQL sends each row as one CopyData message (the file header before the first
    row, in the same message); :meth:`feed` takes one message and returns the values in it.
    """

    def __init__(self) -> None:
        self.started = False
        self.ended = False

    def feed(self, buf: memoryview) -> list[memoryview]:
        pos = 0
        if not self.started:
            if bytes(buf[:11]) != _SIGNATURE:
                raise ValueError("not a binary COPY stream")
            pos = 19 + _I32.unpack_from(buf, 15)[0]
            self.started = True
        out = []
        while pos < len(buf):
            (fields,) = _I16.unpack_from(buf, pos)
            if fields == -1:
                self.ended = True
                return out
            if fields != 1:
                raise ValueError(f"a COPY row of {fields} columns, expected 1")
            (size,) = _I32.unpack_from(buf, pos + 2)
            if size < 0 or pos + 6 + size > len(buf):
                raise ValueError("a NULL or split value in the COPY stream")
            out.append(buf[pos + 6 : pos + 6 + size])
            pos += 6 + size
        return out


def read_copy(conn: Any, address: str, n: int = 0) -> Iterator[memoryview]:
    """One binary ``COPY (SELECT data ... ORDER BY seq) TO STDOUT``; the values as views."""
    with conn.transaction(), conn.cursor() as cur:
        cs = _chunk_set(cur, address)
        cutter = _CopyCutter()
        with cur.copy(f"COPY ({_ALL_SQL.format(cs)}) TO STDOUT (FORMAT binary)") as copy:
            while buf := copy.read():
                yield from cutter.feed(buf)
        if not cutter.ended:
            raise ValueError("the COPY stream ended without its trailer")


async def aread_copy(conn: Any, address: str) -> AsyncIterator[memoryview]:
    """:func:`read_copy` on a ``psycopg.AsyncConnection``."""
    async with conn.transaction():
        cur = conn.cursor()
        key = (address.removeprefix("blake3:"),)
        row = await (await cur.execute(_ROW_SQL, key, prepare=True)).fetchone()
        if row is None or row[0] is None:
            raise LookupError(f"no chunked blob {address}")
        cutter = _CopyCutter()
        sql = f"COPY ({_ALL_SQL.format(int(row[0]))}) TO STDOUT (FORMAT binary)"
        async with cur.copy(sql) as copy:
            while buf := await copy.read():
                for value in cutter.feed(buf):
                    yield value
        if not cutter.ended:
            raise ValueError("the COPY stream ended without its trailer")


#: name -> (reader, rows per fetch) as measured by bench/verified_read.py.
READERS = {
    "floor_stmt": (read_per_statement, 1),
    "floor_stmt8": (read_per_statement_n, 8),
    "floor_cursor4": (read_cursor, 4),
    "floor_copy": (read_copy, 0),
}
