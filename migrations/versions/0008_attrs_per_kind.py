"""Lookup rows per kind: ``attrs`` keyed by (name, value digest, address, kind).

Before this revision the primary key of ``attrs`` left out the kind, so a byte string stored
as two kinds that both carry an attribute with the same value (an array of units ingested as
an ``evidence-context`` and as a ``source-document``: ``source_id``) kept one row, of the kind
stored first. ``find --attr source_id=S --kind source-document`` then missed the second kind,
and a store filled in another order (an imported archive) answered ``find`` differently.

Now every (address, kind) has its own rows. Carrying a store over: the primary key takes the
kind; on PostgreSQL in place, on SQLite by copying ``attrs`` into a new table (its index and
the revision-0003 digest triggers are recreated as they were; foreign keys are off while
migrating, evstore.db.engine.Database.migrate). The rows a second kind lost are then copied
from the first kind's for the attributes both kinds derive alike from the same bytes
(:data:`SHARED`: ``source_id``, which evidence contexts and source documents both take from
their units); no other attribute is shared by two kinds that one byte string can be.

Downgrade: one row per (name, value digest, address) again, the one of the kind first in
name order.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

#: Attribute name -> the kinds that derive it alike from the same bytes.
SHARED = {"source_id": ("evidence-context", "source-document")}

_ATTRS = (
    "CREATE TABLE attrs_next (\n\tname VARCHAR(64) NOT NULL, \n\tvalue_digest VARCHAR(64) "
    "NOT NULL, \n\tvalue TEXT NOT NULL, \n\taddress VARCHAR(64) NOT NULL, \n\tkind "
    "VARCHAR(64) NOT NULL, \n\tCONSTRAINT pk_attrs PRIMARY KEY ({key})\n)"
)
_COLUMNS = "name, value_digest, value, address, kind"


def _primary_key(conn: Any, columns: str) -> None:
    """Make ``columns`` the primary key of ``attrs``."""
    if conn.dialect.name == "postgresql":
        op.execute(
            "ALTER TABLE attrs DROP CONSTRAINT pk_attrs, "
            f"ADD CONSTRAINT pk_attrs PRIMARY KEY ({columns})"
        )
        return
    extras = [
        r.sql
        for r in conn.execute(
            sa.text(
                "SELECT sql FROM sqlite_master WHERE tbl_name = 'attrs' AND type IN ('index', "
                "'trigger') AND sql IS NOT NULL ORDER BY type, name"
            )
        )
    ]
    op.execute(_ATTRS.format(key=columns))
    op.execute(f"INSERT INTO attrs_next ({_COLUMNS}) SELECT {_COLUMNS} FROM attrs")
    op.execute("DROP TABLE attrs")
    op.execute("ALTER TABLE attrs_next RENAME TO attrs")
    for sql in extras:  # the index first (ORDER BY type), then the digest triggers
        op.execute(sql)


def upgrade() -> None:
    conn = op.get_bind()
    _primary_key(conn, "name, value_digest, address, kind")
    for name, kinds in SHARED.items():
        listed = ", ".join(f"'{k}'" for k in kinds)
        op.execute(
            f"INSERT INTO attrs ({_COLUMNS}) "
            "SELECT DISTINCT a.name, a.value_digest, a.value, a.address, ar.kind "
            "FROM attrs a JOIN artifacts ar ON ar.address = a.address "
            f"WHERE a.name = '{name}' AND a.kind IN ({listed}) AND ar.kind IN ({listed}) "
            "AND ar.kind <> a.kind AND NOT EXISTS (SELECT 1 FROM attrs x WHERE "
            "x.name = a.name AND x.value_digest = a.value_digest AND x.address = a.address "
            "AND x.kind = ar.kind)"
        )


def downgrade() -> None:
    conn = op.get_bind()
    op.execute(
        "DELETE FROM attrs WHERE EXISTS (SELECT 1 FROM attrs x WHERE x.name = attrs.name "
        "AND x.value_digest = attrs.value_digest AND x.address = attrs.address "
        "AND x.kind < attrs.kind)"
    )
    _primary_key(conn, "name, value_digest, address")
