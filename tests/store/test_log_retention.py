"""Retain, release and collection append to the tamper-evident log (both backends)."""

from __future__ import annotations

import pytest
from retention_helpers import CONTENT, manifest_doc, reset_clock

import evstore


@pytest.fixture(autouse=True)
def _clock():
    reset_clock()
    yield
    reset_clock()


def _ops(store, start=0):
    store.log.integrate()
    return [
        (e["entry"]["op"], e["entry"]["address"], e["entry"].get("root"))
        for e in store.log.entries(start)
    ]


def test_retain_release_and_gc_append_entries_in_their_transactions(store, tmp_path):
    store.set_config("gc.lease-seconds", 0)
    with store.retention.rooting("run-1"):
        a = store.put(b"run-1 output")
        (m,) = store.ingest([manifest_doc()], supplied=[CONTENT]).results
    content = evstore.digest_bytes(CONTENT)
    assert sorted(op for op, _, _ in _ops(store)) == ["ingest", "put", "put"]
    store.log.integrate()
    start = len(store.log.entries())
    store.retention.retain([a.digest.address], "published")
    assert _ops(store, start) == [("retain", a.digest.address, "published")]
    store.retention.release("published")
    store.retention.release("run-1")
    assert _ops(store, start + 1) == [
        ("release", a.digest.address, "published"),
        *sorted([("release", a.digest.address, "run-1"), ("release", m.digest.address, "run-1")]),
    ]
    store.log.integrate()
    start = len(store.log.entries())
    done = store.retention.gc()
    deleted = _ops(store, start)
    assert {(op, addr) for op, addr, _ in deleted} == {
        ("delete", o["address"]) for o in done.objects
    }
    assert {addr for _, addr, _ in deleted} == {
        a.digest.address,
        m.digest.address,
        content.address,
    }
    sizes = {e["entry"]["address"]: e["entry"]["size"] for e in store.log.entries(start)}
    assert sizes[content.address] == len(CONTENT)
    # the log still proves what was accepted and then deleted, and checks clean
    key = tmp_path / "k"
    store.log.init_key(key)
    store.log.checkpoint(key)
    proof = store.log.prove(a.digest.address)
    assert proof["entry"]["op"] == "delete"
    first = store.log.prove(
        a.digest.address, index=0 if _ops(store)[0][1] == a.digest.address else 1
    )
    r = evstore.verify_log_proof(first["text"], store.log.key(), b"run-1 output")
    assert r["entry"]["op"] == "put"
    assert list(store.check(record=False)) == []


def test_identical_content_under_a_new_root_appends_one_retain_entry(store):
    put = store.put(b"shared bytes")
    (art,) = store.ingest([manifest_doc()], supplied=[CONTENT]).results
    store.log.integrate()
    start = len(store.log.entries())
    store.put(b"shared bytes")  # same root (default): nothing
    store.ingest([manifest_doc()], supplied=[CONTENT])
    assert _ops(store, start) == []
    with store.retention.rooting("run-2"):
        store.put(b"shared bytes")
        store.ingest([manifest_doc()], supplied=[CONTENT])
        store.ingest([manifest_doc()], supplied=[CONTENT])  # run-2 holds it now: nothing
    assert _ops(store, start) == [
        ("retain", put.digest.address, "run-2"),
        ("retain", art.digest.address, "run-2"),
    ]
    with store.retention.rooting("run-3"):  # a new object under a new root: its put only
        fresh = store.put(b"new under run-3")
    assert _ops(store, start + 2) == [("put", fresh.digest.address, None)]
    assert list(store.check(record=False)) == []
