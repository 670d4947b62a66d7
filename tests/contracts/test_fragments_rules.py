"""templiqx evidence fragment v1alpha1: the pure rules (evstore.contracts.fragments.rules), no
database.

Upstream vectors come from ../shared through the ``shared_dir`` fixture; every other case is
built here. Rule cases assert the code and the pointer of every fault, in order.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evstore.contracts.fragments import rules as fr
from evstore.contracts.fragments import rules_bytes as fb
from evstore.core import errors
from evstore.core.canonical import dumps
from evstore.core.errors import CODES, BindingConflict, ContractError, EvstoreError, error

TEMPLIQX = Path("fixtures/templiqx/examples")
CONTRACT_MD = Path("contracts/templiqx-evidence-fragment-v1alpha1.md")
TEXT_FIELDS = ("document_text", "intake_text", "timesheet_text")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make(content: bytes, start: Any, end: Any, **over: Any) -> dict[str, Any]:
    """A fragment over content[start:end] whose quote digest is right (unless overridden)."""
    s, e = int(start), int(end)
    quoted = content[max(s, 0) : max(e, 0)] if s < e else b""
    frag: dict[str, Any] = {
        "document_id": "SYN-DOC",
        "fragment_id": "frag-1",
        "start_offset": start,
        "end_offset": end,
        "quote_sha256": sha(quoted),
    }
    frag.update(over)
    return frag


def without(frag: dict[str, Any], name: str) -> dict[str, Any]:
    out = dict(frag)
    del out[name]
    return out


def faults(errors: list[errors.FragmentError]) -> list[tuple[str, str]]:
    return [(e.code, e.pointer) for e in errors]


# ---------------------------------------------------------------------------------------------
# content used by the cases

# a (1 byte) | é (2) | € (3) | 𝄞 (4) | z (1): character boundaries at 0, 1, 3, 6, 10, 11
MIXED = "aé€𝄞z".encode()
MIXED_BOUNDARIES = {0, 1, 3, 6, 10, 11}
CRLF = b"Eerste regel\r\nTweede regel\r\nDerde regel\r\n"
LF = CRLF.replace(b"\r\n", b"\n")
BOM = b"\xef\xbb\xbf"
BOMMED = BOM + b"Hallo wereld"
LATIN1 = "abécd".encode("latin-1")  # not UTF-8: b"ab\xe9cd"
FULL_SCOPE = {"host_id": "H", "tenant_id": "T", "authorization_scope_id": "A"}

S, B, R, Q, C, D, SC = (
    fr.SHAPE,
    fr.BOUNDARY,
    fr.RANGE,
    fr.QUOTE_MISMATCH,
    fr.CONTENT_MISMATCH,
    fr.DIGEST_FORMAT,
    fr.SCOPE_INCOMPLETE,
)
GOOD = make(MIXED, 1, 3)
HEX = GOOD["quote_sha256"]


def _crlf_span(needle: bytes, hay: bytes) -> tuple[int, int]:
    i = hay.index(needle)
    return i, i + len(needle)


_TWEEDE_RAW = _crlf_span(b"Tweede regel\r\nDerde", CRLF)
_DERDE_LF = _crlf_span(b"Derde regel", LF)

# (id, content, fragment, expected [(code, pointer), ...]); [] means it verifies
VERIFY_CASES: list[tuple[str, bytes, Any, list[tuple[str, str]]]] = [
    # non-ASCII content, valid ranges
    ("1-byte-char", MIXED, make(MIXED, 0, 1), []),
    ("2-byte-char", MIXED, make(MIXED, 1, 3), []),
    ("3-byte-char", MIXED, make(MIXED, 3, 6), []),
    ("4-byte-char", MIXED, make(MIXED, 6, 10), []),
    ("whole-content-end-at-length", MIXED, make(MIXED, 0, 11), []),
    ("content-sha256-matches", MIXED, make(MIXED, 3, 10, content_sha256=sha(MIXED)), []),
    ("float-offsets-zero-fraction", MIXED, make(MIXED, 1.0, 3.0), []),
    ("float-end-at-length", MIXED, make(MIXED, 10, 11.0), []),
    ("assertion-field", MIXED, make(MIXED, 1, 3, field="effective_date"), []),
    ("full-scope", MIXED, make(MIXED, 1, 3, scope=dict(FULL_SCOPE)), []),
    ("other-extensions", MIXED, make(MIXED, 1, 3, extensions={"x.y": [1, {"z": None}]}), []),
    # offsets inside a character
    ("start-inside-2-byte", MIXED, make(MIXED, 2, 3), [(B, "/start_offset")]),
    ("end-inside-3-byte", MIXED, make(MIXED, 3, 5), [(B, "/end_offset")]),
    ("start-inside-3-byte", MIXED, make(MIXED, 5, 6), [(B, "/start_offset")]),
    ("end-inside-4-byte", MIXED, make(MIXED, 6, 8), [(B, "/end_offset")]),
    ("both-inside-4-byte", MIXED, make(MIXED, 7, 9), [(B, "/start_offset"), (B, "/end_offset")]),
    (
        "both-inside-different-chars",
        MIXED,
        make(MIXED, 2, 4),
        [(B, "/start_offset"), (B, "/end_offset")],
    ),
    # CRLF: bytes are hashed exactly as retrieved
    ("crlf-raw", CRLF, make(CRLF, *_TWEEDE_RAW), []),
    (
        "crlf-quote-hashed-after-normalisation",
        CRLF,
        make(CRLF, *_TWEEDE_RAW, quote_sha256=sha(b"Tweede regel\nDerde")),
        [(Q, "/quote_sha256")],
    ),
    (
        "crlf-offsets-from-normalised-text",
        CRLF,
        make(LF, *_DERDE_LF),
        [(Q, "/quote_sha256")],
    ),
    (
        "crlf-content-sha256-of-normalised-text",
        CRLF,
        make(CRLF, *_TWEEDE_RAW, content_sha256=sha(LF)),
        [(C, "/content_sha256")],
    ),
    ("lf-fragment-against-lf", LF, make(LF, *_DERDE_LF, content_sha256=sha(LF)), []),
    # BOM-prefixed content: the BOM is content, offsets count it
    ("bom-after-bom", BOMMED, make(BOMMED, 3, 8), []),
    ("bom-quote-includes-bom", BOMMED, make(BOMMED, 0, 8), []),
    (
        "bom-offsets-counted-without-bom",
        BOMMED,
        make(BOMMED, 0, 5, quote_sha256=sha(b"Hallo")),
        [(Q, "/quote_sha256")],
    ),
    ("bom-start-inside-bom", BOMMED, make(BOMMED, 1, 4), [(B, "/start_offset")]),
    (
        "bom-content-sha256-of-stripped-bytes",
        BOMMED,
        make(BOMMED, 3, 8, content_sha256=sha(BOMMED[3:])),
        [(C, "/content_sha256")],
    ),
    # ranges
    ("empty-range", MIXED, make(MIXED, 3, 3), [(R, "/end_offset")]),
    ("empty-range-at-zero", MIXED, make(MIXED, 0, 0), [(R, "/end_offset")]),
    ("reversed-range", MIXED, make(MIXED, 6, 3), [(R, "/end_offset")]),
    ("negative-start", MIXED, make(MIXED, -1, 3), [(R, "/start_offset")]),
    ("both-negative", MIXED, make(MIXED, -3, -1), [(R, "/start_offset"), (R, "/end_offset")]),
    ("end-beyond-content", MIXED, make(MIXED, 10, 12), [(R, "/end_offset")]),
    ("start-at-length", MIXED, make(MIXED, 11, 12), [(R, "/end_offset")]),
    ("end-beyond-safe-integer", MIXED, make(MIXED, 0, 2**53), [(R, "/end_offset")]),
    # digests
    ("quote-mismatch", MIXED, make(MIXED, 1, 3, quote_sha256=sha(b"x")), [(Q, "/quote_sha256")]),
    ("quote-uppercase", MIXED, make(MIXED, 1, 3, quote_sha256=HEX.upper()), [(D, "/quote_sha256")]),
    (
        "quote-prefixed",
        MIXED,
        make(MIXED, 1, 3, quote_sha256="sha256:" + HEX),
        [(D, "/quote_sha256")],
    ),
    ("quote-63-hex", MIXED, make(MIXED, 1, 3, quote_sha256=HEX[:63]), [(D, "/quote_sha256")]),
    ("quote-65-hex", MIXED, make(MIXED, 1, 3, quote_sha256=HEX + "0"), [(D, "/quote_sha256")]),
    (
        "quote-trailing-newline",
        MIXED,
        make(MIXED, 1, 3, quote_sha256=HEX + "\n"),
        [(D, "/quote_sha256")],
    ),
    ("quote-non-hex", MIXED, make(MIXED, 1, 3, quote_sha256="g" + HEX[1:]), [(D, "/quote_sha256")]),
    ("quote-base64url", MIXED, make(MIXED, 1, 3, quote_sha256="A" * 43), [(D, "/quote_sha256")]),
    ("quote-not-a-string", MIXED, make(MIXED, 1, 3, quote_sha256=123), [(S, "/quote_sha256")]),
    (
        "content-sha256-mismatch",
        MIXED,
        make(MIXED, 1, 3, content_sha256=sha(b"other")),
        [(C, "/content_sha256")],
    ),
    (
        "content-sha256-uppercase",
        MIXED,
        make(MIXED, 1, 3, content_sha256=sha(MIXED).upper()),
        [(D, "/content_sha256")],
    ),
    (
        "content-sha256-prefixed",
        MIXED,
        make(MIXED, 1, 3, content_sha256="sha256:" + sha(MIXED)),
        [(D, "/content_sha256")],
    ),
    (
        "content-sha256-null",
        MIXED,
        make(MIXED, 1, 3, content_sha256=None),
        [(S, "/content_sha256")],
    ),
    (
        "content-mismatch-before-range",
        MIXED,
        make(MIXED, 10, 40, content_sha256=sha(b"x" * 50)),
        [(C, "/content_sha256")],
    ),
    (
        "range-before-boundary",
        MIXED,
        make(MIXED, 7, 12),
        [(R, "/end_offset")],
    ),
    (
        "boundary-before-quote",
        MIXED,
        make(MIXED, 2, 3, quote_sha256=sha(b"nope")),
        [(B, "/start_offset")],
    ),
    # scope
    (
        "scope-missing-tenant",
        MIXED,
        make(MIXED, 1, 3, scope={"host_id": "H", "authorization_scope_id": "A"}),
        [(SC, "/scope/tenant_id")],
    ),
    (
        "scope-only-host",
        MIXED,
        make(MIXED, 1, 3, scope={"host_id": "H"}),
        [(SC, "/scope/tenant_id"), (SC, "/scope/authorization_scope_id")],
    ),
    (
        "scope-empty-object",
        MIXED,
        make(MIXED, 1, 3, scope={}),
        [(SC, "/scope/host_id"), (SC, "/scope/tenant_id"), (SC, "/scope/authorization_scope_id")],
    ),
    (
        "scope-extra-member",
        MIXED,
        make(MIXED, 1, 3, scope={**FULL_SCOPE, "user_id": "U"}),
        [(SC, "/scope/user_id")],
    ),
    (
        "scope-extra-member-escaped",
        MIXED,
        make(MIXED, 1, 3, scope={**FULL_SCOPE, "a/b~c": "U"}),
        [(SC, "/scope/a~1b~0c")],
    ),
    (
        "scope-empty-string",
        MIXED,
        make(MIXED, 1, 3, scope={**FULL_SCOPE, "host_id": ""}),
        [(SC, "/scope/host_id")],
    ),
    (
        "scope-non-string",
        MIXED,
        make(MIXED, 1, 3, scope={**FULL_SCOPE, "authorization_scope_id": 7}),
        [(SC, "/scope/authorization_scope_id")],
    ),
    (
        "scope-null-member",
        MIXED,
        make(MIXED, 1, 3, scope={**FULL_SCOPE, "tenant_id": None}),
        [(SC, "/scope/tenant_id")],
    ),
    ("scope-array", MIXED, make(MIXED, 1, 3, scope=["H", "T", "A"]), [(S, "/scope")]),
    ("scope-null", MIXED, make(MIXED, 1, 3, scope=None), [(S, "/scope")]),
    # offset types
    ("start-true", MIXED, make(MIXED, 1, 3, start_offset=True), [(S, "/start_offset")]),
    ("start-false", MIXED, make(MIXED, 0, 3, start_offset=False), [(S, "/start_offset")]),
    ("end-true", MIXED, make(MIXED, 0, 1, end_offset=True), [(S, "/end_offset")]),
    ("start-string", MIXED, make(MIXED, 1, 3, start_offset="1"), [(S, "/start_offset")]),
    ("end-string", MIXED, make(MIXED, 1, 3, end_offset="3"), [(S, "/end_offset")]),
    ("start-fraction", MIXED, make(MIXED, 1, 3, start_offset=1.5), [(S, "/start_offset")]),
    ("start-null", MIXED, make(MIXED, 1, 3, start_offset=None), [(S, "/start_offset")]),
    ("start-nan", MIXED, make(MIXED, 1, 3, start_offset=float("nan")), [(S, "/start_offset")]),
    ("end-infinity", MIXED, make(MIXED, 1, 3, end_offset=float("inf")), [(S, "/end_offset")]),
    ("end-array", MIXED, make(MIXED, 1, 3, end_offset=[3]), [(S, "/end_offset")]),
    # shape
    ("not-an-object-list", MIXED, [GOOD], [(S, "")]),
    ("not-an-object-string", MIXED, "fragment", [(S, "")]),
    ("not-an-object-null", MIXED, None, [(S, "")]),
    *[(f"missing-{n}", MIXED, without(GOOD, n), [(S, "/" + n)]) for n in fr.REQUIRED],
    ("document-id-empty", MIXED, make(MIXED, 1, 3, document_id=""), [(S, "/document_id")]),
    ("document-id-number", MIXED, make(MIXED, 1, 3, document_id=1), [(S, "/document_id")]),
    ("fragment-id-null", MIXED, make(MIXED, 1, 3, fragment_id=None), [(S, "/fragment_id")]),
    (
        "fragment-id-lone-surrogate",
        MIXED,
        make(MIXED, 1, 3, fragment_id="\ud800"),
        [(S, "/fragment_id")],
    ),
    ("extensions-array", MIXED, make(MIXED, 1, 3, extensions=[]), [(S, "/extensions")]),
    ("extensions-null", MIXED, make(MIXED, 1, 3, extensions=None), [(S, "/extensions")]),
    (
        "several-shape-faults-in-table-order",
        MIXED,
        make(MIXED, 1, 3, quote_sha256=HEX.upper(), scope={}, extensions=1, document_id=""),
        [
            (S, "/document_id"),
            (D, "/quote_sha256"),
            (SC, "/scope/host_id"),
            (SC, "/scope/tenant_id"),
            (SC, "/scope/authorization_scope_id"),
            (S, "/extensions"),
        ],
    ),
    ("shape-stops-byte-checks", MIXED, make(MIXED, 1, 99, fragment_id=""), [(S, "/fragment_id")]),
    # content that is not UTF-8: both offsets are boundaries, the quoted bytes are not
    ("ill-formed-quote", LATIN1, make(LATIN1, 0, 3), [(B, "")]),
    ("ill-formed-content-ascii-quote", LATIN1, make(LATIN1, 3, 5), []),
    ("ill-formed-surrogate-bytes", b"a\xed\xa0\x80b", make(b"a\xed\xa0\x80b", 0, 4), [(B, "")]),
]


def _codepoint_offsets(text: str, quote: str) -> tuple[int, int]:
    i = text.index(quote)
    return i, i + len(quote)


def _utf16_offsets(text: str, quote: str) -> tuple[int, int]:
    i = text.index(quote)

    def units(s: str) -> int:
        return len(s.encode("utf-16-le")) // 2

    return units(text[:i]), units(text[:i]) + units(quote)


def _utf8_offsets(text: str, quote: str) -> tuple[int, int]:
    i = text.index(quote)
    start = len(text[:i].encode())
    return start, start + len(quote.encode())


# Producers that count code points or UTF-16 units instead of UTF-8 bytes: the quote digest
# is right (SHA-256 of the quote's UTF-8), the offsets are not.
# (id, way, text, quote, expected)
WRONG_UNIT_CASES = [
    (
        "codepoints-inside-chars",
        _codepoint_offsets,
        "aé€𝄞z",
        "€𝄞",
        [(B, "/start_offset"), (B, "/end_offset")],
    ),
    ("codepoints-on-boundaries", _codepoint_offsets, "ééab", "ab", [(Q, "/quote_sha256")]),
    ("codepoints-dutch-accent", _codepoint_offsets, "naïve café", "café", [(Q, "/quote_sha256")]),
    (
        "utf16-inside-surrogate-pair",
        _utf16_offsets,
        "𝄞x",
        "x",
        [(B, "/start_offset"), (B, "/end_offset")],
    ),
    ("utf16-end-inside-char", _utf16_offsets, "𝄞𝄞ab", "ab", [(B, "/end_offset")]),
    ("utf16-start-inside-char", _utf16_offsets, "ab𝄞cd", "cd", [(B, "/start_offset")]),
    ("utf16-on-boundaries", _utf16_offsets, "éab", "b", [(Q, "/quote_sha256")]),
]


@pytest.mark.parametrize(
    ("content", "frag", "expected"),
    [pytest.param(c, f, e, id=i) for i, c, f, e in VERIFY_CASES],
)
def test_verify_against(content: bytes, frag: Any, expected: list[tuple[str, str]]) -> None:
    got = fb.verify_against(frag, content)
    assert faults(got) == expected
    for err in got:
        assert isinstance(err, errors.FragmentError)
        assert isinstance(err, ContractError)
        assert err.rule == CODES[err.code].rule


@pytest.mark.parametrize(
    ("content", "frag", "expected"),
    [pytest.param(c, f, e, id=i) for i, c, f, e in VERIFY_CASES],
)
def test_verify_against_in_a_batch_prefixes_pointers(
    content: bytes, frag: Any, expected: list[tuple[str, str]]
) -> None:
    got = fb.verify_against(frag, content, "/evidence/7")
    assert faults(got) == [(code, "/evidence/7" + ptr) for code, ptr in expected]


@pytest.mark.parametrize(
    ("way", "text", "quote", "expected"),
    [pytest.param(w, t, q, e, id=i) for i, w, t, q, e in WRONG_UNIT_CASES],
)
def test_wrong_offset_units(
    way: Any, text: str, quote: str, expected: list[tuple[str, str]]
) -> None:
    content = text.encode()
    right = make(content, *_utf8_offsets(text, quote))
    assert right["quote_sha256"] == sha(quote.encode())
    assert fb.verify_against(right, content) == []  # the case is only about the units
    start, end = way(text, quote)
    assert (start, end) != _utf8_offsets(text, quote)
    wrong = dict(right, start_offset=start, end_offset=end)
    assert faults(fb.verify_against(wrong, content)) == expected


def test_shape_stage_stops_byte_checks() -> None:
    for case_id, _content, frag, expected in VERIFY_CASES:
        shape = faults(fr.validate_shape(frag))
        if shape:
            assert expected == shape, case_id
        if any(code in (S, D, SC) for code, _ in expected):
            assert shape == expected, case_id


def test_verify_against_rejects_text_content() -> None:
    with pytest.raises(TypeError):
        fb.verify_against(GOOD, MIXED.decode())  # type: ignore[arg-type]


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview], ids=lambda w: w.__name__)
def test_verify_against_bytes_like(wrap: Any) -> None:
    assert fb.verify_against(make(MIXED, 3, 10), wrap(MIXED)) == []
    assert faults(fb.verify_against(make(MIXED, 3, 9), wrap(MIXED))) == [(B, "/end_offset")]
    assert faults(fb.verify_against(make(LATIN1, 0, 3), wrap(LATIN1))) == [(B, "")]


def test_precomputed_content_digest_is_used() -> None:
    frag = make(MIXED, 1, 3, content_sha256=sha(MIXED))
    assert fb.verify_against(frag, MIXED, content_sha256=sha(MIXED)) == []
    # the given digest is what gets compared (the store passes the version's digest)
    got = fb.verify_against(frag, MIXED, content_sha256=sha(b"other version"))
    assert faults(got) == [(C, "/content_sha256")]
    assert got[0].details == {"expected": sha(MIXED), "actual": sha(b"other version")}


def test_shape_checked_skips_the_shape_stage() -> None:
    frag = make(MIXED, 1, 3, scope={})
    assert faults(fb.verify_against(frag, MIXED))[0] == (SC, "/scope/host_id")
    assert fb.verify_against(frag, MIXED, shape_checked=True) == []


def test_error_record() -> None:
    (err,) = fb.verify_against(make(MIXED, 3, 5), MIXED, "/evidence/0")
    assert err.to_dict() == {
        "family": "contract",
        "code": "fragment.boundary",
        "message": err.message,
        "rule": "templiqx-evidence-fragment-v1alpha1#offset-and-digest-invariants",
        "pointer": "/evidence/0/end_offset",
        "details": {"end_offset": 5},
    }
    assert "fragment.boundary at /evidence/0/end_offset" in str(err)


# ---------------------------------------------------------------------------------------------
# codes, rules, classes

ALL_CODES = {
    "fragment.shape": "fragment-shape",
    "fragment.digest-format": "fragment-shape",
    "fragment.range": "offset-and-digest-invariants",
    "fragment.boundary": "offset-and-digest-invariants",
    "fragment.quote-mismatch": "offset-and-digest-invariants",
    "fragment.content-mismatch": "offset-and-digest-invariants",
    "fragment.unknown-content": "offset-and-digest-invariants",
    "fragment.ambiguous-content": "offset-and-digest-invariants",
    "fragment.scope-incomplete": "host-scope-metadata",
    "fragment.scope-reuse": "host-scope-metadata",
    "fragment.revision-format": "document-revision-checksum-extension",
    "fragment.revision-mismatch": "document-revision-checksum-extension",
    "fragment.unknown-revision": "document-revision-checksum-extension",
    "fragment.source-encoding": "offset-and-digest-invariants",
}
BINDING = {
    "fragment.unknown-content",
    "fragment.ambiguous-content",
    "fragment.scope-reuse",
    "fragment.revision-mismatch",
    "fragment.unknown-revision",
}


@pytest.mark.parametrize("code", sorted(ALL_CODES))
def test_codes_rules_and_classes(code: str) -> None:
    rule = f"templiqx-evidence-fragment-v1alpha1#{ALL_CODES[code]}"
    assert CODES[code].rule == rule
    err = error(code, "m", "/x")
    assert (err.code, err.rule, err.pointer) == (code, rule, "/x")
    assert isinstance(err, EvstoreError)
    if code in BINDING:
        assert CODES[code].family == "binding"
        assert isinstance(err, errors.FragmentBindingError)
        assert isinstance(err, BindingConflict)
        assert not isinstance(err, ContractError)
    else:
        assert CODES[code].family == "contract"
        assert isinstance(err, errors.FragmentError)
        assert not isinstance(err, BindingConflict)


def test_code_set_is_complete() -> None:
    """The table holds exactly these fragment codes; the module keeps no code table of its own."""
    assert {c for c in CODES if c.startswith("fragment.")} == set(ALL_CODES)
    assert CODES["not-found.fragment"].family == "not-found"
    assert {c for c in ALL_CODES if CODES[c].family == "binding"} == BINDING
    for name in ("CODES", "RULES", "BINDING_CODES", "fragment_error"):
        assert not hasattr(fr, name)
    with pytest.raises(KeyError):
        error("fragment.no-such-code", "m")


def test_module_all_is_sorted() -> None:
    assert list(fr.__all__) == sorted(fr.__all__)


# ---------------------------------------------------------------------------------------------
# identity, scope, assertion fields


def test_assertion_field_is_preserved_and_not_identity() -> None:
    plain = make(MIXED, 1, 3)
    asserting = make(MIXED, 1, 3, field="effective_date", note={"any": ["json"]})
    before = copy.deepcopy(asserting)
    assert fr.validate_shape(asserting) == []
    assert fb.verify_against(asserting, MIXED) == []
    assert fr.identity(asserting) == fr.identity(plain)
    assert fr.identity_key(asserting) == fr.identity_key(plain)
    assert "effective_date" not in fr.identity_key(asserting)
    fr.scope_of(asserting)
    fr.revision_checksums(asserting)
    assert asserting == before  # nothing is dropped or rewritten


def test_optional_members_are_not_identity() -> None:
    plain = make(MIXED, 1, 3)
    full = make(
        MIXED,
        1,
        3,
        content_sha256=sha(MIXED),
        scope=dict(FULL_SCOPE),
        extensions={"evstore.document_revision": {"revision_checksum": HEX}},
    )
    assert fr.identity_key(full) == fr.identity_key(plain)


def test_identity_values_and_integral_floats() -> None:
    frag = make(MIXED, 1.0, 3.0)
    ident = fr.identity(frag)
    assert ident == ("SYN-DOC", "frag-1", 1, 3, HEX)
    assert all(type(v) is int for v in ident[2:4])
    assert fr.identity_key(frag) == fr.identity_key(make(MIXED, 1, 3))
    assert fr.identity_key(frag) == dumps(dict(zip(fr.REQUIRED, ident, strict=True))).decode()
    assert fr.identity_key(frag) == (
        '{"document_id":"SYN-DOC","end_offset":3,"fragment_id":"frag-1",'
        f'"quote_sha256":"{HEX}","start_offset":1}}'
    )


def test_identity_separates_each_field() -> None:
    keys = {fr.identity_key(GOOD)}
    for name, value in [
        ("document_id", "other"),
        ("fragment_id", "other"),
        ("start_offset", 0),
        ("end_offset", 6),
        ("quote_sha256", sha(b"x")),
    ]:
        keys.add(fr.identity_key(dict(GOOD, **{name: value})))
    assert len(keys) == 6


@pytest.mark.parametrize(
    ("frag", "code", "pointer"),
    [
        pytest.param([], S, "", id="not-object"),
        pytest.param(without(GOOD, "quote_sha256"), S, "/quote_sha256", id="missing-quote"),
        pytest.param(dict(GOOD, start_offset=True), S, "/start_offset", id="bool-offset"),
        pytest.param(dict(GOOD, end_offset=1), R, "/end_offset", id="empty-range"),
        pytest.param(dict(GOOD, quote_sha256=HEX.upper()), D, "/quote_sha256", id="uppercase"),
    ],
)
def test_identity_raises_first_fault(frag: Any, code: str, pointer: str) -> None:
    for fn in (fr.identity, fr.identity_key):
        with pytest.raises(errors.FragmentError) as info:
            fn(frag)
        assert (info.value.code, info.value.pointer) == (code, pointer)


def test_identity_ignores_faults_outside_the_five() -> None:
    assert fr.identity(dict(GOOD, scope={}, content_sha256="X")) == fr.identity(GOOD)


def test_scope_of() -> None:
    assert fr.scope_of(GOOD) is None
    scoped = dict(GOOD, scope=dict(FULL_SCOPE))
    got = fr.scope_of(scoped)
    assert got == FULL_SCOPE
    assert got is not scoped["scope"]
    with pytest.raises(errors.FragmentError) as info:
        fr.scope_of(dict(GOOD, scope={"host_id": "H", "tenant_id": "T"}))
    assert (info.value.code, info.value.pointer) == (SC, "/scope/authorization_scope_id")
    with pytest.raises(errors.FragmentError) as info:
        fr.scope_of(dict(GOOD, scope="H/T/A"))
    assert (info.value.code, info.value.pointer) == (S, "/scope")


# ---------------------------------------------------------------------------------------------
# revision checksum extension

EX_KEY = "example.document_revision"
OWN_KEY = "evstore.document_revision"
REV = "17a6b1422ab0623a7c7c0b5f81ed08f5e8dba68cc0225f1f6d22b77613ef58a4"

# (id, extensions, keys, expected result or (code, pointer))
REVISION_CASES: list[tuple[str, Any, tuple[str, ...], Any]] = [
    ("no-extensions", None, (OWN_KEY,), []),
    (
        "default-key",
        {OWN_KEY: {"revision_checksum": REV}},
        fr.DEFAULT_REVISION_KEYS,
        [("/extensions/evstore.document_revision/revision_checksum", REV)],
    ),
    (
        "example-key-not-configured",
        {EX_KEY: {"revision_checksum": REV}},
        fr.DEFAULT_REVISION_KEYS,
        [],
    ),
    (
        "example-key-configured",
        {EX_KEY: {"revision_checksum": REV}},
        (EX_KEY,),
        [("/extensions/example.document_revision/revision_checksum", REV)],
    ),
    ("unconfigured-garbage-ignored", {"other.ns": "anything", EX_KEY: 5}, (OWN_KEY,), []),
    (
        "extra-members-in-value",
        {OWN_KEY: {"revision_checksum": REV, "source": "dms"}},
        (OWN_KEY,),
        [("/extensions/evstore.document_revision/revision_checksum", REV)],
    ),
    (
        "two-keys-in-configured-order",
        {OWN_KEY: {"revision_checksum": REV}, EX_KEY: {"revision_checksum": HEX}},
        (EX_KEY, OWN_KEY),
        [
            ("/extensions/example.document_revision/revision_checksum", HEX),
            ("/extensions/evstore.document_revision/revision_checksum", REV),
        ],
    ),
    (
        "slash-in-key",
        {"a/b": {"revision_checksum": REV}},
        ("a/b",),
        [("/extensions/a~1b/revision_checksum", REV)],
    ),
    (
        "value-not-object",
        {OWN_KEY: REV},
        (OWN_KEY,),
        (fr.REVISION_FORMAT, "/extensions/evstore.document_revision"),
    ),
    (
        "checksum-missing",
        {OWN_KEY: {}},
        (OWN_KEY,),
        (fr.REVISION_FORMAT, "/extensions/evstore.document_revision/revision_checksum"),
    ),
    (
        "checksum-uppercase",
        {OWN_KEY: {"revision_checksum": REV.upper()}},
        (OWN_KEY,),
        (fr.REVISION_FORMAT, "/extensions/evstore.document_revision/revision_checksum"),
    ),
    (
        "checksum-prefixed",
        {OWN_KEY: {"revision_checksum": "sha256:" + REV}},
        (OWN_KEY,),
        (fr.REVISION_FORMAT, "/extensions/evstore.document_revision/revision_checksum"),
    ),
    (
        "checksum-number",
        {OWN_KEY: {"revision_checksum": 17}},
        (OWN_KEY,),
        (fr.REVISION_FORMAT, "/extensions/evstore.document_revision/revision_checksum"),
    ),
    ("extensions-not-object", ["x"], (OWN_KEY,), (fr.SHAPE, "/extensions")),
]


@pytest.mark.parametrize(
    ("extensions", "keys", "expected"),
    [pytest.param(x, k, e, id=i) for i, x, k, e in REVISION_CASES],
)
def test_revision_checksums(extensions: Any, keys: tuple[str, ...], expected: Any) -> None:
    frag = dict(GOOD) if extensions is None else dict(GOOD, extensions=extensions)
    if isinstance(expected, list):
        assert fr.revision_checksums(frag, keys) == expected
        assert fr.validate_shape(frag, revision_keys=keys) == []
        assert fr.revision_checksums(frag, keys, "/evidence/1") == [
            ("/evidence/1" + p, c) for p, c in expected
        ]
    else:
        with pytest.raises(errors.FragmentError) as info:
            fr.revision_checksums(frag, keys)
        assert (info.value.code, info.value.pointer) == expected
        assert faults(fr.validate_shape(frag, revision_keys=keys)) == [expected]
        # the revision check belongs to the store setting: without keys the shape is only
        # about the contract's table
        if expected[0] == fr.REVISION_FORMAT:
            assert fr.validate_shape(frag) == []


def test_default_revision_key() -> None:
    assert fr.DEFAULT_REVISION_KEYS == ("evstore.document_revision",)


# ---------------------------------------------------------------------------------------------
# eval outputs and detection


def test_extract_evidence_pointers() -> None:
    doc = {"effective_date": "2026-09-01", "evidence": [GOOD, {"x": 1}, 5]}
    assert fr.extract_evidence(doc) == [
        ("/evidence/0", GOOD),
        ("/evidence/1", {"x": 1}),
        ("/evidence/2", 5),
    ]
    assert fr.extract_evidence({"evidence": []}) == []
    got = [faults(fr.validate_shape(f, p)) for p, f in fr.extract_evidence(doc)]
    assert got[0] == [] and got[2] == [(S, "/evidence/2")]
    assert got[1][0] == (S, "/evidence/1/document_id")


@pytest.mark.parametrize(
    ("doc", "pointer"),
    [
        pytest.param([GOOD], "", id="array"),
        pytest.param("{}", "", id="string"),
        pytest.param({"facts": 1}, "/evidence", id="no-evidence"),
        pytest.param({"evidence": GOOD}, "/evidence", id="evidence-object"),
        pytest.param({"evidence": None}, "/evidence", id="evidence-null"),
    ],
)
def test_extract_evidence_rejects(doc: Any, pointer: str) -> None:
    with pytest.raises(errors.FragmentError) as info:
        fr.extract_evidence(doc)
    assert (info.value.code, info.value.pointer) == (S, pointer)


@pytest.mark.parametrize(
    ("doc", "kind"),
    [
        pytest.param(GOOD, "fragment", id="fragment"),
        pytest.param(dict(GOOD, start_offset="x"), "fragment", id="ill-typed-fragment"),
        pytest.param({"evidence": [GOOD]}, "fragment-batch", id="batch"),
        pytest.param(
            {"evidence": [{"document_id": "D"}, GOOD]}, "fragment-batch", id="batch-one-bad"
        ),
        pytest.param({"evidence": []}, None, id="empty-evidence"),
        # A near miss is claimed, so validation rejects it (docs/kinds.md#near-misses).
        pytest.param(without(GOOD, "end_offset"), "fragment", id="four-names"),
        pytest.param(
            dict(without(GOOD, "quote_sha256"), quote_sha_256=HEX), "fragment", id="misspelt"
        ),
        pytest.param(
            {"evidence": [{"document_id": "D", "fragment_id": "F", "quote_sha256": HEX}]},
            None,
            id="reference-only-evidence",
        ),
        pytest.param({"evidence": "x"}, None, id="evidence-not-array"),
        pytest.param([GOOD], None, id="array"),
        pytest.param(None, None, id="null"),
    ],
)
def test_detect(doc: Any, kind: str | None) -> None:
    assert fr.detect(doc) == kind


def test_is_char_boundary() -> None:
    assert {i for i in range(len(MIXED) + 1) if fb.is_char_boundary(MIXED, i)} == MIXED_BOUNDARIES
    assert fb.is_char_boundary(b"", 0)
    with pytest.raises(IndexError):
        fb.is_char_boundary(MIXED, len(MIXED) + 1)


# ---------------------------------------------------------------------------------------------
# upstream vectors (../shared)

UPSTREAM_OUTPUTS = (
    "crm3/evals/bli-61-output.json",
    "packages/basenet-legal/evals/legal-extraction-output.json",
    "packages/finly-advice/evals/advice-extraction-output.json",
    "packages/simplicate-workflow/evals/hours-extraction-output.json",
)


def _source_for(output: Path) -> tuple[str, str, bytes]:
    """(document_id, fragment_id, UTF-8 text bytes) of the request beside an eval output."""
    request = output.with_name(output.name.replace("-output.json", "-request.json"))
    inputs = json.loads(request.read_text(encoding="utf-8"))["inputs"]
    (field,) = [k for k in TEXT_FIELDS if k in inputs]
    return inputs["document_id"], inputs["fragment_id"], inputs[field].encode("utf-8")


def _upstream(shared_dir: Path) -> list[tuple[str, str, dict[str, Any], bytes]]:
    root = shared_dir / TEMPLIQX
    outputs = sorted(
        [root / "crm3/evals/bli-61-output.json", *root.glob("packages/*/evals/*-output.json")]
    )
    assert [o.relative_to(root).as_posix() for o in outputs] == sorted(UPSTREAM_OUTPUTS)
    out = []
    for output in outputs:
        doc = json.loads(output.read_text(encoding="utf-8"))
        assert fr.detect(doc) == "fragment-batch"
        doc_id, frag_id, content = _source_for(output)
        for pointer, frag in fr.extract_evidence(doc):
            assert (frag["document_id"], frag["fragment_id"]) == (doc_id, frag_id)
            out.append((output.name, pointer, frag, content))
    return out


@pytest.mark.shared
def test_every_upstream_fragment_verifies(shared_dir: Path) -> None:
    vectors = _upstream(shared_dir)
    assert len(vectors) == 17
    for name, pointer, frag, content in vectors:
        assert fr.validate_shape(frag, pointer) == [], (name, pointer)
        assert fb.verify_against(frag, content, pointer) == [], (name, pointer)
        assert "field" in frag and "field" not in fr.identity_key(frag)
    assert len({fr.identity_key(f) for _, _, f, _ in vectors}) == 17


@pytest.mark.shared
def test_every_upstream_fragment_fails_one_byte_off(shared_dir: Path) -> None:
    # a test that can fail: shifting any upstream range by one byte breaks its quote digest
    for name, pointer, frag, content in _upstream(shared_dir):
        shifted = dict(
            frag, start_offset=frag["start_offset"] + 1, end_offset=frag["end_offset"] + 1
        )
        got = faults(fb.verify_against(shifted, content, pointer))
        assert got in ([(Q, pointer + "/quote_sha256")], [(R, pointer + "/end_offset")]), name


def _contract_example(shared_dir: Path) -> dict[str, Any]:
    text = (shared_dir / CONTRACT_MD).read_text(encoding="utf-8")
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", text, re.DOTALL)]
    (example,) = [b for b in blocks if "document_id" in b]
    return example


@pytest.mark.shared
def test_contract_example_verifies_against_bli61(shared_dir: Path) -> None:
    example = _contract_example(shared_dir)
    assert len(example) == 8
    _, _, content = _source_for(shared_dir / TEMPLIQX / "crm3/evals/bli-61-output.json")
    assert len(content) == 142
    assert sha(content) == example["content_sha256"]
    assert fr.validate_shape(example, revision_keys=(EX_KEY,)) == []
    assert fb.verify_against(example, content) == []
    assert fr.scope_of(example) == {
        "host_id": "SYN-HOST-001",
        "tenant_id": "SYN-TENANT-001",
        "authorization_scope_id": "SYN-AUTH-SCOPE-001",
    }
    assert fr.revision_checksums(example) == []
    assert fr.revision_checksums(example, (EX_KEY,)) == [
        ("/extensions/example.document_revision/revision_checksum", REV)
    ]
    # same five fields as bli-61's first fragment: one identity
    bli61 = json.loads((shared_dir / TEMPLIQX / UPSTREAM_OUTPUTS[0]).read_text(encoding="utf-8"))
    assert fr.identity_key(example) == fr.identity_key(bli61["evidence"][0])
    # and against other bytes of the same length, content_sha256 refuses before anything else
    assert faults(fb.verify_against(example, content.upper())) == [(C, "/content_sha256")]


@pytest.mark.shared
def test_detect_on_upstream_documents(shared_dir: Path) -> None:
    root = shared_dir / TEMPLIQX
    expected = {
        "crm3/evals/bli-61-request.json": None,
        "crm3/evals/bli-62-request.json": None,  # evidence nested under inputs
        "crm3/scenarios/draft-with-citations/manifest.json": None,  # 3-field references
        "crm3/scenarios/intake-document-01/manifest.json": None,
        "crm3/scenarios/contradictory-evidence/manifest.json": None,
        **{o: "fragment-batch" for o in UPSTREAM_OUTPUTS},
    }
    for rel, kind in expected.items():
        assert fr.detect(json.loads((root / rel).read_text(encoding="utf-8"))) == kind, rel


# ---------------------------------------------------------------------------------------------
# properties

UTF8_TEXT = st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=40)
MULTIBYTE = st.characters(codec="utf-8", min_codepoint=0x80)


def _char_offsets(text: str) -> list[int]:
    return [len(text[:i].encode()) for i in range(len(text) + 1)]


@settings(max_examples=300)
@given(UTF8_TEXT, st.data())
def test_prop_character_ranges_verify(text: str, data: st.DataObject) -> None:
    content = text.encode()
    offsets = _char_offsets(text)
    i = data.draw(st.integers(0, len(text) - 1))
    j = data.draw(st.integers(i + 1, len(text)))
    frag = make(content, offsets[i], offsets[j], content_sha256=sha(content))
    assert fb.verify_against(frag, content) == []
    assert fb.verify_against(frag, content, content_sha256=sha(content), shape_checked=True) == []


@settings(max_examples=300)
@given(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=20),
    MULTIBYTE,
    st.text(alphabet=st.characters(codec="utf-8"), max_size=20),
    st.data(),
)
def test_prop_offset_inside_multibyte_char_is_boundary(
    prefix: str, char: str, suffix: str, data: st.DataObject
) -> None:
    content = (prefix + char + suffix).encode()
    char_start = len(prefix.encode())
    width = len(char.encode())
    assert width >= 2
    inside = char_start + data.draw(st.integers(1, width - 1))
    # end shifted into the character; the quote digest is right for the bytes selected
    start = data.draw(st.sampled_from(_char_offsets(prefix)))
    got = fb.verify_against(make(content, start, inside), content)
    assert faults(got) == [(B, "/end_offset")]
    # start shifted into the character
    end = data.draw(st.sampled_from([char_start + width + o for o in _char_offsets(suffix)]))
    got = fb.verify_against(make(content, inside, end), content)
    assert faults(got) == [(B, "/start_offset")]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300)
@given(st.sampled_from([*fr.REQUIRED, *fr.OPTIONAL, "field"]), JSON_VALUES)
def test_prop_any_member_value_gives_coded_faults(name: str, value: Any) -> None:
    frag = dict(GOOD, **{name: value})
    for got in (
        fr.validate_shape(frag, "/evidence/0"),
        fb.verify_against(frag, MIXED, "/evidence/0"),
    ):
        for err in got:
            assert err.code in ALL_CODES
            assert err.pointer.startswith("/evidence/0")
    if name == "field":
        assert fb.verify_against(frag, MIXED) == []


@settings(max_examples=500)
@given(
    # Identifiers never hold U+0000 (issue 17: one answer on both backends).
    st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1),
    st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1),
    st.integers(0, 2**53 - 2),
    st.integers(1, 2**53),
)
def test_prop_identity_key_is_jcs(
    document_id: str, fragment_id: str, start: int, length: int
) -> None:
    end = min(start + length, 2**53 - 1)
    frag = make(
        MIXED,
        0,
        1,
        document_id=document_id,
        fragment_id=fragment_id,
        start_offset=start,
        end_offset=end,
        field="x",
    )
    assert fr.identity_key(frag) == dumps({k: frag[k] for k in fr.REQUIRED}).decode("utf-8")


@pytest.mark.parametrize(
    "text", ["\x01\x1f\x7f", '"\\/', "\b\f\n\r\t", "\u2028\u2029", "é€𝄞", "\ufeff"]
)
def test_identity_key_escapes_as_jcs(text: str) -> None:
    frag = make(MIXED, 1, 3, document_id=text, fragment_id=text + "!")
    assert fr.identity_key(frag) == dumps({k: frag[k] for k in fr.REQUIRED}).decode("utf-8")


@pytest.mark.parametrize("name", ["document_id", "fragment_id"])
def test_identity_refuses_nul(name: str) -> None:
    with pytest.raises(EvstoreError) as info:
        fr.identity_key(make(MIXED, 1, 3, **{name: "a\x00b"}))
    assert (info.value.code, info.value.pointer) == ("fragment.shape", "/" + name)


# ---------------------------------------------------------------------------------------------
# the shared contract shape: validate(doc, settings, kind=...) -> Faults, scope_from_parts


def test_contract_names() -> None:
    assert fr.CONTRACT == "templiqx-evidence-fragment-v1alpha1"
    assert fr.CONTRACT_VERSION == "v1alpha1"
    assert fr.detect([]) is None


def test_validate_returns_faults_in_order_per_kind() -> None:
    bad = make(MIXED, -1, "2", quote_sha256="X")
    assert [(e.code, e.pointer) for e in fr.validate(bad)] == [
        ("fragment.range", "/start_offset"),
        ("fragment.shape", "/end_offset"),
        ("fragment.digest-format", "/quote_sha256"),
    ]
    codes = [(e.code, e.pointer) for e in fr.validate(bad, kind="fragment")]
    assert codes == [(e.code, e.pointer) for e in fr.validate_shape(bad)]
    good = make(MIXED, 1, 3)
    out = fr.validate(good)
    assert isinstance(out, errors.Faults) and out.ok and out.warnings == []
    batch = {"facts": 1, "evidence": [good, bad, 7]}
    assert [(e.code, e.pointer) for e in fr.validate(batch)] == [
        ("fragment.range", "/evidence/1/start_offset"),
        ("fragment.shape", "/evidence/1/end_offset"),
        ("fragment.digest-format", "/evidence/1/quote_sha256"),
        ("fragment.shape", "/evidence/2"),
    ]
    assert [(e.code, e.pointer) for e in fr.validate({}, kind="fragment-batch")] == [
        ("fragment.shape", "/evidence")
    ]
    source = {"document_id": "D", "fragment_id": "", "content_sha256": "A" * 64, "x": 1}
    assert [(e.code, e.pointer) for e in fr.validate(source, kind="fragment-source")] == [
        ("fragment.shape", "/fragment_id"),
        ("fragment.digest-format", "/content_sha256"),
        ("fragment.shape", "/x"),
    ]
    with pytest.raises(ValueError):
        fr.validate(good, kind="manifest")


def test_validate_reads_the_revision_keys_setting() -> None:
    frag = make(MIXED, 1, 3, extensions={"example.document_revision": {"revision_checksum": 1}})
    assert fr.validate(frag).ok  # the illustrative key is read only when configured
    settings = {fr.REVISION_KEYS_SETTING: ["example.document_revision"]}
    assert [(e.code, e.pointer) for e in fr.validate(frag, settings)] == [
        ("fragment.revision-format", "/extensions/example.document_revision/revision_checksum")
    ]


@pytest.mark.parametrize(
    "parts",
    [("H", None, None), (None, "T", None), (None, None, "A"), ("H", "T", None), ("", None, "A")],
)
def test_scope_from_parts_all_or_none(parts: tuple[Any, ...]) -> None:
    with pytest.raises(errors.FragmentError) as info:
        fr.scope_from_parts(*parts)
    err = info.value
    assert (err.code, err.family, err.pointer) == ("fragment.scope-incomplete", "contract", "")
    assert err.rule == "templiqx-evidence-fragment-v1alpha1#host-scope-metadata"
    assert err.message == ("host_id, tenant_id and authorization_scope_id go together: all or none")
    names = ("--host-id", "--tenant-id", "--authorization-scope-id")
    with pytest.raises(errors.FragmentError) as info:
        fr.scope_from_parts(*parts, names=names)
    assert info.value.message == (
        "--host-id, --tenant-id and --authorization-scope-id go together: all or none"
    )


def test_scope_from_parts_values() -> None:
    assert fr.scope_from_parts(None, None, None) is None
    assert fr.scope_from_parts("H", "T", "A") == {
        "host_id": "H",
        "tenant_id": "T",
        "authorization_scope_id": "A",
    }


def test_source_encoding_fault() -> None:
    assert fb.source_encoding_fault(b"plain") is None
    assert fb.source_encoding_fault(MIXED) is None
    err = fb.source_encoding_fault(b"ab\xff", "/x", document_id="D")
    assert err is not None
    assert (err.code, err.pointer, err.details) == (
        "fragment.source-encoding",
        "/x",
        {"document_id": "D", "byte": 2},
    )


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        ({"start_offset": True}, [("fragment.shape", "/start_offset")]),
        ({"end_offset": 3.0}, []),
        ({"start_offset": 1.5}, [("fragment.shape", "/start_offset")]),
        ({"end_offset": 2**53}, [("fragment.range", "/end_offset")]),
        ({"end_offset": 1}, [("fragment.range", "/end_offset")]),
        ({"document_id": ""}, [("fragment.shape", "/document_id")]),
        ({"fragment_id": "\ud800"}, [("fragment.shape", "/fragment_id")]),
        ({"quote_sha256": "A" * 64}, [("fragment.digest-format", "/quote_sha256")]),
        ({"quote_sha256": "a" * 64 + "\n"}, [("fragment.digest-format", "/quote_sha256")]),
        (
            {"scope": {"host_id": "H", "tenant_id": "T", "user": "A"}},
            [
                ("fragment.scope-incomplete", "/scope/authorization_scope_id"),
                ("fragment.scope-incomplete", "/scope/user"),
            ],
        ),
        (
            {"scope": {"host_id": "H", "tenant_id": "\udc00", "authorization_scope_id": "A"}},
            [("fragment.scope-incomplete", "/scope/tenant_id")],
        ),
        ({"scope": {"host_id": "H", "tenant_id": "T", "authorization_scope_id": "A"}}, []),
    ],
)
def test_near_valid_fragments_take_the_fault_path(over: dict[str, Any], expected: list) -> None:
    """The shape check's fast path accepts exactly what the member-by-member check accepts."""
    frag = {**make(MIXED, 1, 3), **over}
    assert [(e.code, e.pointer) for e in fr.validate_shape(frag)] == expected
