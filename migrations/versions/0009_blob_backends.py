"""Blob backends: bytes of large blobs in a directory or an S3-compatible bucket (issue 25).

``blobs.stored_in``: the backend spec holding a blob's bytes (``file:/dir``,
``s3://bucket/prefix?...``), NULL when they are in the database (inline or chunk rows). A
blob whose bytes are outside the database has ``chunk_set = -1`` too, so every read path
that serves inline rows directly leaves it alone (docs/design.md, "Blob bytes outside the
database").

``blob_deletions``: the queue of bytes to delete from a backend once their row is gone,
each not before a time (the deletion delay), drained by ``gc``.

An existing store keeps every byte where it is: no row changes.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain ALTER TABLE on both backends (SQLite adds a nullable column in place).
    op.add_column("blobs", sa.Column("stored_in", sa.String(512), nullable=True))
    # `check` and the deletion drain ask which backends rows name: an index, so a store
    # whose bytes are all in the database answers without scanning its blobs.
    op.create_index("ix_blobs_stored_in", "blobs", ["stored_in"])
    op.create_table(
        "blob_deletions",
        sa.Column("backend", sa.String(512), primary_key=True),
        sa.Column("key", sa.String(256), primary_key=True),
        sa.Column("not_before", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_blob_deletions_due", "blob_deletions", ["not_before"])


def downgrade() -> None:
    op.drop_index("ix_blob_deletions_due", table_name="blob_deletions")
    op.drop_table("blob_deletions")
    op.drop_index("ix_blobs_stored_in", table_name="blobs")
    # SQLite 3.35+ drops a column in place; a batch copy would trip the foreign keys.
    op.execute("ALTER TABLE blobs DROP COLUMN stored_in")
