"""The namespaces of evstore.StoreProtocol (fragments, manifests, packages, contexts, runs,
retention): one specification, every store.

The module's store holds the example run bundle (examples/bundle: an evidence context, its
source document, a fragment with its source, a manifest with its content, a package), stored
through the protocol itself; each test then asks every implementation the same questions
and compares the answers with a local reference store holding the same bundle.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import evstore

MISSING = "blake3:" + "0" * 64
BUNDLE = Path(__file__).resolve().parents[2] / "examples" / "bundle"
FRAGMENT = json.loads((BUNDLE / "fragments" / "fragment-cure-wounds.json").read_bytes())
NOTES = (BUNDLE / "fragments" / "session-alpha-notes.txt").read_bytes()
MANIFEST = json.loads((BUNDLE / "manifests" / "manifest.json").read_bytes())
CONTENT = (BUNDLE / "manifests" / "rendered-evidence.md").read_bytes()
PACKAGE = json.loads((BUNDLE / "packages" / "answer-evidence.json").read_bytes())
SOURCE = json.loads((BUNDLE / "sources" / "session-alpha.json").read_bytes())


@pytest.fixture(scope="module")
def stored(any_store, reference) -> evstore.RunReport:
    """The example bundle, ingested into the store under test and into the reference."""
    reference.runs.ingest_bundle(BUNDLE)
    report = any_store.runs.ingest_bundle(str(BUNDLE))
    assert report.record.new is True
    return report


def address_of(value) -> str:
    return evstore.digest_bytes(evstore.dumps(value)).address


def same_error(store, reference, call, *, keys: tuple[str, ...] = ()) -> dict:
    """``call(store)`` fails as ``call(reference)`` does: the whole error, message included
    (only ``keys`` of its dict when given)."""
    with pytest.raises(evstore.EvstoreError) as want:
        call(reference)
    with pytest.raises(evstore.EvstoreError) as got:
        call(store)
    assert type(got.value) is type(want.value)
    got_d, want_d = got.value.to_dict(), want.value.to_dict()
    if keys:
        got_d, want_d = ({k: d.get(k) for k in keys} for d in (got_d, want_d))
    assert got_d == want_d
    return got_d


def without(rows: list[dict], *names: str) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in names} for r in rows]


# -- runs ---------------------------------------------------------------------------------------


def test_a_bundle_is_one_run_record_and_again_is_not_new(any_store, reference, stored):
    again = any_store.runs.ingest_bundle(BUNDLE)
    assert isinstance(again, evstore.RunReport) and again.record.new is False
    assert again.to_dict() == reference.runs.ingest_bundle(BUNDLE).to_dict()
    assert again.record.digest == stored.record.digest
    assert stored.record.digest.sha256 == hashlib.sha256(evstore.dumps(stored.tree)).hexdigest()
    assert any_store.load(stored.record.digest.address) == stored.tree


def test_runs_refs_and_closure_answer_as_the_reference(any_store, reference, stored):
    run = stored.record.digest.address
    runs = [r for r in any_store.runs.runs() if r["address"] == run]
    assert without(runs, "accepted_at") == without(reference.runs.runs(), "accepted_at")
    source = address_of(SOURCE)
    for transitive in (False, True):
        got = any_store.runs.refs(source, transitive=transitive)
        assert got == reference.runs.refs(source, transitive=transitive)
        assert run in {r["address"] for r in got} or not transitive
    closure = any_store.runs.closure(run)
    assert isinstance(closure, evstore.Closure) and closure.ok and closure.root == run
    assert closure.to_dict() == reference.runs.closure(run).to_dict()
    for call in (lambda s: s.runs.closure(MISSING), lambda s: s.runs.refs("nope")):
        same_error(any_store, reference, call)


def test_a_bundle_that_is_not_one_is_refused_as_locally(any_store, reference, tmp_path):
    # Over HTTP a bundle's errors name the server's copy of the directory (docs/http.md,
    # "Differences"): the family, code, rule and pointer are the same.
    keys = ("family", "code", "rule", "pointer")
    (tmp_path / "index.json").write_text('{"a": {"artifact_kind": "x"}}')
    same_error(any_store, reference, lambda s: s.runs.ingest_bundle(tmp_path), keys=keys)
    absent = tmp_path / "absent"
    same_error(any_store, reference, lambda s: s.runs.ingest_bundle(absent), keys=keys)
    # a directory without index.json: bundle.index-missing (was bundle.archive-malformed over
    # HTTP), and both refusals word for word, as the client finds them before it sends
    empty = tmp_path / "empty"
    empty.mkdir()
    same_error(any_store, reference, lambda s: s.runs.ingest_bundle(empty))
    same_error(any_store, reference, lambda s: s.runs.ingest_bundle(absent))


# -- fragments ----------------------------------------------------------------------------------


def test_fragment_reads_answer_the_quote_and_the_lists(any_store, reference, stored):
    fragment = address_of(FRAGMENT)
    start, end = FRAGMENT["start_offset"], FRAGMENT["end_offset"]
    for ref in (fragment, "sha256:" + hashlib.sha256(evstore.dumps(FRAGMENT)).hexdigest()):
        assert any_store.fragments.quote(ref) == NOTES[start:end]
    listed = any_store.fragments.by_document(FRAGMENT["document_id"])
    assert [(a.address, a.kind) for a in listed] == [(fragment, "fragment")]
    assert all(isinstance(a, evstore.ArtifactInfo) for a in listed)
    assert any_store.fragments.find(FRAGMENT["quote_sha256"]) == listed
    sources = any_store.fragments.sources(FRAGMENT["document_id"], FRAGMENT["fragment_id"])
    want = reference.fragments.sources(FRAGMENT["document_id"], FRAGMENT["fragment_id"])
    assert without([a.to_dict() for a in sources], "accepted_at") == without(
        [a.to_dict() for a in want], "accepted_at"
    )
    for call in (
        lambda s: s.fragments.quote(MISSING),
        lambda s: s.fragments.quote(address_of(MANIFEST)),  # stored, not a fragment
        lambda s: s.fragments.quote("nope"),
    ):
        same_error(any_store, reference, call)


def test_ingest_source_stores_the_library_s_record(any_store, reference, unique):
    data = f"content {unique}\n".encode()
    revision = hashlib.sha256(f"revision {unique}".encode()).hexdigest()
    result = any_store.fragments.ingest_source(
        data, f"doc-{unique}", "part-1", revision, name="content.txt"
    )
    record = {
        "document_id": f"doc-{unique}",
        "fragment_id": "part-1",
        "content_sha256": hashlib.sha256(data).hexdigest(),
        "revision_checksum": revision,
    }
    assert isinstance(result, evstore.ArtifactResult)
    assert (result.digest.address, result.kind, result.new) == (
        address_of(record),
        "fragment-source",
        True,
    )
    assert (
        result.to_dict()
        == reference.fragments.ingest_source(
            data, f"doc-{unique}", "part-1", revision, name="content.txt"
        ).to_dict()
    )
    assert any_store.get("sha256:" + record["content_sha256"]) == data
    assert any_store.fragments.ingest_source(data, f"doc-{unique}", "part-1", revision).new is False
    for call in (
        lambda s: s.fragments.ingest_source(data, 1, "f"),
        lambda s: s.fragments.ingest_source(data, "d", "f", "not-hex"),
        lambda s: s.fragments.ingest_source(data, "d\ud800", "f"),
        lambda s: s.fragments.ingest_source(b"\xff\xfe", f"bad-{unique}", "f", name="bad.bin"),
        # the same revision of the document now says other bytes for the same fragment
        lambda s: s.fragments.ingest_source(b"other\n", f"doc-{unique}", "part-1", revision),
    ):
        same_error(any_store, reference, call)


# -- manifests, packages, contexts --------------------------------------------------------------


def test_manifest_reads_answer_the_manifest_and_its_content(any_store, reference, stored):
    ref = MANIFEST["manifest/ref"]
    found = any_store.manifests.find(ref)
    assert [(a.address, a.kind) for a in found] == [(address_of(MANIFEST), "manifest")]
    assert any_store.manifests.load(ref) == MANIFEST
    assert any_store.manifests.content(ref) == CONTENT
    assert any_store.manifests.find(ref + "x") == []
    same_error(any_store, reference, lambda s: s.manifests.load(ref + "x"))
    same_error(any_store, reference, lambda s: s.manifests.content(ref + "x"))


def test_package_export_wraps_the_stored_package(any_store, reference, stored):
    address = address_of(PACKAGE)
    for ref in (PACKAGE["id"], PACKAGE["id"].upper(), address):
        wrapper = evstore.loads(any_store.packages.export(ref))
        want = evstore.loads(reference.packages.export(ref))
        assert wrapper["package"] == PACKAGE and wrapper["address"] == address
        assert set(wrapper) == set(want) and wrapper["format"] == want["format"]
    for call in (
        lambda s: s.packages.export("00000000-0000-4000-8000-000000000000"),
        lambda s: s.packages.export(MISSING),
        lambda s: s.packages.export("nope"),
    ):
        same_error(any_store, reference, call)


def test_an_excerpt_is_the_selection_and_its_canonical_bytes(any_store, reference, stored):
    source = address_of(SOURCE)
    got = any_store.contexts.excerpt_bytes(source, [(31, 31), (33, 33)], 1)
    want = reference.contexts.excerpt_bytes(source, [(31, 31), (33, 33)], 1)
    assert isinstance(got, evstore.Excerpt) and got == want
    assert got.data == evstore.dumps(got.units) and got.digest == evstore.digest_bytes(got.data)
    assert [u["id"] for u in got.units] == [12, 31, 32, 7, 33, 50]  # by position, window 1
    assert any_store.contexts.excerpt(source, [(12, 12)], 0) == [SOURCE[1]]
    for call in (
        lambda s: s.contexts.excerpt(source, [(999, 999)], 0),
        lambda s: s.contexts.excerpt(source, [(33, 31)], 0),
        lambda s: s.contexts.excerpt(address_of(MANIFEST), [(1, 1)], 0),
        lambda s: s.contexts.excerpt_bytes("nope", [(1, 1)], 0),
    ):
        same_error(any_store, reference, call)


# -- retention ----------------------------------------------------------------------------------


def test_writes_inside_rooting_are_held_by_that_root(any_store, unique):
    root = f"run-{unique}"
    with any_store.retention.rooting(root):
        put = any_store.put(f"rooted {unique}".encode())
        (artifact,) = any_store.ingest({"rooted": unique}).results
    mine = [r for r in any_store.retention.roots() if r["root"] == root]
    assert mine == [{"root": root, "entries": 2, "held": 2, "until": None}]
    released = any_store.retention.release(root)
    assert released == {
        "root": root,
        "released": sorted([put.digest.address, artifact.digest.address]),
    }


def test_retain_release_and_missing_answer_alike(any_store, reference, unique):
    data = f"retained {unique}".encode()
    address = any_store.put(data).digest.address
    root = f"keep-{unique}"
    held = any_store.retention.retain(["sha256:" + hashlib.sha256(data).hexdigest()], root)
    assert held == {"root": root, "until": None, "retained": [address]}
    later = any_store.retention.retain([address], root, until="2999-01-01T00:00:00Z")
    assert later["retained"] == [address] and later["until"].startswith("2999-01-01T00:00:00")
    (row,) = [r for r in any_store.retention.roots() if r["root"] == root]
    assert (row["entries"], row["held"]) == (1, 1)
    assert any_store.retention.missing([address, MISSING]) == [MISSING]
    assert any_store.retention.release(root, [address]) == {"root": root, "released": [address]}
    last = [e for e in any_store.retention.history(limit=50) if e["root"] == root]
    assert [e["action"] for e in last][:3] == ["release", "retain", "retain"]
    for call in (
        lambda s: s.retention.release(root),
        lambda s: s.retention.retain([], root),
        lambda s: s.retention.retain([MISSING], root),
        lambda s: s.retention.retain([address], "Bad Name!"),
        lambda s: s.retention.retain([address], root, until="soon"),
        lambda s: s.retention.missing(["nope"]),
    ):
        same_error(any_store, reference, call)


def test_gc_reports_what_it_would_collect_and_keeps_what_is_leased(any_store, unique):
    data = f"released {unique}".encode()
    address = any_store.put(data).digest.address
    any_store.retention.retain([address], f"gc-{unique}")
    any_store.retention.release(f"gc-{unique}")
    for dry_run in (True, False):
        report = any_store.retention.gc(dry_run=dry_run, batch=50)
        assert isinstance(report, evstore.GcReport) and report.dry_run is dry_run
        assert report.count == len(report.objects)
        assert report.bytes == sum(o["size"] for o in report.objects)
        assert address not in {o["address"] for o in report.objects}  # its lease holds
        assert set(report.to_dict()) == set(evstore.GcReport(dry_run).to_dict())
        assert evstore.GcReport.from_dict(report.to_dict()).to_dict() == report.to_dict()
    assert any_store.get(address) == data
