"""Batched reads (issue 29): cat-batch, has - and verify-list look refs up a batch at a time.

Each answer must be the one the single-ref path gives, whatever batch a ref falls in: batch
sizes around the boundary, missing and malformed refs mixed in, a corrupt blob in the middle
of a batch (refused with its code, and the refs after it answered as their own). Both
backends (``store_url``).
"""

from __future__ import annotations

import hashlib
import json

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

import evstore
from evstore.cli.main import cli
from evstore.db.tables import blobs
from evstore.objects import blob_reads

SIZE = 4  # the patched batch size


def run(url: str, *args: str, input: bytes | str | None = None):
    return CliRunner().invoke(cli, ["--store", url, *args], input=input)


def frame(ref: str, data: bytes) -> bytes:
    return f"{ref} {len(data)}\n".encode() + data + b"\n"


def payloads(n: int) -> list[bytes]:
    return [f"blob {i}\n".encode() * (1 + i % 7) for i in range(n)]


def corrupt(url: str, address: str, data: bytes) -> None:
    with evstore.open(url) as s, s.db.engine.begin() as conn:
        conn.execute(sa.update(blobs).where(blobs.c.address == address[7:]).values(data=data))


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(blob_reads, "BATCH", SIZE)


@pytest.mark.parametrize("n", [SIZE - 1, SIZE, SIZE + 1, 2 * SIZE + 1])
def test_cat_batch_around_the_batch_size_frames_every_ref_in_order(store_url, small_batches, n):
    data = payloads(n)
    with evstore.open(store_url) as s:
        digests = [r.digest for r in s.put_many(data)]
    missing = "blake3:" + "0" * 64
    refs: list[str] = []
    want = b""
    for i, (d, b) in enumerate(zip(digests, data, strict=True)):
        ref = d.address if i % 2 else "sha256:" + d.sha256
        refs.append(ref)
        want += frame(ref, b)
        if i % 3 == 1:  # a missing and a malformed ref among the found ones
            refs += [missing, "nope"]
            want += f"{missing} missing\n".encode() + b"nope error ref.syntax\n"
    r = run(store_url, "cat-batch", input="\n".join(refs) + "\n")
    assert r.stdout_bytes == want
    assert r.exit_code == (1 if n > 1 else 0)


def test_cat_batch_refuses_a_corrupt_blob_mid_batch_and_answers_the_rest(store_url, small_batches):
    data = payloads(2 * SIZE)
    with evstore.open(store_url) as s:
        digests = [r.digest for r in s.put_many(data)]
    bad = SIZE + 1  # in the middle of the second batch
    corrupt(store_url, digests[bad].address, b"x" + data[bad][1:])  # same size, other bytes
    shrunk = SIZE + 2
    corrupt(store_url, digests[shrunk].address, data[shrunk][:-1])
    refs = [d.address for d in digests]
    r = run(store_url, "cat-batch", input="\n".join(refs) + "\n")
    want = b"".join(
        f"{ref} error corruption.digest\n".encode()
        if i == bad
        else f"{ref} error corruption.size\n".encode()
        if i == shrunk
        else frame(ref, b)
        for i, (ref, b) in enumerate(zip(refs, data, strict=True))
    )
    assert r.stdout_bytes == want
    assert r.exit_code == 1


def test_cat_batch_reads_a_blob_too_large_for_the_batch_singly(store_url, small_batches):
    big = bytes(range(256)) * (blob_reads.SMALL // 256 + 1)  # > SMALL, still inline
    small = b"small"
    with evstore.open(store_url) as s:
        a, b = (s.put(x).digest for x in (big, small))
    r = run(store_url, "cat-batch", input=f"{a.address}\n{b.address}\nsha256:{a.sha256}\n")
    assert r.exit_code == 0
    assert r.stdout_bytes == frame(a.address, big) + frame(b.address, small) + frame(
        "sha256:" + a.sha256, big
    )
    corrupt(store_url, a.address, big[:-1] + b"!")
    r = run(store_url, "cat-batch", input=f"{a.address}\n{b.address}\n")
    assert r.stdout_bytes == f"{a.address} error corruption.digest\n".encode() + frame(
        b.address, small
    )


@pytest.mark.parametrize("n", [SIZE - 1, SIZE, SIZE + 1])
def test_has_stdin_around_the_batch_size_lists_exactly_the_missing(store_url, small_batches, n):
    data = payloads(n)
    with evstore.open(store_url) as s:
        digests = [r.digest for r in s.put_many(data)]
    absent = ["blake3:" + hashlib.sha256(b"a%d" % i).hexdigest() for i in range(n)]  # never stored
    refs = [x for pair in zip([d.address for d in digests], absent, strict=True) for x in pair]
    refs.append("sha256:" + digests[-1].sha256)
    corrupt(store_url, digests[0].address, b"Z" + data[0][1:])  # the first batch's first
    r = run(store_url, "--json", "has", "-", input="\n".join(refs) + "\n")
    assert r.exit_code == 1
    assert json.loads(r.stdout)["missing"] == [digests[0].address, *absent]
    with evstore.open(store_url) as s:
        assert s.has(refs) == [digests[0].address, *absent]
        assert s.has([d.address for d in digests[1:]]) == []


def test_verify_list_around_the_batch_size_reports_each_fault_on_its_line(store_url, small_batches):
    data = payloads(SIZE + 1)
    with evstore.open(store_url) as s:
        for d in data:
            s.put(d)
    lines = [f"{hashlib.sha256(d).hexdigest()}  f{i}" for i, d in enumerate(data)]
    gone = hashlib.sha256(b"never stored").hexdigest()
    lines.insert(2, f"{gone}  absent")  # line 3
    lines.insert(SIZE, "not a line")  # line SIZE + 1: between two batches' refs
    victim = data[SIZE - 1]  # listed on line SIZE + 2, the second batch
    address = "blake3:" + evstore.digest_bytes(victim).blake3
    corrupt(store_url, address, victim + b"+")
    r = run(store_url, "--json", "verify-list", "-a", "sha256", "-", input="\n".join(lines))
    assert r.exit_code == 1
    body = json.loads(r.stdout)
    assert body["checked"] == SIZE + 2
    assert [(f["line"], f.get("path"), f["code"]) for f in body["faults"]] == [
        (3, "absent", "not-found.blob"),
        (SIZE + 1, None, "input.invalid"),
        (SIZE + 2, f"f{SIZE - 1}", "corruption.size"),
    ]
    assert body["faults"][0]["message"] == f"no blob for sha256:{gone}"
