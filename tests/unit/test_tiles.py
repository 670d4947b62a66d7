"""tlog-tiles coordinates and formats (store/tlog/tiles.py) against the examples of the spec."""

from __future__ import annotations

from collections import Counter

import pytest

import evstore
from evstore.tlog import merkle
from evstore.tlog.tiles import (
    TileRef,
    TileTree,
    bundle_entries,
    encode_index,
    parse_bundle,
    parse_tile_path,
    tile_path,
    tiles_for_size,
)


def test_indices_are_written_in_groups_of_three_digits():
    assert encode_index(1234067) == "x001/x234/067"
    assert encode_index(0) == "000" and encode_index(999) == "999"
    assert encode_index(1000) == "x001/000"
    assert tile_path(0, 1234067, 5) == "tile/0/x001/x234/067.p/5"
    assert tile_path(None, 3) == "tile/entries/003"


@pytest.mark.parametrize(
    "path", ["tile/0/000", "tile/63/x001/x234/067.p/255", "tile/entries/x001/000.p/1"]
)
def test_paths_parse_back(path):
    assert parse_tile_path(path).path() == path


@pytest.mark.parametrize(
    "path",
    [
        "tile/0/0",
        "tile/00/000",
        "tile/64/000",
        "tile/0/x000/001",
        "tile/0/001/002",
        "tile/0/000.p/0",
        "tile/0/000.p/256",
        "tile/0/000.p/07",
        "tile/x/000",
        "tiles/0/000",
        "tile/0",
    ],
)
def test_other_spellings_are_malformed(path):
    with pytest.raises(evstore.InputError) as exc:
        parse_tile_path(path)
    assert exc.value.code == "tiles.malformed"


def test_a_tree_of_70000_has_the_tiles_the_spec_lists():
    tiles = list(tiles_for_size(70_000))
    hashes = Counter((t.level, t.width) for t in tiles if t.level is not None)
    assert hashes == {(0, 256): 273, (0, 112): 1, (1, 256): 1, (1, 17): 1, (2, 1): 1}
    assert Counter(t.width for t in tiles if t.level is None) == {256: 273, 112: 1}
    assert Counter((t.level, t.width) for t in tiles_for_size(256)) == {
        (None, 256): 1,
        (0, 256): 1,
        (1, 1): 1,
    }


def test_bundles_round_trip_and_refuse_truncation():
    entries = [b"", b"a", b"x" * 300]
    data = bundle_entries(entries)
    assert data[:5] == b"\x00\x00\x00\x01a" and data[5:7] == b"\x01\x2c"
    assert parse_bundle(data) == entries
    for cut in (1, len(data) - 1):
        with pytest.raises(evstore.InputError):
            parse_bundle(data[:cut])


@pytest.mark.parametrize("size", [1, 2, 255, 256, 257, 511, 513, 1000])
def test_a_tree_read_from_tiles_gives_the_same_roots_and_proofs(size):
    tree = merkle.MemoryTree([b"leaf %d" % i for i in range(size)])
    files: dict[str, bytes] = {}
    for ref in tiles_for_size(size):
        if ref.level is not None:
            first = ref.index * 256
            row = [tree.subtree_hash(8 * ref.level, first + i) for i in range(ref.width)]
            files[TileRef(ref.level, ref.index, ref.width).path()] = b"".join(row)
    tiled = TileTree(size, files.__getitem__)
    assert merkle.root(size, tiled) == tree.root()
    for m in {0, size // 3, size - 1}:
        assert merkle.inclusion_proof(m, size, tiled) == tree.inclusion_proof(m)
    for old in {1, size // 2, size}:
        assert merkle.consistency_proof(old, size, tiled) == tree.consistency_proof(old)
