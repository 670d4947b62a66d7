"""The closure walk of an export: index rows, kinds and edges, one statement per batch.

:func:`closure` walks the closure of one root breadth-first from the edge rows (the closure
of ``evstore closure``: edges by role then address), plus, for each fragment, the
``fragment-source`` records that registered its source bytes (role ``content-version``).
It reads only index rows (address, SHA-256, size, where the bytes live), kinds and edges,
never an object's bytes (a fragment's and its records' excepted: they decide its companions).

Each level of the walk costs two statements per :data:`BATCH` addresses on SQLite (its
bound-parameter limit), two per level on PostgreSQL (one array parameter each): the blob
rows joined with their kinds, and the edges leaving them. They go to the driver's cursor
(:func:`~evstore.db.engine.driver_rows`): through SQLAlchemy, the statement built and
compiled for each ``IN`` list of 500 and its result rows cost most of the walk (issue 29,
docs/benchmarks.md "archive export").
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import sqlalchemy as sa

from ..core.canonical import dumps, loads
from ..core.digests import Digest
from ..core.errors import NotFound
from ..core.refs import parse_ref
from ..db.engine import driver_rows
from ..db.tables import artifacts, edges
from ..objects import blobs as _blobs
from .layout import ANN_ADDRESS, ANN_EDGES, ANN_KIND, ANN_ROLE, MEDIA_ARTIFACT, MEDIA_BLOB

__all__ = ["BATCH", "CONTENT_VERSION", "Obj", "closure", "kind_text", "layer"]

#: Addresses asked for per ``IN`` list on SQLite (every driver's parameter limit).
BATCH = 500
#: Role of a fragment-source record listed with the fragment whose source it registered.
CONTENT_VERSION = "content-version"


@dataclass(slots=True)
class Obj:
    """What the walk knows of one stored object (index rows only, no bytes).

    Attributes:
        row: its index row (digests, size in bytes, chunk set).
        kinds: its artifact kinds, sorted (empty for a plain blob).
        edges: ``(role, BLAKE3 hex)`` of the edges leaving it, sorted.
        companions: for a fragment, the BLAKE3 hex of the ``fragment-source`` records of
            its source bytes.
    """

    row: _blobs.BlobRow
    kinds: tuple[str, ...]
    edges: list[tuple[str, str]]
    companions: list[str] = field(default_factory=list)


class _Found(NamedTuple):  # a driver row in the attribute shape row_from reads
    address: Any
    sha256: Any
    size: Any
    chunk_set: Any


#: The statements of the walk: (SQLite with an IN list to fill, PostgreSQL with an array).
_ROWS_SQL = (
    "SELECT b.address, b.sha256, b.size, b.chunk_set, a.kind FROM blobs b"
    " LEFT JOIN artifacts a ON a.address = b.address WHERE b.address IN ({})",
    "SELECT b.address, b.sha256, b.size, b.chunk_set, a.kind FROM blobs b"
    " LEFT JOIN artifacts a ON a.address = b.address WHERE b.address = ANY(%b)",
)
_EDGES_SQL = (
    "SELECT src, role, dst FROM edges WHERE src IN ({})",
    "SELECT src, role, dst FROM edges WHERE src = ANY(%b)",
)


def _statements(conn: sa.Connection, pair: tuple[str, str], todo: list[str]) -> Iterator[Any]:
    """The rows of one of the walk's statements over ``todo``, a batch or level at a time."""
    if conn.dialect.name == "postgresql":
        yield from driver_rows(conn, pair[1], (todo,))
        return
    for i in range(0, len(todo), BATCH):
        part = todo[i : i + BATCH]
        yield from driver_rows(conn, pair[0].format(",".join("?" * len(part))), part)


def _row(address: Any, sha256: Any, size: Any, chunk_set: Any) -> _blobs.BlobRow:
    if type(size) is int and (chunk_set is None or type(chunk_set) is int):
        return _blobs.BlobRow(Digest(address, sha256, size), chunk_set)  # row_from's checks
    return _blobs.row_from(_Found(address, sha256, size, chunk_set))


def _load(conn: sa.Connection, addresses: list[str], cache: dict[str, Obj]) -> None:
    """Fill ``cache`` with the index rows, kinds and edges of ``addresses`` (64 hex).

    Raises:
        NotFound: ``not-found.blob``, an address that is not stored.
        CorruptionError: ``corruption.row``, a malformed index row.
    """
    todo = sorted({a for a in addresses if a not in cache})
    if not todo:
        return
    found: dict[str, _blobs.BlobRow] = {}
    kinds: dict[str, list[str]] = {}
    for address, sha256, size, chunk_set, kind in _statements(conn, _ROWS_SQL, todo):
        if address not in found:
            found[address] = _row(address, sha256, size, chunk_set)
        if kind is not None:
            kinds.setdefault(address, []).append(kind)
    out: dict[str, list[tuple[str, str]]] = {}
    for src, role, dst in _statements(conn, _EDGES_SQL, todo):
        out.setdefault(src, []).append((role, dst))
    for a in todo:
        row = found.get(a)
        if row is None:
            raise NotFound(
                f"blake3:{a} is in the closure but not stored; run `evstore check`",
                code="not-found.blob",
                details={"address": "blake3:" + a},
            )
        k = kinds.get(a)
        e = out.get(a)
        cache[a] = Obj(row, tuple(sorted(k)) if k else (), sorted(e) if e else [])
    _companions(conn, [a for a in todo if "fragment" in cache[a].kinds], cache)


def _companions(conn: sa.Connection, fragments: list[str], cache: dict[str, Obj]) -> None:
    """The fragment-source records that registered each fragment's source bytes."""
    for a in fragments:
        frag = loads(_blobs.read_verified(conn, cache[a].row))
        pair = (frag.get("document_id"), frag.get("fragment_id"))
        sources = [d for role, d in cache[a].edges if role == "source"]
        if not sources:
            continue
        rows = conn.execute(
            sa.select(edges.c.src)
            .join(artifacts, artifacts.c.address == edges.c.src)
            .where(
                edges.c.dst.in_(sources),
                edges.c.role == "source",
                artifacts.c.kind == "fragment-source",
            )
            .order_by(edges.c.src)
        ).all()
        for r in rows:
            row = _blobs.lookup(conn, parse_ref("blake3:" + r.src))
            rec = loads(_blobs.read_verified(conn, row)) if row is not None else {}
            if (rec.get("document_id"), rec.get("fragment_id")) == pair:
                cache[a].companions.append(r.src)


def closure(conn: sa.Connection, root: str, cache: dict[str, Obj]) -> list[tuple[str, str]]:
    """``(address hex, role)`` of every member of ``root``'s closure, root first, breadth-first.

    ``cache`` (BLAKE3 hex -> :class:`Obj`) is filled with every member and may be shared by
    the walks of several roots (each object is read once).

    Raises:
        NotFound: ``not-found.blob`` (an object an edge names is not stored).
        CorruptionError: a malformed index row, or a fragment (or record) whose bytes do not
            match their address.
    """
    order = [(root, "root")]
    seen = {root}
    frontier = [root]
    while frontier:
        _load(conn, frontier, cache)
        step: list[str] = []
        for a in frontier:
            obj = cache[a]
            reach = obj.edges
            if obj.companions:
                reach = [*reach, *((CONTENT_VERSION, c) for c in obj.companions)]
            for role, dst in reach:
                if dst not in seen:
                    seen.add(dst)
                    order.append((dst, role))
                    step.append(dst)
        frontier = step
    return order


def kind_text(kinds: Sequence[str]) -> str:
    """The ``dev.evstore.kind`` annotation: the kinds comma-joined, or ``blob``."""
    return ",".join(kinds) if kinds else "blob"


def layer(obj: Obj, role: str) -> dict[str, Any]:
    """The manifest's descriptor of one member reached by ``role`` (docs/archive.md)."""
    d = obj.row.digest
    ann = {ANN_ADDRESS: "blake3:" + d.blake3, ANN_KIND: kind_text(obj.kinds), ANN_ROLE: role}
    if obj.edges:
        ann[ANN_EDGES] = dumps([[r, "blake3:" + dst] for r, dst in obj.edges]).decode()
    return {
        "mediaType": MEDIA_ARTIFACT if obj.kinds else MEDIA_BLOB,
        "digest": "sha256:" + d.sha256,
        "size": d.size,
        "annotations": ann,
    }
