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
