"""A naive RFC 9162 section 2.1 reference and an independent proof verifier, for the log tests.

Written from the RFC text (recursive MTH, PATH and SUBPROOF, memoised; the 2.1.3.2
verification walk) and the signed-note spec (Ed25519 with ``cryptography`` directly), not
from evstore's code.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


class Naive:
    """MTH, PATH and PROOF of RFC 9162 section 2.1 over a list of entries, by recursion."""

    def __init__(self, entries: list[bytes]) -> None:
        self.leaves = [hashlib.sha256(b"\x00" + e).digest() for e in entries]
        self.mth = cache(self._mth)

    @staticmethod
    def _k(n: int) -> int:
        k = 1
        while k * 2 < n:
            k *= 2
        return k

    def _mth(self, lo: int, hi: int) -> bytes:
        n = hi - lo
        if n == 0:
            return hashlib.sha256(b"").digest()
        if n == 1:
            return self.leaves[lo]
        k = self._k(n)
        return hashlib.sha256(b"\x01" + self.mth(lo, lo + k) + self.mth(lo + k, hi)).digest()

    def path(self, m: int, lo: int, hi: int) -> list[bytes]:
        n = hi - lo
        if n == 1:
            return []
        k = self._k(n)
        if m - lo < k:
            return self.path(m, lo, lo + k) + [self.mth(lo + k, hi)]
        return self.path(m, lo + k, hi) + [self.mth(lo, lo + k)]

    def subproof(self, m: int, lo: int, hi: int, whole: bool) -> list[bytes]:
        n = hi - lo
        if m == n:
            return [] if whole else [self.mth(lo, hi)]
        k = self._k(n)
        if m <= k:
            return self.subproof(m, lo, lo + k, whole) + [self.mth(lo + k, hi)]
        return self.subproof(m - k, lo + k, hi, False) + [self.mth(lo, lo + k)]

    def proof(self, m: int, n: int) -> list[bytes]:
        return [] if m in (0, n) else self.subproof(m, 0, n, True)


def independent_inclusion(leaf: bytes, index: int, size: int, path: list[bytes], root: bytes):
    """RFC 9162 2.1.3.2, written here from the RFC text."""
    if index >= size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return False
        if fn % 2 == 1 or fn == sn:
            r = hashlib.sha256(b"\x01" + p + r).digest()
            if fn % 2 == 0:
                while fn % 2 == 0 and fn != 0:
                    fn //= 2
                    sn //= 2
        else:
            r = hashlib.sha256(b"\x01" + r + p).digest()
        fn //= 2
        sn //= 2
    return sn == 0 and r == root


def independent_note(note: str, vkey: str) -> tuple[str, int, bytes]:
    """Check a signed note's Ed25519 signature by ``vkey`` (signed-note); return the checkpoint."""
    name, key_id_hex, key_b64 = vkey.split("+", 2)
    raw = base64.b64decode(key_b64)
    assert raw[0] == 1
    text, _, sigs = note.rpartition("\n\n")
    text += "\n"
    ok = False
    for line in sigs.strip("\n").split("\n"):
        signer, sig_b64 = line.removeprefix("\u2014 ").split(" ")
        sig = base64.b64decode(sig_b64)
        if signer == name and sig[:4].hex() == key_id_hex:
            Ed25519PublicKey.from_public_bytes(raw[1:]).verify(sig[4:], text.encode())
            ok = True
    assert ok
    origin, size, root = text.rstrip("\n").split("\n")[:3]
    assert origin == name
    return origin, int(size), base64.b64decode(root)
