"""The strict JSON reader and the canonical form (RFC 8785, JSON Canonicalization Scheme).

Every JSON document enters evstore through :func:`loads` and is stored as :func:`dumps`
of the parsed value, so ``stored == dumps(loads(stored))`` and equal JSON values (key order,
whitespace and escapes aside) have one address.

The reader is stricter than RFC 8259 allows a parser to be, because RFC 8785 (section 3.1)
needs I-JSON (RFC 7493) input and because a value that would not round-trip must never get an
address. It rejects, with :class:`~evstore.errors.JSONFormError`:

    json.bom              a UTF-8 byte-order mark (one rule for files, stdin and the API)
    json.utf8             bytes that are not valid UTF-8
    json.syntax           not JSON at all, or trailing data
    json.duplicate-key    a member name twice in one object, at any depth
    json.non-finite       NaN, Infinity, -Infinity
    json.surrogate        a lone surrogate, escaped (raw ones are already invalid UTF-8)
    json.int-range        an integer beyond +-(2**53 - 1), or a number whose canonical form
                          reads back as one (1e20 is canonically 100000000000000000000)
    json.depth            nesting deeper than :data:`MAX_DEPTH`

Canonical bytes come from the ``rfc8785`` package (the oracle); no faster path is used.
"""

from __future__ import annotations

import json
import re
from typing import Any

import rfc8785

from .errors import JSONFormError, join_pointer

__all__ = ["MAX_DEPTH", "MAX_SAFE_INTEGER", "dumps", "loads", "loads_canonical"]

#: Deepest nesting accepted: arrays and objects inside one another (the top level is depth 1).
MAX_DEPTH = 128
#: I-JSON's largest exactly representable integer, 2**53 - 1.
MAX_SAFE_INTEGER = 2**53 - 1
# A float whose integral value is >= 2**53 and < 1e21 is printed by ECMAScript's
# Number::toString (RFC 8785 section 3.2.2.3) without an exponent, so it reads back as an
# integer beyond the safe range.
_EXPONENT_FROM = 1e21

_RULE = "RFC 8785 section 3.1 / RFC 7493"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_BOM = b"\xef\xbb\xbf"


def _err(code: str, message: str, pointer: str = "") -> JSONFormError:
    return JSONFormError(message, code=code, rule=_RULE, pointer=pointer)


def _no_constant(name: str) -> Any:
    raise _err("json.non-finite", f"{name} is not a JSON number")


def _parse_int(text: str) -> int:
    value = int(text)
    if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return value
    raise _err("json.int-range", f"integer {text} is beyond +-(2**53-1)")


def _parse_float(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise _err("json.non-finite", f"{text} overflows a double")
    if MAX_SAFE_INTEGER < abs(value) < _EXPONENT_FROM and value == int(value):
        raise _err(
            "json.int-range",
            f"{text} is canonically the integer {int(value)}, beyond +-(2**53-1)",
        )
    return value


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _err("json.duplicate-key", f"member name {key!r} appears twice")
            seen.add(key)
    return out


_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs,
    parse_int=_parse_int,
    parse_float=_parse_float,
    parse_constant=_no_constant,
)


def _walk(value: Any) -> None:
    """Check depth and lone surrogates; both need the parsed tree (iterative: no recursion)."""
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        node, ptr, depth = stack.pop()
        if isinstance(node, dict):
            if depth > MAX_DEPTH:
                raise _err("json.depth", f"nesting deeper than {MAX_DEPTH}", ptr)
            for key, child in node.items():
                if _LONE_SURROGATE.search(key):
                    raise _err("json.surrogate", "a member name holds a lone surrogate", ptr)
                if isinstance(child, (dict, list)):
                    stack.append((child, join_pointer(ptr, key), depth + 1))
                elif isinstance(child, str) and _LONE_SURROGATE.search(child):
                    raise _err(
                        "json.surrogate", "a string holds a lone surrogate", join_pointer(ptr, key)
                    )
        elif isinstance(node, list):
            if depth > MAX_DEPTH:
                raise _err("json.depth", f"nesting deeper than {MAX_DEPTH}", ptr)
            for i, child in enumerate(node):
                if isinstance(child, (dict, list)):
                    stack.append((child, join_pointer(ptr, i), depth + 1))
                elif isinstance(child, str) and _LONE_SURROGATE.search(child):
                    raise _err(
                        "json.surrogate", "a string holds a lone surrogate", join_pointer(ptr, i)
                    )
        elif isinstance(node, str) and _LONE_SURROGATE.search(node):
            raise _err("json.surrogate", "a string holds a lone surrogate", ptr)


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse JSON strictly (see the module docstring for every rule).

    Args:
        data: UTF-8 bytes (a file, stdin or a request body) or an already decoded str.

    Returns:
        The value: dict, list, str, int, float, bool or None.

    Raises:
        JSONFormError: ``json.bom``, ``json.utf8``, ``json.syntax``, ``json.duplicate-key``,
            ``json.non-finite``, ``json.surrogate``, ``json.int-range`` or ``json.depth``.
    """
    if isinstance(data, str):
        if data.startswith("\ufeff"):
            raise _err("json.bom", "a byte-order mark precedes the JSON text")
        text = data
    else:
        raw = bytes(data)
        if raw.startswith(_BOM):
            raise _err("json.bom", "a byte-order mark precedes the JSON text")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _err("json.utf8", f"invalid UTF-8 at byte {exc.start}") from None
    try:
        value = _DECODER.decode(text)
    except JSONFormError:
        raise
    except json.JSONDecodeError as exc:
        raise _err("json.syntax", f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise _err("json.depth", f"nesting deeper than {MAX_DEPTH}") from None
    _walk(value)
    return value


def dumps(value: Any) -> bytes:
    """The RFC 8785 canonical bytes of a parsed value (through the ``rfc8785`` package).

    Raises:
        JSONFormError: ``json.int-range`` or ``json.non-finite`` for values no strict parse
            yields (a Python caller's int beyond 2**53-1, NaN); TypeError for non-JSON types.
    """
    try:
        return rfc8785.dumps(value)
    except rfc8785.IntegerDomainError as exc:
        raise _err("json.int-range", str(exc)) from None
    except rfc8785.FloatDomainError as exc:
        raise _err("json.non-finite", str(exc)) from None
    except rfc8785.CanonicalizationError as exc:
        raise TypeError(str(exc)) from None


def loads_canonical(data: bytes | bytearray | memoryview | str) -> tuple[Any, bytes]:
    """Parse strictly and return ``(value, canonical bytes)``; raises as :func:`loads`."""
    value = loads(data)
    return value, dumps(value)
