"""Entry-count bombs cost neither memory nor a fault per entry (issue 23).

An archive tar or a bundle tar with many members is refused at its count limit while the tar
is read (no more than limit + 1 headers); an archive's fault list, like a schema's, keeps at
most 256 faults and ends with one that says how many more there were; a run bundle's
``index.json`` faults are capped the same way.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

import evstore
from evstore.archive.layout import MAX_FAULTS, Limits
from evstore.contracts.runs.rules_bundle import index_faults
from evstore.core.json_schema import MAX_SCHEMA_FAULTS

ROOT = Path(__file__).resolve().parents[2]


def _empty_members(path: Path, n: int, name: str = "e{}") -> Path:
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tf:
        for i in range(n):
            info = tarfile.TarInfo(name.format(i))
            tf.addfile(info, io.BytesIO(b""))
    return path


@pytest.fixture
def headers_read(monkeypatch):
    """How many members ``TarFile.next`` has returned since the test began (opening a tar
    reads its first member, which the first ``next`` returns again: one more than read).
    """
    seen = [0]
    real = tarfile.TarFile.next

    def counted(self):
        member = real(self)
        if member is not None:
            seen[0] += 1
        return member

    monkeypatch.setattr(tarfile.TarFile, "next", counted)
    return seen


def test_an_archive_past_its_entry_limit_is_refused_while_it_is_read(tmp_path, headers_read):
    tar = _empty_members(tmp_path / "bomb.tar", 3000)
    checked = evstore.verify_archive(tar, limits=Limits(max_entries=100))
    assert not checked.ok
    assert headers_read[0] <= 102  # stopped at the first entry past the limit (101st)
    codes = [f.code for f in checked.faults]
    assert "archive.too-large" in codes
    big = next(f for f in checked.faults if f.code == "archive.too-large")
    assert big.details["limit"] == 100


def test_an_archive_fault_list_is_capped_with_a_last_fault_saying_how_many_more(tmp_path):
    n = 2000
    tar = _empty_members(tmp_path / "bad.tar", n)
    checked = evstore.verify_archive(tar)
    assert len(checked.faults) == MAX_FAULTS + 1 == MAX_SCHEMA_FAULTS + 1
    last = checked.faults[-1]
    assert last.details["truncated"] is True and last.details["limit"] == MAX_FAULTS
    # Every unexpected entry, plus the missing oci-layout and index.json, is counted.
    assert last.details["more"] == n + 2 - MAX_FAULTS
    assert str(last.details["more"]) in last.message
    assert len(checked.to_dict()["faults"]) == MAX_FAULTS + 1


def test_an_import_of_a_bomb_is_refused_with_a_capped_list_and_writes_nothing(
    store, tmp_path, snapshot
):
    tar = _empty_members(tmp_path / "bad.tar", 1000, "blobs/sha256/{:064x}")
    before = snapshot(store)
    with pytest.raises(evstore.EvstoreError) as info:
        evstore.import_archive(store, tar)
    assert snapshot(store) == before
    details = info.value.details
    assert len(details["faults"]) == MAX_FAULTS + 1
    assert details["faults"][-1]["details"]["truncated"] is True


def test_a_bundle_tar_past_its_member_limit_is_refused_after_limit_plus_one_headers(
    tmp_path, monkeypatch, headers_read
):
    from evstore.server import bundles

    monkeypatch.setattr(bundles, "MAX_MEMBERS", 50)
    tar = _empty_members(tmp_path / "bundle.tar", 3000, "run/f{}")
    with tar.open("rb") as spool, pytest.raises(evstore.EvstoreError) as info:
        bundles.unpack_bundle(spool, str(tmp_path / "out"), 1 << 30)
    assert info.value.code == "bundle.archive-unsafe"
    assert "past 50 members" in info.value.message
    assert headers_read[0] <= 52
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_bundle_index_naming_thousands_of_missing_files_has_a_capped_fault_list():
    index = json.loads((ROOT / "examples" / "bundle" / "index.json").read_text())
    template = next(d for d in index.values() if d.get("artifact_kind") == "source/text")
    for i in range(1000):
        index[f"extra_{i}"] = {**template, "logical_file": f"missing/{i}.txt"}
    exists = {d["logical_file"]: True for k, d in index.items() if not k.startswith("extra_")}
    faults = index_faults(index, exists).errors
    assert len(faults) == MAX_SCHEMA_FAULTS + 1
    assert faults[0].code == "bundle.file-missing"
    assert faults[-1].code == "bundle.index-shape" and faults[-1].details["truncated"] is True
