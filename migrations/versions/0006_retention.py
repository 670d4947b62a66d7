"""Retention: roots, leases, history and audit runs; foreign keys that forbid dangling edges.

New tables: ``roots`` (root name, object address, optional ``until``), ``leases`` (per object,
until when gc leaves it alone), ``retention_history`` (retain, release and collection
events) and ``audits`` (every ``evstore audit`` run).

Foreign keys: ``edges.src``, ``edges.dst``, ``artifacts.address``, ``roots.address`` and
``leases.address`` reference ``blobs.address``. On PostgreSQL they are added in place (``NOT
VALID`` where a stored row already breaks one: a damaged store still migrates and ``evstore
check`` reports the damage; new rows are always checked). SQLite cannot add a constraint to a
table in place: ``edges`` and ``artifacts`` are copied into new tables declaring the keys
(their indexes and the revision-0003 digest triggers are recreated as they were); the
migration runs with SQLite's foreign-key enforcement off (evstore.db.engine.Database.migrate), so a
damaged row is copied as it is.

Carrying a store over: every object that no edge refers to is rooted under ``default``, so
everything the store holds stays reachable from a root and ``gc`` collects nothing until a
user releases it. No lease rows are written (an absent lease is an expired one).

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

#: (table, column, constraint name) of each reference to ``blobs.address`` on an old table.
_OLD_TABLE_KEYS = (
    ("edges", "src", "fk_edges_src"),
    ("edges", "dst", "fk_edges_dst"),
    ("artifacts", "address", "fk_artifacts_blob"),
)

_EDGES = (
    "CREATE TABLE {name} (\n\tsrc VARCHAR(64) NOT NULL, \n\trole VARCHAR(64) NOT NULL, "
    "\n\tdst VARCHAR(64) NOT NULL, \n\tPRIMARY KEY (src, role, dst){keys}\n)"
)
_EDGES_KEYS = (
    ", \n\tCONSTRAINT fk_edges_src FOREIGN KEY(src) REFERENCES blobs (address), "
    "\n\tCONSTRAINT fk_edges_dst FOREIGN KEY(dst) REFERENCES blobs (address)"
)
_ARTIFACTS = (
    "CREATE TABLE {name} (\n\taddress VARCHAR(64) NOT NULL, \n\tkind VARCHAR(64) NOT NULL, "
    "\n\tcontract_version VARCHAR(64) NOT NULL, "
    "\n\taccepted_at DATETIME DEFAULT CURRENT_TIMESTAMP NOT NULL, "
    "\n\tPRIMARY KEY (address, kind){keys}\n)"
)
_ARTIFACTS_KEYS = (
    ", \n\tCONSTRAINT fk_artifacts_blob FOREIGN KEY(address) REFERENCES blobs (address)"
)


def _rebuild_sqlite(conn: Any, table: str, create: str, keys: str) -> None:
    """Copy a SQLite table into one created by ``create`` (with or without ``keys``)."""
    extras = [
        r.sql
        for r in conn.execute(
            sa.text(
                "SELECT sql FROM sqlite_master WHERE tbl_name = :t AND type IN ('index', "
                "'trigger') AND sql IS NOT NULL ORDER BY type, name"
            ),
            {"t": table},
        )
    ]
    cols = [r[1] for r in conn.execute(sa.text(f"PRAGMA table_info({table})"))]
    op.execute(create.format(name=f"{table}_next", keys=keys))
    op.execute(
        f"INSERT INTO {table}_next ({', '.join(cols)}) SELECT {', '.join(cols)} FROM {table}"
    )
    op.execute(f"DROP TABLE {table}")
    op.execute(f"ALTER TABLE {table}_next RENAME TO {table}")
    for sql in extras:  # indexes first (ORDER BY type), then the digest triggers
        op.execute(sql)


def _pg_add_keys(conn: Any) -> None:
    for table, column, name in _OLD_TABLE_KEYS:
        damaged = conn.execute(
            sa.text(
                f"SELECT 1 FROM {table} t WHERE NOT EXISTS (SELECT 1 FROM blobs b "
                f"WHERE b.address = t.{column}) LIMIT 1"
            )
        ).first()
        op.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY ({column}) "
            "REFERENCES blobs (address)" + (" NOT VALID" if damaged else "")
        )


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "postgresql":
        _pg_add_keys(conn)
    else:
        _rebuild_sqlite(conn, "edges", _EDGES, _EDGES_KEYS)
        _rebuild_sqlite(conn, "artifacts", _ARTIFACTS, _ARTIFACTS_KEYS)
    op.create_table(
        "roots",
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column(
            "address",
            sa.String(64),
            sa.ForeignKey("blobs.address", name="fk_roots_blob"),
            nullable=False,
        ),
        sa.Column("until", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("name", "address", name="pk_roots"),
    )
    op.create_index("ix_roots_address", "roots", ["address"])
    op.create_table(
        "leases",
        sa.Column(
            "address",
            sa.String(64),
            sa.ForeignKey("blobs.address", name="fk_leases_blob"),
            primary_key=True,
        ),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "retention_history",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(128), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("root", sa.String(128), nullable=True),
        sa.Column("address", sa.String(64), nullable=True),
        sa.Column("detail", sa.Text, nullable=False, server_default="{}"),
    )
    op.create_index("ix_retention_history_at", "retention_history", ["at"])
    op.create_table(
        "audits",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(128), nullable=False),
        sa.Column("scope", sa.Text, nullable=False),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("per_root", sa.Text, nullable=False),
        sa.Column("faults", sa.Text, nullable=False),
    )
    # Everything stored so far stays reachable from the root `default`.
    op.execute(
        "INSERT INTO roots (name, address) SELECT 'default', b.address FROM blobs b "
        "WHERE NOT EXISTS (SELECT 1 FROM edges e WHERE e.dst = b.address)"
    )


def downgrade() -> None:
    conn = op.get_bind()
    op.drop_table("audits")
    op.drop_index("ix_retention_history_at", table_name="retention_history")
    op.drop_table("retention_history")
    op.drop_table("leases")
    op.drop_index("ix_roots_address", table_name="roots")
    op.drop_table("roots")
    if conn.dialect.name == "postgresql":
        for table, _, name in _OLD_TABLE_KEYS:
            op.execute(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {name}")
    else:
        _rebuild_sqlite(conn, "edges", _EDGES, "")
        _rebuild_sqlite(conn, "artifacts", _ARTIFACTS, "")
