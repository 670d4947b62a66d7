"""The tamper-evident log: entries, complete subtree hashes, checkpoints, verifier keys.

Creates ``log_entries`` (dense index, object address, RFC 8785 entry bytes), ``log_nodes``
(insert-only hashes of complete Merkle subtrees, RFC 9162 section 2.1), ``log_checkpoints``
(signed notes, one per tree size) and ``log_keys`` (verifier keys; a private key is never
stored). docs/log.md describes them.

Carrying a store over: what the store held before the log is appended by this revision, in
this documented order, so the log starts out naming everything already accepted:

1. every artifact ``(address, kind)`` as an ``ingest`` entry, ordered by its recorded
   ``accepted_at``, then address, then kind; the entry's ``accepted_at`` is that recorded
   time (artifacts whose blob row is missing are left out: ``evstore check`` reports them);
2. every blob that is no artifact's bytes as a ``put`` entry, ordered by address; a blob has
   no recorded time, so the entry's ``accepted_at`` is the time of this migration.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_BATCH = 5000


def upgrade() -> None:
    op.create_table(
        "log_entries",
        sa.Column("idx", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("address", sa.String(64), nullable=False),
        sa.Column("entry", sa.LargeBinary, nullable=False),
    )
    op.create_index("ix_log_entries_address", "log_entries", ["address"])
    op.create_table(
        "log_nodes",
        sa.Column("level", sa.Integer, nullable=False),
        sa.Column("idx", sa.BigInteger, nullable=False),
        sa.Column("hash", sa.LargeBinary, nullable=False),
        sa.PrimaryKeyConstraint("level", "idx", name="pk_log_nodes"),
    )
    op.create_table(
        "log_checkpoints",
        sa.Column("size", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("signed_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "log_keys",
        sa.Column("vkey", sa.String(512), primary_key=True),
        sa.Column("added_at", sa.DateTime(timezone=True), nullable=False),
    )
    _backfill(op.get_bind())


def _existing(conn: Any) -> Iterator[tuple[str, bytes]]:
    """``(address, entry bytes)`` of every object stored before the log, in the documented order."""
    from evstore.core.times import utc_text  # the entries' one time spelling
    from evstore.objects.log_entries import entry_bytes

    arts = conn.execute(
        sa.text(
            "SELECT a.address, a.kind, a.accepted_at, b.sha256, b.size FROM artifacts a"
            " JOIN blobs b ON b.address = a.address ORDER BY a.accepted_at, a.address, a.kind"
        )
    )
    for r in arts:
        when = r.accepted_at
        if isinstance(when, str):  # SQLite without the declared type's conversion
            when = _dt.datetime.fromisoformat(when)
        yield (
            r.address,
            entry_bytes("ingest", r.address, r.sha256, int(r.size), utc_text(when), kind=r.kind),
        )
    now = utc_text(_dt.datetime.now(_dt.UTC))
    blobs = conn.execute(
        sa.text(
            "SELECT b.address, b.sha256, b.size FROM blobs b WHERE NOT EXISTS"
            " (SELECT 1 FROM artifacts a WHERE a.address = b.address) ORDER BY b.address"
        )
    )
    for r in blobs:
        yield r.address, entry_bytes("put", r.address, r.sha256, int(r.size), now)


def _backfill(conn: Any) -> None:
    from evstore.objects.log_entries import append_entries

    batch: list[tuple[str, bytes]] = []
    for item in list(_existing(conn)) if conn.dialect.name == "sqlite" else _existing(conn):
        batch.append(item)
        if len(batch) >= _BATCH:
            append_entries(conn, batch, by_blob=False)
            batch.clear()
    if batch:
        append_entries(conn, batch, by_blob=False)


def downgrade() -> None:
    op.drop_table("log_keys")
    op.drop_table("log_checkpoints")
    op.drop_table("log_nodes")
    op.drop_index("ix_log_entries_address", table_name="log_entries")
    op.drop_table("log_entries")
