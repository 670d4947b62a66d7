"""The whole-store check (``evstore check``): every fault, named, over a full run.

Terms: fault (one typed finding with a pointer), sample (a seeded subset), incremental
(since the last clean run), log tree check (the stored log against a recomputation).
"""
