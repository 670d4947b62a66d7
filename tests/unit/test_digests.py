"""Digests: one-pass hashing and the SHA-256 hex <-> base64url encodings (no database).

The references are independent of evstore: ``hashlib.sha256``, ``blake3.blake3`` and
``base64.urlsafe_b64encode``, plus fixed known-answer values so that a wrong reference or a
mis-wired algorithm (sha256 where blake3 is expected) also fails.
"""

from __future__ import annotations

import base64
import hashlib
import io
import random

import blake3
import pytest

from evstore.core import digests
from evstore.core.digests import (
    Digest,
    Hasher,
    b64u_to_hex,
    blake3_hex,
    digest_bytes,
    digest_stream,
    hex_to_b64u,
    sha256_b64u,
    sha256_hex,
)

# Known answers (FIPS 180-2 "abc"; BLAKE3 reference test vectors for "" and "abc").
ABC_SHA256_HEX = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
ABC_SHA256_B64U = "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0"
ABC_BLAKE3_HEX = "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"
EMPTY_SHA256_HEX = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
EMPTY_BLAKE3_HEX = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"

B64U_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def _ref_b64u(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


# ---------------------------------------------------------------------------------------
# Known answers
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "sha", "b3"),
    [
        pytest.param(b"", EMPTY_SHA256_HEX, EMPTY_BLAKE3_HEX, id="empty"),
        pytest.param(b"abc", ABC_SHA256_HEX, ABC_BLAKE3_HEX, id="abc"),
    ],
)
def test_known_answers(data: bytes, sha: str, b3: str) -> None:
    assert sha256_hex(data) == sha
    assert blake3_hex(data) == b3
    d = digest_bytes(data)
    assert (d.sha256, d.blake3, d.size) == (sha, b3, len(data))
    h = Hasher()
    h.update(data)
    assert h.digest() == Digest(blake3=b3, sha256=sha, size=len(data))


def test_sha256_b64u_known_answer() -> None:
    assert sha256_b64u(b"abc") == ABC_SHA256_B64U
    assert len(ABC_SHA256_B64U) == 43


# ---------------------------------------------------------------------------------------
# Hasher: one pass over any chunking equals hashing the whole
# ---------------------------------------------------------------------------------------

# Sizes around the BLAKE3 chunk (1024 B) and block (64 B) boundaries, and one above the 1 MiB
# threshold where digest_bytes switches to multi-threaded BLAKE3.
SIZES = [0, 1, 63, 64, 65, 1023, 1024, 1025, 2048, 4097, 65537, (1 << 20) + 3, 3 * (1 << 20) + 17]


def _random_chunks(rng: random.Random, data: bytes) -> list[bytes | memoryview]:
    """Split ``data`` at random cut points; some chunks empty, some memoryviews."""
    cuts = sorted(rng.randrange(len(data) + 1) for _ in range(rng.randrange(0, 12)))
    bounds = [0, *cuts, len(data)]
    view = memoryview(data)
    out: list[bytes | memoryview] = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        out.append(view[a:b] if rng.random() < 0.5 else data[a:b])
    return out


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("seed", range(3))
def test_hasher_random_chunking_equals_one_shot(size: int, seed: int) -> None:
    rng = random.Random(size * 1000 + seed)
    data = rng.randbytes(size)
    chunks = _random_chunks(rng, data)
    assert b"".join(bytes(c) for c in chunks) == data  # the split itself is faithful

    h = Hasher()
    for c in chunks:
        h.update(c)
    got = h.digest()

    expected = Digest(
        blake3=blake3.blake3(data).hexdigest(),
        sha256=hashlib.sha256(data).hexdigest(),
        size=size,
    )
    assert got == expected
    assert h.size == size
    assert digest_bytes(data) == expected
    assert digest_stream(io.BytesIO(data), chunk_size=rng.choice([1, 7, 1024, 1 << 16])) == expected


def test_hasher_byte_at_a_time() -> None:
    data = bytes(range(256)) * 9
    h = Hasher()
    for i in range(len(data)):
        h.update(data[i : i + 1])
    assert h.digest() == digest_bytes(data)


def test_hasher_digest_is_a_snapshot() -> None:
    # digest() must not finalise: feeding more afterwards continues the same stream.
    h = Hasher()
    h.update(b"ab")
    first = h.digest()
    h.update(b"c")
    assert first == digest_bytes(b"ab")
    assert h.digest() == digest_bytes(b"abc")


def test_different_bytes_different_digests() -> None:
    a, b = digest_bytes(b"abc"), digest_bytes(b"abd")
    assert a.blake3 != b.blake3 and a.sha256 != b.sha256


def test_digest_stream_empty() -> None:
    assert digest_stream(io.BytesIO(b"")) == Digest(EMPTY_BLAKE3_HEX, EMPTY_SHA256_HEX, 0)


# ---------------------------------------------------------------------------------------
# hex <-> base64url
# ---------------------------------------------------------------------------------------

EDGE_DIGESTS = [
    pytest.param(bytes(32), "A" * 43, id="all-zero"),
    pytest.param(b"\xff" * 32, "_" * 42 + "8", id="all-ff"),
    pytest.param(bytes.fromhex(ABC_SHA256_HEX), ABC_SHA256_B64U, id="sha256-abc"),
    pytest.param(b"\xfb\xef\xbe" * 10 + b"\xfb\xef", "-----" * 8 + "--8", id="dashes"),
]


@pytest.mark.parametrize(("raw", "b64u"), EDGE_DIGESTS)
def test_known_encodings(raw: bytes, b64u: str) -> None:
    assert hex_to_b64u(raw.hex()) == b64u
    assert b64u_to_hex(b64u) == raw.hex()


@pytest.mark.parametrize("seed", range(50))
def test_round_trip_random(seed: int) -> None:
    raw = random.Random(seed).randbytes(32)
    b64u = hex_to_b64u(raw.hex())
    assert b64u == _ref_b64u(raw)
    assert len(b64u) == 43 and "=" not in b64u
    assert b64u_to_hex(b64u) == raw.hex()
    assert hex_to_b64u(b64u_to_hex(b64u)) == b64u


def test_b64u_to_hex_returns_lowercase() -> None:
    out = b64u_to_hex("_" * 42 + "8")
    assert out == "f" * 64


def test_sha256_b64u_matches_hex() -> None:
    for data in (b"", b"x", bytes(range(256))):
        assert b64u_to_hex(sha256_b64u(data)) == sha256_hex(data)
        assert sha256_b64u(data) == hex_to_b64u(sha256_hex(data))


def _with_low_bits(b64u: str, bits: int) -> str:
    """The same string with the last character's two unused low bits set to ``bits``."""
    idx = B64U_ALPHABET.index(b64u[-1])
    assert idx & 0b11 == 0, "a canonical 43-char encoding has zero padding bits"
    return b64u[:-1] + B64U_ALPHABET[idx | bits]


@pytest.mark.parametrize("bits", [0b01, 0b10, 0b11])
@pytest.mark.parametrize(("raw", "b64u"), EDGE_DIGESTS)
def test_b64u_to_hex_rejects_non_zero_padding_bits(raw: bytes, b64u: str, bits: int) -> None:
    bad = _with_low_bits(b64u, bits)
    # A lenient decoder maps the bad spelling to the same bytes: that is exactly the ambiguity.
    assert base64.urlsafe_b64decode(bad + "=") == raw
    with pytest.raises(ValueError, match="padding bits"):
        b64u_to_hex(bad)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param(ABC_SHA256_B64U[:-1], id="42-chars"),
        pytest.param(ABC_SHA256_B64U + "A", id="44-chars"),
        pytest.param(ABC_SHA256_B64U + "=", id="padded-44"),
        pytest.param(ABC_SHA256_B64U[:-1] + "=", id="padding-in-43"),
        pytest.param(ABC_SHA256_B64U[:-2] + "==", id="double-padding-in-43"),
        pytest.param(
            base64.b64encode(bytes.fromhex(ABC_SHA256_HEX)).decode()[:43],
            id="std-alphabet-plus-slash",
        ),
        pytest.param("+" + ABC_SHA256_B64U[1:], id="plus"),
        pytest.param("/" + ABC_SHA256_B64U[1:], id="slash"),
        pytest.param(" " + ABC_SHA256_B64U[1:], id="space"),
        pytest.param(ABC_SHA256_B64U[:20] + "." + ABC_SHA256_B64U[21:], id="dot"),
        pytest.param("\u0663" + ABC_SHA256_B64U[1:], id="non-ascii-digit"),
        pytest.param("\u00e9" + ABC_SHA256_B64U[1:], id="non-ascii-letter"),
        pytest.param(ABC_SHA256_HEX, id="hex-not-b64u"),
    ],
)
def test_b64u_to_hex_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        b64u_to_hex(text)


def test_std_alphabet_case_really_has_plus_or_slash() -> None:
    # Guard for the "std-alphabet" case above: it must differ from the url-safe spelling.
    std = base64.b64encode(bytes.fromhex(ABC_SHA256_HEX)).decode()[:43]
    assert std != ABC_SHA256_B64U and ("+" in std or "/" in std)


@pytest.mark.parametrize("text", ["", "00" * 31, "00" * 33, "zz" * 32])
def test_hex_to_b64u_rejects_wrong_length_or_non_hex(text: str) -> None:
    with pytest.raises(ValueError):
        hex_to_b64u(text)


# ---------------------------------------------------------------------------------------
# Digest.forms()
# ---------------------------------------------------------------------------------------


def test_digest_forms_abc() -> None:
    d = digest_bytes(b"abc")
    assert d.address == "blake3:" + ABC_BLAKE3_HEX
    assert d.sha256_b64u == ABC_SHA256_B64U
    assert d.forms() == {
        "address": "blake3:" + ABC_BLAKE3_HEX,
        "size": 3,
        "sha256": "sha256:" + ABC_SHA256_HEX,
        "sha256_b64u": "sha256:" + ABC_SHA256_B64U,
        "object_store": "object-store:sha256:" + ABC_SHA256_B64U,
    }


def test_digest_forms_all_parse_back_as_refs() -> None:
    # Every form but size is an accepted content ref naming the same bytes.
    from evstore.core.refs import parse_ref

    d = digest_bytes(b"forms")
    forms = d.forms()
    assert parse_ref(forms["address"]).hex == d.blake3
    for key in ("sha256", "sha256_b64u", "object_store"):
        ref = parse_ref(forms[key])
        assert (ref.algorithm, ref.hex) == ("sha256", d.sha256), key


def test_digest_is_frozen() -> None:
    d = digest_bytes(b"x")
    with pytest.raises(AttributeError):
        d.size = 2  # type: ignore[misc]


def test_all_is_sorted_and_exported() -> None:
    assert list(digests.__all__) == sorted(digests.__all__)
    for name in digests.__all__:
        assert hasattr(digests, name)
