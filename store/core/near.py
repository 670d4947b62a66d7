"""Near misses of a contract's discriminator: the fail-closed half of detection.

Detection (docs/kinds.md) claims a document for a contract kind by its discriminator. A
document that carries the discriminator in a slightly wrong form (another version of the
schema name, a member name spelt with other case or separators, four of five required
members) is still claimed by that kind, so its validator rejects it with the contract's shape
code and a pointer; it is never stored as plain ``json``.

Two spellings of a member name or a discriminator value are *near* when they are equal after
:func:`spelling`: lower case, every character that is not a letter or a digit dropped
(``quote_sha_256``, ``QuoteSha256`` and ``quote-sha256`` all read ``quotesha256``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

__all__ = ["near_member", "near_members", "spelling"]


@functools.lru_cache(maxsize=8192)
def spelling(text: str) -> str:
    """``text`` lower-cased with every non-alphanumeric character removed.

    Memoised (a pure function of the text): detection asks it of every member name of every
    document, for every contract kind (the ``json`` kind's near-miss check was a quarter of
    its ingest, bench/core.py part c).

    Args:
        text: a member name or a discriminator value.

    Returns:
        The comparison key, e.g. ``"quotesha256"`` for ``"Quote_SHA-256"``.
    """
    return "".join(ch for ch in text.lower() if ch.isalnum())


#: Objects with more member names than this are searched name by name (the index is cached
#: per tuple of names, which for such objects rarely repeats).
_INDEXED_UP_TO = 64


@functools.lru_cache(maxsize=256)
def _index(names: tuple[str, ...]) -> dict[str, str]:
    """Each :func:`spelling` of ``names`` -> the first of ``names`` with that spelling.

    Memoised per tuple of member names in document order: the documents of one ingest mostly
    share their member names, so detection spells each name once per shape, not once per
    document and contract kind (issue 29, bench/core.py part c).
    """
    out: dict[str, str] = {}
    for name in names:
        out.setdefault(spelling(name), name)
    return out


def _near_name(doc: dict[str, Any], name: str) -> str | None:
    """The first member name of ``doc`` (in document order) near ``name``, or None."""
    key = spelling(name)
    if len(doc) <= _INDEXED_UP_TO:
        try:
            return _index(tuple(doc)).get(key)
        except (AttributeError, TypeError):  # a name that is not a str: as below
            pass
    for actual in doc:
        if spelling(actual) == key:
            return actual
    return None


def near_member(doc: dict[str, Any], name: str) -> tuple[str, Any] | None:
    """The member of ``doc`` named ``name``, or else one whose name is near it.

    Args:
        doc: a JSON object.
        name: the member name the contract uses.

    Returns:
        ``(actual name, value)``, the exact name first, else the first member in document
        order whose name is near; None when no member is near.
    """
    if name in doc:
        return name, doc[name]
    actual = _near_name(doc, name)
    return None if actual is None else (actual, doc[actual])


def near_members(doc: dict[str, Any], names: Iterable[str]) -> int:
    """How many of ``names`` ``doc`` carries, exactly or by a near spelling."""
    if len(doc) <= _INDEXED_UP_TO:
        try:
            index = _index(tuple(doc))
        except (AttributeError, TypeError):  # a name that is not a str: one at a time
            pass
        else:
            return sum(1 for name in names if name in doc or spelling(name) in index)
    return sum(1 for name in names if near_member(doc, name) is not None)
