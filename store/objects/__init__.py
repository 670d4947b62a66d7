"""What every write goes through: blobs, artifacts, bindings and their bookkeeping.

Terms:
    blob: bytes stored once by their address (``blake3:<hex>``), read back only verified
        (:mod:`.blobs`).
    artifact: a blob of canonical JSON stored as a kind (:mod:`.artifacts`); the kind
        registry says which handler owns each kind (:mod:`.kinds`).
    binding: a first-write-wins key to value record (:mod:`.bindings`).
    transaction context: :class:`~.txn.Txn`, the open write a handler sees.
    lease, implicit root: what keeps a fresh write from the collector (:mod:`.leases`).
    log entry: the record of one accepted write, appended in its transaction
        (:mod:`.log_entries`).
    lineage: edges from an artifact to what it refers to (:mod:`.lineage`).
"""
