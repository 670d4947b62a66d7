"""Retention: roots, leases policy, garbage collection and audits.

Terms:
    root: a name that keeps an object and its closure (everything it refers to).
    closure: an object and every object its edges reach.
    lease: time-bounded protection of a fresh or reported-present object.
    gc: the collector, deleting exactly what no root reaches and no lease protects.
    audit: proof that what is retained is intact, recorded per run.
"""
