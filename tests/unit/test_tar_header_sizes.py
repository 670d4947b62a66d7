"""The export's own tar headers hold any object size (attack4).

A USTAR size field is 11 octal digits: 8 GiB or more did not fit, and the header came out
513 bytes long, shifting every later member of the tar (a corrupt archive, silently).
"""

from __future__ import annotations

import tarfile

import pytest

from evstore.archive.layout import tar_end, tar_header, tar_info

NAME = "blobs/sha256/" + "a" * 64


@pytest.mark.parametrize("size", [0, 1, 8**11 - 1])
def test_a_header_below_8_gib_is_what_tarfile_writes(size):
    assert tar_header(NAME, size) == tar_info(NAME, size).tobuf(tarfile.USTAR_FORMAT)


@pytest.mark.parametrize("size", [8**11, 8**11 + 1, 1 << 40, (1 << 64) - 1])
def test_a_header_of_8_gib_or_more_is_one_block_that_reads_back(size):
    header = tar_header(NAME, size)
    assert len(header) == tarfile.BLOCKSIZE
    info = tarfile.TarInfo.frombuf(header, "utf-8", "strict")
    assert (info.name, info.size, info.mode) == (NAME, size, 0o644)


def test_a_member_after_a_large_one_is_found_where_it_belongs(tmp_path):
    size = 8**11  # written sparse: no 8 GiB on disk
    path = tmp_path / "big.tar"
    with path.open("wb") as fh:
        fh.write(tar_header(NAME, size))
        fh.seek(tarfile.BLOCKSIZE + size)
        fh.write(tar_header("blobs/sha256/" + "b" * 64, 3) + b"abc".ljust(tarfile.BLOCKSIZE, b"\0"))
        fh.write(tar_end(size + 3 * tarfile.BLOCKSIZE))
    with tarfile.open(path) as tar:
        first = tar.next()
        assert first is not None and first.size == size
        second = tar.next()  # tarfile seeks over the first member's bytes
        assert second is not None and second.name.endswith("b" * 64)
        assert tar.extractfile(second).read() == b"abc"  # type: ignore[union-attr]
