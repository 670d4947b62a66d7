"""Initial schema: blobs, chunks, artifacts, edges, attrs, bindings, warnings, settings.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "blobs",
        sa.Column("address", sa.String(64), primary_key=True),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=True),
        sa.Column("chunk_set", sa.BigInteger, nullable=True),
    )
    op.create_index("ix_blobs_sha256", "blobs", ["sha256"])
    op.create_table(
        "blob_chunks",
        sa.Column("chunk_set", sa.BigInteger, primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "artifacts",
        sa.Column("address", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(64), primary_key=True),
        sa.Column("contract_version", sa.String(64), nullable=False),
        sa.Column(
            "accepted_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
    )
    op.create_index("ix_artifacts_kind", "artifacts", ["kind"])
    op.create_table(
        "edges",
        sa.Column("src", sa.String(64), primary_key=True),
        sa.Column("role", sa.String(64), primary_key=True),
        sa.Column("dst", sa.String(64), primary_key=True),
    )
    op.create_index("ix_edges_dst", "edges", ["dst"])
    op.create_table(
        "attrs",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("value", sa.String(512), primary_key=True),
        sa.Column("address", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(64), nullable=False),
    )
    op.create_index("ix_attrs_address", "attrs", ["address"])
    op.create_table(
        "bindings",
        sa.Column("namespace", sa.String(64), primary_key=True),
        sa.Column("key_digest", sa.String(64), primary_key=True),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("origin", sa.String(64), nullable=False, server_default=""),
    )
    op.create_table(
        "warnings",
        sa.Column("address", sa.String(64), primary_key=True),
        sa.Column("code", sa.String(64), primary_key=True),
        sa.Column("pointer", sa.String(512), primary_key=True),
        sa.Column("message", sa.Text, nullable=False),
    )
    op.create_table(
        "settings",
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )


def downgrade() -> None:
    for name in (
        "settings",
        "warnings",
        "bindings",
        "attrs",
        "edges",
        "artifacts",
        "blob_chunks",
        "blobs",
    ):
        op.drop_table(name)
