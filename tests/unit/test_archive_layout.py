"""The archive reader and the offline verifier on hand-damaged layouts (no store involved
in verifying: an export from a scratch SQLite store is the starting point)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

import evstore
from evstore.cli.main import cli
from evstore.core.canonical import dumps

NOTE = {"note": "a json document", "n": 1}


@pytest.fixture
def layout(tmp_path: Path):
    """``(store url, root address, layout dir)``: a json document and two blobs it names."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    with evstore.open(url, create=True) as store:
        a = store.put(b"first blob").digest.address
        b = store.put(b"second blob").digest.address
        (res,) = store.ingest({**NOTE, "refs": [a, b]}).results
        evstore.export_archive(store, [res.digest.address], tmp_path / "d")
    return url, res.digest.address, tmp_path / "d"


def _codes(path: Path, **kw) -> list[str]:
    return [f.code for f in evstore.verify_archive(path, **kw).faults]


def _index(d: Path) -> dict:
    return json.loads((d / "index.json").read_bytes())


def _write_index(d: Path, index: dict) -> None:
    (d / "index.json").write_bytes(dumps(index))


def _manifest(d: Path) -> tuple[dict, Path]:
    path = d / "blobs" / "sha256" / _index(d)["manifests"][0]["digest"][7:]
    return json.loads(path.read_bytes()), path


def _save(d: Path, doc: dict) -> None:
    """Replace the one manifest with ``doc`` (digest and index kept right)."""
    _, old = _manifest(d)
    old.unlink()
    data = dumps(doc)
    digest = evstore.digest_bytes(data)
    (d / "blobs" / "sha256" / digest.sha256).write_bytes(data)
    index = _index(d)
    index["manifests"][0].update(digest="sha256:" + digest.sha256, size=len(data))
    _write_index(d, index)


def test_a_clean_export_verifies(layout):
    _, root, d = layout
    checked = evstore.verify_archive(d)
    assert checked.ok and checked.to_dict()["objects"] == 3
    assert [r.address for r in checked.roots] == [root]


def test_layout_files(layout):
    _, _, d = layout
    (d / "oci-layout").write_bytes(b'{"imageLayoutVersion":"9.9.9"}')
    assert "archive.layout" in _codes(d)
    (d / "oci-layout").unlink()
    (d / "index.json").write_bytes(b"not json")
    codes = _codes(d)
    assert "json.syntax" in codes and "archive.layout" in codes
    _write_index(d, {"schemaVersion": 2, "manifests": "none"})
    assert "archive.layout" in _codes(d)
    (d / "index.json").unlink()
    assert "archive.layout" in _codes(d)


def test_descriptors_and_media_types(layout):
    _, _, d = layout
    index = _index(d)
    good = index["manifests"][0]
    for bad in ("x", {**good, "digest": "md5:00"}, {**good, "mediaType": "text/plain"}):
        _write_index(d, {**index, "manifests": [bad]})
        assert "archive.layout" in _codes(d), bad
    # A nested index naming the manifest is followed.
    nested = dumps({"schemaVersion": 2, "manifests": [good]})
    digest = evstore.digest_bytes(nested)
    (d / "blobs" / "sha256" / digest.sha256).write_bytes(nested)
    entry = {
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "digest": "sha256:" + digest.sha256,
        "size": len(nested),
    }
    _write_index(d, {**index, "manifests": [entry]})
    assert evstore.verify_archive(d).ok


def test_manifest_rules(layout):
    _, root, d = layout
    doc, _ = _manifest(d)
    for broken in (
        {**doc, "schemaVersion": 1},
        {**doc, "layers": []},
        {**doc, "layers": list(reversed(doc["layers"]))},
    ):
        _save(d, broken)
        assert "archive.layout" in _codes(d)
    bad_kind = json.loads(json.dumps(doc))
    bad_kind["layers"][1]["annotations"]["dev.evstore.kind"] = "no-such-kind"
    _save(d, bad_kind)
    assert "archive.layout" in _codes(d)
    # A member no edge reaches.
    stray = json.loads(json.dumps(doc))
    stray["layers"][0]["annotations"].pop("dev.evstore.edges")
    _save(d, stray)
    assert _codes(d).count("archive.layout") == 2
    _save(d, doc)
    # Over the JSON limit: oci-layout and index.json are refused, so no blob is named.
    codes = _codes(d, limits=evstore.ArchiveLimits(max_json=10))
    assert codes[:2] == ["archive.too-large", "archive.too-large"]
    assert set(codes[2:]) == {"archive.layout"}


def test_unreferenced_blobs_and_claimed_json(layout):
    _, _, d = layout
    (d / "blobs" / "sha256" / evstore.digest_bytes(b"x").sha256).write_bytes(b"x")
    assert _codes(d) == ["archive.layout"]
    (d / "blobs" / "sha256" / evstore.digest_bytes(b"x").sha256).unlink()
    doc, _ = _manifest(d)
    claimed = dumps({"document_id": "d", "fragment_id": "f", "start_offset": 0,
                     "end_offset": 1, "quote_sha256": "0" * 64})  # fmt: skip
    digest = evstore.digest_bytes(claimed)
    (d / "blobs" / "sha256" / digest.sha256).write_bytes(claimed)
    layer = doc["layers"][0]
    layer.update(digest="sha256:" + digest.sha256, size=digest.size)
    layer["annotations"].update({"dev.evstore.address": digest.address})
    layer["annotations"].pop("dev.evstore.edges")
    doc["layers"] = [layer]
    doc["annotations"]["dev.evstore.root"] = digest.address
    _save(d, doc)
    index = _index(d)
    index["manifests"][0]["annotations"]["dev.evstore.address"] = digest.address
    _write_index(d, index)
    for name in list((d / "blobs" / "sha256").iterdir()):
        if name.name not in (digest.sha256, index["manifests"][0]["digest"][7:]) and (
            name.name != "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        ):
            name.unlink()
    assert _codes(d) == ["kind.claimed"]


def _tar(path: Path, names: list[str]) -> Path:
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        for name in names:
            info = tarfile.TarInfo(name)
            tf.addfile(info, io.BytesIO(b""))
    return path


def test_reader_refusals(tmp_path):
    path = _tar(tmp_path / "t.tar", ["a\\b", "./x/./y", "c:/windows", "ok/"])
    codes = _codes(path)
    assert codes.count("archive.unsafe-path") == 3
    many = _tar(tmp_path / "m.tar", [f"f{i}" for i in range(5)])
    assert "archive.too-large" in _codes(many, limits=evstore.ArchiveLimits(max_entries=3))
    (tmp_path / "dir").mkdir()
    for i in range(5):
        (tmp_path / "dir" / f"f{i}").write_bytes(b"x")
    limits = evstore.ArchiveLimits(max_entries=3)
    assert "archive.too-large" in _codes(tmp_path / "dir", limits=limits)
    (tmp_path / "junk.tar").write_bytes(b"\x01" * 2000)
    with pytest.raises(evstore.InputError) as exc:
        evstore.verify_archive(tmp_path / "junk.tar")
    assert exc.value.code == "archive.layout"
    with pytest.raises(evstore.InputError) as exc:
        evstore.verify_archive(tmp_path / "absent")
    assert exc.value.code == "input.unreadable"


def test_cli_in_process(layout, tmp_path):
    url, root, d = layout
    runner = CliRunner()
    r = runner.invoke(
        cli, ["--store", url, "archive", "export", root, "-o", str(tmp_path / "e.tar")]
    )
    assert r.exit_code == 0, r.output
    assert "3 objects" in r.output
    r = runner.invoke(cli, ["archive", "verify", str(tmp_path / "e.tar")])
    assert r.exit_code == 0 and r.output.strip().endswith(": ok")
    target = f"sqlite:///{tmp_path / 'b.db'}"
    r = runner.invoke(cli, ["--store", target, "--json", "archive", "import", str(d)])
    assert r.exit_code == 0 and json.loads(r.output)["new_artifacts"] == 1
    for blob in sorted((d / "blobs" / "sha256").iterdir())[:2]:
        blob.write_bytes(b"changed")
    r = runner.invoke(cli, ["--store", target, "archive", "import", str(d)])
    assert r.exit_code == 1 and "fault: " in r.output and "archive.digest-mismatch" in r.output
    r = runner.invoke(cli, ["archive", "verify", str(d)])
    assert r.exit_code == 1 and "FAILED" in r.output
    r = runner.invoke(cli, ["archive", "verify", str(d), "--max-bytes", "1"])
    assert r.exit_code == 1 and "archive.too-large" in r.output


@pytest.mark.parametrize("size", [0, 1, 511, 512, 10240, 9 << 20, (8 << 30) - 1])
def test_tar_headers_are_the_bytes_tarfile_writes(size):
    from evstore.archive.layout import tar_end, tar_header, tar_info, tar_padding

    for name in ("oci-layout", "blobs/sha256/" + "ab" * 32):
        assert tar_header(name, size) == tar_info(name, size).tobuf(tarfile.USTAR_FORMAT)
    assert len(tar_padding(size)) == -size % 512
    assert (size + len(tar_end(size))) % tarfile.RECORDSIZE == 0
    with pytest.raises(ValueError):
        tar_header("x" * 101, size)
