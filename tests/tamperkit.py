"""Writing damage into a store past its foreign keys, for tests of how damage is reported.

A module of its own (not conftest.py): several test folders have a conftest.py, and
``from conftest import ...`` would import whichever was loaded first.
"""

from __future__ import annotations

import contextlib

import evstore


@contextlib.contextmanager
def tampering(store: evstore.Store):
    """A write transaction that stores damage past the foreign keys (revision 0006).

    For tests of how check, ls, get and audit report a damaged store (a row deleted or
    inserted by hand): PostgreSQL skips foreign-key triggers for the transaction
    (``session_replication_role = replica``); SQLite turns enforcement off for the connection.
    """
    import sqlalchemy as sa

    if store.db.backend == "postgresql":
        with store.db.engine.begin() as conn:
            conn.execute(sa.text("SET LOCAL session_replication_role = replica"))
            yield conn
        return
    with store.db.engine.connect() as conn:
        raw = conn.connection.dbapi_connection
        raw.execute("PRAGMA foreign_keys = OFF")
        try:
            with conn.begin():
                yield conn
        finally:
            raw.execute("PRAGMA foreign_keys = ON")


def flip_byte(store: evstore.Store, ref: str, at: int = 0) -> None:
    """Change one stored byte of the blob ``ref`` (its inline data, or its first chunk).

    The blob row keeps its digests, so every verified read of it is a CorruptionError
    (``corruption.digest``); nothing else changes.
    """
    import sqlalchemy as sa

    from evstore.db.tables import blob_chunks, blobs

    address = store.stat(ref)["address"].removeprefix("blake3:")
    with store.db.engine.begin() as conn:
        row = conn.execute(
            sa.select(blobs.c.data, blobs.c.chunk_set).where(blobs.c.address == address)
        ).one()
        if row.chunk_set is None:
            data = bytearray(row.data)
            data[at] ^= 0x01
            conn.execute(sa.update(blobs).where(blobs.c.address == address).values(data=data))
            return
        where = (blob_chunks.c.chunk_set == row.chunk_set, blob_chunks.c.seq == 0)
        chunk = bytearray(conn.execute(sa.select(blob_chunks.c.data).where(*where)).scalar_one())
        chunk[at] ^= 0x01
        conn.execute(sa.update(blob_chunks).where(*where).values(data=bytes(chunk)))


def add_warning(store: evstore.Store, ref: str, code: str, message: str, pointer: str = "") -> None:
    """Record a warning with the artifact at ``ref``, as an ingest that accepted it with one."""
    from evstore.db.tables import warnings

    address = store.stat(ref)["address"].removeprefix("blake3:")
    with store.db.engine.begin() as conn:
        conn.execute(
            warnings.insert().values(address=address, code=code, pointer=pointer, message=message)
        )
