"""Run bundles as run records, on both backends: layout, path safety, one transaction, lineage.

Bundles are built in tmp_path; every rejection asserts its code, its pointer (into index.json)
or path, and an unchanged store (rows and bytes).
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from evstore import Document
from evstore.contracts.contexts.rules import EVIDENCE_CONTEXT_DESCRIPTOR, SOURCE_DOCUMENT_DESCRIPTOR
from evstore.contracts.runs.rules import RUN_RECORD_FORMAT
from evstore.contracts.runs.rules_bundle import BUNDLE_KINDS, check_logical_name
from evstore.core.canonical import dumps
from evstore.core.errors import EvstoreError, InputError
from evstore.db.tables import blobs
from evstore.objects.kinds import get_handler

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "bundle"


def unit(uid: int, text: str, source: str = "session-alpha") -> dict[str, Any]:
    ref = {"source_id": source, "start_unit_id": uid, "end_unit_id": uid}
    return {"id": uid, "kind": "transcript_segment", "text": text, "ref": ref}


SOURCE = [unit(3, "one"), unit(1, "two"), unit(2, "three"), unit(9, "four")]
EXCERPT = [SOURCE[1], SOURCE[2]]
NOTES = "run notes: café ☕\n".encode()


def blob_descriptor(logical: str) -> dict[str, str]:
    return {
        "artifact_kind": "run/log",
        "media_type": "text/plain; charset=utf-8",
        "schema_id": "",
        "schema_name": "",
        "schema_version": "",
        "logical_file": logical,
    }


def base_bundle() -> tuple[dict[str, Any], dict[str, bytes]]:
    index = {
        "evidence_context": dict(EVIDENCE_CONTEXT_DESCRIPTOR),
        "source_document": dict(SOURCE_DOCUMENT_DESCRIPTOR, logical_file="sources/alpha.json"),
        "notes": blob_descriptor("notes.txt"),
    }
    files = {
        "evidence-context.json": json.dumps(EXCERPT, indent=2).encode(),
        "sources/alpha.json": json.dumps(SOURCE).encode(),
        "notes.txt": NOTES,
    }
    return index, files


def write_bundle(root: Path, index: Any, files: dict[str, bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (root / "index.json").write_text(json.dumps(index))
    return root


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return write_bundle(tmp_path / "bundle", *base_bundle())


# --------------------------------------------------------------------------- happy paths


def test_bundle_becomes_one_run_record(store: Any, bundle: Path, snapshot: Any) -> None:
    report = store.runs.ingest_bundle(bundle)
    tree = report.tree
    assert tree["record"] == RUN_RECORD_FORMAT
    assert set(tree["files"]) == {"evidence-context.json", "sources/alpha.json", "notes.txt"}
    ctx = tree["files"]["evidence-context.json"]
    assert ctx["kind"] == "evidence-context" and ctx["descriptor_name"] == "evidence_context"
    # Raw bytes (pretty-printed) and the canonical artifact are two addresses.
    assert store.get(ctx["raw"]) == (bundle / "evidence-context.json").read_bytes()
    assert store.get(ctx["artifact"]) == dumps(EXCERPT)
    notes = tree["files"]["notes.txt"]
    assert "kind" not in notes and notes["size"] == len(NOTES)
    assert notes["descriptor"] == blob_descriptor("notes.txt")
    src = tree["files"]["sources/alpha.json"]["artifact"]
    assert tree["evidence_context"] == {
        "logical_file": "evidence-context.json",
        "source_check": "checked",
        "source_document": src,
    }
    assert store.get(report.record.digest.address) == dumps(tree)

    # Content only: the same bundle again, even copied elsewhere, is the same record.
    before = snapshot(store)
    other = write_bundle(bundle.parent / "copy", *base_bundle())
    again = store.runs.ingest_bundle(other)
    assert again.record.digest == report.record.digest and again.record.new is False
    assert snapshot(store) == before
    assert list(store.check()) == []


def test_publication_disabled_is_not_an_error(store: Any, tmp_path: Path) -> None:
    index, files = base_bundle()
    del index["evidence_context"]
    del files["evidence-context.json"]
    report = store.runs.ingest_bundle(write_bundle(tmp_path / "b", index, files))
    assert "evidence_context" not in report.tree
    assert [r["evidence_context"] for r in store.runs.runs()] == ["disabled"]


def test_excerpt_without_its_source_is_unchecked(store: Any, tmp_path: Path) -> None:
    index, files = base_bundle()
    del index["source_document"]
    report = store.runs.ingest_bundle(write_bundle(tmp_path / "b", index, files))
    assert report.tree["evidence_context"]["source_check"] == "unchecked"
    # A source document of another source is not the excerpt's: still unchecked.
    index, files = base_bundle()
    files["sources/alpha.json"] = json.dumps([unit(1, "x", "session-beta")]).encode()
    report = store.runs.ingest_bundle(write_bundle(tmp_path / "c", index, files))
    assert report.tree["evidence_context"]["source_check"] == "unchecked"


def test_source_document_option_overrides_the_bundle(store: Any, tmp_path: Path) -> None:
    stored = store.ingest([Document(json.dumps(SOURCE[:3]).encode(), "s", "source-document")])
    ref = stored.results[0].digest.address
    index, files = base_bundle()
    del index["source_document"]
    report = store.runs.ingest_bundle(
        write_bundle(tmp_path / "b", index, files), source_document=ref
    )
    assert report.tree["evidence_context"]["source_document"] == ref


def test_symlink_inside_the_bundle_is_followed(store: Any, bundle: Path) -> None:
    os.symlink("notes.txt", bundle / "alias.txt")
    index = json.loads((bundle / "index.json").read_text())
    index["alias"] = blob_descriptor("alias.txt")
    (bundle / "index.json").write_text(json.dumps(index))
    report = store.runs.ingest_bundle(bundle)
    assert report.tree["files"]["alias.txt"]["raw"] == report.tree["files"]["notes.txt"]["raw"]


# --------------------------------------------------------------------------- rejections

Mutation = Callable[[dict[str, Any], dict[str, bytes]], None]


def _desc(name: str, key: str, value: Any) -> Mutation:
    return lambda index, files: index[name].__setitem__(key, value)


def _add(name: str, desc: Any) -> Mutation:
    return lambda index, files: index.__setitem__(name, desc)


def _file(name: str, data: bytes | None) -> Mutation:
    def mutate(index: dict[str, Any], files: dict[str, bytes]) -> None:
        if data is None:
            del files[name]
        else:
            files[name] = data

    return mutate


def _payload(mutate: Callable[[list[Any]], None]) -> Mutation:
    def outer(index: dict[str, Any], files: dict[str, bytes]) -> None:
        payload = copy.deepcopy(EXCERPT)
        mutate(payload)
        files["evidence-context.json"] = json.dumps(payload).encode()

    return outer


EC = "/evidence_context"
REJECTIONS: list[tuple[str, Mutation, str, str]] = [
    # The evidence-context descriptor: each of the six values, and the file.
    ("kind", _desc("evidence_context", "artifact_kind", "source/context"),
     "context.descriptor-kind", EC + "/artifact_kind"),
    ("media-type", _desc("evidence_context", "media_type", "text/json"),
     "context.descriptor-media-type", EC + "/media_type"),
    ("schema-id", _desc("evidence_context", "schema_id", "notarius.source.context"),
     "context.descriptor-schema-id", EC + "/schema_id"),
    ("schema-name", _desc("evidence_context", "schema_name", "notarius_source_context_v1"),
     "context.descriptor-schema-name", EC + "/schema_name"),
    ("version", _desc("evidence_context", "schema_version", "v2"),
     "context.unsupported-version", EC + "/schema_version"),
    ("logical-file", _desc("evidence_context", "logical_file", "context.json"),
     "context.descriptor-logical-file", EC + "/logical_file"),
    ("ec-file-missing", _file("evidence-context.json", None),
     "context.logical-file-missing", EC + "/logical_file"),
    ("ec-extra-member", _desc("evidence_context", "created_at", "2026-01-01"),
     "context.descriptor-shape", EC + "/created_at"),
    # Path safety.
    ("absolute", _desc("notes", "logical_file", "/etc/passwd"), "bundle.path-unsafe",
     "/notes/logical_file"),
    ("dotdot", _desc("notes", "logical_file", "../outside.txt"), "bundle.path-unsafe",
     "/notes/logical_file"),
    ("inner-dotdot", _desc("notes", "logical_file", "sources/../notes.txt"),
     "bundle.path-unsafe", "/notes/logical_file"),
    ("dot", _desc("notes", "logical_file", "./notes.txt"), "bundle.path-unsafe",
     "/notes/logical_file"),
    ("backslash", _desc("notes", "logical_file", "sources\\alpha.json"), "bundle.path-unsafe",
     "/notes/logical_file"),
    ("index-itself", _desc("notes", "logical_file", "index.json"), "bundle.path-unsafe",
     "/notes/logical_file"),
    # Layout.
    ("file-missing", _file("notes.txt", None), "bundle.file-missing", "/notes/logical_file"),
    ("duplicate", _add("again", blob_descriptor("notes.txt")), "bundle.file-duplicate",
     "/again/logical_file"),
    ("not-a-descriptor", _add("lanes", ["combat"]), "bundle.index-shape", "/lanes"),
    ("descriptor-number", _desc("notes", "schema_version", 1), "bundle.index-shape",
     "/notes/schema_version"),
    ("known-kind-typo", _desc("source_document", "schema_id", "evstore.source.doc"),
     "bundle.descriptor-mismatch", "/source_document/schema_id"),
    ("misplaced", _add("context_again", dict(EVIDENCE_CONTEXT_DESCRIPTOR,
                                             logical_file="notes.txt")),
     "bundle.descriptor-misplaced", "/context_again"),
]  # fmt: skip

FILE_REJECTIONS: list[tuple[str, Mutation, str, str, str]] = [
    # (id, mutation, code, pointer inside the file, path) -- one bad file writes nothing.
    ("json-form", _file("evidence-context.json", b'[{"id": 1, "id": 2}]'),
     "json.duplicate-key", "/0/id", "evidence-context.json"),
    ("payload-rule", _payload(lambda p: p[1]["ref"].update(end_unit_id=3)),
     "context.self-ref", "/1/ref/end_unit_id", "evidence-context.json"),
    ("source-mismatch", _payload(lambda p: p[0].update(text="TWO")),
     "context.source-mismatch", "/0/text", "evidence-context.json"),
    ("source-order", _payload(lambda p: p.reverse()),
     "context.source-order", "/1", "evidence-context.json"),
    ("source-document-rule", _file("sources/alpha.json", json.dumps(SOURCE + SOURCE).encode()),
     "context.unit-duplicate", "/4/id", "sources/alpha.json"),
    ("two-sources", _add("source_again", dict(SOURCE_DOCUMENT_DESCRIPTOR,
                                              logical_file="sources/beta.json")),
     "bundle.source-ambiguous", "", "evidence-context.json"),
]  # fmt: skip


def _rejected(store: Any, snapshot: Any, root: Path, mutate: Mutation) -> EvstoreError:
    index, files = base_bundle()
    files["sources/beta.json"] = json.dumps(SOURCE[::-1]).encode()  # used by two-sources
    mutate(index, files)
    write_bundle(root, index, files)
    before = snapshot(store)
    with pytest.raises(EvstoreError) as info:
        store.runs.ingest_bundle(root)
    assert snapshot(store) == before
    return info.value


@pytest.mark.parametrize(
    ("mutate", "code", "pointer"), [pytest.param(m, c, p, id=i) for i, m, c, p in REJECTIONS]
)
def test_bundle_rejected(
    store: Any, snapshot: Any, tmp_path: Path, mutate: Mutation, code: str, pointer: str
) -> None:
    err = _rejected(store, snapshot, tmp_path / "b", mutate)
    assert (err.code, err.pointer) == (code, pointer)
    assert err.path in ("index.json", None) or err.path == "notes.txt"


@pytest.mark.parametrize(
    ("mutate", "code", "pointer", "path"),
    [pytest.param(m, c, p, f, id=i) for i, m, c, p, f in FILE_REJECTIONS],
)
def test_one_bad_file_writes_nothing(
    store: Any,
    snapshot: Any,
    tmp_path: Path,
    mutate: Mutation,
    code: str,
    pointer: str,
    path: str,
) -> None:
    err = _rejected(store, snapshot, tmp_path / "b", mutate)
    assert (err.code, err.pointer, err.path) == (code, pointer, path)


def test_symlink_out_of_the_bundle_is_rejected(store: Any, snapshot: Any, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("outside")
    root = write_bundle(tmp_path / "b", *base_bundle())
    (root / "notes.txt").unlink()
    os.symlink(tmp_path / "secret.txt", root / "notes.txt")
    before = snapshot(store)
    with pytest.raises(EvstoreError) as info:
        store.runs.ingest_bundle(root)
    assert (info.value.code, info.value.pointer) == ("bundle.path-unsafe", "/notes/logical_file")
    # A symlinked directory that leaves the bundle is caught the same way.
    (root / "notes.txt").unlink()
    (root / "notes.txt").write_bytes(NOTES)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "alpha.json").write_text(json.dumps(SOURCE))
    (root / "sources" / "alpha.json").unlink()
    (root / "sources").rmdir()
    os.symlink(tmp_path / "elsewhere", root / "sources")
    with pytest.raises(EvstoreError) as info:
        store.runs.ingest_bundle(root)
    assert info.value.code == "bundle.path-unsafe"
    assert snapshot(store) == before


@pytest.mark.parametrize(
    ("setup", "code"),
    [
        pytest.param(lambda root: None, "bundle.index-missing", id="no-index"),
        pytest.param(
            lambda root: (root / "index.json").write_text("[]"),
            "bundle.index-shape",
            id="index-array",
        ),
        pytest.param(
            lambda root: (root / "index.json").write_bytes(b"{"), "json.syntax", id="index-json"
        ),
    ],
)
def test_bad_index(store: Any, tmp_path: Path, setup: Any, code: str) -> None:
    root = tmp_path / "b"
    root.mkdir()
    setup(root)
    with pytest.raises(EvstoreError) as info:
        store.runs.ingest_bundle(root)
    assert info.value.code == code


def test_not_a_directory(store: Any, tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        store.runs.ingest_bundle(tmp_path / "missing")
    assert info.value.code == "bundle.unreadable"


def test_logical_names() -> None:
    for ok in ("a.json", "dir/sub/file.txt", "évidence.json", "a..b"):
        assert check_logical_name(ok) is None, ok
    for bad in ("", "/a", "a//b", "a/", "./a", "a/..", "a\\b", "a\0b", "index.json", 3):
        assert check_logical_name(bad) is not None, bad


# --------------------------------------------------------------------------- the record kind


def test_record_ingested_directly_needs_what_it_names(store: Any, bundle: Path) -> None:
    tree = store.runs.ingest_bundle(bundle).tree
    # Detected by its marker; everything it names is stored: same artifact, not new.
    res = store.ingest([Document(json.dumps(tree).encode(), "record.json")]).results[0]
    assert (res.kind, res.new) == ("run", False)

    missing = copy.deepcopy(tree)
    missing["files"]["notes.txt"]["raw"] = "blake3:" + "0" * 64
    with pytest.raises(EvstoreError) as info:
        store.ingest([Document(json.dumps(missing).encode(), "record.json")])
    assert info.value.code == "run.missing-object"

    # The artifact named for the source document is stored, but only as a blob.
    wrong_kind = copy.deepcopy(tree)
    entry = wrong_kind["files"]["sources/alpha.json"]
    entry["artifact"] = entry["raw"]
    with pytest.raises(EvstoreError) as info:
        store.ingest([Document(json.dumps(wrong_kind).encode(), "record.json")])
    assert (info.value.code, info.value.pointer) == (
        "run.missing-object",
        "/files/sources~1alpha.json/artifact",
    )


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda t: t.update(extra=1), id="extra-member"),
        pytest.param(lambda t: t.update(index={"raw": "x"}), id="index"),
        pytest.param(lambda t: t["files"]["notes.txt"].pop("size"), id="entry"),
        pytest.param(lambda t: t["files"].update({"../x": t["files"]["notes.txt"]}), id="path"),
        pytest.param(
            lambda t: t["files"]["notes.txt"]["descriptor"].update(logical_file="n"),
            id="descriptor",
        ),
        pytest.param(lambda t: t["evidence_context"].update(source_check="maybe"), id="status"),
        pytest.param(
            lambda t: t["evidence_context"].update(logical_file="notes.txt"), id="status-file"
        ),
        pytest.param(lambda t: t["files"]["notes.txt"].update(size=True), id="size-bool"),
        pytest.param(
            lambda t: t["files"]["notes.txt"].update(descriptor_name="evidence_context"),
            id="descriptor-name-twice",
        ),
        pytest.param(
            lambda t: t["files"]["notes.txt"].update(kind="manifest", artifact="x"),
            id="kind-for-a-blob",
        ),
    ],
)
def test_record_shape(store: Any, bundle: Path, mutate: Any) -> None:
    tree = copy.deepcopy(store.runs.ingest_bundle(bundle).tree)
    mutate(tree)
    with store.reading() as txn:
        faults = get_handler("run").check(tree, txn).errors
    assert faults and faults[0].code == "run.record-shape"


def test_record_descriptors_follow_the_layout(store: Any, bundle: Path) -> None:
    tree = copy.deepcopy(store.runs.ingest_bundle(bundle).tree)
    tree["files"]["notes.txt"]["descriptor"]["artifact_kind"] = [1]
    with store.reading() as txn:
        faults = get_handler("run").check(tree, txn).errors
    assert [(f.code, f.pointer) for f in faults] == [("bundle.index-shape", "/notes/artifact_kind")]


# --------------------------------------------------------------------------- lineage


def test_refs_and_closure(store: Any, bundle: Path) -> None:
    report = store.runs.ingest_bundle(bundle)
    run = report.record.digest.address
    tree = report.tree
    notes = tree["files"]["notes.txt"]["raw"]
    rows = store.runs.refs("sha256:" + store.stat(notes)["sha256"].removeprefix("sha256:"))
    assert rows == [
        {"address": run, "kinds": ["run"], "role": "file", "refers_to": notes, "depth": 1}
    ]
    # Transitively: source document <- evidence context (checked) <- run.
    src = tree["files"]["sources/alpha.json"]["artifact"]
    rows = store.runs.refs(src, transitive=True)
    got = {(r["address"], r["role"], r["depth"]) for r in rows}
    ctx = tree["files"]["evidence-context.json"]["artifact"]
    assert (ctx, "source-document", 1) in got and (run, "artifact", 1) in got
    assert (run, "artifact", 2) in got  # the run also reaches it through the excerpt
    assert store.runs.refs(run) == []

    closure = store.runs.closure(run)
    assert closure.ok and closure.items[0]["address"] == run
    reached = {i["address"] for i in closure.items}
    expected = {e["raw"] for e in tree["files"].values()} | {tree["index"]["raw"]}
    expected |= {e["artifact"] for e in tree["files"].values() if "artifact" in e}
    assert reached == expected | {run}


def test_closure_reports_corruption_without_stopping(store: Any, bundle: Path) -> None:
    report = store.runs.ingest_bundle(bundle)
    notes = report.tree["files"]["notes.txt"]["raw"].removeprefix("blake3:")
    with store.db.engine.begin() as conn:
        conn.execute(sa.update(blobs).where(blobs.c.address == notes).values(data=b"tampered!!"))
    closure = store.runs.closure(report.record.digest.address)
    assert not closure.ok
    bad = [i for i in closure.items if not i["ok"]]
    assert [i["address"] for i in bad] == ["blake3:" + notes]
    assert bad[0]["error"]["code"].startswith("corruption.")
    assert len(closure.items) == 1 + len(report.tree["files"]) + 1 + 2  # + index + 2 artifacts


def test_runs_lists_records(store: Any, bundle: Path, tmp_path: Path) -> None:
    first = store.runs.ingest_bundle(bundle).record.digest.address
    index, files = base_bundle()
    files["notes.txt"] = b"another run"
    second = store.runs.ingest_bundle(write_bundle(tmp_path / "b2", index, files))
    listed = store.runs.runs()
    assert {r["address"] for r in listed} == {first, second.record.digest.address}
    assert all(r["files"] == 3 and r["artifacts"] == 2 for r in listed)


# --------------------------------------------------------------------------- the example


def _available(kinds: set[str]) -> bool:
    try:
        for k in kinds:
            get_handler(k)
    except InputError:
        return False
    return True


def test_example_bundle(store: Any) -> None:
    index = json.loads((EXAMPLE / "index.json").read_text())
    needed = {
        BUNDLE_KINDS[d["artifact_kind"]].kind
        for d in index.values()
        if d["artifact_kind"] in BUNDLE_KINDS
    }
    if not _available(needed):
        pytest.skip(f"a kind handler of {sorted(needed)} is not in this build yet")
    report = store.runs.ingest_bundle(EXAMPLE)
    kinds = {e.get("kind") for e in report.tree["files"].values()}
    assert {"evidence-context", "source-document", "fragment", "manifest"} <= kinds
    assert report.tree["evidence_context"]["source_check"] == "checked"
    assert list(store.check()) == []
    assert store.runs.ingest_bundle(EXAMPLE).record.new is False
