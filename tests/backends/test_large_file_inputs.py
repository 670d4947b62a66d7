"""Inputs a caller may hand ``put`` in a store with a blob backend, beside the plain open
file the two-read path was made for (issue 25): each is stored as given, or refused typed.
"""

from __future__ import annotations

import errno
import io
import os
import tarfile
import tempfile

import pytest

import evstore
from evstore.objects import file_sources

#: A small piece size for the tests, so that a file of a few hundred KiB takes several.
PIECE = 64 << 10


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(file_sources, "PIECE", PIECE)


def test_a_tar_member_is_stored_as_a_stream(s, spec, tmp_path, small_pieces):
    # TarFile.extractfile gives an io.BufferedReader subclass whose raw part has no fileno:
    # it used to end in AttributeError before anything was read.
    data = os.urandom(5 * PIECE + 7)
    path = tmp_path / "a.tar"
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo("member")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with tarfile.open(path) as tar:
        member = tar.extractfile("member")
        assert member is not None and not file_sources.regular_file(member)
        res = s.put(member)
    assert res.digest == evstore.digest_bytes(data)
    assert s.get(res.digest.address) == data


class _Counting(io.BufferedReader):
    """A caller's reader that counts the bytes it hands out (a progress meter)."""

    handed = 0

    def read(self, n: int | None = -1) -> bytes:
        b = super().read(n)
        self.handed += len(b)
        return b


def test_a_readers_subclass_is_read_once(s, spec, tmp_path, small_pieces):
    data = os.urandom(5 * PIECE + 7)
    path = tmp_path / "f"
    path.write_bytes(data)
    with open(path, "rb", buffering=0) as raw:
        reader = _Counting(raw)
        assert not file_sources.regular_file(reader)
        res = s.put(reader)
        assert reader.handed == len(data)  # not twice the file
    assert s.get(res.digest.address) == data


def test_a_file_under_a_large_inline_max_stays_in_the_database(s, spec, tmp_path, small_pieces):
    s.set_config("blobs.inline_max", 4 * PIECE)
    data = os.urandom(3 * PIECE)  # over a piece, under blobs.inline_max
    path = tmp_path / "f"
    path.write_bytes(data)
    with open(path, "rb") as f:
        res = s.put(f)
    assert s.stat(res.digest.address)["stored"] == "inline"  # as put(bytes) stores it
    assert s.get(res.digest.address) == data
    bigger = os.urandom(4 * PIECE + 1)  # over blobs.inline_max: to the backend
    path.write_bytes(bigger)
    with open(path, "rb") as f:
        res = s.put(f)
    assert s.stat(res.digest.address)["stored"] == "backend"
    assert s.get(res.digest.address) == bigger


class _FullSpool:
    """A temporary file on a full $TMPDIR: every write fails with ENOSPC."""

    def __enter__(self) -> _FullSpool:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def write(self, b: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_verified_read_on_a_full_tmpdir_is_refused_typed(s, spec, monkeypatch):
    data = os.urandom(2 * (1 << 20) + 3)
    res = s.put(data)
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda *a, **k: _FullSpool())
    got: list[bytes] = []
    with pytest.raises(evstore.StoreStateError) as info:
        with s.open_blob(res.digest.address) as (_, chunks):
            got.extend(chunks)
    assert got == [] and info.value.code == "blobs.spool"
    assert "nothing was served" in str(info.value)
