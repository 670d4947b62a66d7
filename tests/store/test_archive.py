"""Archives (issue 14): export a closure as an OCI Image Layout, verify offline, import.

Store A holds every kind (examples/ and the crm3 fixture of ../shared); it is filled once per
backend and only read. Each import goes into a fresh store of the same backend.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

import pytest
import sqlalchemy as sa
from archive_helpers import REVISION, Layout

import evstore
from evstore.core.canonical import dumps
from evstore.objects.kinds import known_kinds


def _export(url: str, refs, out: Path, **kw) -> evstore.ExportReport:  # type: ignore[name-defined]
    with evstore.open(url) as store:
        return evstore.export_archive(store, refs, out, **kw)


def _kinds(store: evstore.Store) -> set[tuple[str, str]]:
    return {(a.address, a.kind) for a in store.ls()}


def _codes(err: evstore.EvstoreError) -> list[str]:
    return [f["code"] for f in err.details["faults"]]


# --------------------------------------------------------------------------- round trips


def test_round_trip_of_everything_is_byte_identical(source, fresh, tmp_path, snapshot):
    _, url, roots = source
    with evstore.open(url) as a:
        assert {k for _, k in _kinds(a)} == set(known_kinds())  # every kind is exported
        want = _kinds(a)
    first = tmp_path / "a.tar"
    report = _export(url, roots, first)
    assert report.objects > len(roots) and len(report.roots) == len(roots)
    assert evstore.verify_archive(first).ok
    b = fresh()
    got = evstore.import_archive(b, first)
    assert (got.objects, got.new_artifacts) == (report.objects, len(want))
    assert _kinds(b) == want
    assert list(b.check()) == []
    again = tmp_path / "b.tar"
    evstore.export_archive(b, list(reversed(roots)) + roots[:1], again)
    assert again.read_bytes() == first.read_bytes()
    before = snapshot(b)
    twice = evstore.import_archive(b, first)
    assert (twice.new_blobs, twice.new_artifacts) == (0, 0)
    assert snapshot(b) == before


def test_each_root_alone_imports_into_an_empty_store(source, fresh, tmp_path):
    _, url, roots = source
    with evstore.open(url) as a:
        kinds = {}
        for info in a.ls():
            kinds.setdefault(info.kind, info.address)
    for kind, root in sorted(kinds.items()):
        out = tmp_path / kind
        _export(url, [root], out)
        layout = Layout(out)
        assert [e["annotations"]["dev.evstore.address"] for e in layout.index["manifests"]] == [
            root
        ]
        b = fresh()
        evstore.import_archive(b, out)
        assert kind in {i.kind for i in b.ls() if i.address == root}, kind
        again = tmp_path / f"{kind}-again"
        evstore.export_archive(b, [root], again)
        for path in sorted(out.rglob("*")):
            twin = again / path.relative_to(out)
            assert path.is_dir() or twin.read_bytes() == path.read_bytes(), (kind, path)
        b.close()


def test_directory_and_tar_hold_the_same_files(source, tmp_path):
    _, url, roots = source
    _export(url, roots[:3], tmp_path / "d")
    _export(url, roots[:3], tmp_path / "t.tar")
    with tarfile.open(tmp_path / "t.tar") as tf:
        members = tf.getmembers()
        files = {m.name: tf.extractfile(m).read() for m in members if m.isfile()}
        assert all(m.mtime == 0 and m.uid == 0 and m.uname == "" for m in members)
        assert [m.name for m in members][:2] == ["oci-layout", "index.json"]
    on_disk = {
        str(p.relative_to(tmp_path / "d")): p.read_bytes()
        for p in (tmp_path / "d").rglob("*")
        if p.is_file()
    }
    assert files == on_disk
    for name, data in files.items():  # every blob is named by its SHA-256
        if name.startswith("blobs/"):
            assert name == "blobs/sha256/" + hashlib.sha256(data).hexdigest()
    index = json.loads(files["index.json"])
    assert dumps(index) == files["index.json"]  # canonical JSON, no timestamp anywhere
    assert b"accepted_at" not in b"".join(v for k, v in files.items() if "index" in k)


def test_the_manifest_lists_the_closure_with_roles_and_addresses(source, tmp_path):
    _, url, _ = source
    with evstore.open(url) as a:
        (run,) = [i.address for i in a.ls("run")]
        closure = a.runs.closure(run)
    _export(url, [run], tmp_path / "d")
    layout = Layout(tmp_path / "d")
    (entry,) = layout.index["manifests"]
    assert entry["annotations"]["dev.evstore.kind"] == "run"
    layers = layout.manifest()["layers"]
    by_address = {layer["annotations"]["dev.evstore.address"]: layer for layer in layers}
    # Every object `evstore closure` lists is a member, with the role of the edge that reached it.
    for item in closure.items:
        layer = by_address[item["address"]]
        assert layer["size"] == item["size"]
        assert layer["annotations"]["dev.evstore.role"] == item.get("via", {}).get("role", "root")
        kinds = ",".join(item["kinds"]) or "blob"
        assert layer["annotations"]["dev.evstore.kind"] == kinds
    extra = set(by_address) - {i["address"] for i in closure.items}
    # ... plus the content-version records of its fragments (the bundle carries its own).
    assert all(by_address[a]["annotations"]["dev.evstore.role"] == "content-version" for a in extra)
    with evstore.open(url) as a:
        batch = next(i.address for i in a.ls("fragment-batch") if b"EX-DOC" in a.get(i.address))
    _export(url, [batch], tmp_path / "b")
    layers = Layout(tmp_path / "b").manifest()["layers"]
    records = [x for x in layers if x["annotations"]["dev.evstore.kind"] == "fragment-source"]
    assert [x["annotations"]["dev.evstore.role"] for x in records] == ["content-version"]


# --------------------------------------------------------------------------- refusals


def test_with_proofs_needs_a_signed_checkpoint(source, tmp_path):
    _, url, roots = source
    with pytest.raises(evstore.NotFound) as exc:
        _export(url, roots[:1], tmp_path / "p", with_proofs=True)
    assert exc.value.code == "log.no-checkpoint"
    assert not (tmp_path / "p").exists()


def test_export_refuses_unknown_refs_and_existing_outputs(source, tmp_path):
    _, url, roots = source
    with pytest.raises(evstore.NotFound) as exc:
        _export(url, ["blake3:" + "0" * 64], tmp_path / "x")
    assert exc.value.code == "not-found.blob"
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("x")
    with pytest.raises(evstore.InputError) as exc:
        _export(url, roots[:1], tmp_path / "full")
    assert exc.value.code == "output.unwritable"
    with pytest.raises(evstore.InputError) as exc:
        _export(url, [], tmp_path / "none")
    assert exc.value.code == "input.invalid"
    (tmp_path / "empty").mkdir()
    _export(url, roots[:1], tmp_path / "empty")  # an empty directory is filled
    assert (tmp_path / "empty" / "oci-layout").is_file()


def test_export_of_a_corrupt_object_leaves_nothing(store, tmp_path):
    put = store.put(b"bytes that will rot")
    with store.db.engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE blobs SET data = :d WHERE address = :a"),
            {"d": b"bytes that did rot!", "a": put.digest.blake3},
        )
    where = tmp_path / "out"
    where.mkdir()
    for out in (where / "d", where / "t.tar"):
        with pytest.raises(evstore.CorruptionError):
            evstore.export_archive(store, [put.digest.address], out)
        assert not out.exists()
    assert list(where.iterdir()) == []  # no temporary left behind


def test_a_binding_conflict_is_refused_with_the_binding_code(source, fresh, tmp_path, snapshot):
    _, url, _ = source
    with evstore.open(url) as a:
        batch = next(i.address for i in a.ls("fragment-batch") if b"EX-DOC" in a.get(i.address))
    _export(url, [batch], tmp_path / "d")
    b = fresh()
    # B already binds the same revision of the same fragment to other bytes.
    b.fragments.ingest_source(b"other bytes", "EX-DOC-0001", "clause-3", REVISION)
    before = snapshot(b)
    with pytest.raises(evstore.BindingConflict) as exc:
        evstore.import_archive(b, tmp_path / "d")
    assert exc.value.code == "fragment.revision-mismatch"
    assert snapshot(b) == before
    # The same verdict as ingest gives for the record itself.
    record = next(
        layer
        for layer in Layout(tmp_path / "d").manifest()["layers"]
        if layer["annotations"]["dev.evstore.kind"] == "fragment-source"
    )
    data = Layout(tmp_path / "d").blob(record["digest"][7:]).read_bytes()
    clause = (Path(__file__).parents[2] / "examples/fragments/clause-3.txt").read_bytes()
    with pytest.raises(evstore.BindingConflict) as direct:
        b.ingest(evstore.Document(data, kind="fragment-source"), supplied=[clause])
    assert direct.value.code == exc.value.code


def test_every_fault_is_reported(source, fresh, tmp_path, snapshot):
    _, url, roots = source
    out = tmp_path / "d"
    _export(url, roots, out)
    layout = Layout(out)
    blobs = sorted((out / "blobs" / "sha256").iterdir())
    blobs[0].write_bytes(blobs[0].read_bytes() + b"!")
    blobs[-1].write_bytes(blobs[-1].read_bytes() + b"?")
    (out / "stray.txt").write_text("x")
    checked = evstore.verify_archive(out)
    codes = sorted(f.code for f in checked.faults)
    assert codes.count("archive.digest-mismatch") == 2 and "archive.layout" in codes
    assert {f.path for f in checked.faults} >= {f"blobs/sha256/{blobs[0].name}", "stray.txt"}
    b = fresh()
    before = snapshot(b)
    with pytest.raises(evstore.InputError) as exc:
        evstore.import_archive(b, out)
    assert sorted(_codes(exc.value)) == codes
    assert exc.value.details["fault_count"] == len(codes)
    assert snapshot(b) == before
    assert layout.index  # the layout was read before the damage


# --------------------------------------------------------------------------- hostile archives


def _tar_with(path: Path, entries: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tf:
        for info, data in entries:
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _special(name: str, kind: bytes, link: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info, None


def _good_files(url: str, root: str, tmp_path: Path) -> list[tuple[tarfile.TarInfo, bytes]]:
    _export(url, [root], tmp_path / "good.tar")
    with tarfile.open(tmp_path / "good.tar") as tf:
        return [_file(m.name, tf.extractfile(m).read()) for m in tf.getmembers() if m.isfile()]


HOSTILE_TAR = {
    "dotdot": (lambda: [_file("blobs/../../evil", b"x")], "archive.unsafe-path"),
    "absolute": (lambda: [_file("/tmp/evil", b"x")], "archive.unsafe-path"),
    "symlink": (
        lambda: [_special("blobs/sha256/l", tarfile.SYMTYPE, "/etc/passwd")],
        "archive.link",
    ),
    "hardlink": (
        lambda: [_special("blobs/sha256/h", tarfile.LNKTYPE, "oci-layout")],
        "archive.link",
    ),
    "device": (lambda: [_special("blobs/sha256/dev", tarfile.CHRTYPE)], "archive.special-file"),
    "fifo": (lambda: [_special("blobs/sha256/fifo", tarfile.FIFOTYPE)], "archive.special-file"),
    "duplicate": (lambda: [_file("oci-layout", b"{}")], "archive.duplicate-entry"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_TAR))
def test_hostile_tar_entries_are_refused_before_any_write(case, source, fresh, tmp_path, snapshot):
    _, url, roots = source
    extra, code = HOSTILE_TAR[case]
    path = _tar_with(tmp_path / "h.tar", _good_files(url, roots[0], tmp_path) + extra())
    checked = evstore.verify_archive(path)
    assert code in [f.code for f in checked.faults]
    b = fresh()
    before = snapshot(b)
    with pytest.raises(evstore.InputError) as exc:
        evstore.import_archive(b, path)
    assert code in _codes(exc.value)
    assert snapshot(b) == before


def test_a_tar_bomb_is_refused_from_its_headers(source, fresh, tmp_path, snapshot):
    _, url, roots = source
    good = _good_files(url, roots[0], tmp_path)
    bomb = tarfile.TarInfo("blobs/sha256/" + "a" * 64)
    bomb.size = (64 << 30) + 1  # declared, never written: the header alone is refused
    path = tmp_path / "bomb.tar"
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tf:
        for info, data in good:
            tf.addfile(info, io.BytesIO(data))
        tf.fileobj.write(bomb.tobuf(tarfile.GNU_FORMAT))
    assert os.path.getsize(path) < 1 << 20
    b = fresh()
    before = snapshot(b)
    with pytest.raises(evstore.InputError) as exc:
        evstore.import_archive(b, path)
    assert "archive.too-large" in _codes(exc.value)
    assert snapshot(b) == before
    # A lower limit refuses a real archive too (the CLI's --max-bytes).
    small = evstore.ArchiveLimits(max_bytes=100)
    assert "archive.too-large" in [
        f.code for f in evstore.verify_archive(tmp_path / "good.tar", limits=small).faults
    ]
    # Declared data that runs past the end of the file is refused as truncated.
    cut = tmp_path / "cut.tar"
    with tarfile.open(tmp_path / "good.tar") as tf:
        last = tf.getmembers()[-1]
    cut.write_bytes((tmp_path / "good.tar").read_bytes()[: last.offset_data + last.size - 1])
    assert {"archive.truncated"} <= {f.code for f in evstore.verify_archive(cut).faults}


def _layout_case(case: str, layout: Layout) -> None:
    """Damage an exported layout as the case says, keeping every other digest right."""
    i = layout.find("run")
    doc = layout.manifest(i)
    layers = doc["layers"]
    if case == "stray-empty-dir":
        (layout.root / "blobs" / "sha512").mkdir()
        return
    if case == "dir-named-like-a-blob":
        layout.blob("a" * 64).mkdir()
        return
    if case == "manifest-listed-twice":
        layout.index["manifests"].append(layout.index["manifests"][i])
        (layout.root / "index.json").write_bytes(dumps(layout.index))
        return
    if case in ("root-in-a-nested-index-too", "root-under-two-manifests"):
        entry = layout.index["manifests"][i]
        if case == "root-in-a-nested-index-too":
            media = "application/vnd.oci.image.index.v1+json"
            nested = {"manifests": [entry], "mediaType": media, "schemaVersion": 2}
            hexpart, size = layout.put(dumps(nested))
            extra = {"digest": "sha256:" + hexpart, "mediaType": media, "size": size}
        else:  # the same root again, under a manifest that differs by one annotation
            doc["annotations"]["dev.evstore.note"] = "again"
            hexpart, size = layout.put(dumps(doc))
            extra = {**entry, "digest": "sha256:" + hexpart, "size": size}
        layout.index["manifests"].append(extra)
        (layout.root / "index.json").write_bytes(dumps(layout.index))
        return
    if case == "size-as-float":  # a manifest's size spelled 748.0: not the canonical form
        entry = layout.index["manifests"][i]
        text = dumps(doc).decode()
        size = layers[0]["size"]
        assert f'"size":{size}}}' in text
        text = text.replace(f'"size":{size}}}', f'"size":{size}.0}}', 1)
        layout.blob(entry["digest"][7:]).unlink()
        hexpart, length = layout.put(text.encode())
        entry["digest"], entry["size"] = "sha256:" + hexpart, length
        (layout.root / "index.json").write_bytes(dumps(layout.index))
        return
    if case == "missing-blob":
        layout.blob(layers[-1]["digest"][7:]).unlink()
        return
    if case == "size":
        layers[1]["size"] += 1
    elif case == "address":
        layers[1]["annotations"]["dev.evstore.address"] = "blake3:" + "0" * 64
    elif case == "closure":
        dropped = layers.pop()
        if not any(
            layer["digest"] == dropped["digest"]
            for m in range(len(layout.index["manifests"]))
            if m != i
            for layer in layout.manifest(m)["layers"]
        ):
            layout.blob(dropped["digest"][7:]).unlink()
    elif case == "cycle":
        root = layers[0]["annotations"]["dev.evstore.address"]
        child = next(
            layer
            for layer in layers
            if layer["annotations"]["dev.evstore.kind"] != "blob" and layer is not layers[0]
        )
        edges = json.loads(child["annotations"].get("dev.evstore.edges", "[]"))
        child["annotations"]["dev.evstore.edges"] = dumps(edges + [["back", root]]).decode()
    layout.save_manifest(doc, i)


HOSTILE_LAYOUT = {
    "stray-empty-dir": "archive.layout",
    "dir-named-like-a-blob": "archive.layout",
    "manifest-listed-twice": "archive.layout",
    "root-in-a-nested-index-too": "archive.layout",
    "root-under-two-manifests": "archive.layout",
    "size-as-float": "archive.not-canonical",
    "missing-blob": "archive.missing-blob",
    "size": "archive.size-mismatch",
    "address": "archive.address-mismatch",
    "closure": "archive.closure-incomplete",
    "cycle": "archive.cycle",
}


@pytest.mark.parametrize("case", sorted(HOSTILE_LAYOUT))
def test_hostile_layouts_are_refused_before_any_write(case, source, fresh, tmp_path, snapshot):
    _, url, roots = source
    with evstore.open(url) as a:
        (run,) = [i.address for i in a.ls("run")]
    out = tmp_path / "d"
    _export(url, [run], out)
    _layout_case(case, Layout(out))
    code = HOSTILE_LAYOUT[case]
    faults = evstore.verify_archive(out).faults
    assert code in [f.code for f in faults]
    assert all(f.path for f in faults)  # each fault names its file
    b = fresh()
    before = snapshot(b)
    with pytest.raises(evstore.InputError) as exc:
        evstore.import_archive(b, out)
    assert code in _codes(exc.value)
    assert snapshot(b) == before


def _as_others_write_it(out: Path, tar: Path | None = None) -> None:
    """Rewrite an exported layout as skopeo or oras do: index.json in their own spelling,
    unsorted, without evstore's annotations; oci-layout spaced; an empty work directory;
    a tar (when asked) with the blobs first and in reverse order.
    """
    index = json.loads((out / "index.json").read_bytes())
    entries = [
        {"mediaType": e["mediaType"], "digest": e["digest"], "size": e["size"]}
        for e in reversed(index["manifests"])
    ]
    text = json.dumps({"schemaVersion": 2, "manifests": entries}, indent=2)
    (out / "index.json").write_text(text)
    (out / "oci-layout").write_text('{ "imageLayoutVersion": "1.0.0" }\n')
    (out / "ingest").mkdir()
    if tar is not None:
        with tarfile.open(tar, "w", format=tarfile.PAX_FORMAT) as tf:
            for path in sorted((out / "blobs" / "sha256").iterdir(), reverse=True):
                tf.add(path, arcname=f"./blobs/sha256/{path.name}")
            for name in ("index.json", "oci-layout", "ingest"):
                tf.add(out / name, arcname=name)


def test_a_layout_written_by_other_oci_tools_verifies_and_imports(source, fresh, tmp_path):
    _, url, roots = source
    out = tmp_path / "d"
    report = _export(url, roots[:4], out)
    _as_others_write_it(out, tmp_path / "others.tar")
    for where in (out, tmp_path / "others.tar"):
        checked = evstore.verify_archive(where)
        assert checked.ok, [f.to_dict() for f in checked.faults]
        assert sorted(r.to_dict()["manifest"] for r in checked.roots) == sorted(
            r["manifest"] for r in report.roots
        )
        b = fresh()
        got = evstore.import_archive(b, where)
        assert got.objects == report.objects
        assert {i.address for i in b.ls()} >= set(roots[:4])
        assert list(b.check()) == []


def test_what_other_tools_cannot_carry_is_still_checked(source, tmp_path):
    """Without the index's annotations the manifest's root claim is checked against the
    bytes of its first member; a manifest still must be in its canonical form.
    """
    _, url, roots = source
    out = tmp_path / "d"
    _export(url, roots[:2], out)
    _as_others_write_it(out)
    layout = Layout(out)
    doc = layout.manifest(0)
    other = layout.manifest(1)["annotations"]["dev.evstore.root"]
    doc["annotations"]["dev.evstore.root"] = other  # claims another root
    entry = layout.index["manifests"][0]
    layout.blob(entry["digest"][7:]).unlink()
    hexpart, size = layout.put(dumps(doc))
    entry["digest"], entry["size"] = "sha256:" + hexpart, size
    (out / "index.json").write_text(json.dumps(layout.index))
    codes = [f.code for f in evstore.verify_archive(out).faults]
    assert "archive.layout" in codes
    (out / "ingest" / "part").write_bytes(b"x")  # a work directory holding a file: refused
    faults = evstore.verify_archive(out).faults
    assert any(f.path == "ingest/part" for f in faults)


def test_links_and_fifos_in_a_directory_are_refused(source, tmp_path):
    _, url, roots = source
    out = tmp_path / "d"
    _export(url, roots[:1], out)
    sha = out / "blobs" / "sha256"
    first = sorted(sha.iterdir())[0]
    os.symlink("/etc/hostname", sha / ("f" * 64))
    os.link(first, sha / ("e" * 64))
    os.mkfifo(sha / ("d" * 64))
    codes = [f.code for f in evstore.verify_archive(out).faults]
    assert codes.count("archive.link") == 3  # the symlink and both names of the hard link
    assert "archive.special-file" in codes


def test_contract_rules_run_offline_and_canonical_form_is_required(source, tmp_path):
    _, url, _ = source
    with evstore.open(url) as a:
        frag = next(i.address for i in a.ls("fragment"))
    out = tmp_path / "d"
    _export(url, [frag], out)
    layout = Layout(out)
    doc = layout.manifest()
    root = doc["layers"][0]
    value = json.loads(layout.blob(root["digest"][7:]).read_bytes())
    layout.blob(root["digest"][7:]).unlink()
    for bad, code in (
        (dumps({**value, "end_offset": value["start_offset"] - 1}), "fragment.range"),
        (json.dumps(value, indent=1).encode(), "archive.not-canonical"),
    ):
        hexpart, size = layout.put(bad)
        root.update(digest="sha256:" + hexpart, size=size)
        root["annotations"]["dev.evstore.address"] = evstore.digest_bytes(bad).address
        layout.index["manifests"][0]["annotations"]["dev.evstore.address"] = root["annotations"][
            "dev.evstore.address"
        ]
        doc["annotations"]["dev.evstore.root"] = root["annotations"]["dev.evstore.address"]
        layout.save_manifest(doc)
        faults = evstore.verify_archive(out).faults
        assert code in [f.code for f in faults], [f.code for f in faults]
        assert any(f.path == f"blobs/sha256/{hexpart}" for f in faults)
        layout.blob(hexpart).unlink()


def test_large_and_many_blobs_stream_through(store, empty_url, tmp_path, snapshot):
    big = bytes(range(256)) * (9 * 4096 + 3)  # 9 MiB and a bit: chunked, streamed both ways
    smalls = [f"blob {i}".encode() for i in range(520)]  # more than one insert batch
    puts = store.put_many([big, *smalls])
    doc = {"objects": [p.digest.address for p in puts]}
    (root,) = store.ingest(doc).results
    out = tmp_path / "big.tar"
    report = evstore.export_archive(store, [root.digest.address], out)
    assert (
        report.objects == 522
        and report.bytes == len(big) + sum(map(len, smalls)) + root.digest.size
    )
    with evstore.open(empty_url, create=True) as b:
        got = evstore.import_archive(b, out)
        assert (got.new_blobs, got.new_artifacts) == (521, 1)
        assert b.get(puts[0].digest.address) == big
        again = tmp_path / "again.tar"
        evstore.export_archive(b, [root.digest.address], again)
        assert again.read_bytes() == out.read_bytes()


def _signed_store(store: evstore.Store, tmp_path: Path) -> str:
    """Give ``store`` a log key and a checkpoint; returns its verifier key."""
    key = tmp_path / "log.key"
    store.log.init_key(key)
    store.log.checkpoint(key)
    return store.log.key()


def test_proofs_travel_with_the_archive_and_verify_offline(store, empty_url, tmp_path, snapshot):
    (ctx,) = store.ingest(Path(__file__).parents[2] / "examples/json/run-note.json").results
    plain = b"a plain blob the note does not name"
    blob = store.put(plain)
    vkey = _signed_store(store, tmp_path)
    out = tmp_path / "p"
    evstore.export_archive(store, [ctx.digest.address, blob.digest.address], out, with_proofs=True)
    checked = evstore.verify_archive(out, key=vkey)
    assert checked.ok and checked.proofs == "verified", [f.to_dict() for f in checked.faults]
    assert evstore.verify_archive(out).proofs == "self-consistent"
    layout = Layout(out)
    for i in range(len(layout.index["manifests"])):
        layers = layout.manifest(i)["layers"]
        roles = [x["annotations"]["dev.evstore.role"] for x in layers]
        members = [x for x in layers if x["annotations"]["dev.evstore.role"] not in
                   ("checkpoint", "verifier-key", "proof")]  # fmt: skip
        assert roles.count("checkpoint") == roles.count("verifier-key") == 1
        assert roles.count("proof") == len(members)
    # Another log's key does not verify the checkpoint.
    (tmp_path / "other").mkdir()
    with evstore.open(empty_url, create=True) as other:
        other_key = _signed_store(other, tmp_path / "other")
        wrong = evstore.verify_archive(out, key=other_key)
        faults = wrong.faults
        assert wrong.proofs == "failed"
        assert faults and {f.code.split(".")[0] for f in faults} == {"checkpoint"}
        # The proof layers are not imported; the members are.
        report = evstore.import_archive(other, out)
        assert report.new_artifacts == 1 and other.get(blob.digest.address) == plain
    # A proof of other bytes (another member's proof under this member's name) fails.
    doc = layout.manifest(0)
    proofs = [x for x in doc["layers"] if x["annotations"]["dev.evstore.role"] == "proof"]
    other_proof = next(
        x
        for i in range(1, len(layout.index["manifests"]))
        for x in layout.manifest(i)["layers"]
        if x["annotations"]["dev.evstore.role"] == "proof"
    )
    proofs[0].update(digest=other_proof["digest"], size=other_proof["size"])
    layout.save_manifest(doc, 0)
    codes = [f.code for f in evstore.verify_archive(out, key=vkey).faults]
    assert "log.content-mismatch" in codes


def test_with_proofs_refuses_objects_logged_after_the_checkpoint(store, tmp_path):
    _signed_store(store, tmp_path)
    late = store.put(b"stored after the checkpoint")
    with pytest.raises(evstore.NotFound) as exc:
        evstore.export_archive(store, [late.digest.address], tmp_path / "p", with_proofs=True)
    assert exc.value.code == "log.not-logged"
    assert not (tmp_path / "p").exists()
    evstore.export_archive(store, [late.digest.address], tmp_path / "plain")
    codes = [f.code for f in evstore.verify_archive(tmp_path / "plain", key="x+00000000+AA").faults]
    assert codes == ["archive.no-proofs"]


def test_a_closed_store_is_refused(store_url, tmp_path):
    s = evstore.open(store_url)
    s.close()
    with pytest.raises(RuntimeError):
        evstore.export_archive(s, ["blake3:" + "0" * 64], tmp_path / "x")
    with pytest.raises(RuntimeError):
        evstore.import_archive(s, tmp_path / "x")
