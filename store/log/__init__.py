"""The tamper-evident log as users see it: keys, checkpoints, entries, proofs.

Terms: entry (one accepted write), checkpoint (a signed tree head), inclusion proof,
consistency proof, verifier key. The entries are appended by :mod:`evstore.objects`.
"""
