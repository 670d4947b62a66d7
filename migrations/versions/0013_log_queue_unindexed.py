"""The log's queue without its address index: a write's entries append (issue 29).

Revision 0010 indexed ``log_queue.address`` so that ``prove`` could tell an object whose
entry is queued but not yet integrated (``log.not-integrated``) from one never logged. Every
write paid for that index: one random key per entry, on a page of its own once the queue is
large, deleted again when the integrator moved the entry into the tree
(docs/benchmarks.md, issue 29). Only that error path of ``prove`` asked it, and it now scans
the queue, which holds only the entries accepted since the last integration round (the
server integrates every second; ``evstore log integrate`` and ``log checkpoint`` drain it).
The queue's key ``(batch, pos)`` stays: a write's entries append to it, and the integrator
reads and deletes by it.

No row changes: no entry, index, subtree, checkpoint or queued entry is touched.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_log_queue_address", table_name="log_queue")


def downgrade() -> None:
    op.create_index("ix_log_queue_address", "log_queue", ["address"])
