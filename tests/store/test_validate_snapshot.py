"""Issue 23: ``validate`` reads one snapshot and takes no write lock.

A validate used to run inside the ingest write transaction and roll back, so a long
validation (over HTTP, with a read token) held SQLite's one writer or PostgreSQL's ingest
lock for as long as it ran. Now it reads a snapshot, with what its own documents would add
held in memory (store/objects/staged.py).
"""

from __future__ import annotations

import threading

import evstore
from evstore import Document
from evstore.facade import ingest


def test_a_write_goes_through_while_a_validate_runs(store_url, snapshot, monkeypatch):
    plain = ingest._validate_work
    outcome: dict[str, object] = {}

    def write_meanwhile() -> None:
        try:
            with evstore.open(store_url) as other:
                other.put(b"written while a validate ran")
                outcome["ingest"] = other.ingest([Document(b'{"other": 1}')]).results[0].new
        except BaseException as exc:  # reported by the assertion below
            outcome["error"] = exc

    def validate_work(parsed, report, txn):
        writer = threading.Thread(target=write_meanwhile)
        writer.start()
        writer.join(30)  # bounded: a validate holding the write lock would make it wait
        outcome["waited"] = writer.is_alive()
        plain(parsed, report, txn)

    monkeypatch.setattr(ingest, "_validate_work", validate_work)
    with evstore.open(store_url) as store:
        report = store.validate([Document(b'{"mine": 1}')])
        assert report.ok
        assert outcome == {"waited": False, "ingest": True}
        mine = report.results[0].digest.blake3
        assert store.has([f"blake3:{mine}"]) == [f"blake3:{mine}"]  # validated, not stored


def test_a_validate_sees_its_own_earlier_documents_and_writes_nothing(store, snapshot):
    store.ingest([Document(b'{"stored": 1}')])
    before = snapshot(store)
    report = store.validate(
        [Document(b'{"x": 1}'), Document(b'{"x":1}'), Document(b'{"stored": 1}')]
    )
    assert report.ok, report.faults
    # The second is the first's canonical form again: new only once, as an ingest would say.
    assert [r.new for r in report.results] == [True, False, False]
    assert snapshot(store) == before
    stored = store.ingest([Document(b'{"x": 1}'), Document(b'{"x":1}')])
    assert [r.new for r in stored.results] == [True, False]
