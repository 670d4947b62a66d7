"""Bearer tokens for the HTTP server (table ``tokens``; issue 11).

One row per token: a short public id, an optional label, the scope (``read``, ``ingest`` or
``admin``), the SHA-256 hex of the secret (the secret itself is shown once and never
stored), when it was made and, once revoked, when. Each store's tokens live in its own
database, so a token of one named store is unknown to every other.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tokens",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("secret_sha256", sa.String(64), nullable=False),
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("name", sa.Text, nullable=False, server_default=""),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("secret_sha256", name="uq_tokens_secret"),
    )


def downgrade() -> None:
    op.drop_table("tokens")
