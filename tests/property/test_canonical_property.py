"""Properties of the canonical form (issue 2, "Canonical form (RFC 8785)").

For every JSON value inside the strict reader's domain (integers within +-(2**53-1), finite
floats whose canonical text does not read back as an out-of-range integer, strings without
lone surrogates, nesting below MAX_DEPTH):

1. ``dumps(v)`` is byte-identical to ``rfc8785.dumps(v)`` (the differential test a faster
   own path must pass), and is independently well-formed: UTF-8, no insignificant
   whitespace, object members sorted by UTF-16 code units, same value when read back.
2. Idempotence: the canonical bytes pass the strict reader and are a fixed point,
   ``stored == dumps(loads(stored))``.
3. Equal values written differently (shuffled key order, whitespace, indentation, ``\\u``
   escapes, floats spelled by Python) have one canonical form, hence one address.

Profiles (``ci``/``dev``) are in conftest.py.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

import rfc8785
from hypothesis import example, given
from hypothesis import strategies as st

from evstore.core.canonical import MAX_DEPTH, MAX_SAFE_INTEGER, dumps, loads

# ---------------------------------------------------------------------------------------
# Strategies: the strict reader's domain
# ---------------------------------------------------------------------------------------


def _float_in_domain(f: float) -> bool:
    """False for floats whose canonical text is an integer beyond +-(2**53-1) (e.g. 1e20).

    Decided from the oracle's text, not from evstore's own rule, so the strategy does not
    inherit a bug in that rule.
    """
    text = rfc8785.dumps(f).decode("ascii")
    return not (re.fullmatch(r"-?[0-9]+", text) and abs(int(text)) > MAX_SAFE_INTEGER)


json_ints = st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER) | st.sampled_from(
    [0, -1, 1, MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, 2**31, -(2**31), 2**32, 10**15]
)
json_floats = (
    st.floats(allow_nan=False, allow_infinity=False)
    | st.floats(-1e6, 1e6, allow_nan=False)
    | st.sampled_from(
        [0.0, -0.0, 5e-324, 1e-7, 1e-6, 0.1, 1e21, -1e21, 1.7976931348623157e308, 2.0**53 - 1]
    )
).filter(_float_in_domain)

SPECIAL_CHARS = [
    "\x00",
    "\x08",
    "\x1f",
    "\x7f",
    "\x80",
    '"',
    "\\",
    "/",
    "\u2028",
    "\u2029",
    "\ufeff",
    "\ud7ff",
    "\ue000",
    "\uffff",
    "\U00010000",
    "\U0001f602",
    "\U0010ffff",
    "\u00e9",
    "\u0301",
]
# codec="utf-8" leaves out the surrogate code points: no lone surrogates.
json_chars = st.characters(codec="utf-8") | st.sampled_from(SPECIAL_CHARS)
json_strings = st.text(json_chars, max_size=12)
json_keys = st.text(json_chars, max_size=6) | st.sampled_from(
    ["", "a", "A", "1", "10", "\ue000", "\U00010000"]
)

json_scalars = st.none() | st.booleans() | json_ints | json_floats | json_strings
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(json_keys, inner, max_size=5),
    max_leaves=25,
)


def _depth(v: Any) -> int:
    if isinstance(v, dict):
        return 1 + max((_depth(c) for c in v.values()), default=0)
    if isinstance(v, list):
        return 1 + max((_depth(c) for c in v), default=0)
    return 0


@st.composite
def deep_values(draw: st.DrawFn) -> Any:
    """A chain of containers 1..MAX_DEPTH deep, arrays and objects mixed, a scalar inside."""
    depth = draw(st.integers(1, MAX_DEPTH))
    value = draw(json_scalars)
    for _ in range(depth):
        if draw(st.booleans()):
            value = [value]
        else:
            value = {draw(json_keys): value}
    return value


# ---------------------------------------------------------------------------------------
# Independent checks of canonical bytes
# ---------------------------------------------------------------------------------------


def _assert_keys_sorted_utf16(text: str) -> None:
    """Every object in ``text`` lists its members in UTF-16 code unit order (RFC 8785 3.2.3)."""

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k.encode("utf-16-be") for k, _ in pairs]
        assert keys == sorted(keys), [k for k, _ in pairs]
        assert len(set(keys)) == len(keys)
        return dict(pairs)

    json.loads(text, object_pairs_hook=hook)


def _no_insignificant_whitespace(text: str) -> bool:
    """True when no whitespace occurs outside string literals."""
    outside = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)
    return not re.search(r"[ \t\n\r]", outside)


def _same_value(a: Any, b: Any) -> bool:
    """JSON value equality (1 == 1.0, -0.0 == 0); dict order ignored; bool never a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return (
            isinstance(b, dict) and a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
        )
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same_value, a, b))
    return (
        a == b
        and type(a) in (int, float, str, type(None))
        and type(b) in (int, float, str, type(None))
    )


# ---------------------------------------------------------------------------------------
# 1. Differential: dumps == rfc8785.dumps, and well-formed canonical bytes
# ---------------------------------------------------------------------------------------

EDGE_EXAMPLES = [
    {"\ue000": 1, "\U00010000": 2},  # UTF-16 order puts U+10000 (D800 DC00) before U+E000
    {"b": 1, "a": 2, "": 3, "A": 4, "10": 5, "1": 6},
    -0.0,
    5e-324,
    1e21,
    -1e21,
    1.7976931348623157e308,
    MAX_SAFE_INTEGER,
    -MAX_SAFE_INTEGER,
    float(MAX_SAFE_INTEGER),
    0.1 + 0.2,
    1e-7,
    '\x00\x1f\x7f"\\/\u2028\ufeff\U0001f602',
    ["e\u0301", "\u00e9"],
    {"nested": [{"z": None, "y": [True, False]}, []], "e": {}},
]


def _with_examples(fn: Any) -> Any:
    for ex in EDGE_EXAMPLES:
        fn = example(ex)(fn)
    return fn


@_with_examples
@given(json_values)
def test_dumps_is_rfc8785(value: Any) -> None:
    out = dumps(value)
    assert out == rfc8785.dumps(value)
    text = out.decode("utf-8")  # strict UTF-8
    assert _no_insignificant_whitespace(text)
    _assert_keys_sorted_utf16(text)
    assert _same_value(json.loads(text), value)


@given(deep_values())
@example([[[[]]]])
@example(json.loads("[" * MAX_DEPTH + "]" * MAX_DEPTH))
def test_deep_values(value: Any) -> None:
    assert _depth(value) <= MAX_DEPTH
    out = dumps(value)
    assert out == rfc8785.dumps(value)
    assert dumps(loads(out)) == out


# ---------------------------------------------------------------------------------------
# 2. Idempotence: stored bytes == canonical(parse(stored bytes))
# ---------------------------------------------------------------------------------------


@_with_examples
@given(json_values)
def test_canonical_bytes_are_a_fixed_point(value: Any) -> None:
    stored = dumps(value)
    parsed = loads(stored)  # the strict reader accepts every canonical form in its domain
    assert _same_value(parsed, value)
    assert dumps(parsed) == stored
    assert dumps(loads(stored.decode("utf-8"))) == stored  # str input, same bytes


# ---------------------------------------------------------------------------------------
# 3. Equal values written differently: one canonical form
# ---------------------------------------------------------------------------------------


def _shuffled(value: Any, rnd: random.Random) -> Any:
    """The same value with every object's member order shuffled (dicts keep insertion order)."""
    if isinstance(value, dict):
        items = list(value.items())
        rnd.shuffle(items)
        return {k: _shuffled(v, rnd) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v, rnd) for v in value]
    return value


spellings = st.fixed_dictionaries(
    {
        "ensure_ascii": st.booleans(),
        "indent": st.sampled_from([None, 0, 1, 2, "\t", " \n "]),
        "separators": st.sampled_from([None, (",", ":"), (" , ", " : "), (",\n", ":\t")]),
    }
)


def _with_spelled_examples(fn: Any) -> Any:
    # Each edge value, in ASCII-escaped indented form with shuffled keys.
    for i, ex in enumerate(EDGE_EXAMPLES):
        style = {"ensure_ascii": True, "indent": 2 if i % 2 else None, "separators": None}
        fn = example(value=ex, rnd=random.Random(i), style=style, pad="\n")(fn)
    return fn


@_with_spelled_examples
@given(
    json_values,
    st.randoms(use_true_random=False),
    spellings,
    st.sampled_from(["", " ", "\n", "\r\n\t "]),
)
def test_equal_values_share_canonical_bytes(
    value: Any, rnd: random.Random, style: dict[str, Any], pad: str
) -> None:
    canonical = dumps(value)
    text = pad + json.dumps(_shuffled(value, rnd), allow_nan=False, **style) + pad
    if style["ensure_ascii"]:
        assert text.isascii()  # non-ASCII (astral too, as surrogate pairs) went through \u escapes
    assert dumps(loads(text.encode("utf-8"))) == canonical
    assert dumps(loads(text)) == canonical


@given(json_values, st.randoms(use_true_random=False))
def test_shuffled_key_order_alone_changes_nothing(value: Any, rnd: random.Random) -> None:
    assert dumps(_shuffled(value, rnd)) == dumps(value)


@given(
    st.dictionaries(json_keys, json_scalars, min_size=2, max_size=8),
    st.randoms(use_true_random=False),
)
def test_member_order_in_the_source_bytes_is_irrelevant(
    obj: dict[str, Any], rnd: random.Random
) -> None:
    # Same members, two written orders, compact separators: the raw bytes differ, the
    # canonical bytes do not.
    items = list(obj.items())
    forward = "{" + ",".join(json.dumps(k) + ":" + json.dumps(v) for k, v in items) + "}"
    rnd.shuffle(items)
    backward = "{" + ",".join(json.dumps(k) + ":" + json.dumps(v) for k, v in reversed(items)) + "}"
    assert dumps(loads(forward.encode())) == dumps(loads(backward.encode())) == dumps(obj)


# --- the fast path (C encoder with sorted keys) against the oracle ---------------------------
_fast_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_fast_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53 - 1), max_value=2**53 - 1)
    | _fast_text,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(_fast_text, children, max_size=5)
    ),
    max_leaves=30,
)


@given(_fast_values)
@example({"\ue000": 1, "\U00010000": 2})  # astral key: must fall back (UTF-16 order differs)
@example({"a\u007f": '\x00\x1f\u2028"\\/', "A": [True, None, -0]})
def test_fast_path_is_byte_identical_to_rfc8785(value):
    from evstore.core import canonical

    assert canonical.dumps(value) == rfc8785.dumps(value)
    has_astral_key = False
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            has_astral_key |= any(ord(c) > 0xFFFF for k in node for c in k)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    assert canonical._scan(value, check_numbers=True) is (not has_astral_key)


# --- the fast path with floats: plain floats (1e-4 <= |x| < 1e16, not integral) ------------
_any_float = (
    st.floats(allow_nan=False, allow_infinity=False)
    | st.floats(-1e17, 1e17, allow_nan=False)
    | st.floats(-1e-3, 1e-3, allow_nan=False)
    | st.sampled_from(
        [1e-4, 9.999999999999999e-05, 1e16, 9007199254740991.0, 0.1, -0.5, 1e15 + 0.5]
    )
)
_float_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | _any_float | _fast_text,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(_fast_text, children, max_size=5)
    ),
    max_leaves=30,
)


def _plain(x: float) -> bool:
    return 1e-4 <= abs(x) < 1e16 and not x.is_integer()


@given(_float_values)
@example([1e-4, 0.0001000000000000001, 123.456, -2.5e-3])
@example({"a": 9.999999999999999e-05, "b": 1e16 + 2.0})
def test_fast_path_with_floats_is_byte_identical_to_rfc8785(value):
    from evstore.core import canonical

    floats, astral, stack = [], False, [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            astral |= any(ord(c) > 0xFFFF for k in node for c in k)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, float):
            floats.append(node)
    try:
        expected = rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:
        return  # out of the JSON domain (an integral float beyond 2**53): not this test's
    simple = canonical._scan(value, check_numbers=False)
    assert simple is (not astral and all(_plain(x) for x in floats))
    if simple:  # the C encoder writes exactly the RFC 8785 bytes
        assert canonical._encode(value, True) == expected
    try:
        parsed, canonical_bytes = canonical.loads_canonical(json.dumps(value).encode())
    except canonical.JSONFormError:
        return  # the strict reader refuses it (e.g. an integral float beyond 2**53)
    assert canonical_bytes == rfc8785.dumps(parsed)
