"""The fast JSON reader against the strict one (issue 29): a differential test.

``loads`` and ``loads_canonical`` first read with the C decoder and only the duplicate-name
hook (``canonical._fast``), and hand everything it cannot vouch for to the strict reader
(``canonical._strict``, the per-number hooks). Whatever the input, the answer must be the
strict reader's: the same value with the same Python types and member order, the same
``simple`` flag (which encoder runs), or the same error code, message and pointer.

Inputs: every row of the reader's accept and reject tables (tests/unit/test_canonical.py),
tricky numbers, names and nesting written here, and generated JSON texts that spell numbers
every way JSON allows.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from test_canonical import ACCEPT, REJECT

from evstore.core import canonical
from evstore.core.errors import JSONFormError


def _typed(value: Any) -> Any:
    """``value`` with every type and member order made part of equality (1 != 1.0 here)."""
    if isinstance(value, dict):
        return ("dict", [(k, _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(v) for v in value])
    if isinstance(value, float):
        return ("float", value.hex())  # -0.0 and 0.0 differ
    return (type(value).__name__, value)


def _outcome(read: Any, data: bytes | str, number_tokens: bool) -> Any:
    try:
        value, simple = read(data, number_tokens)
    except JSONFormError as err:
        return ("error", err.code, err.message, err.pointer)
    return ("value", _typed(value), simple)


def _old(data: bytes | str, number_tokens: bool) -> tuple[Any, bool]:
    """The strict reader alone: what ``loads`` was before the fast reader."""
    return canonical._strict(canonical._text(data), number_tokens)


def _same(data: bytes | str) -> None:
    for tokens in (False, True):
        assert _outcome(canonical._read, data, tokens) == _outcome(_old, data, tokens), data
    try:
        old_value, _ = _old(data, False)
    except JSONFormError as err:
        with pytest.raises(JSONFormError) as info:
            canonical.loads_canonical(data)
        assert (info.value.code, info.value.pointer) == (err.code, err.pointer)
    else:
        value, stored = canonical.loads_canonical(data)
        assert _typed(value) == _typed(old_value)
        assert stored == canonical.dumps(old_value)


TRICKY: list[bytes | str] = [
    # integral floats: the strict reader makes them ints (or refuses an underflow)
    b'{"a":[1.5,2.0]}',
    b'{"a":{"b":[0.25,-0.0]}}',
    b'{"x":0.5,"y":1e-400}',
    b'{"x":0.5,"y":[0e5]}',
    b"[0.1,1E2,3]",
    b'{"v":10.0,"w":1e1,"z":0.75}',
    b'{"big":9007199254740991,"f":0.5}',
    b'{"big":9007199254740992,"f":0.5}',
    b'{"f":[0.5,1e16]}',
    b'{"f":[0.5,1.5e16]}',
    b'{"f":[0.5,9007199254740993.5]}',
    b'{"f":[0.5,12345678901234.5]}',
    b'{"f":[0.5,1e-5,0.0001,1e21,5e-324]}',
    b'{"n":[0.5,NaN]}',
    b'{"n":[0.5,-Infinity]}',
    b'{"n":[0.5,1e999]}',
    b'{"n":[0.5,' + b"7" * 5000 + b"]}",
    b'{"n":-' + b"1" * 17 + b"}",
    # repeated names beside other faults: the strict reader's first fault wins
    b'{"a":1e20,"b":{"c":1,"c":2}}',
    b'{"b":{"c":1,"c":2},"a":1e20}',
    b'{"a":"\\ud800","a":1}',
    b'[{"k":0.5},{"k":1,"k":0.5}]',
    # names: escaped, astral, near each other
    b'{"\\u0061":0.5,"b":1}',
    '{"\U0001f600":0.5,"z":[1,2]}'.encode(),
    '{"\U0001f600":2.0}'.encode(),
    b'{"a\\ud83d\\ude00":1.25}',
    # depth at and past the limit, with numbers inside
    b"[" * canonical.MAX_DEPTH + b"0.5" + b"]" * canonical.MAX_DEPTH,
    b"[" * (canonical.MAX_DEPTH + 1) + b"0.5" + b"]" * (canonical.MAX_DEPTH + 1),
    b"[" * 5000 + b"]" * 5000,
    # syntax after a valid prefix, whitespace, str input
    b'{"a":0.5} x',
    b' \n{"a" : [ 0.5 , 2 ] }\t',
    '{"b":0.5,"a":"\u20ac"}',
    "\ufeff{}",
]

TABLES = [r[1] for r in REJECT] + [a[1] for a in ACCEPT] + TRICKY


@pytest.mark.parametrize("data", TABLES, ids=[f"case{i}" for i in range(len(TABLES))])
def test_fast_reader_answers_as_the_strict_reader(data: bytes | str) -> None:
    _same(data)


def test_a_plain_document_takes_the_fast_path() -> None:
    # The differential test would pass with a fast path that never accepts: make sure it does.
    text = json.dumps({"id": "r-1", "n": 3, "x": 0.25, "t": ["a", None, True], "m": {"k": 8}})
    assert canonical._fast(text) is not None
    for handed_over in ('{"x":2.0}', '{"x":1e-400}', '{"a":1,"a":1}', "[NaN]", "[1e20]"):
        assert canonical._fast(handed_over) is None, handed_over


_NUMBER = st.one_of(
    st.integers(min_value=-(2**60), max_value=2**60).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.tuples(
        st.sampled_from(["", "-"]),
        st.integers(min_value=0, max_value=10**20).map(str),
        st.sampled_from(["", ".0", ".5", ".000", ".25"]),
        st.sampled_from(["", "e0", "e1", "E-2", "e+5", "e16", "e-400", "e400", "e21"]),
    ).map("".join),
)
_KEY = st.sampled_from(["a", "b", "A", "\\u0061", "\\ud83d\\ude00", "\\ud800", "é", ""])


def _render(node: Any) -> str:
    if isinstance(node, list):
        return "[" + ",".join(_render(v) for v in node) + "]"
    if isinstance(node, tuple):  # an object as its pairs (names may repeat)
        return "{" + ",".join(f'"{k}":{_render(v)}' for k, v in node) + "}"
    return node


_TEXT = st.recursive(
    st.one_of(_NUMBER, st.sampled_from(['"s"', "true", "null", '"\\u00e9"'])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(st.tuples(_KEY, inner), max_size=4).map(tuple),
    ),
    max_leaves=12,
).map(_render)


@given(_TEXT)
@example("[1.0]")
@example('{"a":0.5,"a":0.5}')
def test_generated_texts_read_as_the_strict_reader_reads_them(text: str) -> None:
    _same(text)
    _same(text.encode())
