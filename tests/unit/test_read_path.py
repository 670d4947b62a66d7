"""put_many reads a small file with descriptor calls (issue 29): to its end, whatever fstat said."""

from __future__ import annotations

from pathlib import Path

import pytest

import evstore
from evstore.objects.blob_batches import item_bytes


@pytest.mark.parametrize("size", [0, 1, 4095, 65536, 65537, 3 << 20])
def test_a_file_is_read_whole(tmp_path, size):
    p = tmp_path / "f"
    p.write_bytes(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
    assert item_bytes(p, 0) == p.read_bytes()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")
def test_a_file_whose_recorded_size_is_zero_is_read_to_its_end():
    got = item_bytes(Path("/proc/self/status"), 0)
    assert isinstance(got, bytes) and b"\nPid:" in got and got.endswith(b"\n")


def test_a_directory_is_input_unreadable(tmp_path):
    with pytest.raises(evstore.EvstoreError) as exc:
        item_bytes(tmp_path, 3)
    assert exc.value.code == "input.unreadable"
    assert "Is a directory" in exc.value.message
