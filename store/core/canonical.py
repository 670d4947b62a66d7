"""The strict JSON reader and the canonical form (RFC 8785, JSON Canonicalization Scheme).

Every JSON document enters evstore through :func:`loads` and is stored as :func:`dumps`
of the parsed value, so ``stored == dumps(loads(stored))`` and equal JSON values (key order,
whitespace and escapes aside) have one address.

The reader is stricter than RFC 8259 allows a parser to be, because RFC 8785 (section 3.1)
needs I-JSON (RFC 7493) input and because a value that would not round-trip must never get an
address. It rejects, with :class:`~evstore.core.errors.JSONFormError`:

    json.bom              a UTF-8 byte-order mark (one rule for files, stdin and the API)
    json.utf8             bytes that are not valid UTF-8
    json.syntax           not JSON at all, or trailing data
    json.duplicate-key    a member name twice in one object, at any depth
    json.non-finite       NaN, Infinity, -Infinity
    json.surrogate        a lone surrogate, escaped (raw ones are already invalid UTF-8)
    json.int-range        an integer beyond +-(2**53 - 1), or a number whose canonical form
                          reads back as one (1e20 is canonically 100000000000000000000)
    json.depth            nesting deeper than :data:`MAX_DEPTH`

Canonical bytes: for a value with no float and no member name outside the Basic Multilingual
Plane (the common case, found by :func:`_scan`), the C ``json`` encoder with sorted keys and no
whitespace gives exactly the RFC 8785 bytes (strings, integers and literals serialise
identically; sorting by UTF-16 code units is code point order within the BMP). Every other
value goes through the ``rfc8785`` package, which is also the oracle:
tests/property/test_canonical_property.py checks ``dumps`` against ``rfc8785.dumps`` on
generated values (a differential test), so the two paths never give different bytes.
"""

from __future__ import annotations

import json
import re
from typing import Any

import rfc8785

from .errors import JSONFormError, join_pointer

__all__ = ["MAX_DEPTH", "MAX_SAFE_INTEGER", "dumps", "dumps_many", "loads", "loads_canonical"]

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


# Said with every json.int-range fault: what to do instead.
_AS_STRING = "; I-JSON numbers are doubles, so send a larger integer as a JSON string"


def _short(text: str) -> str:
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


def _parse_int(text: str) -> int:
    # JSON has no leading zeros and 2**53-1 has 16 digits: a longer literal is out of range.
    # Checking the length first also keeps int() away from Python's 4300-digit limit.
    if len(text) - (text[0] == "-") > 16:
        raise _err("json.int-range", f"integer {_short(text)} is beyond +-(2**53-1){_AS_STRING}")
    value = int(text)
    if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return value
    raise _err("json.int-range", f"integer {text} is beyond +-(2**53-1){_AS_STRING}")


def _parse_float(text: str) -> float | int:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise _err("json.non-finite", f"{_short(text)} overflows a double")
    if _float_reads_back_out_of_range(value):
        raise _err(
            "json.int-range",
            f"{_short(text)} is canonically the integer {int(value)}, beyond +-(2**53-1)"
            + _AS_STRING,
        )
    if value == 0.0 and any(c in "123456789" for c in text.split("e")[0].split("E")[0]):
        raise _err(
            "json.number-range", f"{_short(text)} underflows to zero and would not round-trip"
        )
    if value.is_integer() and abs(value) <= MAX_SAFE_INTEGER:
        # 541.0 is canonically 541 (RFC 8785 section 3.2.2.3): return what parse(canonical)
        # returns, so every rule judges a value the same way whatever its spelling, just as
        # its address does.
        return int(value)  # type: ignore[return-value]
    return value


def _parse_float_token(text: str) -> float | int:
    # As _parse_float, but a number written with a fraction or exponent stays a float (10.0,
    # 1e1), so rules that require a JSON integer token can see it. Its canonical bytes are the
    # same (RFC 8785 writes 10.0 as 10).
    value = _parse_float(text)
    return float(value) if type(value) is int else value


def _float_reads_back_out_of_range(value: float) -> bool:
    return MAX_SAFE_INTEGER < abs(value) < _EXPONENT_FROM and value == int(value)


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


# The same reader, keeping the form of integral numbers written with a fraction or exponent.
_TOKEN_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs,
    parse_int=_parse_int,
    parse_float=_parse_float_token,
    parse_constant=_no_constant,
)
# A fraction or exponent right after a digit: only then can a token-keeping parse differ.
_FRACTION_OR_EXPONENT = re.compile("[0-9][.eE]")


class _Fault(Exception):
    """The fast scan found a problem; the slow walk then raises it with its pointer."""


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
#: The magnitudes whose non-integral floats ``repr`` writes without an exponent (see _scan).
_PLAIN_MIN, _PLAIN_MAX = 1e-4, 1e16


def _scan(value: Any, check_numbers: bool) -> bool:
    """One pointer-free pass over a value: depth, lone surrogates, number ranges.

    Number ranges are checked for Python-built values only. Raises :class:`_Fault` on a
    problem, so the common case builds no pointers.

    Returns:
        True when every float is a *plain* one (below) and no member name lies outside the
        Basic Multilingual Plane: its RFC 8785 form is then exactly ``json.dumps`` with
        sorted keys (RFC 8785 sorts names by UTF-16 code units, which is code point order
        within the BMP; strings, integers and literals serialise identically). A plain float
        is finite, not integral, and 1e-4 <= |x| < 1e16: Python writes it as ``repr(x)``
        without an exponent and without a trailing ``.0``, the shortest round-tripping
        digits, which is the ECMAScript form RFC 8785 section 3.2.2.3 requires (the
        ``rfc8785`` package itself starts from ``str(x)`` and changes only exponents and
        ``.0``). tests/property checks both against the ``rfc8785`` package on generated
        values.
    """
    simple = True
    lone = _LONE_SURROGATE.search
    astral = _ASTRAL.search
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        t = type(node)
        if t is dict:
            if depth > MAX_DEPTH:
                raise _Fault
            for key in node:
                if type(key) is not str:
                    simple = False
                    continue
                if key.isascii():  # neither a surrogate nor an astral character
                    continue
                if lone(key):
                    raise _Fault
                if simple and astral(key):
                    simple = False
            children = node.values()
        elif t is list:
            if depth > MAX_DEPTH:
                raise _Fault
            children = node
        else:
            children = (node,)
            depth -= 1
        for child in children:
            tc = type(child)
            if tc is str:
                if not child.isascii() and lone(child):
                    raise _Fault
            elif tc is dict or tc is list:
                stack.append((child, depth + 1))
            elif tc is int:
                if check_numbers and not -MAX_SAFE_INTEGER <= child <= MAX_SAFE_INTEGER:
                    raise _Fault
            elif tc is float:
                if simple and not (_PLAIN_MIN <= abs(child) < _PLAIN_MAX and child % 1):
                    simple = False
                if check_numbers and (
                    child != child
                    or child in (float("inf"), float("-inf"))
                    or _float_reads_back_out_of_range(child)
                ):
                    raise _Fault
            elif child is None or tc is bool:
                pass
            else:  # tuples, subclasses, non-JSON types: the slow path decides
                simple = False
    return simple


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


class _Bad:
    """A value the strict reader refuses, kept in place so its pointer can be found."""


class _DupPairs(list):  # type: ignore[type-arg]
    """An object whose member names repeat, kept as its pairs."""


def _lenient_pairs(pairs: list[tuple[str, Any]]) -> Any:
    return _DupPairs(pairs) if len({k for k, _ in pairs}) != len(pairs) else dict(pairs)


def _lenient_int(text: str) -> Any:
    try:
        return _parse_int(text)
    except JSONFormError:
        return _Bad()


def _lenient_float(text: str) -> Any:
    try:
        return _parse_float(text)
    except JSONFormError:
        return _Bad()


_LOCATOR = json.JSONDecoder(
    object_pairs_hook=_lenient_pairs,
    parse_int=_lenient_int,
    parse_float=_lenient_float,
    parse_constant=lambda _name: _Bad(),
)


def _locate(text: str) -> str:
    """JSON Pointer of the first refused value or repeated name (error path only; '' if unknown)."""
    try:
        root = _LOCATOR.decode(text)
    except (ValueError, RecursionError):
        return ""
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack:
        node, ptr = stack.pop()
        if isinstance(node, _Bad):
            return ptr
        if isinstance(node, _DupPairs):
            seen: set[str] = set()
            for key, _ in node:
                if key in seen:
                    return join_pointer(ptr, key)
                seen.add(key)
        if isinstance(node, dict):
            stack.extend(reversed([(v, join_pointer(ptr, k)) for k, v in node.items()]))
        elif isinstance(node, list) and not isinstance(node, _DupPairs):
            stack.extend(reversed([(v, join_pointer(ptr, i)) for i, v in enumerate(node)]))
    return ""


def loads(data: bytes | bytearray | memoryview | str, *, number_tokens: bool = False) -> Any:
    """Parse JSON strictly (see the module docstring for every rule).

    By default a number with an integral value is an ``int`` however it is written (``10``,
    ``10.0``, ``1e1``): every rule judges it as its canonical form ``10``, like its address.
    With ``number_tokens`` such a number written with a fraction or exponent stays a
    ``float``, for contracts that require a JSON integer token (evidence-context unit ids,
    docs/bundle.md). Either way :func:`dumps` of the value gives the same canonical bytes.

    Args:
        data: UTF-8 bytes (a file, stdin or a request body) or an already decoded str.
        number_tokens: keep ``10.0`` and ``1e1`` as floats (see above).

    Returns:
        The value: dict, list, str, int, float, bool or None.

    Raises:
        JSONFormError: ``json.bom``, ``json.utf8``, ``json.syntax``, ``json.duplicate-key``,
            ``json.non-finite``, ``json.surrogate``, ``json.int-range``,
            ``json.number-range`` or ``json.depth``.
    """
    return _read(data, number_tokens)[0]


def _read(
    data: bytes | bytearray | memoryview | str, number_tokens: bool = False
) -> tuple[Any, bool]:
    """``(value, simple)`` of :func:`loads` (``simple`` as :func:`_scan` returns it).

    The fast reader first (:func:`_fast`); whatever it cannot vouch for, the strict reader
    (:func:`_strict`) reads again from the text, so every refusal and every value is the
    strict reader's.
    """
    text = _text(data)
    read = _fast(text)
    return read if read is not None else _strict(text, number_tokens)


def _strict(text: str, number_tokens: bool = False) -> tuple[Any, bool]:
    """The strict reader on decoded text: ``(value, simple)``; raises as :func:`loads`."""
    return _checked(_decode_text(text, number_tokens))


#: The fast reader: the C decoder with the duplicate-name hook only. Numbers are read as the
#: C scanner reads them without hooks, ``int(text)`` and ``float(text)``, which is what the
#: strict hooks compute before their checks (see :func:`_fast` for when they can differ).
_FAST_DECODER = json.JSONDecoder(object_pairs_hook=_pairs)


def _fast(text: str) -> tuple[Any, bool] | None:
    """``(value, simple)`` when the strict reader would return exactly this value, else None.

    The fast reader skips the per-number hooks (a Python call for every number: most of the
    strict reader's time, bench/core.py part c). Its value is the strict reader's when it
    parses (so the text is JSON with no repeated name: ``_pairs`` runs here too), :func:`_scan`
    with the number checks finds no fault (depth, lone surrogates, integers within
    +-(2**53-1), floats finite and not canonically an out-of-range integer) and no float is
    integral: the strict reader turns ``541.0`` into ``541`` and refuses a non-zero literal
    that underflows to ``0.0``, both of which the fast reader cannot tell from the value
    alone. Any other document, and any error, gives None: the strict reader decides it, so
    the errors, codes and pointers are the strict reader's. ``number_tokens`` needs nothing
    more: it only changes integral floats.
    """
    try:
        value = _FAST_DECODER.decode(text)
        simple = _scan(value, check_numbers=True)
    except Exception:  # any failure: the strict reader reads the text again
        return None
    if not simple and _has_integral_float(value):
        return None
    return value, simple


def _has_integral_float(value: Any) -> bool:
    """Whether a float with an integral value (``0.0`` included) lies anywhere in ``value``."""
    stack = [value]
    while stack:
        node = stack.pop()
        t = type(node)
        if t is dict:
            stack.extend(node.values())
        elif t is list:
            stack.extend(node)
        elif t is float and node.is_integer():
            return True
    return False


def _text(data: bytes | bytearray | memoryview | str) -> str:
    """The JSON text: a str as given, bytes decoded as UTF-8 (``json.bom``, ``json.utf8``)."""
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
    return text


def _decode_text(text: str, number_tokens: bool = False) -> Any:
    """The strict decoder on decoded text (no tree walk)."""
    decoder = _TOKEN_DECODER if number_tokens and _FRACTION_OR_EXPONENT.search(text) else _DECODER
    try:
        value = decoder.decode(text)
    except JSONFormError as err:
        err.pointer = _locate(text)
        raise
    except json.JSONDecodeError as exc:
        raise _err("json.syntax", f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise _err("json.depth", f"nesting deeper than {MAX_DEPTH}") from None
    return value


def _checked(value: Any) -> tuple[Any, bool]:
    """Depth and lone surrogates of a parsed value: ``(value, simple)`` (see :func:`_scan`)."""
    try:
        return value, _scan(value, check_numbers=False)
    except _Fault:
        _walk(value)  # raises the fault with its pointer
        raise AssertionError("fast and slow checks disagree") from None


def dumps(value: Any) -> bytes:
    """The RFC 8785 canonical bytes of a JSON value built in Python (through ``rfc8785``).

    The value is held to the strict reader's domain first, so the bytes always read back
    through :func:`loads`.

    Raises:
        JSONFormError: ``json.int-range`` (an int beyond +-(2**53-1), or a float that is
            canonically such an integer), ``json.non-finite``, ``json.surrogate``,
            ``json.depth``; TypeError for non-JSON types.
    """
    try:
        simple = _scan(value, check_numbers=True)
    except _Fault:
        _check_domain(value)  # raises the fault with its pointer
        raise AssertionError("fast and slow checks disagree") from None
    return _encode(value, simple)


def dumps_many(values: list[Any]) -> list[bytes]:
    """The RFC 8785 bytes of each of ``values``, as :func:`dumps` gives them one at a time.

    One domain pass over the whole list instead of one per value (the log's entries, a
    transaction's worth at a time); any value outside the fast path, or at fault, goes
    through :func:`dumps` on its own, which raises with that value's pointer.

    Raises:
        As :func:`dumps`, for the first value at fault.
    """
    try:
        simple = _scan(values, check_numbers=True)
    except _Fault:
        return [dumps(v) for v in values]
    if not simple:
        return [dumps(v) for v in values]
    encode = _C_ENCODER.encode
    return [encode(v).encode() for v in values]


def _check_domain(value: Any) -> None:
    # The first container deeper than MAX_DEPTH ends the number check (a cyclic Python value
    # would never end it): _walk then reports json.depth with its pointer.
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        node, ptr, depth = stack.pop()
        if isinstance(node, bool) or node is None:
            continue
        if isinstance(node, float):
            if node != node or node in (float("inf"), float("-inf")):
                raise _err("json.non-finite", f"{node} is not a JSON number", ptr)
            if _float_reads_back_out_of_range(node):
                raise _err(
                    "json.int-range",
                    f"{node!r} is canonically {int(node)}, beyond +-(2**53-1){_AS_STRING}",
                    ptr,
                )
        elif isinstance(node, int):
            if not -MAX_SAFE_INTEGER <= node <= MAX_SAFE_INTEGER:
                raise _err("json.int-range", f"integer beyond +-(2**53-1){_AS_STRING}", ptr)
        elif depth > MAX_DEPTH:
            break
        elif isinstance(node, dict):
            stack.extend(
                (v, join_pointer(ptr, k), depth + 1) for k, v in node.items() if isinstance(k, str)
            )
        elif isinstance(node, (list, tuple)):
            stack.extend((v, join_pointer(ptr, i), depth + 1) for i, v in enumerate(node))
    _walk(value)


#: The fast path's encoder, made once (``json.dumps`` with options builds one per call). With
#: ``check_circular`` off its C implementation is the whole pass; _scan has bounded the depth.
_C_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, check_circular=False
)


def _encode(value: Any, simple: bool) -> bytes:
    """RFC 8785 bytes: the C JSON encoder for simple values (see :func:`_scan`), else rfc8785."""
    if simple:
        return _C_ENCODER.encode(value).encode()
    try:
        return rfc8785.dumps(value)
    except rfc8785.IntegerDomainError as exc:
        raise _err("json.int-range", f"{exc}{_AS_STRING}") from None
    except rfc8785.FloatDomainError as exc:
        raise _err("json.non-finite", str(exc)) from None
    except rfc8785.CanonicalizationError as exc:
        raise TypeError(str(exc)) from None


def loads_canonical(data: bytes | bytearray | memoryview | str) -> tuple[Any, bytes]:
    """Parse strictly and return ``(value, canonical bytes)``; raises as :func:`loads`."""
    value, simple = _read(data)
    return value, _encode(value, simple)
