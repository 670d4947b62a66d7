"""The database tables (SQLAlchemy Core): one metadata object that the Alembic revisions match.

Terms: an *address* column holds 64 lowercase hex of a BLAKE3-256 digest (the ``blake3:``
prefix is not stored). Schema changes happen only through Alembic revisions in migrations/;
tests/store/test_migrations.py checks that the migrated schema equals this metadata.

Tables:
    blobs        one row per distinct byte string; small ones inline, large ones in chunks
    blob_chunks  the chunks of large blobs, by chunk set and sequence number
    artifacts    index row per (blob, kind): a JSON document stored in canonical form
    edges        artifact -> blob or artifact it refers to, with a role (lineage, closure)
    attrs        lookup keys of an artifact (name, value, SHA-256 of the value), for ``find``;
                 one row per (address, kind) (revision 0008)

Every digest column (addresses, ``blobs.sha256``, ``attrs.value_digest``,
``bindings.key_digest``) is checked to hold 64 lowercase hex on new rows (revision 0003:
``CHECK ... NOT VALID`` on PostgreSQL, triggers on SQLite; not part of this metadata).
    bindings     first-write-wins bindings: (namespace, key) -> value
    warnings     warnings recorded with an accepted artifact
    settings     store settings, changed with ``evstore config``
    verified     when ``evstore check`` last found an object without fault (revision 0003)
    roots        retention roots: (root name, object address), optionally held until a time
    leases       per object: until when a write or an upload's existence check protects it
    retention_history  retain, release and collection events (who, what, when)
    audits       every ``evstore audit`` run: time, scope, verdict, faults
    tokens       bearer tokens of the HTTP server: scope and SHA-256 of the secret (0005)
    log_entries      the tamper-evident log: entry ``idx`` (dense from 0), its RFC 8785 bytes
    log_nodes        insert-only hashes of complete Merkle subtrees ``(level, idx)``
    log_queue        accepted entries not yet in the tree, ``(batch, pos)``, revision 0010
    log_checkpoints  signed checkpoints (C2SP signed notes), one per tree size
    log_keys         the log's verifier keys (never a private key), revision 0007 (docs/log.md)
    witness_logs     as a witness: the latest checkpoint cosigned per log origin, revision 0011

Revision 0006 adds foreign keys (docs/design.md#retention-and-garbage-collection): an edge's
``src`` and ``dst``, an artifact's ``address``, a root's and a lease's ``address`` each name
a stored blob, so a dangling reference cannot be committed and a referenced blob cannot be
deleted.

Revision 0012 keys ``blobs`` by an integer row id (``id``; the address stays unique) and
rekeys ``roots`` and ``leases`` by it (column ``blob``); ``log_entries`` finds an object's
entries by ``blob`` instead of an index on the address. Ids grow with each insert, so these
tables' inserts append (docs/benchmarks.md, issue 29). Revision 0013 drops the index on
``log_queue.address`` (a random key per write; only ``prove``'s error path asked it).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
)

__all__ = [
    "artifacts",
    "attrs",
    "audits",
    "bindings",
    "blob_chunks",
    "blob_deletions",
    "blobs",
    "edges",
    "leases",
    "log_checkpoints",
    "log_entries",
    "log_keys",
    "log_nodes",
    "log_queue",
    "metadata",
    "retention_history",
    "retired_blob_ids",
    "roots",
    "settings",
    "tokens",
    "verified",
    "warnings",
    "witness_logs",
]

metadata = MetaData()

blobs = Table(
    "blobs",
    metadata,
    # The row id (revision 0012): roots, leases and log entries refer to a blob by it, so
    # their inserts append to their B-trees instead of landing on a random page each.
    # SQLite: an alias of the rowid. Internal only: never shown, never in an address.
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True),
    Column("address", String(64), nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("size", BigInteger, nullable=False),
    # Inline bytes for blobs up to INLINE_MAX; NULL when the bytes are in blob_chunks.
    Column("data", LargeBinary, nullable=True),
    Column("chunk_set", BigInteger, nullable=True),
    # The blob backend holding the bytes (chunk_set -1), NULL when they are in the database.
    Column("stored_in", String(512), nullable=True),
    UniqueConstraint("address", name="uq_blobs_address"),
    Index("ix_blobs_sha256", "sha256"),
    Index("ix_blobs_stored_in", "stored_in"),
    # Writers insert-or-skip by the address (store/objects/rows.py), not by the id.
    info={"write_key": ("address",)},
)

#: Bytes to delete from a blob backend once their row is gone, not before ``not_before``.
blob_deletions = Table(
    "blob_deletions",
    metadata,
    Column("backend", String(512), primary_key=True),
    Column("key", String(256), primary_key=True),
    Column("not_before", DateTime(timezone=True), nullable=False),
    Index("ix_blob_deletions_due", "not_before"),
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
    Column(
        "address",
        String(64),
        ForeignKey("blobs.address", name="fk_artifacts_blob"),
        primary_key=True,
    ),
    Column("kind", String(64), primary_key=True),
    Column("contract_version", String(64), nullable=False),
    # When the store first accepted it. Time lives only here, never in an address.
    Column("accepted_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Index("ix_artifacts_kind", "kind"),
)

edges = Table(
    "edges",
    metadata,
    Column("src", String(64), ForeignKey("blobs.address", name="fk_edges_src"), primary_key=True),
    Column("role", String(64), primary_key=True),
    Column("dst", String(64), ForeignKey("blobs.address", name="fk_edges_dst"), primary_key=True),
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
    # One row per (address, kind): a byte string stored as two kinds is found as each
    # (revision 0008; the kind was not in the key before).
    PrimaryKeyConstraint("name", "value_digest", "address", "kind", name="pk_attrs"),
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

roots = Table(
    "roots",
    metadata,
    # The root's name (``default`` for what put and ingest root unless told otherwise).
    Column("name", String(128), nullable=False),
    # The object's blobs.id (revision 0012; its address before).
    Column("blob", BigInteger, ForeignKey("blobs.id", name="fk_roots_blob"), nullable=False),
    # The entry holds until this time (UTC, the database's clock); NULL: until released.
    Column("until", DateTime(timezone=True), nullable=True),
    PrimaryKeyConstraint("name", "blob", name="pk_roots"),
    Index("ix_roots_blob", "blob"),
)

leases = Table(
    "leases",
    metadata,
    # The object's blobs.id (revision 0012; its address before).
    Column(
        "blob",
        BigInteger,
        ForeignKey("blobs.id", name="fk_leases_blob"),
        primary_key=True,
        autoincrement=False,
    ),
    # gc leaves the object alone until then (UTC, the database's clock).
    Column("expires_at", DateTime(timezone=True), nullable=False),
)

retention_history = Table(
    "retention_history",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", DateTime(timezone=True), nullable=False),
    # Who: ``local`` for the CLI and library, a token id for the server.
    Column("actor", String(128), nullable=False),
    # What: ``retain``, ``release`` or ``collect``.
    Column("action", String(32), nullable=False),
    Column("root", String(128), nullable=True),
    # The object (64 hex; no foreign key: the history outlives what was collected).
    Column("address", String(64), nullable=True),
    # JSON text: e.g. the until time, the bytes freed.
    Column("detail", Text, nullable=False, server_default="{}"),
    Index("ix_retention_history_at", "at"),
)

audits = Table(
    "audits",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True), nullable=False),
    Column("actor", String(128), nullable=False),
    # JSON text: the roots, sample, seed and since the run was asked for.
    Column("scope", Text, nullable=False),
    # ``pass`` or ``fail``.
    Column("verdict", String(16), nullable=False),
    # JSON text: per root ``{"root", "verdict", "artifacts", "objects", "faults"}``.
    Column("per_root", Text, nullable=False),
    # JSON text: every fault (the error dicts).
    Column("faults", Text, nullable=False),
)

tokens = Table(
    "tokens",
    metadata,
    Column("id", String(32), primary_key=True),
    # SHA-256 hex of the secret: the secret itself is shown once and never stored.
    Column("secret_sha256", String(64), nullable=False),
    Column("scope", String(16), nullable=False),
    Column("name", Text, nullable=False, server_default=""),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("revoked_at", DateTime(timezone=True), nullable=True),
    UniqueConstraint("secret_sha256", name="uq_tokens_secret"),
)

log_entries = Table(
    "log_entries",
    metadata,
    # The leaf index: dense from 0, assigned by the integrator (store/log/integrate.py).
    Column("idx", BigInteger, primary_key=True, autoincrement=False),
    # The entry's object address (64 hex; not indexed since revision 0012).
    Column("address", String(64), nullable=False),
    # The RFC 8785 bytes of the entry object (the leaf is SHA-256(0x00 || entry)).
    Column("entry", LargeBinary, nullable=False),
    # The blobs.id of the object when the entry was added, or the id it had when gc collected
    # it (retired_blob_ids), for `prove REF` (revision 0012; no foreign key: the log outlives
    # what gc collects).
    Column("blob", BigInteger, nullable=True),
    Index("ix_log_entries_blob", "blob"),
)

#: The ids collected blobs had (revision 0012): their log entries keep naming them, so
#: ``prove REF`` finds the entries of an object gc deleted. Negative ids: the entries of
#: objects collected before revision 0012 (numbered by the migration).
retired_blob_ids = Table(
    "retired_blob_ids",
    metadata,
    Column("address", String(64), nullable=False),
    Column("id", BigInteger, nullable=False, autoincrement=False),
    PrimaryKeyConstraint("address", "id", name="pk_retired_blob_ids"),
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

log_queue = Table(
    "log_queue",
    metadata,
    # One write transaction's entries share a batch (PostgreSQL: the log_queue_batches
    # sequence, taken as the transaction commits; SQLite: one more than the largest batch).
    Column("batch", BigInteger, nullable=False, autoincrement=False),
    # The entry's place within its transaction (recording order, from 0).
    Column("pos", Integer, nullable=False, autoincrement=False),
    Column("address", String(64), nullable=False),
    # The RFC 8785 bytes of the entry object, as log_entries.entry will hold them.
    Column("entry", LargeBinary, nullable=False),
    PrimaryKeyConstraint("batch", "pos", name="pk_log_queue"),
    # No index on address since revision 0013: a write's entries append to the key, and
    # only `prove`'s "not yet integrated" answer looks for an address (a scan of the queue).
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


witness_logs = Table(
    "witness_logs",
    metadata,
    # The log's origin (its checkpoint's first line): one row per log this store witnesses.
    Column("origin", String(512), primary_key=True),
    # The log verifier key the checkpoint was verified with (the witness.logs setting).
    Column("vkey", String(512), nullable=False),
    # Size and root hash of the latest checkpoint cosigned, and its note as received.
    Column("size", BigInteger, nullable=False),
    Column("root", LargeBinary, nullable=False),
    Column("note", Text, nullable=False),
    Column("cosigned_at", DateTime(timezone=True), nullable=False),
)
