"""A collection at each step of an ingest: every ingest ends complete or typed-failed, and no
edge ever dangles (issue 12, "Interleavings"), on both backends.

The steps are the hooks of evstore.objects.leases: "bytes stored" (the artifact's bytes written),
"lease extended" (the objects its edges refer to locked and leased), "edges written" and
"commit" (roots written, just before the commit). At the chosen step a collector starts in
another thread with its own connections and gets up to 2 s to finish: on PostgreSQL it runs
beside the open ingest (row locks decide), on SQLite it waits for the single writer.
"""

from __future__ import annotations

import threading

import pytest
from retention_helpers import CONTENT, dangling_edges, manifest_doc, reset_clock, stored

import evstore
from evstore.core.canonical import dumps, loads
from evstore.objects import leases

STEPS = ("bytes stored", "lease extended", "edges written", "commit")


@pytest.fixture(autouse=True)
def _clean():
    reset_clock()
    yield
    leases.STEP_HOOK.clear()


def _collector_at(step: str, url: str, results: list, threads: list) -> None:
    fired = []

    def hook(name: str) -> None:
        if name != step or fired:
            return
        fired.append(name)

        def run() -> None:
            with evstore.open(url) as other:
                results.append(other.retention.gc())

        t = threading.Thread(target=run, daemon=True)
        t.start()
        threads.append(t)
        t.join(timeout=2.0)  # SQLite: the collector waits for this writer; go on

    leases.STEP_HOOK.append(hook)


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("scenario", ["referenced", "own-bytes"])
def test_a_collection_at_each_step_of_an_ingest(store_url, step, scenario):
    """``referenced``: the manifest's content is stored, unrooted and expired (garbage) when
    the ingest refers to it. ``own-bytes``: the manifest's own bytes are such garbage."""
    with evstore.open(store_url) as s:
        s.set_config("gc.lease-seconds", 0)
        with s.retention.rooting("tmp"):
            s.put(CONTENT)
            if scenario == "own-bytes":
                s.put(dumps(loads(manifest_doc().data)))
        s.retention.release("tmp")
        garbage = stored(s)
        results: list = []
        threads: list[threading.Thread] = []
        _collector_at(step, store_url, results, threads)
        outcome: evstore.EvstoreError | None = None
        supplied = [CONTENT] if scenario == "own-bytes" else []
        try:
            report = s.ingest([manifest_doc()], supplied=supplied)
        except evstore.EvstoreError as err:
            outcome = err
        leases.STEP_HOOK.clear()
        for t in threads:
            t.join(timeout=60)
            assert not t.is_alive()
        assert len(results) == 1, "the collector ran once"
        assert dangling_edges(s) == 0
        if outcome is None:
            (m,) = report.results
            closure = s.runs.closure(m.digest.address) if hasattr(s.runs, "closure") else None
            assert m.digest.address in stored(s)
            assert garbage - {m.digest.address} <= stored(s)  # the content stayed with it
            assert closure is None or closure.ok
            assert s.retention.gc().count == 0  # rooted under default, with its closure
            assert s.retention.audit().verdict == "pass"
        else:
            # Typed and named; nothing of the ingest committed.
            assert outcome.family == "not-found", outcome
            assert outcome.details["ref"].startswith("blake3:")
            assert s.ls() == []
            assert s.retention.entries("default") == []
        assert list(s.check()) == []


def test_on_postgresql_a_collection_before_the_lock_fails_the_ingest_typed(store_url, backend):
    """The race the design closes, made to happen: the collector deletes the content after the
    manifest's check read it and before the write locks it; the write names the content."""
    if backend != "postgresql":
        pytest.skip("SQLite's single writer makes the collector wait: the ingest completes")
    with evstore.open(store_url) as s:
        s.set_config("gc.lease-seconds", 0)
        with s.retention.rooting("tmp"):
            s.put(CONTENT)
        s.retention.release("tmp")
        results: list = []
        threads: list[threading.Thread] = []
        _collector_at("bytes stored", store_url, results, threads)
        with pytest.raises(evstore.NotFound) as exc:
            s.ingest([manifest_doc()])
        assert exc.value.code == "not-found.blob"
        assert exc.value.details["ref"] == evstore.digest_bytes(CONTENT).address
        assert [r.count for r in results] == [1]
        assert stored(s) == set() and dangling_edges(s) == 0
