"""Merkle tree hashing, proofs and their verification (RFC 9162 section 2.1, as RFC 6962).

The pure, storage-agnostic core of the tamper-evident log. Nothing here knows about a
database: proofs are computed from a :class:`SubtreeSource`, anything that answers the hash
of a *complete* subtree. A database table of complete subtree hashes, insert-only and keyed
by ``(level, index)``, answers each lookup in O(1); a proof or a root for any tree size,
old or new, then costs O(log n) lookups and no recomputation.

Definitions (RFC 9162 section 2.1.1), with ``D[a:b]`` the entries ``a .. b-1``::

    leaf hash   SHA-256(0x00 || entry)
    node hash   SHA-256(0x01 || left || right)
    MTH({})     SHA-256("")                      (the empty tree)
    MTH(D[n])   left-balanced: k = the largest power of two < n,
                MTH(D[0:n]) = node(MTH(D[0:k]), MTH(D[k:n])); no padding

A *complete subtree* ``(level, index)`` covers the ``2**level`` leaves starting at leaf
``index * 2**level``; level 0 holds the leaf hashes themselves.

Errors, one rule for the whole module:

* the proof *generators* (:func:`root`, :func:`inclusion_proof`, :func:`consistency_proof`,
  :class:`MemoryTree`) raise :class:`LogRangeError` (code ``log.range``) for an index or
  size out of range; that is a caller error, never a verification result;
* the *verifiers* (:func:`verify_inclusion`, :func:`verify_consistency`) return ``True`` or
  ``False`` and never raise, whatever they are given (a wrong type, a hash of the wrong
  length, a negative size, a proof with a hash too many or too few all return ``False``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Protocol, runtime_checkable

from ..core.errors import InputError

__all__ = [
    "CompactTree",
    "EMPTY_ROOT",
    "HASH_SIZE",
    "LogRangeError",
    "MemoryTree",
    "SubtreeSource",
    "consistency_proof",
    "inclusion_proof",
    "leaf_hash",
    "new_subtrees",
    "node_hash",
    "root",
    "verify_consistency",
    "verify_inclusion",
]

#: Length in bytes of every hash in the tree (SHA-256).
HASH_SIZE = 32

#: MTH({}): the root of the empty tree, SHA-256 of the empty string (RFC 9162 2.1.1).
EMPTY_ROOT = hashlib.sha256(b"").digest()

_LEAF_PREFIX = b"\x00"
_NODE_PREFIX = b"\x01"


class LogRangeError(InputError):
    """An index or tree size outside the tree (code ``log.range``); nothing was computed."""

    default_code = "log.range"


def _range_error(message: str, **details: int) -> LogRangeError:
    return LogRangeError(message, code="log.range", details=dict(details))


@runtime_checkable
class SubtreeSource(Protocol):
    """Anything that answers the hash of a complete subtree.

    ``subtree_hash(level, index)`` returns the 32-byte MTH of the ``2**level`` leaves
    ``index * 2**level .. (index + 1) * 2**level - 1``. The functions of this module only ask
    for subtrees that are complete within the tree size they were given, so a source that
    stores every complete subtree as it completes (insert-only) can always answer. A source
    that cannot (a missing row) raises an error of its own choosing.
    """

    def subtree_hash(self, level: int, index: int) -> bytes:
        """Hash of complete subtree ``(level, index)`` (see the class docstring)."""
        ...


def leaf_hash(entry: bytes) -> bytes:
    """RFC 9162 2.1.1 leaf hash: SHA-256(0x00 || entry), 32 bytes."""
    return hashlib.sha256(_LEAF_PREFIX + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """RFC 9162 2.1.1 interior node hash: SHA-256(0x01 || left || right), 32 bytes."""
    return hashlib.sha256(_NODE_PREFIX + left + right).digest()


def _check_int(value: object, name: str) -> int:
    if type(value) is not int:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    return value


def _largest_power_below(n: int) -> int:
    """The largest power of two strictly less than ``n`` (n >= 2)."""
    return 1 << ((n - 1).bit_length() - 1)


def _span_hash(nodes: SubtreeSource, lo: int, hi: int) -> bytes:
    """MTH(D[lo:hi]) for a node of the left-balanced tree (lo < hi).

    Such a node is either a complete aligned subtree (one lookup) or, on the right edge of
    the tree, the left-balanced combination of the complete subtrees given by the binary
    decomposition of ``hi - lo`` in decreasing size, folded from the right. Every piece is
    aligned because ``lo`` is a multiple of the largest power of two not above ``hi - lo``.
    """
    pieces: list[bytes] = []
    start = lo
    remaining = hi - lo
    while remaining:
        level = remaining.bit_length() - 1
        pieces.append(nodes.subtree_hash(level, start >> level))
        start += 1 << level
        remaining -= 1 << level
    acc = pieces.pop()
    while pieces:
        acc = node_hash(pieces.pop(), acc)
    return acc


def root(size: int, nodes: SubtreeSource) -> bytes:
    """MTH of the first ``size`` leaves (RFC 9162 2.1.1), from O(log size) lookups.

    Args:
        size: tree size, ``>= 0``; 0 gives :data:`EMPTY_ROOT`.
        nodes: the complete-subtree source; it must hold at least ``size`` leaves.

    Returns:
        The 32-byte root hash.

    Raises:
        LogRangeError: ``size`` is negative.
    """
    _check_int(size, "size")
    if size < 0:
        raise _range_error(f"tree size {size} is negative", size=size)
    if size == 0:
        return EMPTY_ROOT
    return _span_hash(nodes, 0, size)


def inclusion_proof(index: int, size: int, nodes: SubtreeSource) -> list[bytes]:
    """PATH(index, D[0:size]): the audit path of leaf ``index`` (RFC 9162 2.1.3.1).

    Args:
        index: the leaf, ``0 <= index < size``.
        size: the tree size the proof is for (any size the source has reached).
        nodes: the complete-subtree source.

    Returns:
        The sibling hashes from the leaf's sibling up to the root's child (32 bytes each,
        ``ceil(log2(size))`` of them at most; empty for a tree of one leaf). At most about
        2*log2(size) lookups.

    Raises:
        LogRangeError: ``index`` or ``size`` out of range (``index >= size``, size 0).
    """
    _check_int(index, "index")
    _check_int(size, "size")
    if not 0 <= index < size:
        raise _range_error(
            f"leaf index {index} is not in a tree of size {size}", index=index, size=size
        )
    path: list[bytes] = []
    lo, hi = 0, size
    while hi - lo > 1:
        k = _largest_power_below(hi - lo)
        if index < lo + k:
            path.append(_span_hash(nodes, lo + k, hi))
            hi = lo + k
        else:
            path.append(_span_hash(nodes, lo, lo + k))
            lo += k
    path.reverse()
    return path


def consistency_proof(old_size: int, new_size: int, nodes: SubtreeSource) -> list[bytes]:
    """PROOF(old_size, D[0:new_size]) (RFC 9162 2.1.4.1).

    Args:
        old_size: the earlier tree size, ``0 <= old_size <= new_size``.
        new_size: the later tree size.
        nodes: the complete-subtree source, holding at least ``new_size`` leaves.

    Returns:
        The proof hashes (32 bytes each), in the RFC's order. Empty when ``old_size`` is 0
        or equal to ``new_size``: the empty tree and a tree itself are trivially prefixes
        (see :func:`verify_consistency` for what a verifier then checks).

    Raises:
        LogRangeError: a negative size, or ``old_size > new_size``.
    """
    _check_int(old_size, "old_size")
    _check_int(new_size, "new_size")
    if not 0 <= old_size <= new_size:
        raise _range_error(
            f"no consistency proof from size {old_size} to size {new_size}",
            old_size=old_size,
            new_size=new_size,
        )
    if old_size in (0, new_size):
        return []
    proof: list[bytes] = []
    lo, hi = 0, new_size
    whole = True  # SUBPROOF's flag: the old tree is the whole current subtree, from the left
    while old_size != hi:
        k = _largest_power_below(hi - lo)
        if old_size - lo <= k:
            proof.append(_span_hash(nodes, lo + k, hi))
            hi = lo + k
        else:
            proof.append(_span_hash(nodes, lo, lo + k))
            lo += k
            whole = False
    if not whole:
        proof.append(_span_hash(nodes, lo, hi))
    proof.reverse()
    return proof


def new_subtrees(index: int, leaf: bytes, nodes: SubtreeSource) -> list[tuple[int, int, bytes]]:
    """The complete subtrees that appending leaf ``index`` completes, to store insert-only.

    Args:
        index: the new leaf's index (the tree size before the append), ``>= 0``.
        leaf: its 32-byte leaf hash (:func:`leaf_hash` of the entry).
        nodes: the source holding the first ``index`` leaves; only left siblings are read.

    Returns:
        ``(level, index, hash)`` rows, level 0 (the leaf itself) first, one per level ``l``
        with ``(index + 1) % 2**l == 0``: at most ``log2(index + 1) + 1`` rows, one lookup
        per row after the first.

    Raises:
        LogRangeError: a negative index; ValueError: a leaf hash that is not 32 bytes.
    """
    _check_int(index, "index")
    if index < 0:
        raise _range_error(f"leaf index {index} is negative", index=index)
    if len(leaf) != HASH_SIZE:
        raise ValueError(f"a leaf hash is {HASH_SIZE} bytes, not {len(leaf)}")
    rows = [(0, index, bytes(leaf))]
    level, position, acc = 0, index, bytes(leaf)
    while position & 1:
        acc = node_hash(nodes.subtree_hash(level, position - 1), acc)
        level += 1
        position >>= 1
        rows.append((level, position, acc))
    return rows


def _is_hash(value: object) -> bool:
    return isinstance(value, bytes | bytearray | memoryview) and len(value) == HASH_SIZE


def _is_size(value: object) -> bool:
    return type(value) is int and value >= 0


def _hash_list(proof: object) -> list[bytes] | None:
    if isinstance(proof, str | bytes | bytearray) or not isinstance(proof, Sequence):
        return None
    if not all(_is_hash(p) for p in proof):
        return None
    return [bytes(p) for p in proof]


def verify_inclusion(
    leaf_hash: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> bool:
    """Whether ``proof`` shows leaf ``index`` of the tree of ``size`` is ``leaf_hash``.

    RFC 9162 section 2.1.3.2, with its guards: ``index >= size`` (so any size 0) fails, the
    walk fails if the proof is longer than the path, and it fails if it ends before reaching
    the root (a hash missing). Never raises.

    Args:
        leaf_hash: the 32-byte leaf hash (:func:`leaf_hash` of the entry, not the entry).
        index: the leaf index, ``0 <= index < size``.
        size: the tree size of ``root``.
        proof: the audit path, 32-byte hashes from the leaf's sibling upward.
        root: the 32-byte root hash the tree of ``size`` is claimed to have.

    Returns:
        True only if the recomputed root equals ``root``.
    """
    path = _hash_list(proof)
    if path is None or not (_is_hash(leaf_hash) and _is_hash(root)):
        return False
    if not (_is_size(index) and _is_size(size)) or index >= size:
        return False
    fn, sn = index, size - 1
    acc = bytes(leaf_hash)
    for sibling in path:
        if sn == 0:
            return False  # more hashes than the path has levels
        if fn & 1 or fn == sn:
            acc = node_hash(sibling, acc)
            while not fn & 1 and fn:
                fn >>= 1
                sn >>= 1
        else:
            acc = node_hash(acc, sibling)
        fn >>= 1
        sn >>= 1
    return sn == 0 and acc == bytes(root)


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> bool:
    """Whether ``proof`` shows the tree of ``old_size`` is a prefix of that of ``new_size``.

    RFC 9162 section 2.1.4.2 for ``0 < old_size < new_size``. The cases the RFC's walk does
    not cover are decided here, as :func:`consistency_proof` produces them:

    * ``old_size > new_size``, or a negative size: False;
    * ``old_size == new_size``: True only with an empty proof and equal roots (and, for
      size 0, both roots the empty-tree root);
    * ``old_size == 0 < new_size``: True only with an empty proof and ``old_root`` the
      empty-tree root (the empty tree is a prefix of every tree);
    * otherwise an empty proof fails, and a proof with a hash too many or too few fails.

    Never raises.

    Args:
        old_size: the earlier tree size.
        new_size: the later tree size.
        old_root: the 32-byte root claimed for ``old_size``.
        new_root: the 32-byte root claimed for ``new_size``.
        proof: the consistency proof, 32-byte hashes in the RFC's order.

    Returns:
        True only if both recomputed roots equal the claimed ones.
    """
    path = _hash_list(proof)
    if path is None or not (_is_hash(old_root) and _is_hash(new_root)):
        return False
    if not (_is_size(old_size) and _is_size(new_size)) or old_size > new_size:
        return False
    old_root, new_root = bytes(old_root), bytes(new_root)
    if old_size == new_size:
        same = not path and old_root == new_root
        return same and (old_size > 0 or old_root == EMPTY_ROOT)
    if old_size == 0:
        return not path and old_root == EMPTY_ROOT
    if not path:
        return False
    if old_size & (old_size - 1) == 0:  # a power of two: the old root is the first node
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False  # more hashes than the walk needs
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == old_root and sr == new_root


class MemoryTree:
    """An in-memory, append-only tree that stores every complete subtree as it completes.

    The reference :class:`SubtreeSource`: ``levels[l][i]`` is the hash of complete subtree
    ``(l, i)``, written once and never changed, exactly the rows a database table of
    complete subtrees would hold (:meth:`subtrees` lists them). ``evstore check``-style
    audits rebuild one from the entries and compare it with what is stored.
    """

    def __init__(self, entries: Sequence[bytes] = ()) -> None:
        self._levels: list[list[bytes]] = []
        for entry in entries:
            self.append(entry)

    @property
    def size(self) -> int:
        """The number of leaves appended so far."""
        return len(self._levels[0]) if self._levels else 0

    def append(self, entry: bytes) -> int:
        """Append one entry (hashed with :func:`leaf_hash`); return its leaf index."""
        return self.append_leaf_hash(leaf_hash(entry))

    def append_leaf_hash(self, leaf: bytes) -> int:
        """Append a 32-byte leaf hash; return its leaf index."""
        index = self.size
        for level, position, digest in new_subtrees(index, leaf, self):
            if level == len(self._levels):
                self._levels.append([])
            if len(self._levels[level]) != position:  # insert-only and dense, by construction
                raise RuntimeError(f"subtree ({level}, {position}) out of order")
            self._levels[level].append(digest)
        return index

    def subtree_hash(self, level: int, index: int) -> bytes:
        """Hash of complete subtree ``(level, index)``.

        Raises:
            LogRangeError: that subtree is not complete yet (or level/index is negative).
        """
        if level < 0 or index < 0 or level >= len(self._levels):
            raise _range_error(f"no complete subtree ({level}, {index})", level=level, index=index)
        row = self._levels[level]
        if index >= len(row):
            raise _range_error(f"no complete subtree ({level}, {index})", level=level, index=index)
        return row[index]

    def subtrees(self) -> Iterator[tuple[int, int, bytes]]:
        """Every stored ``(level, index, hash)``, level by level, left to right."""
        for level, row in enumerate(self._levels):
            for index, digest in enumerate(row):
                yield level, index, digest

    def _size_or_current(self, size: int | None) -> int:
        if size is None:
            return self.size
        _check_int(size, "size")
        if not 0 <= size <= self.size:
            raise _range_error(
                f"tree size {size} is not in 0..{self.size}", size=size, current=self.size
            )
        return size

    def root(self, size: int | None = None) -> bytes:
        """MTH at ``size`` (default: the current size); see :func:`root`."""
        return root(self._size_or_current(size), self)

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        """Audit path of leaf ``index`` at ``size`` (default: the current size)."""
        return inclusion_proof(index, self._size_or_current(size), self)

    def consistency_proof(self, old_size: int, new_size: int | None = None) -> list[bytes]:
        """Consistency proof ``old_size`` -> ``new_size`` (default: current)."""
        return consistency_proof(old_size, self._size_or_current(new_size), self)


class CompactTree:
    """An append-only tree that keeps only its right frontier: O(log n) memory.

    It holds, per level, the last complete subtree, which is all that appending needs
    (:func:`new_subtrees` reads only left siblings, always the last complete subtree of
    their level) and all that the current root needs. It streams: an audit such as
    ``evstore check`` feeds it every entry in order and compares the rows :meth:`append`
    returns with the stored ones, at any log size, without holding the tree.
    """

    def __init__(self) -> None:
        self._size = 0
        self._last: list[tuple[int, bytes]] = []  # per level: (index, hash) of the last one

    @property
    def size(self) -> int:
        """The number of leaves appended so far."""
        return self._size

    def append(self, entry: bytes) -> list[tuple[int, int, bytes]]:
        """Append one entry; return the ``(level, index, hash)`` rows it completes."""
        return self.append_leaf_hash(leaf_hash(entry))

    def append_leaf_hash(self, leaf: bytes) -> list[tuple[int, int, bytes]]:
        """Append a 32-byte leaf hash; return the rows it completes (see :func:`new_subtrees`)."""
        rows = new_subtrees(self._size, leaf, self)
        for level, index, digest in rows:
            if level == len(self._last):
                self._last.append((index, digest))
            else:
                self._last[level] = (index, digest)
        self._size += 1
        return rows

    def subtree_hash(self, level: int, index: int) -> bytes:
        """Hash of complete subtree ``(level, index)`` if it is the last one of its level.

        Raises:
            LogRangeError: any other subtree (this tree does not keep it).
        """
        if 0 <= level < len(self._last) and self._last[level][0] == index:
            return self._last[level][1]
        raise _range_error(
            f"subtree ({level}, {index}) is not on the right frontier", level=level, index=index
        )

    def root(self) -> bytes:
        """MTH of all the leaves appended so far (see :func:`root`)."""
        return root(self._size, self)
