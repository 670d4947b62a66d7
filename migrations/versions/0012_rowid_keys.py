"""Row-id keys: roots, leases and log entries refer to a blob by an integer id (issue 29).

``blobs`` gains ``id``, an integer that grows with each insert, as its primary key (SQLite: the
rowid itself); the address stays unique (``uq_blobs_address``), so edges and artifacts still
refer to it. ``roots`` (``name``, ``blob``, ``until``) and ``leases`` (``blob``,
``expires_at``) are rebuilt keyed by that id, and ``log_entries`` gains ``blob`` (the object's
id when the entry was added; no foreign key, the log outlives what gc collects) with an index
in place of the one on ``address``; ``retired_blob_ids`` keeps the ids of the objects gc
collected, so their entries are still found by address (those collected before this
revision get a negative id each). A put's root, lease and log rows then append to their
B-trees instead of landing on a random page each (bench/scaling_layouts.py, the "sequential"
layout; docs/benchmarks.md).

Carrying a store over changes no address, byte, entry, index, subtree, checkpoint or root:
only keys are added. SQLite keeps each blob's rowid as its id; PostgreSQL numbers the stored
blobs as it rewrites the table and continues from there. A root or lease whose object is
missing (only a damaged store holds one: the foreign keys forbid it) has no id to refer to
and is not carried.

SQLite cannot change a primary key in place: ``blobs`` is copied into a new table, and so are
the tables that refer to it (their rows and indexes as they were), with foreign-key
enforcement on or off.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

#: The references to ``blobs.address`` that stay (PostgreSQL re-adds them after the key swap).
_ADDRESS_KEYS = (
    ("edges", "src", "fk_edges_src"),
    ("edges", "dst", "fk_edges_dst"),
    ("artifacts", "address", "fk_artifacts_blob"),
)

_BLOBS_BY_ID = (
    "CREATE TABLE blobs (\n\tid INTEGER NOT NULL, \n\taddress VARCHAR(64) NOT NULL, "
    "\n\tsha256 VARCHAR(64) NOT NULL, \n\tsize BIGINT NOT NULL, \n\tdata BLOB, "
    "\n\tchunk_set BIGINT, \n\tstored_in VARCHAR(512), \n\tPRIMARY KEY (id), "
    "\n\tCONSTRAINT uq_blobs_address UNIQUE (address)\n)"
)
_BLOBS_BY_ADDRESS = (
    "CREATE TABLE blobs (\n\taddress VARCHAR(64) NOT NULL, \n\tsha256 VARCHAR(64) NOT NULL, "
    "\n\tsize BIGINT NOT NULL, \n\tdata BLOB, \n\tchunk_set BIGINT, "
    "\n\tstored_in VARCHAR(512), \n\tPRIMARY KEY (address)\n)"
)
_BLOB_COLS = "address, sha256, size, data, chunk_set, stored_in"


#: The tables whose rows refer to a blob (SQLite copies them when ``blobs`` is swapped).
_CHILDREN = ("artifacts", "edges", "leases", "roots")


def _sqlite_schema(conn: Any, table: str) -> tuple[str, list[str]]:
    """SQLite: ``(CREATE TABLE text, [CREATE INDEX/TRIGGER texts])`` of ``table``."""
    rows = conn.execute(
        sa.text(
            "SELECT type, sql FROM sqlite_master WHERE tbl_name = :t AND sql IS NOT NULL"
            " ORDER BY type = 'table' DESC, type, name"
        ),
        {"t": table},
    ).all()
    return rows[0][1], [r[1] for r in rows[1:]]


def _sqlite_copy(conn: Any, table: str, create: str, extras: list[str], cols: str) -> None:
    """SQLite: ``table`` set aside, made again by ``create``, refilled, ``extras`` recreated."""
    op.execute(f"ALTER TABLE {table} RENAME TO {table}_before_0012")
    op.execute(create)
    op.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {table}_before_0012")
    op.execute(f"DROP TABLE {table}_before_0012")
    for sql in extras:  # indexes first (ORDER BY type), then the digest triggers
        op.execute(sql)


def _sqlite_swap_blobs(conn: Any, create: str, new_key: str, old_key: str) -> None:
    """SQLite: copy ``blobs`` into a table made by ``create``, ``new_key`` taking ``old_key``.

    The rowid (``id``) is carried both ways; indexes and the revision-0003 digest triggers
    are recreated as they were. Renaming ``blobs`` makes the tables that refer to it name
    the old copy (SQLite rewrites their ``REFERENCES``), so each is copied into a table made
    from its own text as it was, naming the new ``blobs``; the old copy goes last, when
    nothing refers to it. This holds with foreign-key enforcement on or off.
    """
    children = {}
    for table in _CHILDREN:
        create_child, extras = _sqlite_schema(conn, table)
        cols = ", ".join(r[1] for r in conn.execute(sa.text(f"PRAGMA table_info({table})")))
        children[table] = (create_child, extras, cols)
    _, blob_extras = _sqlite_schema(conn, "blobs")
    for sql in blob_extras:
        kind, name = sql.split()[1], sql.split()[2]
        op.execute(f"DROP {kind} {name}")
    op.execute("ALTER TABLE blobs RENAME TO blobs_before_0012")
    op.execute(create)
    op.execute(
        f"INSERT INTO blobs ({new_key}, {_BLOB_COLS}) SELECT {old_key}, {_BLOB_COLS}"
        f" FROM blobs_before_0012 ORDER BY {old_key}"
    )
    for sql in blob_extras:
        op.execute(sql)
    for table, (create_child, extras, cols) in children.items():
        _sqlite_copy(conn, table, create_child, extras, cols)
    op.execute("DROP TABLE blobs_before_0012")


def _pg_readd_address_keys(conn: Any) -> None:
    """PostgreSQL: the references to ``blobs.address`` again (``NOT VALID`` where damaged)."""
    for table, column, name in _ADDRESS_KEYS:
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


def _set_aside(conn: Any, table: str, pk: str, index: str | None) -> None:
    """Rename ``table`` to ``<table>_before_0012`` and free its key's and index's names."""
    if index is not None:
        op.drop_index(index, table_name=table)
    op.execute(f"ALTER TABLE {table} RENAME TO {table}_before_0012")
    if conn.dialect.name == "postgresql":
        op.execute(f"ALTER TABLE {table}_before_0012 RENAME CONSTRAINT {pk} TO {pk}_before_0012")


def _key_column(by_id: bool, name: str, **kw: Any) -> sa.Column[Any]:
    if by_id:
        return sa.Column(
            "blob", sa.BigInteger, sa.ForeignKey("blobs.id", name=name), autoincrement=False, **kw
        )
    return sa.Column("address", sa.String(64), sa.ForeignKey("blobs.address", name=name), **kw)


def _rebuild_roots_and_leases(conn: Any, by_id: bool) -> None:
    """Rebuild ``roots`` and ``leases`` keyed by ``blobs.id`` (``by_id``) or the address."""
    key, old = ("blob", "address") if by_id else ("address", "blob")
    join = "b.address = o.address" if by_id else "b.id = o.blob"
    pick = "b.id" if by_id else "b.address"
    _set_aside(conn, "roots", "pk_roots", f"ix_roots_{old}")
    op.create_table(
        "roots",
        sa.Column("name", sa.String(128), nullable=False),
        _key_column(by_id, "fk_roots_blob", nullable=False),
        sa.Column("until", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("name", key, name="pk_roots"),
    )
    op.create_index(f"ix_roots_{key}", "roots", [key])
    op.execute(
        f"INSERT INTO roots (name, {key}, until) SELECT o.name, {pick}, o.until"
        f" FROM roots_before_0012 o JOIN blobs b ON {join}"
    )
    op.execute("DROP TABLE roots_before_0012")
    _set_aside(conn, "leases", "leases_pkey", None)
    op.create_table(
        "leases",
        _key_column(by_id, "fk_leases_blob", primary_key=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.execute(
        f"INSERT INTO leases ({key}, expires_at) SELECT {pick}, o.expires_at"
        f" FROM leases_before_0012 o JOIN blobs b ON {join}"
    )
    op.execute("DROP TABLE leases_before_0012")


def upgrade() -> None:
    conn = op.get_bind()
    pg = conn.dialect.name == "postgresql"
    if pg:
        # A serial column numbers the stored rows as the table is rewritten (no UPDATE: a
        # damaged row that a NOT VALID check of revision 0003 refuses is carried as it is).
        op.execute("ALTER TABLE blobs ADD COLUMN id BIGSERIAL NOT NULL")
        op.execute("ALTER TABLE blobs ADD CONSTRAINT uq_blobs_address UNIQUE (address)")
        # Every foreign key to blobs rests on its primary key's index: they go with it.
        op.execute("ALTER TABLE blobs DROP CONSTRAINT blobs_pkey CASCADE")
        op.execute("ALTER TABLE blobs ADD CONSTRAINT blobs_pkey PRIMARY KEY (id)")
        _pg_readd_address_keys(conn)
    else:
        _sqlite_swap_blobs(conn, _BLOBS_BY_ID, "id", "rowid")
    _rebuild_roots_and_leases(conn, by_id=True)
    op.create_table(
        "retired_blob_ids",
        sa.Column("address", sa.String(64), nullable=False),
        sa.Column("id", sa.BigInteger, nullable=False, autoincrement=False),
        sa.PrimaryKeyConstraint("address", "id", name="pk_retired_blob_ids"),
    )
    # The objects the log names that gc collected before: a negative id each.
    op.execute(
        "INSERT INTO retired_blob_ids (address, id) SELECT address, -row_number() OVER"
        " (ORDER BY address) FROM (SELECT DISTINCT e.address FROM log_entries e WHERE NOT"
        " EXISTS (SELECT 1 FROM blobs b WHERE b.address = e.address)) AS gone"
    )
    op.add_column("log_entries", sa.Column("blob", sa.BigInteger, nullable=True))
    op.execute(
        "UPDATE log_entries SET blob = COALESCE((SELECT b.id FROM blobs b"
        " WHERE b.address = log_entries.address), (SELECT r.id FROM retired_blob_ids r"
        " WHERE r.address = log_entries.address))"
    )
    op.drop_index("ix_log_entries_address", table_name="log_entries")
    op.create_index("ix_log_entries_blob", "log_entries", ["blob"])


def downgrade() -> None:
    conn = op.get_bind()
    pg = conn.dialect.name == "postgresql"
    op.drop_index("ix_log_entries_blob", table_name="log_entries")
    op.drop_column("log_entries", "blob")
    op.create_index("ix_log_entries_address", "log_entries", ["address"])
    op.drop_table("retired_blob_ids")
    if pg:
        op.execute("ALTER TABLE blobs DROP CONSTRAINT blobs_pkey CASCADE")
        op.execute("ALTER TABLE blobs ADD CONSTRAINT blobs_pkey PRIMARY KEY (address)")
        op.execute("ALTER TABLE blobs DROP CONSTRAINT uq_blobs_address CASCADE")
        _pg_readd_address_keys(conn)
        _rebuild_roots_and_leases(conn, by_id=False)
        op.execute("ALTER TABLE blobs DROP COLUMN id")
    else:
        _rebuild_roots_and_leases(conn, by_id=False)
        _sqlite_swap_blobs(conn, _BLOBS_BY_ADDRESS, "rowid", "id")
