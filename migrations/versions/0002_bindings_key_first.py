"""Bindings: primary key (key_digest, namespace) instead of (namespace, key_digest).

Batched binding lookups ask ``key_digest IN (...)`` within one namespace. With the namespace
first, PostgreSQL planned them as a scan of the whole namespace whenever its statistics were
stale (right after a bulk ingest): measured 5 s for 10,000 keys, 0.3 s with the key first.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _rebuild(key_columns: list[str], key_name: str) -> None:
    # A new table plus a copy works the same on SQLite and PostgreSQL (SQLite cannot alter a
    # primary key in place, and the old key has no portable name).
    op.create_table(
        "bindings_next",
        sa.Column("namespace", sa.String(64), nullable=False),
        sa.Column("key_digest", sa.String(64), nullable=False),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("origin", sa.String(64), nullable=False, server_default=""),
        sa.PrimaryKeyConstraint(*key_columns, name=key_name),
    )
    op.execute(
        "INSERT INTO bindings_next (namespace, key_digest, key, value, origin) "
        "SELECT namespace, key_digest, key, value, origin FROM bindings"
    )
    op.drop_table("bindings")
    op.rename_table("bindings_next", "bindings")


def upgrade() -> None:
    _rebuild(["key_digest", "namespace"], "pk_bindings")


def downgrade() -> None:
    # Back to 0001's key under 0001's name (PostgreSQL's default ``bindings_pkey``): the new
    # table's key may not reuse ``pk_bindings`` while the old table still holds that name (on
    # PostgreSQL a key's name is an index name, unique in the schema).
    _rebuild(["namespace", "key_digest"], "bindings_pkey")
