"""Portable archives of closures: export, offline verification and import (docs/archive.md).

An archive is an OCI Image Layout (store/archive/layout.py): every object of each root's
closure exactly as stored, named by its SHA-256, with one OCI image manifest per root listing
its members (media type, size, SHA-256 digest; annotations: BLAKE3 address, kinds, the edge
role that reached it and the edges it records).

* :func:`export_archive` walks the closure of each ref from the edge rows (the closure of
  ``evstore closure``: breadth-first, edges by role then address) plus, for each fragment,
  the ``fragment-source`` records that registered its source bytes (role
  ``content-version``: the import needs them to re-check the fragment;
  store/archive/closure.py), then streams every object from the database into a directory
  or a tar, verifying each before it is written (store/archive/writing.py). Memory holds the
  closure's index rows and two batches of at most 8 MiB, never a large object whole.
  Output is deterministic.
* :func:`verify_archive` needs no store (store/archive/verify.py).
* :func:`import_archive` verifies offline first (with the receiving store's settings); then,
  in one transaction of the receiving store, stores the plain blobs and passes every
  artifact through its kind's ``check`` and ``write`` exactly as ``ingest`` does (same codes,
  bindings included), in an order whose outcome does not depend on addresses, collecting
  every fault; any fault rolls the whole import back. A second import stores nothing.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ..contracts.fragments.bindings import REPLAY
from ..contracts.fragments.rules import (
    BATCH_KIND,
    FRAGMENT_KIND,
    extract_evidence,
    identity_key,
    scope_of,
)
from ..core.canonical import dumps, loads
from ..core.digests import Digest, digest_bytes
from ..core.errors import EvstoreError, NotFound, error
from ..core.refs import parse_ref
from ..db.settings import load_settings
from ..facade.ingest import check_errors, parse_documents
from ..objects import blobs as _blobs
from ..objects.artifacts import Document
from ..objects.kinds import get_handler, kind_records
from ..objects.txn import Txn
from .closure import BATCH, Obj, closure, kind_text, layer, layers_json
from .layout import (
    ANN_ADDRESS,
    ANN_KIND,
    ANN_REF_NAME,
    ANN_ROLE,
    ARTIFACT_TYPE,
    EMPTY_CONFIG,
    EMPTY_CONFIG_DIGEST,
    INDEX_FILE,
    LAYOUT_FILE,
    MANIFEST_MEDIA_TYPE,
    Limits,
    Source,
    blob_name,
    index_bytes,
    layout_bytes,
    manifest_bytes,
    manifest_from_json,
    open_source,
)
from .proofs import (
    ANN_PROVES,
    MEDIA_CHECKPOINT,
    MEDIA_PROOF,
    MEDIA_VKEY,
    collect_proofs,
)
from .verify import Checked, Member, verify_source
from .writing import WHOLE_MAX, Writer, write_files

if TYPE_CHECKING:
    from ..facade.api import Store

__all__ = [
    "ExportReport",
    "ImportReport",
    "closure_manifest",
    "export_archive",
    "import_archive",
    "verify_archive",
]

#: Plain blobs imported per ``put_many`` (every driver's parameter limit).
_BATCH = BATCH
#: Plain blobs up to this size are imported in batches; larger ones are streamed (bytes).
_WHOLE_MAX = WHOLE_MAX


@dataclass
class ExportReport:
    """What :func:`export_archive` wrote.

    Attributes:
        output: the directory or tar written. roots: ``{address, kind, manifest, objects}``
            per root. objects: distinct objects. bytes: their total size.
    """

    output: str
    roots: list[dict[str, Any]]
    objects: int
    bytes: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "ok": True,
            "output": self.output,
            "roots": self.roots,
            "objects": self.objects,
            "bytes": self.bytes,
        }


@dataclass
class ImportReport:
    """What :func:`import_archive` stored (``new_*`` 0 when the archive was imported before)."""

    archive: str
    roots: list[dict[str, Any]]
    objects: int
    new_blobs: int = 0
    new_artifacts: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "ok": True,
            "archive": self.archive,
            "roots": self.roots,
            "objects": self.objects,
            "new_blobs": self.new_blobs,
            "new_artifacts": self.new_artifacts,
        }


# --------------------------------------------------------------------------- export


def _proof_layers(
    conn: sa.Connection, members: list[str], extras: dict[str, bytes]
) -> list[dict[str, Any]]:
    """The checkpoint, key and per-member proof layers of one manifest (blobs into extras)."""
    note, vkey, proofs = collect_proofs(conn, members)

    def put(data: bytes, media: str, role: str, **ann: str) -> dict[str, Any]:
        sha = digest_bytes(data).sha256
        extras[sha] = data
        return {
            "mediaType": media,
            "digest": "sha256:" + sha,
            "size": len(data),
            "annotations": {ANN_ROLE: role, **ann},
        }

    out = [put(note, MEDIA_CHECKPOINT, "checkpoint"), put(vkey, MEDIA_VKEY, "verifier-key")]
    out += [put(proofs[a], MEDIA_PROOF, "proof", **{ANN_PROVES: a}) for a in members]
    return out


def _plan(
    conn: sa.Connection, refs: Sequence[str], extras: dict[str, bytes] | None = None
) -> tuple[list[tuple[dict, bytes]], dict]:
    """Every root's index entry and manifest bytes, and every object by SHA-256 hex.

    With ``extras`` (a dict), each manifest also lists the log proofs of its members, whose
    bytes go into ``extras`` by SHA-256 hex.
    """
    roots: dict[str, str] = {}
    for ref in refs:
        row = _blobs.lookup(conn, parse_ref(ref))
        if row is None:
            raise NotFound(f"no blob for {ref}", code="not-found.blob", details={"ref": ref})
        roots[row.digest.blake3] = ref
    cache: dict[str, Obj] = {}
    entries: list[tuple[dict[str, Any], bytes]] = []
    objects: dict[str, Obj] = {}
    for root in sorted(roots):
        members = closure(conn, root, cache)
        kind = kind_text(cache[root].kinds)
        text = layers_json(cache, members)
        if text is None:  # a case the fast encoding leaves to dumps (closure.layers_json)
            layers = [layer(cache[a], role) for a, role in members]
            if extras is not None:
                layers += _proof_layers(conn, ["blake3:" + a for a, _ in members], extras)
            data = manifest_bytes("blake3:" + root, kind, layers)
        else:
            count = len(members)
            if extras is not None:
                proof = _proof_layers(conn, ["blake3:" + a for a, _ in members], extras)
                text += "," + dumps(proof)[1:-1].decode()
                count += len(proof)
            data = manifest_from_json("blake3:" + root, kind, count, text)
        for a, _ in members:
            objects[cache[a].row.digest.sha256] = cache[a]
        entry = {
            "mediaType": MANIFEST_MEDIA_TYPE,
            "artifactType": ARTIFACT_TYPE,
            "digest": "sha256:" + digest_bytes(data).sha256,
            "size": len(data),
            "annotations": {ANN_REF_NAME: root, ANN_ADDRESS: "blake3:" + root, ANN_KIND: kind},
        }
        entries.append((entry, data))
    return entries, objects


def closure_manifest(conn: sa.Connection, ref: str) -> bytes:
    """The closure manifest of the object ``ref`` names, byte for byte as export writes it.

    Raises:
        RefSyntaxError, NotFound (``not-found.blob``): the ref, or an object of its closure.
    """
    entries, _objects = _plan(conn, [ref])
    return entries[0][1]


def export_archive(
    store: Store, refs: Sequence[str], output: str | os.PathLike[str], *, with_proofs: bool = False
) -> ExportReport:
    """Write the closure of each ref as an OCI Image Layout (docs/archive.md).

    Args:
        store: the open store read from (one consistent snapshot).
        refs: content refs of the roots, in any form (duplicates are one root).
        output: a new (or empty) directory, or a path ending in ``.tar``.
        with_proofs: add, per member, its log entry and inclusion proof at the latest signed
            checkpoint, with the checkpoint and the verifier key (not deterministic: the
            checkpoint moves).

    Returns:
        The :class:`ExportReport`.

    Raises:
        NotFound: with ``with_proofs``, ``log.no-checkpoint`` (none signed yet),
            ``log.not-logged`` (an object logged after the latest checkpoint: sign a newer
            one). StoreStateError: ``log.no-key``.
        RefSyntaxError, NotFound (``not-found.blob``): a ref, or an object its edges name.
        CorruptionError: a stored object does not match its address (nothing is left at
            ``output``). InputError: ``output.unwritable`` (exists, or cannot be written).

    A store served over HTTP (``evstore.open("http://...")``) receives the archive from its
    server, verified before it is placed (evstore.client.archives).
    """
    if getattr(type(store), "export_archive", None) is not None:  # a store served over HTTP
        return ExportReport(**store.export_archive(refs, output, with_proofs=with_proofs))  # type: ignore[attr-defined]
    tx = store.transactions  # refuses a closed store
    if not refs:
        raise error("input.invalid", "give at least one ref to export")
    out = os.fspath(output)
    with tx.read() as conn:
        extras: dict[str, bytes] | None = {} if with_proofs else None
        entries, objects = _plan(conn, refs, extras)
        writer = Writer(out)
        try:
            index = index_bytes([e for e, _ in entries])
            writer.write_all([(LAYOUT_FILE, layout_bytes()), (INDEX_FILE, index)])
            writer.directories()
            files: dict[str, tuple[int, Any]] = {EMPTY_CONFIG_DIGEST[7:]: (2, EMPTY_CONFIG)}
            for entry, data in entries:
                files[entry["digest"][7:]] = (len(data), data)
            for sha, extra in (extras or {}).items():
                files[sha] = (len(extra), extra)
            for sha, obj in objects.items():
                files.setdefault(sha, (obj.row.digest.size, obj.row))
            rowids = {o.row.digest.blake3: o.rowid for o in objects.values()}
            write_files(conn, writer, files, rowids)
            writer.commit()
        except BaseException:
            writer.abort()
            raise
    total = sum(o.row.digest.size for o in objects.values())
    roots = [
        {
            "address": e["annotations"][ANN_ADDRESS],
            "kind": e["annotations"][ANN_KIND],
            "manifest": e["digest"],
        }
        for e, _ in entries
    ]
    return ExportReport(out, roots, len(objects), total)


def verify_archive(
    path: str | os.PathLike[str],
    *,
    limits: Limits | None = None,
    key: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> Checked:
    """Verify an archive without a store: every fault, each naming its file.

    Args:
        path: the layout directory or tar.
        limits: the reader's limits.
        key: the log's verifier key (``evstore log key``): every member's inclusion proof
            must verify under it (docs/archive.md#proofs).
        settings: store settings the kinds' rules read, by name (None: the defaults, as
            ``evstore archive verify`` has no store); e.g.
            ``{"manifests.accept_unverified_phase": True}`` to judge as a store that
            accepts revision-2 manifests would (``archive import`` uses its store's).

    Returns:
        :class:`~evstore.archive.verify.Checked` (``ok``, ``faults``, ``proofs``;
        ``to_dict()``).

    Raises:
        InputError: ``input.unreadable`` (no such path), ``archive.layout`` (not a tar).
    """
    with open_source(path, limits) as src:
        return verify_source(src, limits, key, settings)


# --------------------------------------------------------------------------- import


class _Refused(Exception):
    def __init__(self, faults: list[EvstoreError]) -> None:
        self.faults = faults


def _refuse(faults: list[EvstoreError]) -> EvstoreError:
    first = faults[0]
    first.details = {
        **first.details,
        "fault_count": len(faults),
        "faults": [f.to_dict() for f in faults],
    }
    return first


def _scopes(src: Source, m: Member, kind: str) -> tuple[set[str], set[str]]:
    """The fragment identities a fragment or batch member writes unscoped, and those it scopes."""
    if kind not in (FRAGMENT_KIND, BATCH_KIND):
        return set(), set()
    doc = loads(src.read(blob_name(m.sha256)))
    frags = [doc] if kind == FRAGMENT_KIND else [f for _, f in extract_evidence(doc)]
    unscoped = {identity_key(f) for f in frags if scope_of(f) is None}
    return unscoped, {identity_key(f) for f in frags if scope_of(f) is not None}


def _order(checked: Checked, src: Source) -> list[tuple[Member, str]]:
    """``(member, kind)`` of every artifact, in an order whose outcome cannot depend on luck.

    Each item comes after what its edges lead to, and every write of a fragment identity
    without a scope comes before the writes that bind it to one: the scope rule accepts an
    unscoped write only until the identity is first scoped (docs/fragments.md#scope-reuse),
    so this order accepts every set of fragments some order of writes could have accepted,
    whatever their addresses. Among the items free to go, the old order decides: kind rank
    (source documents, content versions, packages first; a run record last), then a
    depth-first post-order of the edges by address, then the kind name. A cycle of
    constraints (no order can accept the set) is broken by that order too: the import then
    fails with the binding's code, as it must.
    """
    members = checked.members
    post: dict[str, int] = {}
    for start in sorted(members):
        stack = [(start, iter(sorted({d for _, d in members[start].edges})))]
        seen = {start}
        while stack:
            node, children = stack[-1]
            nxt = next(children, None)
            if nxt is None:
                stack.pop()
                post.setdefault(node, len(post))
            elif nxt in members and nxt not in seen and nxt not in post:
                seen.add(nxt)
                stack.append((nxt, iter(sorted({d for _, d in members[nxt].edges}))))
    items = [(m, k) for m in members.values() for k in m.kinds]
    # Kinds that others are checked against first (each record's import_rank), then
    # dependencies first; every member's kinds are registered (archive verify checked them).
    rank = {r.name: r.import_rank for r in kind_records()}
    items.sort(key=lambda mk: (rank[mk[1]], post[mk[0].address], mk[1]))
    by_address: dict[str, list[int]] = {}
    for i, (m, _) in enumerate(items):
        by_address.setdefault(m.address, []).append(i)
    before: list[set[int]] = [set() for _ in items]  # items that must go first
    unscoped: dict[str, set[int]] = {}
    scoped: dict[str, set[int]] = {}
    for i, (m, kind) in enumerate(items):
        for _, dst in m.edges:
            before[i].update(j for j in by_address.get(dst, ()) if j != i)
        free, bound = _scopes(src, m, kind)
        for ident in free:
            unscoped.setdefault(ident, set()).add(i)
        for ident in bound:
            scoped.setdefault(ident, set()).add(i)
    for ident, binders in scoped.items():
        for i in binders:
            before[i].update(unscoped.get(ident, set()) - {i})
    return [items[i] for i in _topological(before)]


def _topological(before: list[set[int]]) -> list[int]:
    """Indexes 0..n-1, each after those in ``before[i]``, smallest free index first.

    When only constrained indexes remain (a cycle), the smallest is taken anyway.
    """
    after: list[list[int]] = [[] for _ in before]
    waiting = [len(b) for b in before]
    for i, b in enumerate(before):
        for j in b:
            after[j].append(i)
    ready = [i for i, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    placed: set[int] = set()
    out: list[int] = []
    while len(out) < len(before):
        if ready:
            i = heapq.heappop(ready)
            if i in placed:
                continue
        else:  # a cycle: the smallest index left goes first
            i = min(set(range(len(before))) - placed)
        placed.add(i)
        out.append(i)
        for k in after[i]:
            waiting[k] -= 1
            if waiting[k] == 0 and k not in placed:
                heapq.heappush(ready, k)
    return out


def _check_put(m: Member, got: Digest) -> EvstoreError | None:
    if got.address == m.address:
        return None
    return error(
        "archive.digest-mismatch",
        f"the bytes of {blob_name(m.sha256)} changed while the archive was imported",
        path=blob_name(m.sha256),
    )


def _put_blobs(src: Source, txn: Txn, plain: list[Member], report: ImportReport) -> None:
    batch: list[tuple[Member, bytes]] = []

    def flush() -> None:
        for (m, _), res in zip(
            batch, _blobs.put_many(txn.conn, [d for _, d in batch]), strict=True
        ):
            report.new_blobs += res.new
            bad = _check_put(m, res.digest)
            if bad is not None:
                txn.faults.append(bad)
        batch.clear()

    for m in plain:
        name = blob_name(m.sha256)
        if m.size > _WHOLE_MAX:
            res = _blobs.put_stream(txn.conn, src.chunks(name))
            report.new_blobs += res.new
            bad = _check_put(m, res.digest)
            if bad is not None:
                txn.faults.append(bad)
            continue
        batch.append((m, src.read(name)))
        if len(batch) >= _BATCH:
            flush()
    flush()


def _ingest_member(src: Source, txn: Txn, m: Member, kind: str, report: ImportReport) -> None:
    """Check and write one artifact as ``ingest --kind KIND`` would; faults are collected."""
    name = blob_name(m.sha256)
    txn.options.clear()
    txn.options[REPLAY] = True
    docs = [e for r, e in m.edges if r == "source-document" and kind == "evidence-context"]
    if docs:
        txn.options["source_document"] = docs[0]
    try:
        parsed = parse_documents([Document(src.read(name), name=name, kind=kind)])[0]
        handler = get_handler(kind)
        faults = check_errors(handler, parsed.value, parsed.canonical, txn)
        if faults:
            for f in faults:
                f.path = f.path or name
            txn.faults.extend(faults)
            return
        result = handler.write(parsed.value, parsed.canonical, txn)
        report.new_artifacts += result.new
        bad = _check_put(m, result.digest)
        if bad is not None:
            txn.faults.append(bad)
    except EvstoreError as err:
        err.path = err.path or name
        txn.faults.append(err)


def import_archive(
    store: Store, path: str | os.PathLike[str], *, limits: Limits | None = None
) -> ImportReport:
    """Verify an archive, then store all of it in one transaction, or nothing.

    Offline checks first (:func:`verify_archive`, with the receiving store's settings: an
    archive is judged by the rules of the store it goes into, e.g.
    ``manifests.accept_unverified_phase``); then, in one transaction, the plain blobs and each
    artifact through its kind's check and write, as ``ingest``, in an order whose outcome
    does not depend on addresses (:func:`_order`: what an item refers to first, unscoped
    writes of a fragment identity before those that scope it; then source documents, content
    versions, packages; a run record last). Importing the same archive again stores nothing
    (``new_*`` 0): a fragment the store holds already is written again without a scope even
    after its identity was scoped (docs/archive.md#import).

    Raises:
        The first fault (its code as ``ingest`` or ``archive verify`` would give it), with
        ``details.faults`` listing every fault and ``details.fault_count``; nothing written.
        InputError: ``input.unreadable``.

    A store served over HTTP uploads the archive; its server verifies and imports it
    (evstore.client.archives).
    """
    if getattr(type(store), "import_archive", None) is not None:  # a store served over HTTP
        return ImportReport(**store.import_archive(path, limits=limits))  # type: ignore[attr-defined]
    tx = store.transactions  # refuses a closed store
    where = os.fspath(path)
    with tx.read() as conn:
        settings = load_settings(conn)
    with open_source(where, limits) as src:
        checked = verify_source(src, limits, settings=settings)
        if checked.faults:
            raise _refuse(checked.faults)
        report = ImportReport(where, [r.to_dict() for r in checked.roots], len(checked.members))
        plain = sorted((m for m in checked.members.values() if not m.kinds), key=lambda m: m.sha256)
        order = _order(checked, src)

        def work(conn: sa.Connection) -> ImportReport:
            report.new_blobs = report.new_artifacts = 0
            txn = Txn(conn, load_settings(conn), "ingest")
            _put_blobs(src, txn, plain, report)
            for m, kind in order:
                _ingest_member(src, txn, m, kind, report)
            if txn.faults:
                raise _Refused(list(txn.faults))
            return report

        try:
            return tx.run_transaction(work, serialize=True)
        except _Refused as refused:
            raise _refuse(refused.faults) from None
