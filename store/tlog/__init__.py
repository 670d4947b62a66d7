"""The transparency log's pure mathematics and formats (RFC 9162, C2SP). No database.

Terms:
    leaf hash, node: RFC 9162 section 2.1 Merkle tree hashing (:mod:`.merkle`).
    root: the Merkle tree hash of the first ``size`` entries.
    inclusion proof, consistency proof: audit paths of RFC 9162 section 2.1.3 and 2.1.4.
    checkpoint: a C2SP tlog-checkpoint (origin, size, root) in a signed note
        (:mod:`.checkpoint`); a verifier key names who signed it.

Imports only :mod:`evstore.core`.
"""
