"""Lineage: who refers to a stored object, and everything an object needs.

Both questions are answered from the edge rows that every kind writes with its artifact, in
the same transaction (store/db/tables.py ``edges``: src artifact -> role -> dst blob or
artifact), so no backfill and no document parsing is needed here. Roles in use: ``index``,
``file`` and ``artifact`` (run -> its files), ``source-document`` (evidence context -> the
source document it was checked against), ``content``, ``source``, ``package``, ``mentions``
(see docs/bundle.md and each kind's docs).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.errors import NotFound
from ..core.refs import parse_ref
from ..core.results import Closure
from ..db.tables import artifacts, edges
from . import blobs
from .artifacts import artifact_kinds

__all__ = ["Closure", "closure", "referrers", "resolve"]

# Bound the IN lists so that wide fan-outs stay within every driver's parameter limit.
_BATCH = 500


def resolve(conn: Connection, ref: str) -> blobs.BlobRow:
    """The stored blob a content ref names.

    Raises:
        RefSyntaxError: ``ref.syntax``. NotFound: ``not-found.blob``.
    """
    row = blobs.lookup(conn, parse_ref(ref))
    if row is None:
        raise NotFound(f"no blob for {ref}", code="not-found.blob", details={"ref": ref})
    return row


def _batches(items: list[str]) -> Iterable[list[str]]:
    for i in range(0, len(items), _BATCH):
        yield items[i : i + _BATCH]


def referrers(conn: Connection, ref: str, *, transitive: bool = False) -> list[dict[str, Any]]:
    """The stored artifacts whose edges point at ``ref`` (a blob or an artifact).

    Args:
        conn: a connection (any transaction).
        ref: a content ref in any accepted form.
        transitive: also follow referrers of referrers (e.g. source text <- fragment <- run).

    Returns:
        One row per edge: ``address`` of the referrer (``blake3:...``), ``kinds`` (every kind
        that address is stored as: an edge belongs to the bytes, and one byte string may be
        stored as several kinds, e.g. an excerpt that equals its whole source document),
        ``role``, ``refers_to`` and ``depth`` (1 for direct referrers); ordered by depth,
        address, role.

    Raises:
        RefSyntaxError, NotFound: as :func:`resolve`.
    """
    target = resolve(conn, ref).digest.blake3
    seen = {target}
    frontier = [target]
    out: list[dict[str, Any]] = []
    depth = 1
    while frontier:
        found: dict[tuple[str, str, str], list[str]] = {}
        for chunk in _batches(frontier):
            rows = conn.execute(
                sa.select(edges.c.src, edges.c.role, edges.c.dst, artifacts.c.kind)
                .join(artifacts, artifacts.c.address == edges.c.src)
                .where(edges.c.dst.in_(chunk))
            )
            for r in rows:
                found.setdefault((r.src, r.role, r.dst), []).append(r.kind)
        step = []
        for (src, role, dst), kinds in sorted(found.items()):
            out.append(
                {
                    "address": "blake3:" + src,
                    "kinds": sorted(kinds),
                    "role": role,
                    "refers_to": "blake3:" + dst,
                    "depth": depth,
                }
            )
            if src not in seen:
                seen.add(src)
                step.append(src)
        if not transitive:
            break
        frontier, depth = step, depth + 1
    return out


def closure(conn: Connection, ref: str) -> Closure:
    """Walk the edges from ``ref`` and verify every object reached (size and BLAKE3).

    A corrupt or missing object does not stop the walk: it is listed with ``ok`` False and its
    error, so one call shows the whole damage.

    Raises:
        RefSyntaxError, NotFound: the root itself is not stored.
    """
    root = resolve(conn, ref).digest.blake3
    result = Closure("blake3:" + root)
    via: dict[str, dict[str, str] | None] = {root: None}
    queue = deque([root])
    while queue:
        address = queue.popleft()
        item: dict[str, Any] = {"address": "blake3:" + address}
        if via[address] is not None:
            item["via"] = via[address]
        row = blobs.lookup(conn, parse_ref(item["address"]))
        if row is None:
            err = NotFound(f"no blob {item['address']}", code="not-found.blob")
            item.update(ok=False, error=err.to_dict())
            result.items.append(item)
            continue
        fault = blobs.verify_stored(conn, row)
        item["size"] = row.digest.size
        item["kinds"] = [k for k, _, _ in artifact_kinds(conn, address)]
        item["ok"] = fault is None
        if fault is not None:
            item["error"] = fault.to_dict()
        result.items.append(item)
        children = conn.execute(
            sa.select(edges.c.role, edges.c.dst)
            .where(edges.c.src == address)
            .order_by(edges.c.role, edges.c.dst)
        )
        for role, dst in children:
            if dst not in via:
                via[dst] = {"from": "blake3:" + address, "role": role}
                queue.append(dst)
    return result
