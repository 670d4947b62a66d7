"""Export reads, hashes and writes a batch at a time (issue 29).

Every object is still verified before any of its bytes is written (a corrupt object in a
later batch leaves nothing at the output, and its bytes never reach the writer), and the tar
written a batch at a time (headers built from a template, one ``writev`` per batch) is byte
for byte what ``tarfile`` writes of the same files.
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest
import sqlalchemy as sa
from tamperkit import tampering

import evstore
from evstore.archive import writing
from evstore.archive.layout import blob_name, tar_info
from evstore.archive.ops import closure_manifest


def _closure(store: evstore.Store, data: list[bytes]) -> tuple[str, list]:
    puts = store.put_many(data)
    (root,) = store.ingest({"objects": [p.digest.address for p in puts]}).results
    return root.digest.address, puts


def _tarfile_of(layout: Path) -> bytes:
    """What ``tarfile`` writes of an exported directory, in the export's member order."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for name in ("oci-layout", "index.json"):
            data = (layout / name).read_bytes()
            tf.addfile(tar_info(name, len(data)), io.BytesIO(data))
        for name in ("blobs", "blobs/sha256"):
            tf.addfile(tar_info(name, None))
        for f in sorted((layout / "blobs" / "sha256").iterdir()):
            data = f.read_bytes()
            tf.addfile(tar_info(blob_name(f.name), len(data)), io.BytesIO(data))
    return out.getvalue()


def test_the_tar_is_what_tarfile_writes_of_the_same_files(store, tmp_path):
    big = bytes(range(256)) * (9 * 4096 + 3)  # chunked: streamed between the batches
    smalls = [f"object {i:05d} ".encode() * (i % 9 + 1) for i in range(1100)]  # 3 batches
    mids = [bytes([i]) * (700_000 + i) for i in range(14)]  # past a batch's 8 MiB
    root, _ = _closure(store, [big, b"", bytes(512), *smalls, *mids])
    tar, layout = tmp_path / "a.tar", tmp_path / "layout"
    report = evstore.export_archive(store, [root], tar)
    evstore.export_archive(store, [root], layout)
    assert report.objects == 1 + 3 + len(smalls) + len(mids)
    assert len(list((layout / "blobs" / "sha256").iterdir())) == report.objects + 2
    assert tar.read_bytes() == _tarfile_of(layout)
    assert evstore.verify_archive(tar).ok


def test_short_writes_are_completed(store, tmp_path, monkeypatch):
    root, _ = _closure(store, [f"blob {i}".encode() * 300 for i in range(40)])
    whole = tmp_path / "whole.tar"
    evstore.export_archive(store, [root], whole)
    real = os.writev
    calls = []

    def one_buffer_at_most_1000_bytes(fd, buffers):  # a file system that writes less
        calls.append(len(buffers))
        return real(fd, [bytes(buffers[0])[:1000]])

    monkeypatch.setattr(writing.os, "writev", one_buffer_at_most_1000_bytes)
    short = tmp_path / "short.tar"
    evstore.export_archive(store, [root], short)
    assert max(calls) > 1 and short.read_bytes() == whole.read_bytes()


@pytest.mark.parametrize(
    "column,code", [("data", "corruption.digest"), ("sha256", "corruption.sha256-index")]
)
def test_a_corrupt_object_in_a_later_batch_is_never_written(
    store, tmp_path, monkeypatch, column, code
):
    data = [f"blob {i:05d}".encode() for i in range(1200)]
    root, puts = _closure(store, data)
    # By file name (SHA-256) the victim is in the third batch: two were written before it
    # (a SHA-256 column of f...f names a file that sorts last).
    i = sorted(range(len(puts)), key=lambda i: puts[i].digest.sha256)[1100]
    victim = puts[i].digest
    stored, value = (b"blob XXXXX",) * 2 if column == "data" else (data[i], "f" * 64)
    with store.db.engine.begin() as conn:
        conn.execute(
            sa.text(f"UPDATE blobs SET {column} = :v WHERE address = :a"),
            {"v": value, "a": victim.blake3},
        )
    written: list[bytes] = []
    real = writing.Writer.write_all

    def spy(self, files):
        written.extend(data for _, data in files)
        return real(self, files)

    monkeypatch.setattr(writing.Writer, "write_all", spy)
    where = tmp_path / "out"
    where.mkdir()
    for out in (where / "t.tar", where / "d"):
        written.clear()
        with pytest.raises(evstore.CorruptionError) as exc:
            evstore.export_archive(store, [root], out)
        assert exc.value.code == code
        assert exc.value.details["address"] == victim.address
        assert len(written) >= 1000  # earlier batches were written, the victim's never
        assert stored not in written
        assert not out.exists()
    assert list(where.iterdir()) == []  # no temporary left behind


def test_the_walk_names_a_member_that_is_not_stored_and_a_malformed_row(store, tmp_path):
    root, puts = _closure(store, [f"member {i}".encode() for i in range(700)])  # 2 batches
    gone, bad = sorted(p.digest.blake3 for p in puts)[650], puts[3].digest.blake3
    with tampering(store) as conn:
        conn.execute(sa.text("DELETE FROM blobs WHERE address = :a"), {"a": gone})
    out = tmp_path / "a.tar"
    with pytest.raises(evstore.NotFound) as exc:
        evstore.export_archive(store, [root], out)
    assert (exc.value.code, exc.value.details["address"]) == ("not-found.blob", "blake3:" + gone)
    with store.transactions.read() as conn, pytest.raises(evstore.NotFound):
        closure_manifest(conn, root)  # what an OCI pull computes: the same walk
    assert not out.exists()
    if store.db.backend == "sqlite":  # only SQLite stores text in an integer column
        with store.db.engine.begin() as conn:
            conn.execute(sa.text("UPDATE blobs SET size = 'ten' WHERE address = :a"), {"a": bad})
        with pytest.raises(evstore.CorruptionError) as rot:
            evstore.export_archive(store, [root], out)
        assert rot.value.code == "corruption.row" and not out.exists()
