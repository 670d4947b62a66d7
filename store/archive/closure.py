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

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from json.encoder import encode_basestring
from typing import Any, NamedTuple

import sqlalchemy as sa

from ..core.canonical import MAX_SAFE_INTEGER, dumps, loads
from ..core.digests import Digest
from ..core.errors import NotFound
from ..core.refs import parse_ref
from ..db.engine import driver_rows
from ..db.tables import artifacts, edges
from ..objects import blobs as _blobs
from .layout import ANN_ADDRESS, ANN_EDGES, ANN_KIND, ANN_ROLE, MEDIA_ARTIFACT, MEDIA_BLOB

__all__ = ["BATCH", "CONTENT_VERSION", "Obj", "closure", "kind_text", "layer", "layers_json"]

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
        rowid: its ``blobs.id`` in the walk's snapshot (the export reads an inline blob's
            bytes by it on SQLite: the primary key, one b-tree seek instead of two).
    """

    row: _blobs.BlobRow
    kinds: tuple[str, ...]
    edges: list[tuple[str, str]]
    companions: list[str] = field(default_factory=list)
    rowid: Any = None


class _Found(NamedTuple):  # a driver row in the attribute shape row_from reads
    address: Any
    sha256: Any
    size: Any
    chunk_set: Any


#: The statements of the walk: (SQLite with an IN list to fill, PostgreSQL with an array).
_ROWS_SQL = (
    "SELECT b.address, b.sha256, b.size, b.chunk_set, a.kind, b.id FROM blobs b"
    " LEFT JOIN artifacts a ON a.address = b.address WHERE b.address IN ({})",
    "SELECT b.address, b.sha256, b.size, b.chunk_set, a.kind, b.id FROM blobs b"
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
    ids: dict[str, Any] = {}
    blob_row = _blobs.BlobRow
    for address, sha256, size, chunk_set, kind, rowid in _statements(conn, _ROWS_SQL, todo):
        if kind is not None:
            kinds.setdefault(address, []).append(kind)
        if address in found:
            continue
        ids[address] = rowid
        if type(size) is int and (chunk_set is None or type(chunk_set) is int):
            found[address] = blob_row(Digest(address, sha256, size), chunk_set)  # row_from's
        else:
            found[address] = _row(address, sha256, size, chunk_set)
    out: dict[str, list[tuple[str, str]]] = {}
    for src, role, dst in _statements(conn, _EDGES_SQL, todo):
        e = out.get(src)
        if e is None:
            out[src] = [(role, dst)]
        else:
            e.append((role, dst))
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
        cache[a] = Obj(row, tuple(sorted(k)) if k else (), sorted(e) if e else [], [], ids[a])
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


#: Every digest of :func:`layers_json`'s fast path, concatenated.
_HEX = re.compile("[0-9a-f]*")


def _edges_value(edges: list[tuple[str, str]], hexes: list[str]) -> str:
    """The edges annotation as a JSON string value: ``enc(dumps([[role, "blake3:" + dst]]))``.

    Built escaped once over: a role's text is its JSON string's JSON string without the
    outer quotes, every other quote is a backslash and a quote. Each ``dst`` is appended to
    ``hexes`` for the caller's lowercase-hex check (which makes writing it unescaped safe).
    """
    enc = encode_basestring
    twice: dict[str, str] = {}
    items: list[str] = []
    add = items.append
    for role, dst in edges:
        r = twice.get(role)
        if r is None:
            r = twice[role] = enc(enc(role))[1:-1]
        hexes.append(dst)
        add(f'[{r},\\"blake3:{dst}\\"]')
    return '"[' + ",".join(items) + ']"'


#: The parts of one member's descriptor in canonical order (RFC 8785 sorts the names; these
#: are ASCII, so code point order): annotations (address, edges, kind, role), digest,
#: mediaType, size.
_A = '{"annotations":{"' + ANN_ADDRESS + '":'
_E = ',"' + ANN_EDGES + '":'
_K = ',"' + ANN_KIND + '":'
_R = ',"' + ANN_ROLE + '":'
_D = '},"digest":'
_M = {
    True: ',"mediaType":"' + MEDIA_ARTIFACT + '","size":',
    False: ',"mediaType":"' + MEDIA_BLOB + '","size":',
}


def layers_json(cache: dict[str, Obj], members: list[tuple[str, str]]) -> str | None:
    """The members' descriptors (:func:`layer`) as canonical JSON, comma-joined, no brackets.

    The text ``dumps`` gives for the list of :func:`layer` dicts without its ``[`` and ``]``,
    built by string formatting: ``dumps`` first scans the 10k dicts of a large closure for
    its domain, then encodes them, several times the cost of this (issue 29,
    docs/benchmarks.md). Kinds, roles and edges go through the JSON encoder's own string
    escaping (the one ``dumps`` uses), so quotes, backslashes and control characters come
    out the same; the digests are written as they are once all of them are lowercase hex.

    Returns:
        The text, or None where ``dumps`` could differ or refuse: a digest that is not
        lowercase hex, a string that is not all ASCII (``dumps`` refuses a lone surrogate)
        or a size beyond +-(2**53-1); the caller then encodes the :func:`layer` dicts with
        ``dumps`` (the same bytes, or its error).
    """
    enc = encode_basestring
    parts: list[str] = []
    add = parts.append
    digests: list[str] = []
    hexes = digests.append
    kind_json: dict[tuple[str, ...], str] = {}
    role_json: dict[str, str] = {}
    for a, role in members:
        obj = cache[a]
        d = obj.row.digest
        size = d.size
        if not -MAX_SAFE_INTEGER <= size <= MAX_SAFE_INTEGER:
            return None
        kinds = obj.kinds
        k = kind_json.get(kinds)
        if k is None:
            k = kind_json[kinds] = enc(kind_text(kinds))
        r = role_json.get(role)
        if r is None:
            r = role_json[role] = enc(role)
        b3 = d.blake3
        sha = d.sha256
        hexes(b3)
        hexes(sha)
        edges = _E + _edges_value(obj.edges, digests) if obj.edges else ""
        add(f'{_A}"blake3:{b3}"{edges}{_K}{k}{_R}{r}{_D}"sha256:{sha}"{_M[bool(kinds)]}{size}}}')
    if _HEX.fullmatch("".join(digests)) is None:
        return None
    text = ",".join(parts)
    return text if text.isascii() else None
