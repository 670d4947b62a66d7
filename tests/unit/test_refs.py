"""Content refs (issue 2, "Content refs"): four accepted forms, everything else ``ref.syntax``."""

from __future__ import annotations

import base64
import hashlib

import pytest

from evstore.core import refs
from evstore.core.errors import InputError, RefSyntaxError
from evstore.core.refs import ACCEPTED_FORMS, ContentRef, parse_ref

# The accepted forms as the issue and docs spell them; the error message must name each.
FORMS_TEXT = (
    "blake3:<64 lowercase hex>",
    "sha256:<64 lowercase hex>",
    "sha256:<43-char base64url>",
    "object-store:sha256:<43-char base64url>",
)

SHA_HEX = hashlib.sha256(b"abc").hexdigest()
SHA_B64U = "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0"  # sha256("abc"), fixed literal
B3_HEX = "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"  # blake3("abc")
ZERO_B64U = "A" * 43
FF_B64U = "_" * 42 + "8"
B64U_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def test_fixture_values_are_consistent() -> None:
    assert base64.urlsafe_b64encode(bytes.fromhex(SHA_HEX)).rstrip(b"=").decode() == SHA_B64U


def test_accepted_forms_constant() -> None:
    assert ACCEPTED_FORMS == FORMS_TEXT


# ---------------------------------------------------------------------------------------
# Accepted
# ---------------------------------------------------------------------------------------

ACCEPTED = [
    # id, text, algorithm, hex
    ("blake3-hex", "blake3:" + B3_HEX, "blake3", B3_HEX),
    ("blake3-zero", "blake3:" + "0" * 64, "blake3", "0" * 64),
    ("sha256-hex", "sha256:" + SHA_HEX, "sha256", SHA_HEX),
    ("sha256-b64u", "sha256:" + SHA_B64U, "sha256", SHA_HEX),
    ("object-store", "object-store:sha256:" + SHA_B64U, "sha256", SHA_HEX),
    ("sha256-b64u-zero", "sha256:" + ZERO_B64U, "sha256", "0" * 64),
    ("sha256-b64u-ff", "sha256:" + FF_B64U, "sha256", "f" * 64),
    ("object-store-ff", "object-store:sha256:" + FF_B64U, "sha256", "f" * 64),
    # 43 characters that are all hex digits are still valid base64url.
    ("b64u-that-looks-hex", "sha256:" + "a" * 42 + "A", "sha256", None),
]


@pytest.mark.parametrize(
    ("text", "algorithm", "hex_"), [a[1:] for a in ACCEPTED], ids=[a[0] for a in ACCEPTED]
)
def test_accepted_forms_resolve(text: str, algorithm: str, hex_: str | None) -> None:
    ref = parse_ref(text)
    assert isinstance(ref, ContentRef)
    assert ref.algorithm == algorithm
    assert ref.text == text
    assert len(ref.hex) == 64 and ref.hex == ref.hex.lower()
    if hex_ is not None:
        assert ref.hex == hex_
    else:
        b64 = text.split(":")[-1]
        assert ref.hex == base64.urlsafe_b64decode(b64 + "=").hex()


def test_three_sha256_spellings_name_the_same_digest() -> None:
    got = {
        parse_ref(t).hex
        for t in ("sha256:" + SHA_HEX, "sha256:" + SHA_B64U, "object-store:sha256:" + SHA_B64U)
    }
    assert got == {SHA_HEX}


# ---------------------------------------------------------------------------------------
# Rejected
# ---------------------------------------------------------------------------------------


def _low_bits(b64u: str, bits: int) -> str:
    """Set the two unused low bits of the last character (a non-canonical spelling)."""
    idx = B64U_ALPHABET.index(b64u[-1])
    assert idx & 0b11 == 0
    return b64u[:-1] + B64U_ALPHABET[idx | bits]


def _mixed_case(h: str) -> str:
    out = "".join(c.upper() if i % 2 else c for i, c in enumerate(h))
    assert out != h and out != h.upper()
    return out


def _one_upper(h: str) -> str:
    """Upper-case only the last letter (a single wrong character)."""
    i = max(i for i, c in enumerate(h) if c.isalpha())
    return h[:i] + h[i].upper() + h[i + 1 :]


REJECTED = [
    # case-folded hex
    ("blake3-upper", "blake3:" + B3_HEX.upper()),
    ("blake3-mixed", "blake3:" + _mixed_case(B3_HEX)),
    ("sha256-upper", "sha256:" + SHA_HEX.upper()),
    ("sha256-mixed", "sha256:" + _mixed_case(SHA_HEX)),
    ("blake3-one-upper", "blake3:" + _one_upper(B3_HEX)),
    # wrong lengths
    ("blake3-63", "blake3:" + B3_HEX[:-1]),
    ("blake3-65", "blake3:" + B3_HEX + "0"),
    ("blake3-empty", "blake3:"),
    ("sha256-63", "sha256:" + SHA_HEX[:-1]),
    ("sha256-65", "sha256:" + SHA_HEX + "0"),
    ("sha256-b64u-42", "sha256:" + SHA_B64U[:-1]),
    ("sha256-b64u-44", "sha256:" + SHA_B64U + "A"),
    ("object-store-42", "object-store:sha256:" + SHA_B64U[:-1]),
    ("object-store-44", "object-store:sha256:" + SHA_B64U + "A"),
    ("sha256-empty", "sha256:"),
    # padding
    ("sha256-b64u-padded", "sha256:" + SHA_B64U + "="),
    ("object-store-padded", "object-store:sha256:" + SHA_B64U + "="),
    ("sha256-b64u-pad-in-43", "sha256:" + SHA_B64U[:-1] + "="),
    # standard base64 alphabet
    ("sha256-std-b64", "sha256:" + base64.b64encode(bytes.fromhex(SHA_HEX)).rstrip(b"=").decode()),
    # non-zero padding bits (the last char's two low bits), every non-zero pattern
    ("sha256-b64u-bits01", "sha256:" + _low_bits(SHA_B64U, 0b01)),
    ("sha256-b64u-bits10", "sha256:" + _low_bits(SHA_B64U, 0b10)),
    ("sha256-b64u-bits11", "sha256:" + _low_bits(SHA_B64U, 0b11)),
    ("object-store-bits01", "object-store:sha256:" + _low_bits(SHA_B64U, 0b01)),
    ("object-store-bits11", "object-store:sha256:" + _low_bits(SHA_B64U, 0b11)),
    ("zero-bits01", "sha256:" + _low_bits(ZERO_B64U, 0b01)),
    ("ff-bits10", "sha256:" + _low_bits(FF_B64U, 0b10)),
    # unknown or mis-spelled algorithms
    ("sha512", "sha512:" + SHA_HEX),
    ("sha-256", "sha-256:" + SHA_HEX),
    ("SHA256-prefix", "SHA256:" + SHA_HEX),
    ("BLAKE3-prefix", "BLAKE3:" + B3_HEX),
    ("md5", "md5:" + "0" * 32),
    ("blake2b", "blake2b:" + B3_HEX),
    ("empty-algorithm", ":" + SHA_HEX),
    # object-store takes only sha256 + base64url
    ("object-store-hex", "object-store:sha256:" + SHA_HEX),
    ("object-store-blake3", "object-store:blake3:" + B3_HEX),
    ("object-store-bare-b64u", "object-store:" + SHA_B64U),
    ("object-store-twice", "object-store:object-store:sha256:" + SHA_B64U),
    ("object-store-upper", "OBJECT-STORE:sha256:" + SHA_B64U),
    # blake3 takes only hex
    ("blake3-b64u", "blake3:" + SHA_B64U),
    # empty and whitespace
    ("empty", ""),
    ("space", " "),
    ("newline", "\n"),
    ("leading-space", " blake3:" + B3_HEX),
    ("trailing-space", "blake3:" + B3_HEX + " "),
    ("trailing-newline", "sha256:" + SHA_HEX + "\n"),
    ("trailing-newline-b64u", "sha256:" + SHA_B64U + "\n"),
    ("space-after-colon", "sha256: " + SHA_HEX),
    ("inner-space", "sha256:" + SHA_HEX[:32] + " " + SHA_HEX[33:]),
    # missing prefix
    ("bare-hex", SHA_HEX),
    ("bare-b64u", SHA_B64U),
    ("bare-algorithm", "blake3"),
    # other look-alikes
    ("uri-style", "sha256-" + SHA_B64U),
    ("double-colon", "sha256::" + SHA_HEX),
    ("non-ascii-digit", "blake3:" + "\u0663" * 64),
    ("fullwidth-hex", "blake3:" + "\uff41" * 64),
]


@pytest.mark.parametrize("text", [r[1] for r in REJECTED], ids=[r[0] for r in REJECTED])
def test_rejected_is_ref_syntax_naming_the_forms(text: str) -> None:
    with pytest.raises(RefSyntaxError) as info:
        parse_ref(text)
    err = info.value
    assert isinstance(err, InputError)
    assert err.code == "ref.syntax"
    assert err.to_dict()["code"] == "ref.syntax"
    for form in FORMS_TEXT:
        assert form in err.message, form
    assert err.details["accepted_forms"] == list(FORMS_TEXT)
    assert repr(text) in err.message  # the offending ref is quoted back


def test_rejected_ids_are_unique_and_inputs_distinct() -> None:
    assert len({r[0] for r in REJECTED}) == len(REJECTED)
    assert len({r[1] for r in REJECTED}) == len(REJECTED)


def test_low_bit_mutations_really_decode_to_the_same_bytes() -> None:
    # Guard: the padding-bit cases are ambiguous spellings of a valid digest, not garbage.
    for bits in (1, 2, 3):
        bad = _low_bits(SHA_B64U, bits)
        assert bad != SHA_B64U
        assert base64.urlsafe_b64decode(bad + "=").hex() == SHA_HEX


@pytest.mark.parametrize("value", [None, b"sha256:" + SHA_HEX.encode(), 42])
def test_non_str_is_type_error(value: object) -> None:
    with pytest.raises(TypeError):
        parse_ref(value)  # type: ignore[arg-type]


def test_all_is_sorted() -> None:
    assert list(refs.__all__) == sorted(refs.__all__)


def test_join_pointer_escapes_per_rfc6901():
    from evstore.core.errors import join_pointer

    assert join_pointer("/a", "b/c", 0) == "/a/b~1c/0"
    assert join_pointer("", "~/", "m~n") == "/~0~1/m~0n"
    assert join_pointer("/x") == "/x"
