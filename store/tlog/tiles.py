"""C2SP tlog-tiles: tile coordinates, paths, entry bundles, and a tree read back from tiles.

The log is served as static resources (c2sp.org/tlog-tiles, "APIs"):

* ``<prefix>/checkpoint``: the signed checkpoint (text);
* ``<prefix>/tile/<L>/<N>[.p/<W>]``: the hashes of tree level ``8 * L``, subtrees
  ``N * 256 .. N * 256 + W - 1`` (each the MTH of ``256**L`` leaves), concatenated, 32 bytes
  each; a full tile has 256 (8,192 bytes) and no ``.p/<W>``, a partial one ``W`` in 1..255;
* ``<prefix>/tile/entries/<N>[.p/<W>]``: entries ``N * 256 .. N * 256 + W - 1``, each as a
  big-endian uint16 length then its bytes (an *entry bundle*).

``<N>`` is written in zero-padded groups of three digits, all but the last prefixed ``x``
(1234067 is ``x001/x234/067``). For a tree of size ``s`` the partial tile of level ``L`` has
width ``floor(s / 256**L) mod 256``; a width of 0 is no tile.

:class:`TileTree` answers :class:`~evstore.tlog.merkle.SubtreeSource` from tiles fetched by
a callable, so :func:`~evstore.tlog.merkle.root` and the proof functions run over tiles
exactly as over the database: a verifier holding only the tiles rebuilds the root it
compares with a signed checkpoint, and inclusion proofs. Errors: ``tiles.malformed`` (a path
or a resource that is not of the format), ``log.range``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ..core.errors import error
from . import merkle

__all__ = [
    "TILE_HEIGHT",
    "TILE_WIDTH",
    "TileRef",
    "TileTree",
    "bundle_entries",
    "encode_index",
    "parse_bundle",
    "parse_tile_path",
    "tile_path",
    "tiles_for_size",
]

#: Tree levels one tile spans.
TILE_HEIGHT = 8
#: Hashes (or entries) in a full tile (bundle).
TILE_WIDTH = 1 << TILE_HEIGHT
#: The most bytes one entry in a bundle may have (its length is a uint16).
MAX_ENTRY = 0xFFFF


@dataclass(frozen=True)
class TileRef:
    """One tile resource: ``level`` (None for an entry bundle), ``index``, ``width`` (1..256).

    ``width`` 256 is a full tile (no ``.p/<W>`` in its path).
    """

    level: int | None
    index: int
    width: int

    @property
    def full(self) -> bool:
        """Whether this is a full tile (256 wide): immutable once served."""
        return self.width == TILE_WIDTH

    def path(self) -> str:
        """The resource path below the prefix, ``tile/<L>/<N>[.p/<W>]`` or ``tile/entries/...``."""
        return tile_path(self.level, self.index, None if self.full else self.width)


def encode_index(index: int) -> str:
    """``<N>`` of a tile path: groups of three digits, all but the last prefixed ``x``."""
    digits = str(int(index))
    digits = "0" * (-len(digits) % 3) + digits
    groups = [digits[i : i + 3] for i in range(0, len(digits), 3)]
    return "/".join([*("x" + g for g in groups[:-1]), groups[-1]])


def tile_path(level: int | None, index: int, width: int | None = None) -> str:
    """The path of tile ``(level, index)`` (level None: the entry bundle), partial if ``width``.

    Raises:
        InputError: ``tiles.malformed`` (a level outside 0..63, a width outside 1..255).
    """
    if level is not None and not 0 <= level <= 63:
        raise error("tiles.malformed", f"tile level {level} is not in 0..63", level=level)
    if index < 0:
        raise error("tiles.malformed", f"tile index {index} is negative", index=index)
    head = "tile/entries" if level is None else f"tile/{level}"
    out = f"{head}/{encode_index(index)}"
    if width is not None:
        if not 1 <= width <= TILE_WIDTH - 1:
            raise error("tiles.malformed", f"a partial tile's width {width} is not in 1..255")
        out += f".p/{width}"
    return out


_GROUP = re.compile(r"x[0-9]{3}")
_LAST = re.compile(r"[0-9]{3}")
_NUMBER = re.compile(r"0|[1-9][0-9]*")


def parse_tile_path(path: str) -> TileRef:
    """The :class:`TileRef` of ``tile/...`` (the inverse of :func:`tile_path`), strictly.

    Raises:
        InputError: ``tiles.malformed`` (any other spelling: leading zeros, a missing ``x``,
            a width of 0 or 256, a level above 63).
    """

    def bad() -> Exception:
        return error("tiles.malformed", f"{path!r} is not a tlog-tiles tile path", path=path)

    parts = path.split("/")
    if len(parts) < 3 or parts[0] != "tile":
        raise bad()
    level: int | None
    if parts[1] == "entries":
        level = None
    elif _NUMBER.fullmatch(parts[1]) and int(parts[1]) <= 63:
        level = int(parts[1])
    else:
        raise bad()
    rest = parts[2:]
    width = TILE_WIDTH
    if len(rest) >= 2 and rest[-2].endswith(".p"):
        w = rest[-1]
        if not _NUMBER.fullmatch(w) or not 1 <= int(w) <= TILE_WIDTH - 1:
            raise bad()
        width = int(w)
        rest = [*rest[:-2], rest[-2][: -len(".p")]]
    if not rest or not _LAST.fullmatch(rest[-1]) or not all(_GROUP.fullmatch(g) for g in rest[:-1]):
        raise bad()
    index = int("".join(g.lstrip("x") for g in rest))
    if encode_index(index) != "/".join(rest):  # no superfluous leading x000 groups
        raise bad()
    return TileRef(level, index, width)


def tiles_for_size(size: int) -> Iterator[TileRef]:
    """Every tile and entry bundle a tree of ``size`` leaves has, level by level.

    Full ones first within a level, then the partial one (width ``floor(size / 256**L) mod
    256``, when not 0). Entry bundles are listed with the level-0 tiles' coordinates.
    """
    level = 0
    while True:
        count = size >> (TILE_HEIGHT * level)  # complete hashes at tree level 8 * level
        if count == 0:
            return
        full, rest = divmod(count, TILE_WIDTH)
        for n in range(full):
            if level == 0:
                yield TileRef(None, n, TILE_WIDTH)
            yield TileRef(level, n, TILE_WIDTH)
        if rest:
            if level == 0:
                yield TileRef(None, full, rest)
            yield TileRef(level, full, rest)
        if count < TILE_WIDTH:
            return
        level += 1


def bundle_entries(entries: Sequence[bytes]) -> bytes:
    """An entry bundle: each entry as a big-endian uint16 length, then its bytes.

    Raises:
        InputError: ``tiles.malformed`` (an entry longer than 65,535 bytes).
    """
    out = bytearray()
    for data in entries:
        if len(data) > MAX_ENTRY:
            raise error("tiles.malformed", f"an entry of {len(data)} bytes cannot be bundled")
        out += len(data).to_bytes(2, "big") + data
    return bytes(out)


def parse_bundle(data: bytes) -> list[bytes]:
    """The entries of an entry bundle (:func:`bundle_entries`'s inverse).

    Raises:
        InputError: ``tiles.malformed`` (a length running past the end).
    """
    out: list[bytes] = []
    at = 0
    while at < len(data):
        if at + 2 > len(data):
            raise error("tiles.malformed", "an entry bundle ends inside a length")
        n = int.from_bytes(data[at : at + 2], "big")
        if at + 2 + n > len(data):
            raise error("tiles.malformed", "an entry bundle ends inside an entry")
        out.append(bytes(data[at + 2 : at + 2 + n]))
        at += 2 + n
    return out


class TileTree:
    """A :class:`~evstore.tlog.merkle.SubtreeSource` over the tiles of a tree of ``size``.

    Args:
        size: the tree size (a verified checkpoint's): it decides which tiles exist and
            their widths.
        fetch: ``fetch(path)`` returns the bytes of resource ``path`` (``tile/...``), from a
            URL prefix or a directory; each tile is fetched once and cached.

    ``subtree_hash(level, index)`` reads tile ``level // 8`` and hashes its hashes up to
    ``level`` (a subtree of a tile always lies within one tile).

    Raises (from ``subtree_hash``): InputError ``tiles.malformed`` (a tile of the wrong
    length), ``log.range`` (a subtree not complete within ``size``).
    """

    def __init__(self, size: int, fetch: Callable[[str], bytes]) -> None:
        self.size = size
        self._fetch = fetch
        self._tiles: dict[tuple[int, int], list[bytes]] = {}

    def tile_hashes(self, level: int, index: int) -> list[bytes]:
        """The hashes of tile ``(level, index)`` at this size (fetched once)."""
        key = (level, index)
        if key not in self._tiles:
            count = self.size >> (TILE_HEIGHT * level)
            width = min(TILE_WIDTH, count - index * TILE_WIDTH)
            if width <= 0:
                raise error(
                    "log.range", f"no tile ({level}, {index}) in a tree of size {self.size}"
                )
            ref = TileRef(level, index, width)
            data = self._fetch(ref.path())
            if len(data) != width * merkle.HASH_SIZE:
                raise error(
                    "tiles.malformed",
                    f"{ref.path()} has {len(data)} bytes, not {width * merkle.HASH_SIZE}",
                    path=ref.path(),
                )
            step = merkle.HASH_SIZE
            self._tiles[key] = [data[i : i + step] for i in range(0, len(data), step)]
        return self._tiles[key]

    def subtree_hash(self, level: int, index: int) -> bytes:
        """Hash of complete subtree ``(level, index)`` from the tiles (see the class)."""
        if level < 0 or index < 0 or (index + 1) << level > self.size:
            raise error(
                "log.range", f"subtree ({level}, {index}) is not complete at size {self.size}"
            )
        base = level - level % TILE_HEIGHT
        span = 1 << (level - base)  # hashes of tree level `base` under this subtree
        first = index * span
        hashes = self.tile_hashes(base // TILE_HEIGHT, first // TILE_WIDTH)
        at = first % TILE_WIDTH
        row = hashes[at : at + span]
        while len(row) > 1:
            row = [merkle.node_hash(row[i], row[i + 1]) for i in range(0, len(row), 2)]
        return row[0]
