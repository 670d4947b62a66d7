"""``retention.audit``: closure, bytes, contract audit and bindings of retained artifacts."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
import sqlalchemy as sa
from retention_helpers import CONTENT, CONTENT_ADDRESS, make_manifest, manifest_doc

import evstore
from evstore import Document
from evstore.db.tables import bindings, blobs


@pytest.fixture
def retained(store):
    with store.retention.rooting("run-1"):
        (m,) = store.ingest([manifest_doc()], supplied=[CONTENT]).results
    with store.retention.rooting("run-2"):
        other = b"other content\n" * 20
        (m2,) = store.ingest([Document(make_manifest(other, "x"))], supplied=[other]).results
    store.put(b"plain bytes")
    return store, m, m2


def test_a_sound_store_passes_per_root_and_per_artifact_and_is_recorded(retained):
    store, m, m2 = retained
    run = store.retention.audit()
    assert run.verdict == "pass" and run.faults == []
    by_root = {r["root"]: r for r in run.roots}
    assert set(by_root) == {"default", "run-1", "run-2"}
    (entry,) = by_root["run-1"]["entries"]
    assert entry == {
        "address": m.digest.address,
        "kinds": ["manifest"],
        "objects": 2,
        "verdict": "pass",
        "faults": [],
    }
    assert run.objects == 5  # two manifests, two contents, one plain blob
    (last,) = store.retention.audits(1)
    assert last["id"] == run.id and last["verdict"] == "pass"
    assert {r["root"]: r["entries"] for r in last["roots"]} == {
        "default": 1,
        "run-1": 1,
        "run-2": 1,
    }
    assert last["actor"] == "local" and last["faults"] == []


def test_corrupt_bytes_in_a_closure_fail_its_root_only(retained):
    store, m, m2 = retained
    with store.db.engine.begin() as conn:
        conn.execute(
            sa.update(blobs)
            .where(blobs.c.address == CONTENT_ADDRESS[7:])
            .values(data=b"X" + CONTENT[1:])
        )
    run = store.retention.audit()
    assert run.verdict == "fail"
    verdicts = {r["root"]: r["verdict"] for r in run.roots}
    assert verdicts == {"default": "pass", "run-1": "fail", "run-2": "pass"}
    (entry,) = next(r for r in run.roots if r["root"] == "run-1")["entries"]
    # The content's bytes, and the manifest's contract audit that reads them.
    assert {f["code"] for f in entry["faults"]} == {"corruption.digest"}
    assert CONTENT_ADDRESS in {f["details"]["address"] for f in entry["faults"]}
    junit = ET.fromstring(run.junit())
    failures = junit.findall(".//failure")
    assert {f.get("type") for f in failures} == {"corruption.digest"}
    assert {c.get("name") for c in junit.findall(".//failure/..")} == {m.digest.address}
    assert store.retention.audits(1)[0]["verdict"] == "fail"
    # Only run-2 asked for: it passes.
    assert store.retention.audit(["run-2"]).verdict == "pass"


def test_a_broken_binding_and_a_missing_closure_member_are_faults(retained):
    store, m, m2 = retained
    with store.db.engine.begin() as conn:
        conn.execute(
            sa.update(bindings).where(bindings.c.origin == m.digest.blake3).values(key="changed")
        )
    # Remove a closure member of run-2 behind the foreign keys' back (a damaged store).
    gone = evstore.digest_bytes(b"other content\n" * 20).blake3
    if store.db.backend == "postgresql":
        with store.db.engine.begin() as conn:
            conn.execute(sa.text("SET LOCAL session_replication_role = replica"))
            conn.execute(sa.delete(blobs).where(blobs.c.address == gone))
    else:
        with store.db.engine.connect() as conn:
            raw = conn.connection.dbapi_connection
            raw.execute("PRAGMA foreign_keys = OFF")
            raw.execute(f"DELETE FROM blobs WHERE address = '{gone}'")
            raw.commit()
            raw.execute("PRAGMA foreign_keys = ON")
    run = store.retention.audit()
    codes = {
        r["root"]: sorted({f["code"] for e in r["entries"] for f in e["faults"]}) for r in run.roots
    }
    # The closure walk, and the manifest's contract audit, both find the content gone.
    assert codes["run-2"] == ["audit.missing", "manifest.content-missing"]
    assert codes["run-1"] == ["audit.binding"]
    assert codes["default"] == []


def test_sample_is_seeded_and_since_skips_what_was_verified(store):
    for i in range(20):
        with store.retention.rooting(f"r{i % 2}"):
            store.put(f"object {i}".encode())
    a = store.retention.audit(sample=0.5, seed=7)
    b = store.retention.audit(sample=0.5, seed=7)
    c = store.retention.audit(sample=0.5, seed=8)
    picked = [[e["address"] for r in x.roots for e in r["entries"]] for x in (a, b, c)]
    assert picked[0] == picked[1] and picked[0] != picked[2]
    assert 0 < len(picked[0]) < 20
    full = store.retention.audit()
    assert full.objects == 20
    again = store.retention.audit(since="1h")
    assert again.objects == 0 and again.skipped == 20 and again.verdict == "pass"
    with pytest.raises(evstore.InputError):
        store.retention.audit(since="not a time")


def test_a_sample_audits_at_least_one_entry_of_every_root(store):
    """A fraction too small to draw anything still audits one entry per root (never a pass
    that checked nothing): the root's lowest draw, fixed by the seed."""
    for i in range(6):
        with store.retention.rooting(f"r{i % 3}"):
            store.put(f"object {i}".encode())
    store.put(b"in the default root")

    def picked(seed: int) -> dict[str, list[str]]:
        run = store.retention.audit(sample=1e-12, seed=seed)
        assert run.verdict == "pass" and run.objects == len(run.roots) == 4
        return {r["root"]: [e["address"] for e in r["entries"]] for r in run.roots}

    first = picked(3)
    assert first == picked(3)
    assert {root: len(entries) for root, entries in first.items()} == dict.fromkeys(
        ["default", "r0", "r1", "r2"], 1
    )
    # Which entry of a two-entry root is audited depends on the seed: over a dozen seeds
    # both are (the draw is per seed and address, not the first entry every time).
    assert len({picked(seed)["r0"][0] for seed in range(12)}) == 2
