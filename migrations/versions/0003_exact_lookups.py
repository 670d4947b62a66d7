"""Exact lookups: attribute values stored whole, keyed by their SHA-256; digest columns checked.

Before this revision ``attrs.value`` was cut to 512 characters on write while queries compared
the full value: a longer ``document_id`` or ``source_id`` was never found by its full value
and was found by its prefix. Now ``attrs`` holds the whole value (text) and ``value_digest``,
64 lowercase hex of the SHA-256 of its UTF-8 bytes, leads the primary key with the name;
lookups ask for the digest and compare the value too.

Carrying a store over: every row gets its digest. A value of exactly 512 characters may be a
cut one, so its artifact's stored JSON is read and every string in it that is longer and
starts with that value is taken as the full value (one row each, same name); a cut value
whose artifact yields none is kept as it is.

Digest columns get checks (64 lowercase hex): on PostgreSQL ``CHECK`` constraints (``NOT
VALID`` where a stored row already breaks it), on SQLite ``BEFORE INSERT``/``BEFORE UPDATE``
triggers (SQLite cannot add a constraint to a table in place). A store with a damaged row
still migrates, and ``evstore check`` reports the damage.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

#: The length values were cut to before this revision.
_CUT = 512
#: (table, column) of every column that holds 64 lowercase hex of a digest.
DIGEST_COLUMNS = (
    ("blobs", "address"),
    ("blobs", "sha256"),
    ("artifacts", "address"),
    ("edges", "src"),
    ("edges", "dst"),
    ("attrs", "address"),
    ("attrs", "value_digest"),
    ("bindings", "key_digest"),
    ("warnings", "address"),
)
_BATCH = 1000


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def _blob(conn: Any, address: str) -> bytes | None:
    row = conn.execute(
        sa.text("SELECT data, chunk_set FROM blobs WHERE address = :a"), {"a": address}
    ).first()
    if row is None:
        return None
    if row.data is not None:
        return bytes(row.data)
    parts = conn.execute(
        sa.text("SELECT data FROM blob_chunks WHERE chunk_set = :c ORDER BY seq"),
        {"c": row.chunk_set},
    )
    return b"".join(bytes(p.data) for p in parts)


def _strings(doc: Any) -> Iterator[str]:
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str):
            yield node


def _full_values(conn: Any, address: str, cut: str) -> list[str]:
    """The strings of the artifact at ``address`` that ``cut`` is a 512-character cut of."""
    data = _blob(conn, address)
    if data is None:
        return []
    try:
        doc = json.loads(data)
    except ValueError:
        return []
    return sorted({s for s in _strings(doc) if len(s) > _CUT and s.startswith(cut)})


def _rows(conn: Any) -> Iterator[dict[str, str]]:
    for r in conn.execute(sa.text("SELECT name, value, address, kind FROM attrs")).all():
        values = [r.value]
        if len(r.value) == _CUT:
            values = _full_values(conn, r.address, r.value) or values
        for value in values:
            yield {
                "name": r.name,
                "value_digest": _digest(value),
                "value": value,
                "address": r.address,
                "kind": r.kind,
            }


def _insert(conn: Any, table: str, rows: Iterator[dict[str, str]]) -> None:
    sql = sa.text(
        f"INSERT INTO {table} (name, value_digest, value, address, kind) "
        "VALUES (:name, :value_digest, :value, :address, :kind)"
    )
    batch: list[dict[str, str]] = []
    seen: set[tuple[str, str, str]] = set()
    for row in rows:
        key = (row["name"], row["value_digest"], row["address"])
        if key in seen:
            continue
        seen.add(key)
        batch.append(row)
        if len(batch) >= _BATCH:
            conn.execute(sql, batch)
            batch = []
    if batch:
        conn.execute(sql, batch)


def _check_name(table: str, column: str) -> str:
    return f"ck_{table}_{column}_hex"


def _add_checks(conn: Any) -> None:
    for table, column in DIGEST_COLUMNS:
        name = _check_name(table, column)
        if conn.dialect.name == "postgresql":
            rule = f"{column} ~ '^[0-9a-f]{{64}}$'"
            damaged = conn.execute(
                sa.text(f"SELECT 1 FROM {table} WHERE NOT ({rule}) LIMIT 1")
            ).first()
            # A damaged row is left for `evstore check` to report: NOT VALID then.
            op.execute(
                f"ALTER TABLE {table} ADD CONSTRAINT {name} CHECK ({rule})"
                + (" NOT VALID" if damaged else "")
            )
            continue
        bad = f"length(NEW.{column}) != 64 OR NEW.{column} GLOB '*[^0-9a-f]*'"
        for event in ("INSERT", "UPDATE"):
            of = f" OF {column}" if event == "UPDATE" else ""
            op.execute(
                f"CREATE TRIGGER {name}_{event.lower()} BEFORE {event}{of} ON {table} "
                f"WHEN {bad} BEGIN SELECT RAISE(ABORT, "
                f"'CHECK constraint failed: {name}'); END"
            )


def _drop_checks(conn: Any) -> None:
    for table, column in DIGEST_COLUMNS:
        name = _check_name(table, column)
        if conn.dialect.name == "postgresql":
            op.execute(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {name}")
            continue
        for event in ("insert", "update"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}_{event}")


def upgrade() -> None:
    conn = op.get_bind()
    op.create_table(
        "attrs_next",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("value_digest", sa.String(64), nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("address", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("name", "value_digest", "address", name="pk_attrs"),
    )
    _insert(conn, "attrs_next", _rows(conn))
    op.drop_index("ix_attrs_address", table_name="attrs")
    op.drop_table("attrs")
    op.rename_table("attrs_next", "attrs")
    op.create_index("ix_attrs_address", "attrs", ["address"])
    _add_checks(conn)


def downgrade() -> None:
    conn = op.get_bind()
    _drop_checks(conn)
    op.create_table(
        "attrs_prev",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("value", sa.String(_CUT), primary_key=True),
        sa.Column("address", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(64), nullable=False),
    )
    rows = conn.execute(sa.text("SELECT name, value, address, kind FROM attrs")).all()
    seen: dict[tuple[str, str, str], dict[str, str]] = {}
    for r in rows:
        cut = r.value[:_CUT]
        seen.setdefault(
            (r.name, cut, r.address),
            {"name": r.name, "value": cut, "address": r.address, "kind": r.kind},
        )
    if seen:
        conn.execute(
            sa.text(
                "INSERT INTO attrs_prev (name, value, address, kind) "
                "VALUES (:name, :value, :address, :kind)"
            ),
            list(seen.values()),
        )
    op.drop_index("ix_attrs_address", table_name="attrs")
    op.drop_table("attrs")
    op.rename_table("attrs_prev", "attrs")
    op.create_index("ix_attrs_address", "attrs", ["address"])
