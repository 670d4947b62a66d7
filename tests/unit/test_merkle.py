"""store/tlog/merkle.py against RFC 9162 section 2.1, published vectors and a naive reference.

The reference below is written straight from the recursive definitions of RFC 9162
section 2.1.1 (MTH), 2.1.3.1 (PATH) and 2.1.4.1 (PROOF/SUBPROOF), with nothing shared with
the module under test but SHA-256. A second, recursive inclusion verifier (not the RFC's
bit-walk) checks evstore's proofs with code that is not evstore's.
"""

import hashlib
from functools import lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evstore.core.errors import InputError
from evstore.tlog import merkle
from evstore.tlog.merkle import (
    EMPTY_ROOT,
    CompactTree,
    LogRangeError,
    MemoryTree,
    SubtreeSource,
    consistency_proof,
    inclusion_proof,
    new_subtrees,
    verify_consistency,
    verify_inclusion,
)

# ---------------------------------------------------------------------------------------
# The naive reference (RFC 9162 2.1), over a fixed list of entries.
# ---------------------------------------------------------------------------------------


def _sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


class Reference:
    """MTH, PATH and PROOF exactly as the RFC's recursive definitions read."""

    def __init__(self, entries: list[bytes]) -> None:
        self.entries = entries
        self.mth = lru_cache(maxsize=None)(self._mth)

    def _mth(self, lo: int, hi: int) -> bytes:  # MTH(D[lo:hi])
        n = hi - lo
        if n == 0:
            return _sha(b"")
        if n == 1:
            return _sha(b"\x00" + self.entries[lo])
        k = 1
        while k * 2 < n:
            k *= 2
        return _sha(b"\x01" + self.mth(lo, lo + k) + self.mth(lo + k, hi))

    def path(self, m: int, lo: int, hi: int) -> list[bytes]:  # PATH(m, D[lo:hi])
        n = hi - lo
        if n == 1:
            return []
        k = 1
        while k * 2 < n:
            k *= 2
        if m < k:
            return self.path(m, lo, lo + k) + [self.mth(lo + k, hi)]
        return self.path(m - k, lo + k, hi) + [self.mth(lo, lo + k)]

    def subproof(self, m: int, lo: int, hi: int, b: bool) -> list[bytes]:
        n = hi - lo
        if m == n:
            return [] if b else [self.mth(lo, hi)]
        k = 1
        while k * 2 < n:
            k *= 2
        if m <= k:
            return self.subproof(m, lo, lo + k, b) + [self.mth(lo + k, hi)]
        return self.subproof(m - k, lo + k, hi, False) + [self.mth(lo, lo + k)]

    def proof(self, m: int, n: int) -> list[bytes]:  # PROOF(m, D[0:n]), 0 < m <= n
        return self.subproof(m, 0, n, True)

    def directions(self, m: int, lo: int, hi: int) -> list[bool]:
        """For each PATH element, whether the sibling sits on the left."""
        n = hi - lo
        if n == 1:
            return []
        k = 1
        while k * 2 < n:
            k *= 2
        if m < k:
            return self.directions(m, lo, lo + k) + [False]
        return self.directions(m - k, lo + k, hi) + [True]

    def root_from_path(self, leaf: bytes, m: int, n: int, path: list[bytes]) -> bytes | None:
        """An independent inclusion verifier: fold PATH by the RFC's recursion, not bits."""
        sides = self.directions(m, 0, n)
        if len(sides) != len(path):
            return None
        acc = leaf
        for left, sibling in zip(sides, path, strict=True):
            acc = _sha(b"\x01" + sibling + acc) if left else _sha(b"\x01" + acc + sibling)
        return acc


def _entries(n: int) -> list[bytes]:
    return [i.to_bytes(4, "big") + b"entry" for i in range(n)]


MAX = 300
REF = Reference(_entries(MAX))
TREE = MemoryTree(REF.entries)

# Published RFC 6962 test data (certificate-transparency and transparency-dev test suites).
CT_ENTRIES = [
    bytes.fromhex(h)
    for h in (
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    )
]
CT_ROOTS = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
CT_INCLUSION = [  # (index, size, proof)
    (0, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]),
    (5, 8, ["bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
    (2, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
    (1, 5, ["6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]),
]  # fmt: skip
CT_CONSISTENCY = [  # (old, new, proof)
    (1, 1, []),
    (1, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]),
    (6, 8, ["0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
    (2, 5, ["5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]),
]  # fmt: skip


# ---------------------------------------------------------------------------------------
# Published vectors
# ---------------------------------------------------------------------------------------


def test_published_roots_for_every_size():
    tree = MemoryTree(CT_ENTRIES)
    assert EMPTY_ROOT.hex() == CT_ROOTS[0]
    for size, want in enumerate(CT_ROOTS):
        assert tree.root(size).hex() == want
        assert Reference(CT_ENTRIES).mth(0, size).hex() == want


@pytest.mark.parametrize(("index", "size", "proof"), CT_INCLUSION)
def test_published_inclusion_proofs(index, size, proof):
    tree = MemoryTree(CT_ENTRIES)
    want = [bytes.fromhex(h) for h in proof]
    assert tree.inclusion_proof(index, size) == want
    leaf = merkle.leaf_hash(CT_ENTRIES[index])
    assert verify_inclusion(leaf, index, size, want, bytes.fromhex(CT_ROOTS[size]))


@pytest.mark.parametrize(("old", "new", "proof"), CT_CONSISTENCY)
def test_published_consistency_proofs(old, new, proof):
    tree = MemoryTree(CT_ENTRIES)
    want = [bytes.fromhex(h) for h in proof]
    assert tree.consistency_proof(old, new) == want
    old_root, new_root = bytes.fromhex(CT_ROOTS[old]), bytes.fromhex(CT_ROOTS[new])
    assert verify_consistency(old, new, old_root, new_root, want)


# ---------------------------------------------------------------------------------------
# Exhaustive agreement with the reference, sizes 0..MAX
# ---------------------------------------------------------------------------------------


def test_roots_and_stored_subtrees_match_the_reference():
    for size in range(MAX + 1):
        assert TREE.root(size) == REF.mth(0, size), size
    for level, index, digest in TREE.subtrees():
        lo = index << level
        assert digest == REF.mth(lo, lo + (1 << level)), (level, index)
    assert sum(1 for _ in TREE.subtrees()) == 2 * MAX - bin(MAX).count("1")


def test_every_inclusion_pair_up_to_max():
    for size in range(1, MAX + 1):
        root = REF.mth(0, size)
        for index in range(size):
            proof = TREE.inclusion_proof(index, size)
            assert proof == REF.path(index, 0, size), (index, size)
            leaf = REF.mth(index, index + 1)
            assert verify_inclusion(leaf, index, size, proof, root), (index, size)
            assert REF.root_from_path(leaf, index, size, proof) == root, (index, size)


def test_every_consistency_pair_up_to_max():
    roots = [REF.mth(0, n) for n in range(MAX + 1)]
    for new in range(MAX + 1):
        for old in range(new + 1):
            proof = TREE.consistency_proof(old, new)
            want = [] if old == 0 else REF.proof(old, new)
            assert proof == want, (old, new)
            assert verify_consistency(old, new, roots[old], roots[new], proof), (old, new)


# ---------------------------------------------------------------------------------------
# Random sizes up to a few thousand (hypothesis)
# ---------------------------------------------------------------------------------------

BIG = 3000
BIG_REF = Reference(_entries(BIG))
BIG_TREE = MemoryTree(BIG_REF.entries)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_random_sizes_agree_with_the_reference(data):
    size = data.draw(st.integers(1, BIG), label="size")
    index = data.draw(st.integers(0, size - 1), label="index")
    old = data.draw(st.integers(0, size), label="old")
    root = BIG_REF.mth(0, size)
    assert BIG_TREE.root(size) == root
    path = BIG_TREE.inclusion_proof(index, size)
    assert path == BIG_REF.path(index, 0, size)
    assert verify_inclusion(BIG_REF.mth(index, index + 1), index, size, path, root)
    proof = BIG_TREE.consistency_proof(old, size)
    assert proof == ([] if old == 0 else BIG_REF.proof(old, size))
    assert verify_consistency(old, size, BIG_REF.mth(0, old), root, proof)


# ---------------------------------------------------------------------------------------
# Every mutation of a valid proof fails
# ---------------------------------------------------------------------------------------

OTHER = _sha(b"some other hash")


def _flips(proof: list[bytes]):
    for i, h in enumerate(proof):
        for bit in (0, 131, 255):  # first, a middle and the last bit
            bad = bytearray(h)
            bad[bit // 8] ^= 1 << (bit % 8)
            yield proof[:i] + [bytes(bad)] + proof[i + 1 :]


def _drops_and_adds(proof: list[bytes]):
    for i in range(len(proof)):
        yield proof[:i] + proof[i + 1 :]
    for i in range(len(proof) + 1):
        for extra in (OTHER, EMPTY_ROOT, proof[i - 1] if i else OTHER):
            yield proof[:i] + [extra] + proof[i:]


MUTATION_MAX = 40


def test_every_inclusion_mutation_fails():
    for size in range(1, MUTATION_MAX + 1):
        root = REF.mth(0, size)
        for index in range(size):
            leaf = REF.mth(index, index + 1)
            proof = TREE.inclusion_proof(index, size)
            for bad in [*_flips(proof), *_drops_and_adds(proof)]:
                assert not verify_inclusion(leaf, index, size, bad, root), (index, size, bad)
            for other in range(size + 2):
                if other != index:  # another leaf of the same tree never shares a path
                    assert not verify_inclusion(leaf, other, size, proof, root), (index, other)
            assert not verify_inclusion(OTHER, index, size, proof, root)
            assert not verify_inclusion(leaf, index, size, proof, OTHER)
            sizes = {0, index, index + 1, size - 1, size + 1, size ^ 1, size ^ 2, size * 2}
            for other in sorted(sizes | {size // 2, size + 3}):
                if other == size:
                    continue
                # Against the other size's own root (a checkpoint for another size):
                # fails unless that tree really has this very path for the leaf.
                ok = verify_inclusion(leaf, index, other, proof, REF.mth(0, other))
                legit = index < other and TREE.inclusion_proof(index, other) == proof
                assert ok == legit, (index, size, other)
                # Same root, size changed: the RFC walk only depends on the path's shape, so
                # it passes exactly when both sizes give this leaf the same shape. The
                # signed checkpoint is what binds the size to the root.
                ok = verify_inclusion(leaf, index, other, proof, root)
                same = index < other and REF.directions(index, 0, other) == REF.directions(
                    index, 0, size
                )
                assert ok == same, (index, size, other)


def test_every_consistency_mutation_fails():
    roots = [REF.mth(0, n) for n in range(2 * MUTATION_MAX + 3)]
    for new in range(1, MUTATION_MAX + 1):
        for old in range(1, new):
            proof = TREE.consistency_proof(old, new)
            r1, r2 = roots[old], roots[new]
            for bad in [*_flips(proof), *_drops_and_adds(proof), []]:
                assert not verify_consistency(old, new, r1, r2, bad), (old, new, bad)
            assert not verify_consistency(old, new, r2, r1, proof)
            assert not verify_consistency(old, new, OTHER, r2, proof)
            assert not verify_consistency(old, new, r1, OTHER, proof)
            assert not verify_consistency(new, old, r2, r1, proof)
            olds = {0, old - 1, old + 1, old ^ 2, old // 2, old * 2, new}
            news = {new - 1, new + 1, new ^ 2, new // 2, new * 2, old}
            for o2 in sorted(o for o in olds if 0 <= o < len(roots)):
                for n2 in sorted(n for n in news if o2 <= n < len(roots)):
                    if (o2, n2) == (old, new):
                        continue
                    # Claimed sizes with their own roots: only a proof that really is the
                    # proof for those sizes passes.
                    ok = verify_consistency(o2, n2, roots[o2], roots[n2], proof)
                    legit = 0 < o2 < n2 and TREE.consistency_proof(o2, n2) == proof
                    assert ok == legit, (old, new, o2, n2)


def test_edge_cases_of_the_verifiers():
    r1 = REF.mth(0, 1)
    leaf0 = REF.mth(0, 1)
    # Inclusion: size 0, index >= size, the one-leaf tree.
    assert verify_inclusion(leaf0, 0, 1, [], r1)
    assert not verify_inclusion(leaf0, 0, 0, [], EMPTY_ROOT)
    assert not verify_inclusion(leaf0, 0, 0, [], leaf0)
    assert not verify_inclusion(leaf0, 1, 1, [], r1)
    assert not verify_inclusion(leaf0, 2, 1, [], r1)
    assert not verify_inclusion(leaf0, 0, 1, [OTHER], r1)
    # Consistency: equal sizes, old size 0, time travel.
    assert verify_consistency(0, 0, EMPTY_ROOT, EMPTY_ROOT, [])
    assert not verify_consistency(0, 0, OTHER, OTHER, [])
    assert not verify_consistency(0, 0, EMPTY_ROOT, EMPTY_ROOT, [EMPTY_ROOT])
    assert verify_consistency(5, 5, OTHER, OTHER, [])
    assert not verify_consistency(5, 5, OTHER, r1, [])
    assert not verify_consistency(5, 5, OTHER, OTHER, [OTHER])
    assert verify_consistency(0, 7, EMPTY_ROOT, REF.mth(0, 7), [])
    assert not verify_consistency(0, 7, OTHER, REF.mth(0, 7), [])
    assert not verify_consistency(0, 7, EMPTY_ROOT, REF.mth(0, 7), [EMPTY_ROOT])
    assert not verify_consistency(1, 0, r1, EMPTY_ROOT, [])
    assert not verify_consistency(2, 1, REF.mth(0, 2), r1, [])
    assert not verify_consistency(1, 2, r1, REF.mth(0, 2), [])


@pytest.mark.parametrize(
    "args",
    [
        (b"short", 0, 1, [], b"x" * 32),
        (b"x" * 32, 0, 1, [], b"short"),
        (b"x" * 32, 0, 1, [b"short"], b"x" * 32),
        (b"x" * 32, -1, 1, [], b"x" * 32),
        (b"x" * 32, 0, -1, [], b"x" * 32),
        (b"x" * 32, True, 2, [b"y" * 32], b"x" * 32),
        (b"x" * 32, 0.0, 1, [], b"x" * 32),
        (b"x" * 32, 0, 1, b"x" * 32, b"x" * 32),
        (b"x" * 32, 0, 1, None, b"x" * 32),
        ("x" * 32, 0, 1, [], "x" * 32),
    ],
)
def test_inclusion_verifier_never_raises_on_garbage(args):
    assert verify_inclusion(*args) is False


@pytest.mark.parametrize(
    "args",
    [
        (1, 2, b"short", b"x" * 32, [b"y" * 32]),
        (1, 2, b"x" * 32, b"short", [b"y" * 32]),
        (1, 2, b"x" * 32, b"x" * 32, [b""]),
        (-1, 2, b"x" * 32, b"x" * 32, []),
        (1, -2, b"x" * 32, b"x" * 32, []),
        (1, 2, b"x" * 32, b"x" * 32, None),
        (1.0, 2, b"x" * 32, b"x" * 32, [b"y" * 32]),
        (0, 0, "x" * 32, "x" * 32, []),
    ],
)
def test_consistency_verifier_never_raises_on_garbage(args):
    assert verify_consistency(*args) is False


# ---------------------------------------------------------------------------------------
# Generators: ranges, lookups, the storage-agnostic source
# ---------------------------------------------------------------------------------------


def test_generators_raise_a_typed_error_out_of_range():
    tree = MemoryTree(_entries(5))
    for call in (
        lambda: tree.inclusion_proof(5, 5),
        lambda: tree.inclusion_proof(0, 0),
        lambda: tree.inclusion_proof(-1, 3),
        lambda: tree.inclusion_proof(0, 6),
        lambda: tree.consistency_proof(3, 2),
        lambda: tree.consistency_proof(-1, 2),
        lambda: tree.consistency_proof(1, 6),
        lambda: tree.root(6),
        lambda: tree.root(-1),
        lambda: tree.subtree_hash(0, 5),
        lambda: tree.subtree_hash(3, 0),
        lambda: merkle.root(-1, tree),
        lambda: inclusion_proof(3, 3, tree),
        lambda: consistency_proof(4, 3, tree),
        lambda: new_subtrees(-1, b"x" * 32, tree),
    ):
        with pytest.raises(LogRangeError) as info:
            call()
        assert info.value.code == "log.range"
        assert isinstance(info.value, InputError)
    with pytest.raises(TypeError):
        tree.inclusion_proof(True, 3)
    with pytest.raises(ValueError):
        new_subtrees(5, b"short", tree)


class CountingSource:
    """A stand-in for a table of complete subtrees: counts the lookups."""

    def __init__(self, tree: MemoryTree) -> None:
        self.tree = tree
        self.lookups = 0

    def subtree_hash(self, level: int, index: int) -> bytes:
        self.lookups += 1
        return self.tree.subtree_hash(level, index)


def test_proofs_cost_logarithmic_lookups_at_any_size():
    source = CountingSource(BIG_TREE)
    assert isinstance(source, SubtreeSource)
    for size in (1, 2, 3, 255, 256, 257, 1023, 2047, 2999, 3000):
        bound = 2 * size.bit_length() + 1
        source.lookups = 0
        merkle.root(size, source)
        assert source.lookups <= size.bit_length()
        for index in (0, size // 3, size - 1):
            source.lookups = 0
            inclusion_proof(index, size, source)
            assert source.lookups <= bound, (index, size, source.lookups)
        for old in (1, size // 2, size - 1):
            if 0 < old < size:
                source.lookups = 0
                consistency_proof(old, size, source)
                assert source.lookups <= bound, (old, size, source.lookups)


def test_new_subtrees_rows_are_what_a_table_would_insert():
    tree = MemoryTree()
    rows = []
    for i, entry in enumerate(_entries(64)):
        leaf = merkle.leaf_hash(entry)
        made = new_subtrees(i, leaf, tree)
        assert made[0] == (0, i, leaf)
        assert len(made) == 1 + ((i + 1) & -(i + 1)).bit_length() - 1
        rows += made
        assert tree.append(entry) == i
    assert sorted(rows) == sorted(tree.subtrees())
    assert tree.size == 64


def test_hash_primitives():
    assert merkle.leaf_hash(b"") == _sha(b"\x00")
    assert merkle.node_hash(b"a", b"b") == _sha(b"\x01ab")
    assert merkle.HASH_SIZE == 32
    assert MemoryTree().root() == EMPTY_ROOT
    assert MemoryTree().consistency_proof(0) == []


def test_all_is_sorted_and_complete():
    assert list(merkle.__all__) == sorted(merkle.__all__)
    for name in merkle.__all__:
        assert hasattr(merkle, name)


def test_compact_tree_streams_the_same_rows_and_roots():
    compact = CompactTree()
    assert compact.root() == EMPTY_ROOT
    rows = []
    for i, entry in enumerate(REF.entries):
        rows += compact.append(entry)
        assert compact.size == i + 1
        assert compact.root() == REF.mth(0, i + 1), i
    assert rows == sorted(TREE.subtrees(), key=lambda r: (r[1] + 1) << r[0])
    assert sorted(rows) == sorted(TREE.subtrees())
    with pytest.raises(LogRangeError):
        compact.subtree_hash(0, 0)
    assert compact.subtree_hash(0, MAX - 1) == REF.mth(MAX - 1, MAX)
