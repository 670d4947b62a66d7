"""The store as a witness: the latest checkpoint it cosigned for each log (issue 26).

``witness_logs`` holds, per log origin a witness follows (C2SP tlog-witness), the size, root
hash and signed note of the latest checkpoint it cosigned, and the log key it verified it
with. ``POST P/add-checkpoint`` reads and replaces the row in one transaction, so two
requests cannot roll the witness back (docs/log.md#witnesses). No existing row changes.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "witness_logs",
        sa.Column("origin", sa.String(512), primary_key=True),
        sa.Column("vkey", sa.String(512), nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("root", sa.LargeBinary, nullable=False),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("cosigned_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("witness_logs")
