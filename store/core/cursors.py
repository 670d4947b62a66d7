"""Listing cursors: the one spelling of "the last item seen" in a key-ordered listing.

A listing in key order (blobs by address; artifacts by address, then kind) is read in pages;
each page ends with a cursor, and the next page is everything after it. A blob's cursor is
its address, ``blake3:<64 hex>``; an artifact's is ``blake3:<64 hex>/<kind>``. A blob cursor
given to an artifact listing means "after every kind of that address but none": its key is
``(hex, "")``. Used by the library's listings (store/objects/listing.py), the paging every
front end shares (store/facade/queries.py) and the remote client's filtered listing.
"""

from __future__ import annotations

from .errors import error

__all__ = ["cursor_key", "listing_cursor"]

_HEX = frozenset("0123456789abcdef")


def listing_cursor(address: str, kind: str | None = None) -> str:
    """The cursor after an item: a blob's ``blake3:<hex>``, an artifact's ``blake3:<hex>/<kind>``.

    Args:
        address: the item's address, ``blake3:<64 lowercase hex>``.
        kind: the artifact's kind; None for a blob.
    """
    return address if kind is None else f"{address}/{kind}"


def cursor_key(cursor: str) -> tuple[str, str]:
    """The key a cursor stands for: ``(64 hex, kind)``, the kind ``""`` for a blob cursor.

    Keys compare in listing order (address, then kind), so an item comes after the cursor
    exactly when its key is greater.

    Raises:
        InputError: ``input.invalid`` (``details.cursor``) for text that is not a cursor.
    """
    address, _, kind = cursor.partition("/")
    hexpart = address.removeprefix("blake3:")
    if not address.startswith("blake3:") or len(hexpart) != 64 or not set(hexpart) <= _HEX:
        raise error(
            "input.invalid",
            f"cursor {cursor!r} is not a listing cursor (blake3:<64 hex>[/<kind>])",
            cursor=cursor,
        )
    return hexpart, kind
