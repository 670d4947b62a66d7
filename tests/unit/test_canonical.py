"""The strict JSON reader and the canonical form (issue 2, "Canonical form (RFC 8785)").

Table-driven: (id, input, expected code, expected pointer). A pointer of ``None`` means the
reader gives no location for that fault today (see the final report: duplicate keys, number
faults and syntax errors carry the document pointer ""), so only the code is checked.

Then the official JCS vectors (RFC 8785 and cyberphone/json-canonicalization testdata) and the
RFC 8785 Appendix B number table: ``dumps(loads(input)) == expected bytes``.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
import rfc8785

from evstore.core import canonical
from evstore.core.canonical import MAX_DEPTH, MAX_SAFE_INTEGER, dumps, loads, loads_canonical
from evstore.core.errors import InputError, JSONFormError


def _fails(data: bytes | str, code: str, pointer: str | None = None) -> JSONFormError:
    with pytest.raises(JSONFormError) as info:
        loads(data)
    err = info.value
    assert isinstance(err, InputError)
    assert err.code == code, (err.code, err.message)
    assert err.to_dict()["code"] == code
    assert err.rule  # every reader fault names the rule it enforces
    if pointer is not None:
        assert err.pointer == pointer
    return err


def _nest_arrays(depth: int, inner: str = "") -> str:
    return "[" * depth + inner + "]" * depth


def _nest_objects(depth: int, key: str = "k") -> str:
    # depth objects: the innermost is {}.
    return ('{"' + key + '":') * (depth - 1) + "{}" + "}" * (depth - 1)


def test_limits_are_the_documented_ones() -> None:
    assert MAX_SAFE_INTEGER == 2**53 - 1 == 9007199254740991
    assert MAX_DEPTH == 128


# ---------------------------------------------------------------------------------------
# Rejections
# ---------------------------------------------------------------------------------------

REJECT: list[tuple[str, bytes | str, str, str | None]] = [
    # --- json.number-range: non-zero numbers that underflow to zero ---------------------
    ("underflow", b"1e-400", "json.number-range", ""),
    ("underflow-nested", b'{"a":[0, 1e-999]}', "json.number-range", "/a/1"),
    ("underflow-long-fraction", b"0." + b"0" * 400 + b"1", "json.number-range", ""),
    # --- json.duplicate-key, at any depth --------------------------------------------
    ("dup-top", b'{"a":1,"a":2}', "json.duplicate-key", None),
    ("dup-same-value", b'{"a":1,"a":1}', "json.duplicate-key", None),
    ("dup-not-adjacent", b'{"a":1,"b":2,"a":3}', "json.duplicate-key", None),
    ("dup-nested", b'{"x":{"y":{"a":1,"a":2}}}', "json.duplicate-key", None),
    ("dup-in-array-of-objects", b'[{"a":1},{"b":1,"b":2}]', "json.duplicate-key", None),
    ("dup-deep-in-arrays", b'{"l":[[[{"k":[{"z":0,"z":0}]}]]]}', "json.duplicate-key", None),
    ("dup-after-unescape", b'{"a":1,"\\u0061":2}', "json.duplicate-key", None),
    ("dup-empty-key", b'{"":1,"":2}', "json.duplicate-key", None),
    ("dup-non-ascii-key", '{"\u00e9":1,"\\u00e9":2}'.encode(), "json.duplicate-key", None),
    ("dup-container-values", b'{"a":{},"a":[]}', "json.duplicate-key", None),
    # --- json.non-finite ----------------------------------------------------------------
    ("nan", b"NaN", "json.non-finite", None),
    ("infinity", b"Infinity", "json.non-finite", None),
    ("minus-infinity", b"-Infinity", "json.non-finite", None),
    ("nan-in-array", b"[1,NaN]", "json.non-finite", None),
    ("infinity-in-object", b'{"a":{"b":Infinity}}', "json.non-finite", None),
    ("minus-infinity-in-array", b"[[-Infinity]]", "json.non-finite", None),
    # A literal too large for a double would read as infinity.
    ("overflow", b"1e400", "json.non-finite", None),
    ("overflow-negative", b"[-1.5e309]", "json.non-finite", None),
    # --- json.utf8 ------------------------------------------------------------------------
    ("utf8-raw-high-surrogate", b'"\xed\xa0\x80"', "json.utf8", None),
    ("utf8-raw-low-surrogate", b'"\xed\xb0\x80"', "json.utf8", None),
    ("utf8-raw-surrogate-pair", b'"\xed\xa0\xbd\xed\xb8\x82"', "json.utf8", None),  # CESU-8 U+1F602
    ("utf8-raw-surrogate-bare", b"\xed\xa0\x80", "json.utf8", None),
    ("utf8-raw-surrogate-in-key", b'{"\xed\xa0\x80":1}', "json.utf8", None),
    ("utf8-overlong-2-slash", b'"\xc0\xaf"', "json.utf8", None),
    ("utf8-overlong-2-nul", b'"\xc0\x80"', "json.utf8", None),
    ("utf8-overlong-2-quote", b'"\xc0\xa2"', "json.utf8", None),
    ("utf8-overlong-3", b'"\xe0\x80\xaf"', "json.utf8", None),
    ("utf8-overlong-4", b'"\xf0\x80\x80\xaf"', "json.utf8", None),
    ("utf8-beyond-10ffff", b'"\xf4\x90\x80\x80"', "json.utf8", None),
    ("utf8-truncated", b'"\xe2\x82"', "json.utf8", None),
    ("utf8-lone-continuation", b'"\x80"', "json.utf8", None),
    ("utf8-ff", b'"\xff"', "json.utf8", None),
    ("utf8-latin1", b'{"caf\xe9":1}', "json.utf8", None),
    ("utf16-le-with-bom", "\ufeff{}".encode("utf-16-le"), "json.utf8", None),
    # --- json.surrogate: escaped lone surrogates ------------------------------------------
    ("surrogate-high", b'"\\ud800"', "json.surrogate", ""),
    ("surrogate-low", b'"\\udc00"', "json.surrogate", ""),
    ("surrogate-high-max", b'"\\udbff"', "json.surrogate", ""),
    ("surrogate-low-max", b'"\\udfff"', "json.surrogate", ""),
    ("surrogate-high-then-text", b'"\\ud83dx"', "json.surrogate", ""),
    ("surrogate-high-then-bmp-escape", b'"\\ud800\\u0041"', "json.surrogate", ""),
    ("surrogate-reversed-pair", b'"\\ude02\\ud83d"', "json.surrogate", ""),
    ("surrogate-high-high", b'"\\ud83d\\ud83d"', "json.surrogate", ""),
    ("surrogate-high-at-end", b'"abc\\ud83d"', "json.surrogate", ""),
    ("surrogate-pair-then-lone-low", b'"\\ud83d\\ude02\\ude02"', "json.surrogate", ""),
    ("surrogate-in-object-value", b'{"a":"\\ud800"}', "json.surrogate", "/a"),
    ("surrogate-in-array", b'[1,"x","\\udc00"]', "json.surrogate", "/2"),
    ("surrogate-nested", b'{"a":[1,{"b":"\\udfff"}]}', "json.surrogate", "/a/1/b"),
    ("surrogate-pointer-escaped", b'{"a/b":{"~":"\\ud800"}}', "json.surrogate", "/a~1b/~0"),
    ("surrogate-in-key", b'{"\\ud800":1}', "json.surrogate", ""),
    ("surrogate-low-in-key", b'{"x\\udc00":1}', "json.surrogate", ""),
    ("surrogate-in-nested-key", b'{"a":{"\\udfff":1}}', "json.surrogate", "/a"),
    ("surrogate-in-key-in-array", b'[{"ok":1},{"\\ud83d":2}]', "json.surrogate", "/1"),
    # str input: a raw lone surrogate cannot come from valid UTF-8, only from a str.
    ("surrogate-raw-in-str", '"\ud800"', "json.surrogate", ""),
    ("surrogate-raw-in-str-key", '{"\udc00":1}', "json.surrogate", ""),
    # --- json.bom -------------------------------------------------------------------------
    ("bom-bytes-object", b"\xef\xbb\xbf{}", "json.bom", None),
    ("bom-bytes-scalar", b"\xef\xbb\xbf1", "json.bom", None),
    ("bom-bytes-only", b"\xef\xbb\xbf", "json.bom", None),
    ("bom-str-object", "\ufeff{}", "json.bom", None),
    ("bom-str-array", '\ufeff["a"]', "json.bom", None),
    # --- json.int-range -------------------------------------------------------------------
    ("int-2^53", b"9007199254740992", "json.int-range", None),
    ("int-minus-2^53", b"-9007199254740992", "json.int-range", None),
    ("int-2^53+1", b"9007199254740993", "json.int-range", None),
    ("int-minus-2^53-1", b"-9007199254740993", "json.int-range", None),
    ("int-21-digits", b"999999999999999999999", "json.int-range", None),
    ("int-2^64", b"18446744073709551616", "json.int-range", None),
    ("int-4300-digits", b"1" * 4300, "json.int-range", None),
    ("int-in-array", b"[1,9007199254740992]", "json.int-range", None),
    ("int-in-object", b'{"a":{"n":-9007199254740992}}', "json.int-range", None),
    # numbers whose canonical form reads back as an out-of-range integer
    ("float-1e20", b"1e20", "json.int-range", None),  # canonically 100000000000000000000
    ("float-1E20", b"1E20", "json.int-range", None),
    ("float-minus-1e20", b"-1e20", "json.int-range", None),
    ("float-1e16", b"1e16", "json.int-range", None),
    ("float-2^53+1.0", b"9007199254740993.0", "json.int-range", None),
    ("float-2^53.0", b"9007199254740992.0", "json.int-range", None),
    ("float-rounds-up-to-2^53", b"9007199254740991.5", "json.int-range", None),
    ("float-just-below-1e21", b"999999999999999900000.0", "json.int-range", None),
    ("float-2^68", b"295147905179352830000.0", "json.int-range", None),
    ("float-int-with-exponent", b"9007199254740993e0", "json.int-range", None),
    ("float-in-array", b"[0.5,1e20]", "json.int-range", None),
    # --- json.depth -----------------------------------------------------------------------
    ("depth-arrays", _nest_arrays(MAX_DEPTH + 1).encode(), "json.depth", "/0" * MAX_DEPTH),
    ("depth-objects", _nest_objects(MAX_DEPTH + 1).encode(), "json.depth", "/k" * MAX_DEPTH),
    (
        "depth-objects-escaped-key",
        _nest_objects(MAX_DEPTH + 1, key="a/b").encode(),
        "json.depth",
        "/a~1b" * MAX_DEPTH,
    ),
    # 130 alternating containers plus an innermost []: the 129th is an array 128 tokens deep.
    ("depth-mixed", ('[{"a":' * 65 + "[]" + "}]" * 65).encode(), "json.depth", "/0/a" * 64),
    ("depth-arrays-plus-2", _nest_arrays(MAX_DEPTH + 2).encode(), "json.depth", None),
    # Far past the limit: the parser recurses out before the depth walk runs.
    ("depth-huge", _nest_arrays(100_000).encode(), "json.depth", None),
    ("depth-huge-objects", _nest_objects(50_000).encode(), "json.depth", None),
    # --- json.syntax ----------------------------------------------------------------------
    ("syntax-empty", b"", "json.syntax", None),
    ("syntax-whitespace-only", b" \n\t", "json.syntax", None),
    ("syntax-trailing-garbage", b"{} x", "json.syntax", None),
    ("syntax-two-documents", b"{}{}", "json.syntax", None),
    ("syntax-two-scalars", b"1 2", "json.syntax", None),
    ("syntax-trailing-comma-array", b"[1,]", "json.syntax", None),
    ("syntax-trailing-comma-object", b'{"a":1,}', "json.syntax", None),
    ("syntax-trailing-nul", b"[]\x00", "json.syntax", None),
    ("syntax-trailing-bom", b"[]\xef\xbb\xbf", "json.syntax", None),
    ("syntax-unclosed", b"[1", "json.syntax", None),
    ("syntax-unclosed-string", b'"abc', "json.syntax", None),
    ("syntax-single-quotes", b"{'a':1}", "json.syntax", None),
    ("syntax-unquoted-key", b"{a:1}", "json.syntax", None),
    ("syntax-comment", b"// c\n1", "json.syntax", None),
    ("syntax-leading-zero", b"01", "json.syntax", None),
    ("syntax-plus", b"+1", "json.syntax", None),
    ("syntax-leading-dot", b".5", "json.syntax", None),
    ("syntax-trailing-dot", b"1.", "json.syntax", None),
    ("syntax-hex-number", b"0x10", "json.syntax", None),
    ("syntax-nan-lowercase", b"nan", "json.syntax", None),
    ("syntax-True", b"True", "json.syntax", None),
    ("syntax-control-char-in-string", b'"a\x01b"', "json.syntax", None),
    ("syntax-raw-newline-in-string", b'"a\nb"', "json.syntax", None),
    ("syntax-bad-escape", b'"\\x41"', "json.syntax", None),
    ("syntax-short-unicode-escape", b'"\\u12"', "json.syntax", None),
    ("syntax-nbsp-whitespace", "\u00a0{}".encode(), "json.syntax", None),
    ("syntax-line-separator", "{}\u2028".encode(), "json.syntax", None),
    ("syntax-str-trailing-garbage", '{"a":1} ,', "json.syntax", None),
]


@pytest.mark.parametrize(
    ("data", "code", "pointer"),
    [r[1:] for r in REJECT],
    ids=[r[0] for r in REJECT],
)
def test_reader_rejects(data: bytes | str, code: str, pointer: str | None) -> None:
    _fails(data, code, pointer)


def test_reject_table_ids_unique() -> None:
    assert len({r[0] for r in REJECT}) == len(REJECT)


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_reader_rejects_every_bytes_like(kind: type) -> None:
    _fails(kind(b'{"a":1,"a":2}'), "json.duplicate-key")
    _fails(kind(b"\xef\xbb\xbf{}"), "json.bom")
    _fails(kind(b'"\xed\xa0\x80"'), "json.utf8")


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"1" * 4301, id="4301-digits"),
        pytest.param(b"-" + b"9" * 5000, id="negative-5000-digits"),
        pytest.param(b'{"n":[' + b"1" * 10_000 + b"]}", id="nested-10000-digits"),
    ],
)
def test_huge_integer_literal_is_int_range(data: bytes) -> None:
    # Bug: Python refuses int() of more than 4300 digits (sys.int_info.default_max_str_digits)
    # with a plain ValueError, which escapes loads() as neither JSONFormError nor json.syntax.
    _fails(data, "json.int-range")


# ---------------------------------------------------------------------------------------
# Accepted (the boundaries of every rule) and their canonical bytes
# ---------------------------------------------------------------------------------------

ACCEPT: list[tuple[str, bytes | str, bytes]] = [
    # integers at the edge of the safe range
    ("int-max-safe", b"9007199254740991", b"9007199254740991"),
    ("int-min-safe", b"-9007199254740991", b"-9007199254740991"),
    ("float-max-safe", b"9007199254740991.0", b"9007199254740991"),
    ("float-rounds-down-below-2^53", b"9007199254740990.5", b"9007199254740990"),
    ("minus-zero-int", b"-0", b"0"),
    ("minus-zero-float", b"-0.0", b"0"),
    ("int-as-float", b"1.0", b"1"),
    ("int-as-exponent", b"1E2", b"100"),
    ("float-1e15", b"1e15", b"1000000000000000"),
    # from 1e21 on the canonical form has an exponent, so it reads back as a float
    ("float-1e21", b"1e21", b"1e+21"),
    ("float-minus-1e21", b"-1e21", b"-1e+21"),
    ("float-1.5e300", b"1.5e300", b"1.5e+300"),
    ("float-max", b"1.7976931348623157e308", b"1.7976931348623157e+308"),
    ("float-min-subnormal", b"5e-324", b"5e-324"),
    ("float-small", b"0.000001", b"0.000001"),
    ("zero-with-exponent", b"0e-999", b"0"),
    ("integral-float-is-an-integer", b"[541.0, -0.0, 1e3]", b"[541,0,1000]"),
    ("float-smaller", b"1e-7", b"1e-7"),
    ("float-point-1", b"0.1", b"0.1"),
    # a valid escaped surrogate pair is one code point
    ("surrogate-pair", b'"\\ud83d\\ude02"', '"\U0001f602"'.encode()),
    ("surrogate-pair-in-key", b'{"\\ud83d\\ude02":1}', '{"\U0001f602":1}'.encode()),
    (
        "surrogate-pair-extremes",
        b'"\\ud800\\udc00\\udbff\\udfff"',
        '"\U00010000\U0010ffff"'.encode(),
    ),
    ("raw-astral", '"\U0001f602"'.encode(), '"\U0001f602"'.encode()),
    ("bmp-noncharacter", b'"\\uffff"', '"\uffff"'.encode()),
    # BOM as content (not leading) is just U+FEFF
    ("bom-inside-string", b'"\\ufeff"', '"\ufeff"'.encode()),
    ("raw-bom-inside-string", b'"\xef\xbb\xbf"', '"\ufeff"'.encode()),
    # different keys after normalisation are still different keys (no NFC in JCS)
    ("nfc-nfd-keys", b'{"\\u00e9":1,"e\\u0301":2}', '{"e\u0301":2,"\u00e9":1}'.encode()),
    ("same-key-in-sibling-objects", b'[{"a":1},{"a":1}]', b'[{"a":1},{"a":1}]'),
    ("same-key-at-different-depths", b'{"a":{"a":{"a":1}}}', b'{"a":{"a":{"a":1}}}'),
    # depth: exactly MAX_DEPTH is accepted, scalars inside count no level
    ("depth-arrays-max", _nest_arrays(MAX_DEPTH).encode(), _nest_arrays(MAX_DEPTH).encode()),
    ("depth-objects-max", _nest_objects(MAX_DEPTH).encode(), _nest_objects(MAX_DEPTH).encode()),
    (
        "depth-max-with-scalar",
        _nest_arrays(MAX_DEPTH, "1").encode(),
        _nest_arrays(MAX_DEPTH, "1").encode(),
    ),
    # whitespace around and inside is fine
    ("whitespace", b' \r\n\t{ "b" : [ 1 , 2 ] ,\n "a" : null }\n ', b'{"a":null,"b":[1,2]}'),
    ("scalar-true", b"true", b"true"),
    ("scalar-null", b" null ", b"null"),
    ("empty-string", b'""', b'""'),
    ("str-input", '{"b":1,"a":"\u20ac"}', '{"a":"\u20ac","b":1}'.encode()),
    (
        "escapes",
        b'"\\/\\b\\f\\n\\r\\t\\u0000\\u001f\\u007f"',
        b'"/\\b\\f\\n\\r\\t\\u0000\\u001f\x7f"',
    ),
]


@pytest.mark.parametrize(("data", "expected"), [a[1:] for a in ACCEPT], ids=[a[0] for a in ACCEPT])
def test_reader_accepts_and_canonicalises(data: bytes | str, expected: bytes) -> None:
    value = loads(data)
    assert dumps(value) == expected
    assert loads_canonical(data) == (value, expected)
    # idempotent: the canonical bytes are a fixed point
    assert dumps(loads(expected)) == expected


def test_accept_table_ids_unique() -> None:
    assert len({a[0] for a in ACCEPT}) == len(ACCEPT)


def test_number_types_after_reading() -> None:
    assert loads(b"9007199254740991") == 9007199254740991
    assert type(loads(b"9007199254740991")) is int
    assert type(loads(b"1.5e300")) is float
    assert loads(b"1e21") == 1e21


# ---------------------------------------------------------------------------------------
# dumps on Python values no strict parse yields
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (2**53, "json.int-range"),
        (-(2**53), "json.int-range"),
        ({"a": [2**64]}, "json.int-range"),
        (float("nan"), "json.non-finite"),
        (float("inf"), "json.non-finite"),
        ([float("-inf")], "json.non-finite"),
    ],
)
def test_dumps_refuses_out_of_domain_values(value: Any, code: str) -> None:
    with pytest.raises(JSONFormError) as info:
        dumps(value)
    assert info.value.code == code


@pytest.mark.parametrize("value", [{1: "x"}, b"bytes", {1.5}, object()])
def test_dumps_non_json_type_is_type_error(value: Any) -> None:
    with pytest.raises(TypeError):
        dumps(value)


@pytest.mark.parametrize("value", [1e20, -1e20, float(2**53), 9.999999999999999e20])
def test_dumps_refuses_floats_the_reader_would_reject(value: float) -> None:
    # dumps(1e20) == b"100000000000000000000", which loads() refuses (json.int-range), so
    # stored == dumps(loads(stored)) breaks for any value built in Python rather than parsed.
    with pytest.raises(JSONFormError) as info:
        dumps(value)
    assert info.value.code == "json.int-range"


# ---------------------------------------------------------------------------------------
# Official vectors
# ---------------------------------------------------------------------------------------

# cyberphone/json-canonicalization, testdata/input/*.json -> testdata/output/*.json
# (the JCS reference test data, by the RFC 8785 author). Inputs are the files' exact text.
# Non-ASCII is written as escapes here so that the source file's own encoding cannot alter it;
# the files hold the same characters as raw UTF-8.
CYBERPHONE: list[tuple[str, str, str]] = [
    (
        # The stored copy of testdata/output/arrays.json was unavailable; the expected bytes
        # follow from RFC 8785 section 3.2.3 (keys "1" < "10" < "d" by UTF-16 code units).
        "arrays",
        '[\n  56,\n  {\n    "d": true,\n    "10": null,\n    "1": [ ]\n  }\n]',
        '[56,{"1":[],"10":null,"d":true}]',
    ),
    (
        "french",
        '{\n  "peach": "This sorting order",\n'
        '  "p\u00e9ch\u00e9": "is wrong according to French",\n'
        '  "p\u00eache": "but canonicalization MUST",\n  "sin":   "ingnore locale"\n}\n',
        '{"peach":"This sorting order","p\u00e9ch\u00e9":"is wrong according to French",'
        '"p\u00eache":"but canonicalization MUST","sin":"ingnore locale"}',
    ),
    (
        "structures",
        '{\n  "1": {"f": {"f": "hi","F": 5} ,"\\n": 56.0},\n  "10": { },\n  "": "empty",\n'
        '  "a": { },\n  "111": [ { } ],\n  "A": { }\n}',
        '{"":"empty","1":{"\\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{}],"A":{},"a":{}}',
    ),
    (
        "unicode",
        '{\n  "Unnormalized Unicode":"\\u1e0d\\u0307"\n}\n',
        '{"Unnormalized Unicode":"\u1e0d\u0307"}',
    ),
    (
        "values",
        '{\n  "numbers": [1E30, 4.50, 333333333.33333329, 2e-3, 0.000000000000000000000000001],\n'
        '  "escaping": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",\n'
        '  "literals": [null, true, false]\n}',
        '{"escaping":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/","literals":[null,true,false],'
        '"numbers":[1e+30,4.5,333333333.3333333,0.002,1e-27]}',
    ),
    (
        # U+0080 and U+007F are not escaped in the output (RFC 8785 section 3.2.2.2 escapes
        # only U+0000..U+001F, '"' and '\\'); they are invisible in a text view of the file.
        "weird",
        '{\n  "\\u20ac": "Euro Sign",\n  "1": "One",\n  "\\u0080": "Control\\u007f",\n'
        '  "\\ud83d\\ude02": "Smiley",\n  "\\u00f6": "Latin Small Letter O With Diaeresis",\n'
        '  "\\ufb33": "Hebrew Letter Dalet With Dagesh",\n  "</script>": "Browser Challenge"\n}\n',
        '{"1":"One","</script>":"Browser Challenge","\u0080":"Control\u007f",'
        '"\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign",'
        '"\U0001f602":"Smiley","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    ),
    (
        # testdata/outhex/simpleString.txt gives the output as hex bytes.
        "simpleString",
        '    "this is a test string 1235"',
        bytes.fromhex(
            "22 74 68 69 73 20 69 73 20 61 20 74 65 73 74 20 73 74 72 69 6E 67 20 31 32 33 35 22"
        ).decode("utf-8"),
    ),
]


@pytest.mark.parametrize(
    ("source", "expected"), [c[1:] for c in CYBERPHONE], ids=[c[0] for c in CYBERPHONE]
)
def test_cyberphone_vectors(source: str, expected: str) -> None:
    data = source.encode("utf-8")
    want = expected.encode("utf-8")
    assert dumps(loads(data)) == want
    assert dumps(loads(source)) == want  # str input: same rules, same bytes
    assert dumps(loads(want)) == want  # the output is itself canonical


# RFC 8785 section 3.2.2 (input) and section 3.2.4 (the canonical bytes, as hex).
RFC_3_2_2_INPUT = (
    '{\n  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],\n'
    '  "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",\n'
    '  "literals": [null, true, false]\n}'
)
RFC_3_2_4_HEX = (
    "7b 22 6c 69 74 65 72 61 6c 73 22 3a 5b 6e 75 6c 6c 2c 74 72"
    " 75 65 2c 66 61 6c 73 65 5d 2c 22 6e 75 6d 62 65 72 73 22 3a"
    " 5b 33 33 33 33 33 33 33 33 33 2e 33 33 33 33 33 33 33 2c 31"
    " 65 2b 33 30 2c 34 2e 35 2c 30 2e 30 30 32 2c 31 65 2d 32 37"
    " 5d 2c 22 73 74 72 69 6e 67 22 3a 22 e2 82 ac 24 5c 75 30 30"
    " 30 66 5c 6e 41 27 42 5c 22 5c 5c 5c 5c 5c 22 2f 22 7d"
)


def test_rfc8785_section_3_2_4_bytes() -> None:
    assert dumps(loads(RFC_3_2_2_INPUT.encode())) == bytes.fromhex(RFC_3_2_4_HEX)


# RFC 8785 section 3.2.3: property sorting by UTF-16 code units.
RFC_3_2_3_INPUT = (
    '{\n  "\\u20ac": "Euro Sign",\n  "\\r": "Carriage Return",\n'
    '  "\\ufb33": "Hebrew Letter Dalet With Dagesh",\n  "1": "One",\n'
    '  "\\ud83d\\ude00": "Emoji: Grinning Face",\n  "\\u0080": "Control\\u007f",\n'
    '  "\\u00f6": "Latin Small Letter O With Diaeresis"\n}'
)
RFC_3_2_3_ORDER = [
    "Carriage Return",
    "One",
    "Control\u007f",
    "Latin Small Letter O With Diaeresis",
    "Euro Sign",
    "Emoji: Grinning Face",
    "Hebrew Letter Dalet With Dagesh",
]


def test_rfc8785_section_3_2_3_sort_order() -> None:
    out = dumps(loads(RFC_3_2_3_INPUT.encode()))
    assert list(loads(out).values()) == RFC_3_2_3_ORDER
    assert out.startswith(b'{"\\r":"Carriage Return","1":"One","\xc2\x80":"Control\x7f",')
    # U+1F600 (D83D DE00 in UTF-16) sorts before U+FB33 although its code point is larger.
    assert out.index("\U0001f600".encode()) < out.index("\ufb33".encode())


# RFC 8785 Appendix B: IEEE 754 bit pattern -> ECMAScript Number serialization.
APPENDIX_B = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]
# Appendix B rows whose canonical text is an integer beyond +-(2**53-1): ECMAScript prints
# them without an exponent, so they would read back as out-of-range integers. The strict
# reader rejects them on purpose (json.int-range, issue 2); for these rows only the
# serializer is checked, and the reader's refusal of the canonical text is asserted.
OUT_OF_READER_DOMAIN = {
    "9007199254740992",
    "-9007199254740992",
    "295147905179352830000",
    "999999999999999700000",
    "999999999999999900000",
}


def _from_bits(bits: str) -> float:
    return struct.unpack(">d", bytes.fromhex(bits))[0]


@pytest.mark.parametrize(("bits", "expected"), APPENDIX_B, ids=[b for b, _ in APPENDIX_B])
def test_rfc8785_appendix_b_numbers(bits: str, expected: str) -> None:
    value = _from_bits(bits)
    want = expected.encode()
    assert rfc8785.dumps(value) == want  # the serializer dumps() delegates to
    if expected in OUT_OF_READER_DOMAIN:
        _fails(want, "json.int-range")
        _fails(repr(value).encode(), "json.int-range")  # Python's spelling of the same double
        return
    assert dumps(value) == want
    assert dumps(loads(want)) == want
    assert dumps(loads(repr(value).encode())) == want  # another spelling, same bytes


def test_appendix_b_reader_domain_split_is_exact() -> None:
    # The set above is exactly the integer-looking rows beyond the safe range.
    computed = {
        e for _, e in APPENDIX_B if e.lstrip("-").isdigit() and abs(int(e)) > MAX_SAFE_INTEGER
    }
    assert computed == OUT_OF_READER_DOMAIN


# ---------------------------------------------------------------------------------------
# Equal values, different spellings: one canonical form
# ---------------------------------------------------------------------------------------


def test_spellings_of_one_value_share_canonical_bytes() -> None:
    spellings = [
        b'{"b":[1,2.0,"\xc3\xa9"],"a":{"y":null,"x":true}}',
        b'{ "a" : { "x" : true , "y" : null } , "b" : [ 1 , 2 , "\\u00e9" ] }',
        b'{"a":{"y":null,"x":true},"b":[1.0,2e0,"\\u00E9"]}',
        b'\n{\n\t"b": [10e-1, 0.2e1, "\xc3\xa9"],\n\t"a": {"x": true, "y": null}\n}\n',
    ]
    outs = {dumps(loads(s)) for s in spellings}
    assert outs == {'{"a":{"x":true,"y":null},"b":[1,2,"\u00e9"]}'.encode()}


def test_all_is_sorted() -> None:
    assert list(canonical.__all__) == sorted(canonical.__all__)


def test_a_cyclic_python_value_is_json_depth_not_a_hang():
    """A value that refers to itself has no JSON form: json.depth, found in bounded time."""
    import pytest

    from evstore.core import canonical
    from evstore.core.errors import JSONFormError

    loop: dict = {}
    loop["x"] = loop
    twice: list = []
    twice.extend([twice, twice])  # each level doubles: a walk that goes on would never end
    for value in (loop, twice, {"ok": 1, "bad": [loop]}):
        with pytest.raises(JSONFormError) as ei:
            canonical.dumps(value)
        assert ei.value.code == "json.depth"


def _nested(depth: int) -> Any:
    """``depth`` arrays, one inside the other."""
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "values",
    [
        [],
        [{"a": "x", "n": 1}, {"b": 1.5}, "s", 7, None, True],
        [{"a": 1e300}, {"b": "é\u2028"}, {"\U0001f600": 1}],  # off the C-encoder path
        [{"k": 0.1}, {"k": 1e-7}],  # one plain float, one that is not
        [_nested(MAX_DEPTH)],  # as deep as allowed: one level deeper inside the list
    ],
)
def test_dumps_many_equals_dumps_one_at_a_time(values: list[Any]) -> None:
    assert canonical.dumps_many(values) == [dumps(v) for v in values]


@pytest.mark.parametrize(
    ("values", "code", "pointer"),
    [
        ([{"a": 1}, {"b": [2**53]}], "json.int-range", "/b/0"),
        ([{"a": float("nan")}], "json.non-finite", "/a"),
        ([1, _nested(MAX_DEPTH + 1)], "json.depth", None),
    ],
)
def test_dumps_many_raises_what_dumps_raises_for_the_value(
    values: list[Any], code: str, pointer: str | None
) -> None:
    with pytest.raises(JSONFormError) as many:
        canonical.dumps_many(values)
    with pytest.raises(JSONFormError) as one:
        dumps(values[-1])
    assert many.value.code == one.value.code == code
    assert many.value.pointer == one.value.pointer
    if pointer is not None:
        assert many.value.pointer == pointer
