"""What a validate would write, held in memory over a read snapshot (issue 23).

``validate`` runs every check of ``ingest``, write-time bindings included, and must see the
documents of its own call that come earlier (a binding made by document 1 conflicts with
document 2). It used to do so by writing for real inside the ingest transaction and rolling
back, which held the store's write lock (SQLite's one writer, PostgreSQL's ingest advisory
lock) for as long as the validation ran: a request with a read token could stall every
writer. Now a validate reads one consistent snapshot (:meth:`evstore.db.engine.Database.read`)
and :class:`Staged` keeps what its documents would have added: blobs (by BLAKE3 and
SHA-256), artifacts with their edges and lookup attributes, and bindings. The
:class:`~evstore.objects.txn.Txn` of a validate answers every read from the snapshot and
this overlay together, and sends every write here; nothing reaches the database.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.digests import Digest, digest_bytes, sha256_hex
from ..core.refs import parse_ref
from ..core.results import ArtifactResult, PutResult
from ..db.tables import artifacts as _artifacts_table
from ..db.tables import bindings as _bindings_table
from ..db.tables import blobs as _blobs_table
from . import blobs as _blobs
from .artifacts import attr_digest
from .bindings import BindingBatch

__all__ = ["Staged", "StagedBindingBatch", "stored_bindings", "stored_blobs"]


@dataclass
class Staged:
    """The rows a validate's documents would add, in memory (never written).

    Attributes:
        blobs: BLAKE3 hex -> (digest, bytes) of blobs staged by this call.
        by_sha256: SHA-256 hex -> BLAKE3 hex of the staged blobs.
        artifacts: ``(address hex, kind)`` staged.
        edges: source address hex -> ``(role, dst hex)`` in staging order.
        attrs: ``(name, value)`` -> ``(address hex, kind)`` in staging order.
        bindings: ``(namespace, key SHA-256 hex)`` -> ``(key, value, origin hex)``.
    """

    blobs: dict[str, tuple[Digest, bytes]] = field(default_factory=dict)
    by_sha256: dict[str, str] = field(default_factory=dict)
    artifacts: set[tuple[str, str]] = field(default_factory=set)
    edges: dict[str, dict[tuple[str, str], None]] = field(default_factory=dict)
    attrs: dict[tuple[str, str], dict[tuple[str, str], None]] = field(default_factory=dict)
    bindings: dict[tuple[str, str], tuple[str, str, str]] = field(default_factory=dict)

    # -- blobs ----------------------------------------------------------------------------
    def put_blob(self, conn: Connection, data: bytes) -> PutResult:
        """Stage ``data`` as a blob; ``new`` when neither the snapshot nor this call has it."""
        dg = digest_bytes(data)
        if dg.blake3 in self.blobs:
            return PutResult(dg, False)
        if _blobs.lookup(conn, parse_ref("blake3:" + dg.blake3)) is not None:
            return PutResult(dg, False)
        self.blobs[dg.blake3] = (dg, data)
        self.by_sha256.setdefault(dg.sha256, dg.blake3)
        return PutResult(dg, True)

    def blob_row(self, algorithm: str, hex_: str) -> _blobs.BlobRow | None:
        """The staged blob a ref's algorithm and hex name, as an inline :class:`BlobRow`."""
        address = hex_ if algorithm == "blake3" else self.by_sha256.get(hex_)
        hit = self.blobs.get(address) if address is not None else None
        return _blobs.BlobRow(hit[0], None) if hit is not None else None

    def blob_bytes(self, row: _blobs.BlobRow) -> bytes | None:
        """The bytes of a staged blob (hashed when staged), or None when not staged here."""
        hit = self.blobs.get(row.digest.blake3)
        return hit[1] if hit is not None else None

    # -- artifacts ------------------------------------------------------------------------
    def put_artifacts(
        self,
        conn: Connection,
        kind: str,
        items: Sequence[tuple[Any, ...]],
        blobs: Sequence[bytes] = (),
    ) -> list[ArtifactResult]:
        """Stage artifacts as :func:`evstore.objects.artifacts.put_artifacts` would store them.

        ``items`` are ``(canonical, edges, attrs[, warnings])`` with edge destinations as 64
        hex. ``new`` is True for the first occurrence of an ``(address, kind)`` that neither
        the snapshot nor this call holds.

        Raises:
            InputError: ``input.invalid`` (an attribute value holding U+0000), as a write.
        """
        for data in blobs:
            self.put_blob(conn, data)
        results: list[ArtifactResult] = []
        for item in items:
            canonical, item_edges, item_attrs = item[0], item[1], item[2]
            warnings = tuple(item[3]) if len(item) > 3 else ()
            dg = self.put_blob(conn, canonical).digest
            address = dg.blake3
            new = (address, kind) not in self.artifacts and not _stored_as(conn, address, kind)
            self.artifacts.add((address, kind))
            out_edges = self.edges.setdefault(address, {})
            for role, dst in item_edges:
                out_edges[(role, dst)] = None
            for name, value in item_attrs:
                attr_digest(value)  # the value checks a write makes
                self.attrs.setdefault((name, value), {})[(address, kind)] = None
            results.append(ArtifactResult(dg, kind, new, warnings))
        return results

    def has_artifact(self, address: str, kind: str | None) -> bool:
        """True when this call staged ``address`` (as ``kind`` when given)."""
        if kind is not None:
            return (address, kind) in self.artifacts
        return any(a == address for a, _ in self.artifacts)

    def edges_from(self, address: str) -> list[tuple[str, str]]:
        """``(role, dst hex)`` edges staged from ``address``."""
        return list(self.edges.get(address, {}))

    def find_attr(self, name: str, value: str, kind: str | None) -> list[tuple[str, str]]:
        """``(address hex, kind)`` staged with attribute ``name == value``."""
        hits = self.attrs.get((name, value), {})
        return [(a, k) for a, k in hits if kind is None or k == kind]

    # -- bindings -------------------------------------------------------------------------
    def binding(self, namespace: str, key_digest: str) -> tuple[str, str, str] | None:
        """``(key, value, origin)`` staged for a key (by its SHA-256 hex), or None."""
        return self.bindings.get((namespace, key_digest))

    def bind(self, namespace: str, key: str, value: str, origin: str) -> None:
        """Stage a binding of a key that is bound nowhere yet (first write wins)."""
        self.bindings.setdefault(
            (namespace, sha256_hex(key.encode())), (key, value, origin.removeprefix("blake3:"))
        )


def stored_blobs(conn: Connection, addresses: Sequence[str]) -> dict[str, _blobs.BlobRow]:
    """Index rows of the stored blobs among ``addresses`` (64 hex), one query per 500.

    As :func:`evstore.objects.blobs.existing_rows` without its row locks: a validate's
    snapshot holds nothing that a collector or a writer would wait for.
    """
    t = _blobs_table
    found: dict[str, _blobs.BlobRow] = {}
    keys = list(dict.fromkeys(addresses))
    for i in range(0, len(keys), 500):
        q = sa.select(t.c.address, t.c.sha256, t.c.size, t.c.chunk_set).where(
            t.c.address.in_(keys[i : i + 500])
        )
        for r in conn.execute(q):
            found[r.address] = _blobs.row_from(r)
    return found


def _stored_as(conn: Connection, address: str, kind: str) -> bool:
    q = sa.select(_artifacts_table.c.kind).where(
        _artifacts_table.c.address == address, _artifacts_table.c.kind == kind
    )
    return conn.execute(q.limit(1)).first() is not None


def stored_bindings(
    conn: Connection, namespace: str, digests: Iterable[str]
) -> dict[str, tuple[str, str]]:
    """Key SHA-256 hex -> ``(value, origin)`` of the stored bindings among ``digests``."""
    keys = list(dict.fromkeys(digests))
    found: dict[str, tuple[str, str]] = {}
    t = _bindings_table
    for i in range(0, len(keys), 500):
        q = sa.select(t.c.key_digest, t.c.value, t.c.origin).where(
            t.c.namespace == namespace, t.c.key_digest.in_(keys[i : i + 500])
        )
        for r in conn.execute(q):
            found[r.key_digest] = (r.value, r.origin or "")
    return found


class StagedBindingBatch(BindingBatch):
    """A :class:`~evstore.objects.bindings.BindingBatch` whose flush stages, never inserts.

    It reads the snapshot and the keys this call staged, so a document conflicts with an
    earlier document of the same validate exactly as it would within one ingest.
    """

    def __init__(self, conn: Connection, namespace: str, staged: Staged) -> None:
        super().__init__(conn, namespace)
        self._staged = staged

    def _lookup(self, digests: Sequence[str]) -> None:
        new = [d for d in dict.fromkeys(digests) if d not in self._looked]
        if not new:
            return
        stored = stored_bindings(self.conn, self.namespace, new)
        for dg in new:
            hit = self._staged.binding(self.namespace, dg)
            if dg in stored:
                self._bound[dg] = stored[dg][0]
            elif hit is not None:
                self._bound[dg] = hit[1]
        self._looked.update(new)

    def flush(self) -> list[tuple[Any, int, str]]:
        """Move the pending bindings into the overlay; no concurrent writer can win here."""
        for row, _ in self._pending.values():
            self._staged.bind(self.namespace, row["key"], row["value"], row["origin"])
        self._pending.clear()
        return []
