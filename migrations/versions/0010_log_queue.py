"""The log's queue: writes record entries, the integrator adds them to the tree (issue 26).

``log_queue`` holds the entries of committed write transactions that the integrator
(store/log/integrate.py) has not yet given an index and added to the tree: one ``batch`` per
transaction, ``pos`` its recording order. On PostgreSQL the batch numbers come from the
``log_queue_batches`` sequence, taken as the transaction commits (docs/log.md, "Sequencing
and integration", gives the ordering this yields).

An existing log is unchanged: no entry, index, subtree or checkpoint is touched, and the
queue starts empty, so every root the store signed before stays the root at its size.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "log_queue",
        sa.Column("batch", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("pos", sa.Integer, nullable=False, autoincrement=False),
        sa.Column("address", sa.String(64), nullable=False),
        sa.Column("entry", sa.LargeBinary, nullable=False),
        sa.PrimaryKeyConstraint("batch", "pos", name="pk_log_queue"),
    )
    op.create_index("ix_log_queue_address", "log_queue", ["address"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE SEQUENCE log_queue_batches AS bigint")


def downgrade() -> None:
    # Entries still queued go into the tree first, in the integrator's order: the revision
    # before this one appends in the write's own transaction, so none may be left behind.
    from evstore.objects.log_entries import append_entries

    conn = op.get_bind()
    rows = conn.execute(sa.text("SELECT address, entry FROM log_queue ORDER BY batch, pos")).all()
    if rows:
        append_entries(conn, [(str(r.address), bytes(r.entry)) for r in rows], by_blob=False)
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP SEQUENCE log_queue_batches")
    op.drop_index("ix_log_queue_address", table_name="log_queue")
    op.drop_table("log_queue")
