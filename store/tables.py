"""The database tables (SQLAlchemy Core): one metadata object that the Alembic revisions match.

Terms: an *address* column holds 64 lowercase hex of a BLAKE3-256 digest (the ``blake3:``
prefix is not stored). Schema changes happen only through Alembic revisions in migrations/;
tests/store/test_migrations.py checks that the migrated schema equals this metadata.

Tables:
    blobs        one row per distinct byte string; small ones inline, large ones in chunks
    blob_chunks  the chunks of large blobs, by chunk set and sequence number
    artifacts    index row per (blob, kind): a JSON document stored in canonical form
    edges        artifact -> blob or artifact it refers to, with a role (lineage, closure)
    attrs        lookup keys of an artifact (name, value, SHA-256 of the value), for ``find``

Every digest column (addresses, ``blobs.sha256``, ``attrs.value_digest``,
``bindings.key_digest``) is checked to hold 64 lowercase hex on new rows (revision 0003:
``CHECK ... NOT VALID`` on PostgreSQL, triggers on SQLite; not part of this metadata).
    bindings     first-write-wins bindings: (namespace, key) -> value
    warnings     warnings recorded with an accepted artifact
    settings     store settings, changed with ``evstore config``
    verified     when ``evstore check`` last found an object without fault (revision 0003)
    log_entries      the tamper-evident log: entry ``idx`` (dense from 0), its RFC 8785 bytes
    log_nodes        insert-only hashes of complete Merkle subtrees ``(level, idx)``
    log_checkpoints  signed checkpoints (C2SP signed notes), one per tree size
    log_keys         the log's verifier keys (never a private key)
(revision 0007; docs/log.md)
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    func,
)

__all__ = [
    "artifacts",
    "attrs",
    "bindings",
    "blob_chunks",
    "blobs",
    "edges",
    "log_checkpoints",
    "log_entries",
    "log_keys",
    "log_nodes",
    "metadata",
    "settings",
    "verified",
    "warnings",
]

metadata = MetaData()

blobs = Table(
    "blobs",
    metadata,
    Column("address", String(64), primary_key=True),
    Column("sha256", String(64), nullable=False),
    Column("size", BigInteger, nullable=False),
    # Inline bytes for blobs up to INLINE_MAX; NULL when the bytes are in blob_chunks.
    Column("data", LargeBinary, nullable=True),
    Column("chunk_set", BigInteger, nullable=True),
    Index("ix_blobs_sha256", "sha256"),
)

blob_chunks = Table(
    "blob_chunks",
    metadata,
    Column("chunk_set", BigInteger, primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("data", LargeBinary, nullable=False),
)

artifacts = Table(
    "artifacts",
    metadata,
    Column("address", String(64), primary_key=True),
    Column("kind", String(64), primary_key=True),
    Column("contract_version", String(64), nullable=False),
    # When the store first accepted it. Time lives only here, never in an address.
    Column("accepted_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Index("ix_artifacts_kind", "kind"),
)

edges = Table(
    "edges",
    metadata,
    Column("src", String(64), primary_key=True),
    Column("role", String(64), primary_key=True),
    Column("dst", String(64), primary_key=True),
    Index("ix_edges_dst", "dst"),
)

attrs = Table(
    "attrs",
    metadata,
    Column("name", String(64), nullable=False),
    # SHA-256 hex of the value's UTF-8 bytes: lookups ask for it, so a value of any length is
    # found exactly (revision 0003; values were cut to 512 characters before it).
    Column("value_digest", String(64), nullable=False),
    # The whole value.
    Column("value", Text, nullable=False),
    Column("address", String(64), nullable=False),
    Column("kind", String(64), nullable=False),
    PrimaryKeyConstraint("name", "value_digest", "address", name="pk_attrs"),
    Index("ix_attrs_address", "address"),
)

bindings = Table(
    "bindings",
    metadata,
    Column("namespace", String(64), nullable=False),
    # SHA-256 hex of the key text, so arbitrarily long keys index well on both backends.
    # It leads the primary key: batched lookups are `key_digest IN (...)` (revision 0002).
    Column("key_digest", String(64), nullable=False),
    Column("key", Text, nullable=False),
    Column("value", Text, nullable=False),
    # The artifact whose accepted write made the binding (empty when none).
    Column("origin", String(64), nullable=False, server_default=""),
    PrimaryKeyConstraint("key_digest", "namespace", name="pk_bindings"),
)

warnings = Table(
    "warnings",
    metadata,
    Column("address", String(64), primary_key=True),
    Column("code", String(64), primary_key=True),
    Column("pointer", String(512), primary_key=True),
    Column("message", Text, nullable=False),
)

settings = Table(
    "settings",
    metadata,
    Column("name", String(128), primary_key=True),
    # The value as JSON text.
    Column("value", Text, nullable=False),
)

verified = Table(
    "verified",
    metadata,
    Column("address", String(64), nullable=False),
    # The artifact's kind, or "" for the blob itself.
    Column("kind", String(64), nullable=False),
    # When a check last found the object without fault (UTC).
    Column("verified_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("address", "kind", name="pk_verified"),
)

log_entries = Table(
    "log_entries",
    metadata,
    # The leaf index: dense from 0, assigned under the log lock when the transaction appends.
    Column("idx", BigInteger, primary_key=True, autoincrement=False),
    # The entry's object address (64 hex), for `prove REF`.
    Column("address", String(64), nullable=False),
    # The RFC 8785 bytes of the entry object (the leaf is SHA-256(0x00 || entry)).
    Column("entry", LargeBinary, nullable=False),
    Index("ix_log_entries_address", "address"),
)

log_nodes = Table(
    "log_nodes",
    metadata,
    # Complete subtree (level, idx) covers leaves idx * 2**level .. (idx + 1) * 2**level - 1.
    Column("level", Integer, nullable=False),
    Column("idx", BigInteger, nullable=False),
    Column("hash", LargeBinary, nullable=False),
    PrimaryKeyConstraint("level", "idx", name="pk_log_nodes"),
)

log_checkpoints = Table(
    "log_checkpoints",
    metadata,
    Column("size", BigInteger, primary_key=True, autoincrement=False),
    # The signed note, verbatim (c2sp.org/tlog-checkpoint).
    Column("note", Text, nullable=False),
    Column("signed_at", DateTime(timezone=True), nullable=False),
)

log_keys = Table(
    "log_keys",
    metadata,
    # The verifier key <name>+<key ID>+<base64 key> (c2sp.org/signed-note); the latest added
    # is the log's key.
    Column("vkey", String(512), primary_key=True),
    Column("added_at", DateTime(timezone=True), nullable=False),
)
