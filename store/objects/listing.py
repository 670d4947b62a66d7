"""Paged, streamed listings of blobs and artifacts (``evstore ls``): keyset pages.

A listing with a cursor is ordered by key (blobs: address; artifacts: address then kind), so
a page never repeats or skips an item that existed when the listing began, whatever is added
meanwhile. A cursor is the last item's key: ``blake3:<hex>`` for a blob,
``blake3:<hex>/<kind>`` for an artifact (store/core/cursors.py, the one spelling).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import sqlalchemy as sa

from ..core.cursors import cursor_key, listing_cursor
from ..core.times import utc_text
from ..db.tables import artifacts, blobs
from .artifacts import ArtifactInfo, info_query, with_attr

__all__ = ["PAGE", "artifact_cursor", "blob_cursor", "iter_artifacts", "iter_blobs"]

#: Rows read per query while streaming a listing.
PAGE = 1000


def blob_cursor(address: str) -> str:
    """The cursor after a blob (its address, ``blake3:<hex>``)."""
    return listing_cursor(address)


def artifact_cursor(info: ArtifactInfo) -> str:
    """The cursor after an artifact: ``blake3:<hex>/<kind>``."""
    return listing_cursor(info.address, info.kind)


def iter_blobs(
    read: Callable[[], Any], after: str | None = None, limit: int | None = None
) -> Iterator[dict[str, Any]]:
    """Every blob after ``after``, by address: ``{"address", "sha256", "size"}`` (bytes).

    ``read`` opens a read connection (a context manager); each page of :data:`PAGE` rows is
    one query, so memory holds one page.

    Raises:
        InputError: ``input.invalid`` for a malformed cursor.
    """
    key = cursor_key(after)[0] if after is not None else None
    left = limit
    while left is None or left > 0:
        n = PAGE if left is None else min(PAGE, left)
        q = sa.select(blobs.c.address, blobs.c.sha256, blobs.c.size).order_by(blobs.c.address)
        if key is not None:
            q = q.where(blobs.c.address > key)
        with read() as conn:
            rows = conn.execute(q.limit(n)).all()
        for r in rows:
            yield {
                "address": "blake3:" + r.address,
                "sha256": "sha256:" + r.sha256,
                "size": int(r.size),
            }
        if len(rows) < n:
            return
        key = rows[-1].address
        left = None if left is None else left - len(rows)


def iter_artifacts(
    read: Callable[[], Any],
    kind: str | None = None,
    attr: tuple[str, str] | None = None,
    after: str | None = None,
    limit: int | None = None,
) -> Iterator[ArtifactInfo]:
    """Artifacts after ``after`` by (address, kind), optionally of one kind / one attribute.

    Raises:
        InputError: ``input.invalid`` for a malformed cursor.
    """
    key = cursor_key(after) if after is not None else None
    left = limit
    while left is None or left > 0:
        n = PAGE if left is None else min(PAGE, left)
        q = info_query()
        if kind is not None:
            q = q.where(artifacts.c.kind == kind)
        if attr is not None:
            q = with_attr(q, *attr)
        if key is not None:
            q = q.where(
                sa.or_(
                    artifacts.c.address > key[0],
                    sa.and_(artifacts.c.address == key[0], artifacts.c.kind > key[1]),
                )
            )
        q = q.order_by(artifacts.c.address, artifacts.c.kind).limit(n)
        with read() as conn:
            rows = conn.execute(q).all()
        for r in rows:
            yield ArtifactInfo(
                "blake3:" + r.address,
                r.kind,
                r.contract_version,
                utc_text(r.accepted_at),
                int(r.size),
            )
        if len(rows) < n:
            return
        key = (rows[-1].address, rows[-1].kind)
        left = None if left is None else left - len(rows)
