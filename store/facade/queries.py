"""The queries every front end answers the same way: ``find`` with warnings, listing pages.

The CLI (``evstore find``, ``evstore ls --limit/--after/--jsonl``), the server (``GET /v1/find``,
``GET /v1/ls``) and the audit pages (a kind's list) call these instead of each rebuilding the
lookup, the warnings, the page cut and the cursor. Each takes the store it is given (a local
:class:`~evstore.facade.api.Store` or a :class:`~evstore.client.remote.RemoteStore`) and uses
only their public methods, so a remote store answers as a local one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..core.cursors import listing_cursor
from ..core.errors import error
from ..objects.kinds import check_kind

__all__ = ["ListPage", "find_with_warnings", "list_page"]


def find_with_warnings(
    store: Any, name: str, value: str, kind: str | None = None
) -> list[dict[str, Any]]:
    """The artifacts whose lookup attribute ``name`` equals ``value``, with their warnings.

    ``find --json``'s rows: each :meth:`ArtifactInfo.to_dict
    <evstore.objects.artifacts.ArtifactInfo.to_dict>` plus ``"warnings"`` (``[{"code",
    "message", "pointer"}]``) when the artifact has any. A ``package_id`` is looked up in its
    one stored spelling (lowercase, :func:`evstore.normalize_uuid`); other values as
    :meth:`Store.find <evstore.facade.api.Store.find>` takes them.

    Args:
        store: an open store (local or remote).
        name: a lookup attribute (docs/kinds.md).
        value: its value, compared whole.
        kind: only artifacts of this kind.

    Raises:
        InputError: ``kind.unknown`` (checked first), a digest attribute's format code,
            ``input.invalid``. StoreStateError: ``store.kind-unavailable``.
        NotFound: ``not-found.artifact`` when nothing matches.
    """
    if kind is not None:
        check_kind(kind)
    if name == "package_id":
        # Imported here: an everyday find imports no contract module (docs/design.md).
        from ..contracts.packages.rules import normalize_uuid

        value = normalize_uuid(value)  # UUIDs compare case-insensitively
    rows = []
    for info in store.find(name, value, kind=kind):
        row = info.to_dict()
        warned = store.warnings(info.address)
        if warned:
            row["warnings"] = warned
        rows.append(row)
    if not rows:
        raise error("not-found.artifact", f"no artifact with {name} = {value!r}")
    return rows


class ListPage:
    """One page of a key-ordered listing (blobs by address; artifacts by address, then kind).

    Iterate it once: the items stream (dicts: ``{"address", "sha256", "size"}`` for a blob,
    :meth:`ArtifactInfo.to_dict <evstore.objects.artifacts.ArtifactInfo.to_dict>` for an
    artifact). Then :attr:`next` is the cursor of the next page (store/core/cursors.py: the
    last item's ``blake3:<hex>`` or ``blake3:<hex>/<kind>``), or None when no item follows.
    One item more than the limit is read to know; without a limit every item is this page's.
    """

    def __init__(self, source: Iterator[tuple[str, dict[str, Any]]], limit: int | None) -> None:
        self._source = source
        self.limit = limit
        #: The cursor of the next page; None until the page has been read, and on the last.
        self.next: str | None = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        last: str | None = None
        for n, (cursor, item) in enumerate(self._source):
            if self.limit is not None and n >= self.limit:
                self.next = last
                return
            last = cursor
            yield item


def list_page(
    store: Any,
    *,
    blobs: bool = False,
    kind: str | None = None,
    attr: tuple[str, str] | None = None,
    after: str | None = None,
    limit: int | None = None,
) -> ListPage:
    """A page of the store's blobs or artifacts in key order, after the cursor ``after``.

    Args:
        store: an open store (local or remote).
        blobs: list blobs instead of artifacts (``kind`` and ``attr`` must then be None).
        kind: only artifacts of this kind.
        attr: ``(name, value)``: only artifacts with this lookup attribute.
        after: the ``next`` cursor of the previous page.
        limit: at most this many items (>= 1); None: every item after ``after``.

    Returns:
        The :class:`ListPage`, read lazily (one item more than ``limit``).

    Raises:
        InputError: ``kind.unknown`` (at once); ``input.invalid`` for a malformed cursor
            (when the page is read). StoreStateError: ``store.kind-unavailable``.
        ValueError: ``blobs`` with ``kind`` or ``attr``, or ``limit`` below 1 (API misuse).
    """
    if blobs and (kind is not None or attr is not None):
        raise ValueError("a blob listing takes no kind or attribute")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    probe = None if limit is None else limit + 1
    source: Iterator[tuple[str, dict[str, Any]]]
    if blobs:
        source = (
            (listing_cursor(b["address"]), b) for b in store.iter_blobs(after=after, limit=probe)
        )
    else:
        infos = store.iter_artifacts(kind, attr=attr, after=after, limit=probe)
        source = ((listing_cursor(a.address, a.kind), a.to_dict()) for a in infos)
    return ListPage(source, limit)
