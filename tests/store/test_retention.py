"""Retention roots, leases and the collector (issue 12), on both backends."""

from __future__ import annotations

import datetime as dt
import json

import pytest
import sqlalchemy as sa
from retention_helpers import (
    CONTENT,
    CONTENT_ADDRESS,
    advance,
    dangling_edges,
    manifest_doc,
    reset_clock,
    stored,
)

import evstore
from evstore.core.digests import sha256_b64u
from evstore.db.tables import attrs, bindings, edges, leases, roots, warnings


@pytest.fixture(autouse=True)
def _clock():
    reset_clock()
    yield
    reset_clock()


@pytest.fixture
def s(store):
    store.set_config("gc.lease-seconds", 0)
    return store


def _roots(store):
    return {r["root"]: r for r in store.retention.roots()}


def test_every_write_roots_what_it_wrote_under_default_and_gc_keeps_it(s):
    put = s.put(b"kept bytes")
    many = s.put_many([b"one", b"two"])
    report = s.ingest([manifest_doc()], supplied=[CONTENT])
    (manifest,) = report.results
    entries = {e["address"] for e in s.retention.entries("default")}
    # put roots its blobs; ingest roots the artifact (its content is kept through the edge)
    assert entries == {
        put.digest.address,
        *(m.digest.address for m in many),
        manifest.digest.address,
    }
    assert CONTENT_ADDRESS not in entries
    before = stored(s)
    assert s.retention.gc(dry_run=True).count == 0
    assert s.retention.gc().count == 0
    assert stored(s) == before
    assert list(s.check()) == []


def test_a_named_root_and_release_make_objects_collectable(s):
    with s.retention.rooting("run-1"):
        a = s.put(b"run-1 output")
        (m,) = s.ingest([manifest_doc()], supplied=[CONTENT]).results
    keep = s.put(b"default bytes")
    assert _roots(s)["run-1"]["entries"] == 2
    dry = s.retention.gc(dry_run=True)
    assert dry.count == 0
    s.retention.release("run-1")
    dry = s.retention.gc(dry_run=True)
    gone = {a.digest.address, m.digest.address, CONTENT_ADDRESS}
    assert {o["address"] for o in dry.objects} == gone
    assert dry.bytes == len(b"run-1 output") + m.digest.size + len(CONTENT)
    assert stored(s) >= gone  # a dry run deletes nothing
    done = s.retention.gc()
    assert {o["address"] for o in done.objects} == gone
    assert done.bytes == dry.bytes
    assert stored(s) == {keep.digest.address}
    assert dangling_edges(s) == 0
    assert list(s.check()) == []
    events = s.retention.history()
    collected = {e["address"] for e in events if e["action"] == "collect"}
    assert collected == gone
    assert {e["actor"] for e in events} == {"local"}
    released = [e for e in events if e["action"] == "release"]
    assert {e["address"] for e in released} == {a.digest.address, m.digest.address}


def test_gc_deletes_the_artifact_rows_but_never_a_binding(s):
    with s.retention.rooting("tmp"):
        (m,) = s.ingest([manifest_doc()], supplied=[CONTENT]).results
    address = m.digest.blake3
    with s.db.engine.connect() as conn:
        before = conn.execute(sa.select(bindings)).all()
        assert conn.execute(sa.select(attrs).where(attrs.c.address == address)).all()
    assert before
    s.retention.release("tmp")
    s.retention.gc()
    with s.db.engine.connect() as conn:
        assert conn.execute(sa.select(bindings)).all() == before  # facts stay for ever
        for table in (attrs, warnings):
            assert not conn.execute(sa.select(table).where(table.c.address == address)).all()
        assert not conn.execute(sa.select(edges).where(edges.c.src == address)).all()
    assert s.ls() == []


def test_a_lease_protects_until_it_expires(store):
    store.set_config("gc.lease-seconds", 100)
    with store.retention.rooting("tmp"):
        blob = store.put(b"leased")
    store.retention.release("tmp")
    assert store.retention.gc().count == 0  # the write's lease holds it
    advance(60)
    assert store.retention.gc().count == 0
    advance(60)
    assert [o["address"] for o in store.retention.gc().objects] == [blob.digest.address]


def test_lease_seconds_0_collects_released_objects_at_once(store):
    """README: `config gc.lease-seconds 0` collects released objects at once (issue 23)."""
    with store.retention.rooting("tmp"):  # the default lease: an hour
        blob = store.put(b"released, then the lease set to 0")
    store.retention.release("tmp")
    assert store.retention.gc().count == 0
    store.set_config("gc.lease-seconds", 0)
    assert [o["address"] for o in store.retention.gc().objects] == [blob.digest.address]


def test_setting_the_lease_shortens_leases_taken_before(store):
    """README: `config gc.lease-seconds 0` collects released objects at once (issue 23)."""
    store.set_config("gc.lease-seconds", 3600)
    with store.retention.rooting("tmp"):
        manifest = store.ingest(manifest_doc(), supplied=[CONTENT]).results[0].digest.address
    store.retention.release("tmp")
    dry = store.retention.gc(dry_run=True)
    assert dry.count == 0  # the leases hold the manifest and, through its edge, its content
    assert [o["address"] for o in dry.leased] == sorted([manifest, CONTENT_ADDRESS])
    ends = {o["until"] for o in dry.leased}
    assert len(ends) == 1
    until = dt.datetime.fromisoformat(ends.pop())
    now = dt.datetime.now(dt.UTC)
    assert now + dt.timedelta(seconds=3500) < until < now + dt.timedelta(seconds=3700)
    assert dry.to_dict()["leased"] == dry.leased
    store.set_config("gc.lease-seconds", 600)  # shorter: every lease ends within 600 s
    (held,) = {o["until"] for o in store.retention.gc(dry_run=True).leased}
    assert dt.datetime.fromisoformat(held) < now + dt.timedelta(seconds=700)
    store.set_config("gc.lease-seconds", 1200)  # longer: a lease taken before is not lengthened
    assert {o["until"] for o in store.retention.gc(dry_run=True).leased} == {held}
    store.set_config("gc.lease-seconds", 0)
    dry = store.retention.gc(dry_run=True)
    assert (sorted(o["address"] for o in dry.objects), dry.leased) == (
        sorted([manifest, CONTENT_ADDRESS]),
        [],
    )
    assert store.retention.gc().count == 2
    assert store.ls() == []


def test_missing_extends_leases_and_has_never_writes(store, snapshot):
    store.set_config("gc.lease-seconds", 100)
    with store.retention.rooting("tmp"):
        blob = store.put(b"checked before an upload")
    store.retention.release("tmp")
    advance(150)  # the write's lease has expired
    before = snapshot(store)
    assert store.has([blob.digest.address]) == []
    assert snapshot(store) == before  # plain reads never write
    absent = "blake3:" + "0" * 64
    sha = "sha256:" + blob.digest.sha256
    assert store.retention.missing([blob.digest.address, absent, sha]) == [absent]
    assert store.retention.gc().count == 0  # the upload check's lease holds it
    advance(150)
    assert store.retention.gc().count == 1
    assert store.retention.missing([blob.digest.address]) == [blob.digest.address]


def test_retain_until_holds_on_the_database_clock(s):
    with s.retention.rooting("tmp"):
        a = s.put(b"kept for a while")
    r = s.retention.retain([a.digest.address], "legal-hold", until="100s")
    assert r["retained"] == [a.digest.address]
    s.retention.release("tmp")
    assert s.retention.gc().count == 0
    assert _roots(s)["legal-hold"]["held"] == 1
    advance(200)
    assert _roots(s)["legal-hold"]["held"] == 0
    assert s.retention.gc().count == 1
    assert "legal-hold" not in _roots(s)  # the expired entry went with the object


def test_retain_again_changes_until_and_explicit_time_is_accepted(s):
    a = s.put(b"x")
    later = dt.datetime(2999, 1, 1, tzinfo=dt.UTC)
    r = s.retention.retain([a.digest.address], "hold", until=later)
    assert r["until"].startswith("2999-01-01T00:00:00")
    r = s.retention.retain(["sha256:" + a.digest.sha256], "hold")
    assert r["until"] is None
    assert s.retention.entries("hold") == [{"address": a.digest.address, "until": None}]
    assert _roots(s)["hold"]["until"] is None
    history = [e for e in s.retention.history() if e["action"] == "retain"]
    assert [e["detail"]["until"] for e in history][::-1][0].startswith("2999")


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda st, a: st.retention.retain([a], "bad name"), "root.name"),
        # "$" of the name's pattern matched before a final newline: "ok\n" was a root.
        (lambda st, a: st.retention.retain([a], "ok\n"), "root.name"),
        (lambda st, a: st.retention.release("ok\n"), "root.name"),
        (lambda st, a: st.retention.retain([a], "\udcff"), "root.name"),
        (lambda st, a: st.retention.retain([a], 7), "root.name"),  # type: ignore[arg-type]
        (lambda st, a: st.retention.retain([a], "r", until="soonish"), "input.invalid"),
        (lambda st, a: st.retention.retain([a], "r", until="\u0663d"), "input.invalid"),
        (lambda st, a: st.retention.retain([a], "r", until="\u0662027-01-01"), "input.invalid"),
        (
            lambda st, a: st.retention.retain([a], "r", until="2000-01-01T00:00:00Z"),
            "input.invalid",
        ),
        (lambda st, a: st.retention.retain([a], "r", until="0s"), "input.invalid"),
        (lambda st, a: st.retention.retain([a], "r", until="30\u00a0d"), "input.invalid"),
        (
            lambda st, a: st.retention.retain([a], "r", until="9999-12-31T23:59:59-01:00"),
            "input.invalid",
        ),
        (
            lambda st, a: st.retention.retain([a], "r", until="0001-01-01T00:00:00+01:00"),
            "input.invalid",
        ),
        (lambda st, a: st.retention.audit(sample="0.5"), "input.invalid"),  # type: ignore[arg-type]
        (lambda st, a: st.retention.audit(sample=True), "input.invalid"),  # type: ignore[arg-type]
        (lambda st, a: st.retention.audit("default"), "input.invalid"),  # type: ignore[arg-type]
        (
            lambda st, a: st.retention.retain(
                [a], "r", until=dt.datetime(2001, 1, 1, tzinfo=dt.UTC)
            ),
            "input.invalid",
        ),
        (lambda st, a: st.retention.retain([], "r"), "input.invalid"),
        (lambda st, a: st.retention.retain(["blake3:" + "1" * 64], "r"), "not-found.blob"),
        (lambda st, a: st.retention.retain(["nonsense"], "r"), "ref.syntax"),
        (lambda st, a: st.retention.release("nobody"), "not-found.root"),
        (lambda st, a: st.retention.release("default", ["blake3:" + "1" * 64]), "not-found.blob"),
        (lambda st, a: st.retention.audit(["nobody"]), "not-found.root"),
        (lambda st, a: st.retention.audit(sample=2.0), "input.invalid"),
        (lambda st, a: st.retention.gc(batch=0), "input.invalid"),
        (lambda st, a: st.retention.entries(""), "root.name"),
    ],
)
def test_bad_retention_input_is_typed_and_changes_nothing(s, snapshot, call, code):
    a = s.put(b"present").digest.address
    other = s.put(b"other")
    with s.retention.rooting("r2"):
        s.put(b"in r2")
    before = snapshot(s)
    with pytest.raises(evstore.EvstoreError) as exc:
        call(s, a)
    assert exc.value.code == code
    assert snapshot(s) == before
    assert other


def test_release_of_an_object_the_root_does_not_hold_releases_nothing(s, snapshot):
    a = s.put(b"a")
    with s.retention.rooting("r"):
        s.put(b"b")
    before = snapshot(s)
    with pytest.raises(evstore.NotFound) as exc:
        s.retention.release("r", [a.digest.address])
    assert exc.value.code == "not-found.root"
    assert snapshot(s) == before


def test_a_dangling_edge_or_an_artifact_without_blob_cannot_be_committed(s):
    (m,) = s.ingest([manifest_doc()], supplied=[CONTENT]).results
    ghost = "f" * 64
    for sql in (
        f"INSERT INTO edges (src, role, dst) VALUES ('{m.digest.blake3}', 'x', '{ghost}')",
        f"INSERT INTO artifacts (address, kind, contract_version) VALUES ('{ghost}', 'json', '1')",
        "INSERT INTO roots (name, blob) VALUES ('r', -1)",  # no blob has that id
        f"DELETE FROM blobs WHERE address = '{CONTENT_ADDRESS[7:]}'",  # an edge refers to it
    ):
        with pytest.raises(sa.exc.IntegrityError), s.db.engine.begin() as conn:
            conn.execute(sa.text(sql))
    assert dangling_edges(s) == 0


def test_an_ingest_referring_to_a_collected_object_fails_typed_and_writes_nothing(s, snapshot):
    """The content the manifest names was collected: the ingest names it, writes nothing."""
    with s.retention.rooting("tmp"):
        s.put(CONTENT)
    s.retention.release("tmp")
    assert s.retention.gc().count == 1
    before = snapshot(s)
    with pytest.raises(evstore.EvstoreError) as exc:
        s.ingest([manifest_doc()])
    # Collected before the ingest read it: the manifest's own rule names the content (the
    # interleaving tests cover a collection between that check and the write: not-found).
    assert exc.value.code == "manifest.content-missing" or exc.value.family == "not-found"
    assert sha256_b64u(CONTENT) in str(exc.value)
    assert snapshot(s) == before


def test_gc_report_json_and_vacuum(s):
    with s.retention.rooting("tmp"):
        s.put(b"v" * 5000)
    s.retention.release("tmp")
    report = s.retention.gc(vacuum_after=True)
    d = report.to_dict()
    assert d["count"] == 1 and d["bytes"] == 5000 and d["dry_run"] is False
    assert d["vacuumed"] is (s.db.backend == "sqlite")
    json.dumps(d)


def test_gc_collects_chains_and_chunked_blobs_in_rounds(s):
    big = bytes(range(256)) * 9000  # over INLINE_MAX: chunked
    with s.retention.rooting("tmp"):
        s.put(big)
        (m,) = s.ingest([manifest_doc()], supplied=[CONTENT]).results
    s.retention.release("tmp")
    report = s.retention.gc(batch=1)
    assert report.count == 3 and report.rounds >= 2  # the content goes after its manifest
    assert stored(s) == set()
    with s.db.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM blob_chunks")).scalar_one() == 0
        assert conn.execute(sa.select(leases)).all() == []
        assert conn.execute(sa.select(roots)).all() == []
