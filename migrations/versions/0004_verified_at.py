"""Record when ``evstore check`` last verified each object (table ``verified``).

One row per verified object: a blob (``kind`` is the empty string) or an artifact (its
kind), with the time of the last check that found it without fault. ``check --since TIME``
skips objects verified at or after TIME, so a nightly check resumes where an interrupted
one stopped. Objects never verified (every object of a store made before this revision)
have no row.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "verified",
        sa.Column("address", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("verified_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("address", "kind", name="pk_verified"),
    )


def downgrade() -> None:
    op.drop_table("verified")
