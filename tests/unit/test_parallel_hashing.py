"""Hasher and digest_bytes hash SHA-256 in a worker thread for large inputs (issue 29).

The digests must be those of hashlib and blake3 whatever the chunking (below, at and above
PARALLEL_MIN, chunks of mixed sizes), and a forked child, whose copy of the worker pool has
no threads, must still hash.
"""

from __future__ import annotations

import hashlib
import os
import random

import blake3
import pytest

from evstore.core import digests
from evstore.core.digests import PARALLEL_MIN, Hasher, digest_bytes


def _reference(data: bytes) -> tuple[str, str, int]:
    return blake3.blake3(data).hexdigest(), hashlib.sha256(data).hexdigest(), len(data)


@pytest.mark.parametrize(
    "sizes",
    [
        [PARALLEL_MIN - 1, PARALLEL_MIN, PARALLEL_MIN + 1],
        [1, 3 * PARALLEL_MIN + 7, 0, 5, PARALLEL_MIN],
        [(1 << 20)] * 3,
    ],
)
def test_hasher_over_chunks_gives_the_digests_of_the_whole(sizes):
    rng = random.Random(sum(sizes))
    chunks = [rng.randbytes(n) for n in sizes]
    h = Hasher()
    for c in chunks:
        h.update(memoryview(c) if len(c) % 2 else c)
    whole = b"".join(chunks)
    got = h.digest()
    assert (got.blake3, got.sha256, got.size) == _reference(whole)
    assert digest_bytes(whole) == got


@pytest.mark.parametrize(
    "sizes",
    [
        [PARALLEL_MIN - 1, PARALLEL_MIN, PARALLEL_MIN + 1],
        [1, 3 * PARALLEL_MIN + 7, 0, 5, PARALLEL_MIN],
        [(1 << 20)] * 5,
    ],
)
def test_submitted_chunks_mixed_with_updates_give_the_digests_of_the_whole(sizes):
    """submit returns before hashing (the read of the next chunk overlaps it); digest waits.

    Chunks alternate between submit and update, so an update that did not wait for the
    chunk in flight, or a digest taken before it, hashes the bytes out of order.
    """
    rng = random.Random(len(sizes) + sum(sizes))
    chunks = [rng.randbytes(n) for n in sizes]
    h = Hasher()
    for i, c in enumerate(chunks):
        if i % 3 == 2:
            h.update(c)
        else:
            h.submit(memoryview(c) if i % 2 else c)
    assert h.size == sum(sizes)
    got = h.digest()
    assert (got.blake3, got.sha256, got.size) == _reference(b"".join(chunks))


def test_digest_bytes_of_a_large_buffer_matches_the_libraries():
    data = random.Random(7).randbytes(3 * (1 << 20) + 11)
    d = digest_bytes(data)
    assert (d.blake3, d.sha256, d.size) == _reference(data)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_hashes_with_a_pool_of_its_own():
    data = random.Random(3).randbytes(2 * PARALLEL_MIN)
    parent = digest_bytes(data + data + data + data + data)  # the parent's pool exists now
    assert digests._POOL
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: any failure or hang shows as a wrong answer or the timeout
        try:
            h = Hasher()
            for _ in range(5):
                h.update(data)
            os.write(write, h.digest().sha256.encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        answer = f.read()
    os.waitpid(pid, 0)
    assert answer == parent.sha256


def test_digest_batch_gives_each_items_digests():
    rng = random.Random(29)
    items = [rng.randbytes(n) for n in (0, 1, 2047, 2048, 10240, 1 << 20, (1 << 20) + 1)]
    got = digests.digest_batch(items).result()
    assert [(d.blake3, d.sha256, d.size) for d in got] == [_reference(b) for b in items]
    with pytest.raises(TypeError):  # a worker's error comes back through the result
        digests.digest_batch([b"ok", "not bytes"]).result()  # type: ignore[list-item]
