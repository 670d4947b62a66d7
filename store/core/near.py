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


def near_member(doc: dict[str, Any], name: str) -> tuple[str, Any] | None:
    """The member of ``doc`` named ``name``, or else one whose name is near it.

    Args:
        doc: a JSON object.
        name: the member name the contract uses.

    Returns:
        ``(actual name, value)``, the exact name first; None when no member is near.
    """
    if name in doc:
        return name, doc[name]
    key = spelling(name)
    for actual, value in doc.items():
        if spelling(actual) == key:
            return actual, value
    return None


def near_members(doc: dict[str, Any], names: Iterable[str]) -> int:
    """How many of ``names`` ``doc`` carries, exactly or by a near spelling."""
    return sum(1 for name in names if near_member(doc, name) is not None)
