"""The write context that contract modules see: one open transaction plus its settings.

A :class:`Txn` is handed to each kind handler's ``check`` and ``write`` (store/objects/kinds.py). It
gives read access (blobs by SHA-256, bindings, attributes), writes (blobs, artifacts,
bindings) and one way to report a fault, :meth:`Txn.fault`, whose effect depends on the mode:

    ingest    the first fault raises; the whole command rolls back, nothing is written
    validate  faults are collected; over a read snapshot with a :class:`~.staged.Staged`
              overlay (``staged``), every write goes to the overlay, never the database
    audit     (``check``) read-only: faults are collected, writes raise RuntimeError

Contract code reads through the Txn (:meth:`Txn.blob`, :meth:`Txn.existing_blobs`,
:meth:`Txn.binding`, ...), never ``txn.conn`` on a path that ``validate`` runs: the overlay
is seen only through the Txn.

Contract modules never know which backend they run on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.digests import digest_bytes, sha256_hex
from ..core.errors import EvstoreError
from ..core.refs import ContentRef
from ..db.tables import artifacts, attrs, edges
from . import artifacts as _artifacts
from . import bindings as _bindings
from . import blobs as _blobs
from .staged import Staged, StagedBindingBatch, stored_bindings, stored_blobs

__all__ = ["Mode", "Txn"]

Mode = Literal["ingest", "validate", "audit"]


class Txn:
    """One transaction as seen by contract code.

    Attributes:
        conn: the SQLAlchemy connection (inside the transaction).
        settings: every store setting, read inside this transaction.
        mode: ``"ingest"``, ``"validate"`` or ``"audit"``.
        options: per-command options for kind handlers (e.g. ``"scope"``, ``"sources"``).
        faults: faults collected in validate and audit modes.
        staged: the in-memory overlay of a validate over a read snapshot (None: writes go
            to ``conn``).
        poll: called between documents of a validate (raises to stop it: a cost limit, a
            client gone); None: never.
    """

    def __init__(
        self,
        conn: Connection,
        settings: Mapping[str, Any],
        mode: Mode,
        *,
        options: Mapping[str, Any] | None = None,
        supplied: Iterable[bytes] = (),
        staged: Staged | None = None,
        poll: Callable[[], None] | None = None,
    ) -> None:
        self.conn = conn
        self.staged = staged
        self.poll = poll
        self.settings = settings
        self.mode = mode
        self.options: dict[str, Any] = dict(options or {})
        self.faults: list[EvstoreError] = []
        # Bytes supplied with the command (--content, --source, bundle files), by SHA-256 hex.
        # They are stored only when a document uses them.
        self._supplied: dict[str, bytes] = {}
        self._used: set[str] = set()
        self._verified: dict[str, _blobs.BlobRow] = {}
        for data in supplied:
            self.supply(data)

    # -- faults ---------------------------------------------------------------------------
    def fault(self, err: EvstoreError) -> None:
        """Report a fault: raise it when ingesting, collect it when validating or auditing."""
        if self.mode == "ingest":
            raise err
        self.faults.append(err)

    def _writable(self) -> None:
        if self.mode == "audit":
            raise RuntimeError("the store check is read-only")

    # -- blobs ----------------------------------------------------------------------------
    def supply(self, data: bytes) -> str:
        """Offer bytes that documents of this command may refer to by SHA-256; returns the hex."""
        sha = digest_bytes(data).sha256
        self._supplied[sha] = data
        return sha

    def blob_by_sha256(self, sha256_hex: str) -> _blobs.BlobRow | None:
        """The stored blob whose bytes have this SHA-256, storing supplied bytes on first use.

        The stored bytes are re-hashed (once per transaction) before the row is trusted: the
        SHA-256 column is an index, and a tampered index must not bind other bytes. A corrupt
        copy is repaired from supplied bytes when the command supplied them.

        Returns:
            The verified :class:`~evstore.objects.blobs.BlobRow`, or None when nothing has that
            digest.

        Raises:
            CorruptionError: the only stored candidates are corrupt and nothing was supplied.
        """
        if sha256_hex in self._supplied:
            self._used.add(sha256_hex)
        cached = self._verified.get(sha256_hex)
        if cached is not None:
            return cached
        corrupt: EvstoreError | None = None
        if self.staged is not None:
            hit = self.staged.blob_row("sha256", sha256_hex)
            if hit is not None:
                return hit
        for row in _blobs.lookup_sha256_all(self.conn, sha256_hex):
            err = _blobs.verify_stored(self.conn, row)
            if err is None:
                self._verified[sha256_hex] = row
                return row
            corrupt = err
        data = self._supplied.get(sha256_hex)
        if data is None or self.mode == "audit":
            if corrupt is not None:
                raise corrupt
            return None
        put = self.put_blob(data)
        row = _blobs.BlobRow(put.digest, None)
        self._verified[sha256_hex] = row
        return row

    def supplied_bytes(self, sha256_hex: str) -> bytes | None:
        """Bytes supplied with this command whose SHA-256 is ``sha256_hex`` (not yet stored)."""
        if sha256_hex in self._supplied:
            self._used.add(sha256_hex)
        return self._supplied.get(sha256_hex)

    def unused_supplied(self) -> list[str]:
        """SHA-256 hex of supplied byte strings no document of this command has used."""
        return [h for h in self._supplied if h not in self._used]

    def read_blob(self, row: _blobs.BlobRow) -> bytes:
        """A stored blob's bytes, verified (CorruptionError on mismatch)."""
        if self.staged is not None:
            data = self.staged.blob_bytes(row)
            if data is not None:
                return data
        return _blobs.read_verified(self.conn, row)

    def blob(self, ref: ContentRef) -> _blobs.BlobRow | None:
        """The blob a content ref names (stored, or staged by this validate), or None."""
        if self.staged is not None:
            hit = self.staged.blob_row(ref.algorithm, ref.hex)
            if hit is not None:
                return hit
        return _blobs.lookup(self.conn, ref)

    def existing_blobs(self, addresses: Sequence[str]) -> dict[str, _blobs.BlobRow]:
        """Index rows of the blobs among ``addresses`` (64 hex): stored, or staged here.

        A write transaction locks the stored rows until its commit
        (:func:`evstore.objects.blobs.existing_rows`); a validate's snapshot locks nothing.
        """
        if self.staged is None:
            return _blobs.existing_rows(self.conn, addresses)
        found: dict[str, _blobs.BlobRow] = {}
        rest = []
        for a in addresses:
            hit = self.staged.blob_row("blake3", a)
            if hit is not None:
                found[a] = hit
            else:
                rest.append(a)
        found.update(stored_blobs(self.conn, rest))
        return found

    def put_blob(self, data: bytes) -> _blobs.PutResult:
        """Store bytes as a blob (or find them stored; a validate stages them)."""
        self._writable()
        if self.staged is not None:
            return self.staged.put_blob(self.conn, data)
        return _blobs.put_bytes(self.conn, data)

    def binding_batch(self, namespace: str) -> _bindings.BindingBatch:
        """A :class:`~evstore.objects.bindings.BindingBatch` of ``namespace`` here."""
        self._writable()
        if self.staged is not None:
            return StagedBindingBatch(self.conn, namespace, self.staged)
        return _bindings.BindingBatch(self.conn, namespace)

    # -- artifacts ------------------------------------------------------------------------
    def put_artifact(
        self,
        kind: str,
        contract_version: str,
        canonical: bytes,
        *,
        edges: Iterable[tuple[str, str]] = (),
        attrs: Iterable[tuple[str, str]] = (),
        warnings: Sequence[_artifacts.Warning_] = (),
    ) -> _artifacts.ArtifactResult:
        """Store an artifact with its edges, attributes and warnings (see artifacts.put_artifact).

        ``edges`` are ``(role, dst)`` with ``dst`` 64 hex or ``blake3:<hex>``.
        """
        self._writable()
        if self.staged is not None:
            return self.put_artifacts(
                kind, contract_version, [(canonical, tuple(edges), tuple(attrs), warnings)]
            )[0]
        return _artifacts.put_artifact(
            self.conn,
            kind,
            contract_version,
            canonical,
            edge_rows=[(r, d.removeprefix("blake3:")) for r, d in edges],
            attr_rows=attrs,
            warning_rows=warnings,
        )

    def put_artifacts(
        self,
        kind: str,
        contract_version: str,
        items: Sequence[tuple[Any, ...]],
        blobs: Sequence[bytes] = (),
    ) -> list[_artifacts.ArtifactResult]:
        """Store many artifacts of one kind in one batch per table.

        ``items`` are ``(canonical, edges, attrs)`` or ``(canonical, edges, attrs, warnings)``;
        semantics equal a loop of :meth:`put_artifact` (results in order, ``new`` only for the
        first occurrence). ``blobs``: plain byte strings stored first, in the same batch.
        """
        self._writable()
        if self.staged is not None:
            return self.staged.put_artifacts(
                self.conn,
                kind,
                [
                    (item[0], [(r, d.removeprefix("blake3:")) for r, d in item[1]], *item[2:])
                    for item in items
                ],
                blobs,
            )
        return _artifacts.put_artifacts(
            self.conn,
            kind,
            contract_version,
            [
                (
                    item[0],
                    [(r, d.removeprefix("blake3:")) for r, d in item[1]],
                    item[2],
                    tuple(item[3]) if len(item) > 3 else (),
                )
                for item in items
            ],
            blobs,
        )

    def find_attr(self, name: str, value: str, kind: str | None = None) -> list[tuple[str, str]]:
        """``(address hex, kind)`` of artifacts with lookup attribute ``name == value``."""
        q = sa.select(attrs.c.address, attrs.c.kind).where(_artifacts.attr_match(name, value))
        if kind is not None:
            q = q.where(attrs.c.kind == kind)
        found = [(r.address, r.kind) for r in self.conn.execute(q.order_by(attrs.c.address))]
        if self.staged is not None:
            extra = [h for h in self.staged.find_attr(name, value, kind) if h not in found]
            found = sorted(found + extra)
        return found

    def has_artifact(self, address: str, kind: str | None = None) -> bool:
        """True when ``address`` (64 hex) is stored as an artifact (of ``kind``)."""
        if self.staged is not None and self.staged.has_artifact(
            address.removeprefix("blake3:"), kind
        ):
            return True
        q = sa.select(artifacts.c.kind).where(
            artifacts.c.address == address.removeprefix("blake3:")
        )
        if kind is not None:
            q = q.where(artifacts.c.kind == kind)
        return self.conn.execute(q.limit(1)).first() is not None

    def edges_from(self, address: str) -> list[tuple[str, str]]:
        """``(role, dst hex)`` edges of an artifact."""
        src = address.removeprefix("blake3:")
        out = [
            (r.role, r.dst)
            for r in self.conn.execute(
                sa.select(edges.c.role, edges.c.dst).where(edges.c.src == src)
            )
        ]
        if self.staged is not None:
            out += [e for e in self.staged.edges_from(src) if e not in out]
        return out

    # -- bindings -------------------------------------------------------------------------
    def binding(self, namespace: str, key: str) -> str | None:
        """The value bound to ``(namespace, key)``, or None."""
        found = _bindings.lookup_binding(self.conn, namespace, key)
        if found is None and self.staged is not None:
            hit = self.staged.binding(namespace, sha256_hex(key.encode()))
            return hit[1] if hit is not None else None
        return found

    def binding_origin(self, namespace: str, key: str) -> str:
        """``blake3:<hex>`` of the artifact whose write bound ``key``; ``""`` when unknown."""
        dg = sha256_hex(key.encode())
        stored = stored_bindings(self.conn, namespace, [dg]).get(dg)
        if stored is not None:
            origin = stored[1]
        elif self.staged is not None and (hit := self.staged.binding(namespace, dg)):
            origin = hit[2]
        else:
            origin = ""
        return f"blake3:{origin}" if origin else ""

    def bindings_of(self, namespace: str, keys: Sequence[str]) -> dict[str, str]:
        """Key -> bound value for the bound keys among ``keys`` (one query per 500)."""
        by_digest = {sha256_hex(k.encode()): k for k in keys}
        stored = stored_bindings(self.conn, namespace, by_digest)
        out = {by_digest[d]: v for d, (v, _) in stored.items()}
        if self.staged is not None:
            for d, k in by_digest.items():
                hit = self.staged.binding(namespace, d)
                if d not in stored and hit is not None:
                    out[k] = hit[1]
        return out

    def bind_many(
        self,
        namespace: str,
        pairs: Sequence[tuple[str, str]],
        on_conflict: Callable[[int, str], EvstoreError],
        origin: str = "",
    ) -> list[bool]:
        """:meth:`bind` for many ``(key, value)`` pairs at once (one lookup, one insert).

        ``on_conflict(index, existing_value)`` builds the fault for pair ``index``; faults are
        reported in pair order. Returns, per pair, whether this call made the binding.
        """
        if self.mode == "audit":
            for i, (key, value) in enumerate(pairs):
                existing = self.binding(namespace, key)
                if existing is not None and existing != value:
                    self.fault(on_conflict(i, existing))
            return [False] * len(pairs)
        if self.staged is not None:
            made = []
            for i, (key, value) in enumerate(pairs):
                existing = self.binding(namespace, key)
                if existing is None:
                    self.staged.bind(namespace, key, value, origin)
                elif existing != value:
                    self.fault(on_conflict(i, existing))
                made.append(existing is None)
            return made
        results = _bindings.bind_many(self.conn, namespace, pairs, origin.removeprefix("blake3:"))
        for i, res in enumerate(results):
            if res.conflict:
                self.fault(on_conflict(i, res.value))
        return [r.new for r in results]

    def supplied_sha256s(self) -> list[str]:
        """SHA-256 hex of every byte string supplied with this command."""
        return list(self._supplied)

    def bind(
        self,
        namespace: str,
        key: str,
        value: str,
        on_conflict: Callable[[str], EvstoreError],
        origin: str = "",
    ) -> bool:
        """Bind once (first write wins); on a conflict report ``on_conflict(existing_value)``.

        In audit mode nothing is written: an unbound key is accepted, a bound one compared.

        Returns:
            True when the binding was made by this call.
        """
        if self.mode == "audit":
            existing = self.binding(namespace, key)
            if existing is not None and existing != value:
                self.fault(on_conflict(existing))
            return False
        if self.staged is not None:
            return self.bind_many(namespace, [(key, value)], lambda _i, v: on_conflict(v), origin)[
                0
            ]
        res = _bindings.bind(self.conn, namespace, key, value, origin.removeprefix("blake3:"))
        if res.conflict:
            self.fault(on_conflict(res.value))
        return res.new
