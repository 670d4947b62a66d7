"""Corpus passage evidence manifests, orbidocs v1, in the store: the ``manifest`` kind.

The pure rules (schema, contract rules, self-address, the pure parts of the bindings) are in
store/contracts/manifests/rules.py; this module binds them inside the command's one transaction.

:class:`ManifestKind` (registered as kind ``manifest``): ingest runs
:func:`~evstore.contracts.manifests.rules.validate`, then binds the rendered content (stored, or
supplied
with the command and matched by SHA-256), refs carrying their digest, and each item
``ref -> digest`` (binding namespace ``manifest.item-ref``, first write wins), all in the
command's one transaction. The artifact has a ``content`` edge to the content blob and the
lookup attribute ``manifest_ref`` (``evstore find --manifest-ref``). ``evstore validate``
records absent content as a warning (upstream fixtures have no public content); ingest and
``check`` require it. :class:`ManifestOps` is ``store.manifests``.

Decisions where the contract is silent (the others: store/contracts/manifests/rules.py):

* Content: found by the SHA-256 in content/digest, among the bytes supplied with the command
  and the stored blobs. When it is found nowhere and the command supplied exactly one byte
  string (not counting the manifest's own JSON, which a bundle supplies too), that byte string
  is what the user offered as the content: it is checked as the content, so its other SHA-256
  is ``content-digest`` (then its length: ``content-size``, ``content-over-limit``). With none,
  or several, supplied, the content is ``content-missing``. The count is per command: in a
  batch of manifests given one ``--content``, a manifest whose content is absent is told that
  this file is not its content.
* Ref bindings: each item's ``ref -> digest`` (not ``execution/ref``, which has no digest of
  its own, nor ``review/target``'s proposal) in one store-wide namespace; a second item of the
  same manifest binding the same ref to another digest is ``ref-rebound`` too.
* ``evstore check`` judges a stored revision-2 manifest as accepted (it was, with a recorded
  warning), whatever the setting is now: turning the setting off does not make a store faulty.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...core.canonical import loads
from ...core.digests import blake3_hex, sha256_hex
from ...core.errors import EvstoreError, Faults, error
from ...objects.artifacts import ArtifactResult, Document, Warning_
from ...objects.kinds import KindHandler
from . import rules as rules
from .portable import PortableManifestOps
from .rules import FIND_ATTR

if TYPE_CHECKING:
    from ...objects.txn import Txn

__all__ = [
    "CONTENT_EDGE",
    "FIND_ATTR",
    "ManifestKind",
    "ManifestOps",
    "PortableManifestOps",
    "REF_NAMESPACE",
    "bind_item_refs",
    "warning_rows",
]

#: Binding namespace: an item ref -> the digest first accepted for it.
REF_NAMESPACE = "manifest.item-ref"
#: Edge role from a manifest to its rendered content blob.
CONTENT_EDGE = "content"


def warning_rows(warnings: Sequence[EvstoreError]) -> list[Warning_]:
    """The stored warning rows (code, message, pointer) of warning errors, in order."""
    return [Warning_(w.code, w.message, w.pointer) for w in warnings]


def _rebound(pairs: list[tuple[str, str, str]]) -> Callable[[int, str], EvstoreError]:
    """The ``on_conflict`` of :meth:`Txn.bind_many` for ``pairs`` from ``item_ref_digests``."""

    def conflict(index: int, existing: str) -> EvstoreError:
        pointer, ref, digest = pairs[index]
        return error(
            rules.REF_REBOUND,
            f"ref {ref!r} is bound to {existing!r} by an earlier accepted manifest (or an "
            f"earlier item of this one); this manifest says {digest!r}",
            pointer,
            ref=ref,
            digest=digest,
            bound=existing,
        )

    return conflict


def bind_item_refs(doc: Any, txn: Txn, origin: str = "") -> None:
    """Bind each item's ``ref -> digest`` (namespace ``manifest.item-ref``), in one batch.

    :meth:`Txn.bind_many` reports conflicts in pair order (a ref repeated in the manifest with
    another digest conflicts with its first occurrence), so the faults are those, in the order,
    of one :meth:`Txn.bind` per item: ``manifest.ref-rebound`` through ``txn.fault`` (raised
    in ingest mode, collected in validate mode, compared only in audit mode).

    Args:
        doc: the parsed manifest.
        txn: the command's transaction.
        origin: the manifest's blake3 hex, recorded with new bindings.
    """
    pairs = rules.item_ref_digests(doc)
    if pairs:
        txn.bind_many(
            REF_NAMESPACE, [(ref, digest) for _, ref, digest in pairs], _rebound(pairs), origin
        )


def _is_this_document(data: bytes, doc: Any) -> bool:
    """Whether supplied bytes are the manifest's own JSON (a bundle supplies every file)."""
    if data[:4096].lstrip()[:1] != b"{":  # a slice: supplied files can be large
        return False
    try:
        return bool(loads(data) == doc)
    except EvstoreError:
        return False


def _sole_supplied(txn: Txn, doc: Any) -> tuple[str, bytes] | None:
    """The one byte string supplied with the command, other than the manifest itself, if one.

    None when none or several were supplied: then no bytes can be taken for the content.
    Reading supplied bytes counts as using them (``Txn.unused_supplied``), so with three or
    more supplied (at least two besides the manifest) none is read; this runs only when the
    content was not found, and a content fault follows.
    """
    shas = txn.supplied_sha256s()
    if len(shas) > 2:
        return None
    found: tuple[str, bytes] | None = None
    for sha in shas:
        data = txn.supplied_bytes(sha)
        if data is None or _is_this_document(data, doc):
            continue
        if found is not None:
            return None
        found = (sha, data)
    return found


def _write_content(
    doc: Any, txn: Txn, deferred: list[bytes] | None = None
) -> tuple[str | None, Faults]:
    """Store or find the content: (its blob address hex or None, content faults).

    ``deferred``: supplied content is appended there (stored by :meth:`ManifestKind.flush`
    with the run's other contents in one batch) instead of being put now.
    """
    try:
        expect = rules.content_expectations(doc)
    except EvstoreError as err:
        return None, Faults(errors=[err])
    sha = expect["sha256"]
    data = txn.supplied_bytes(sha)
    if data is not None:
        # Supplied: put it (one lookup by address, one insert) rather than look it up by
        # SHA-256 first; a stored copy is found by the put all the same.
        if deferred is not None:
            deferred.append(data)
            return blake3_hex(data), rules.check_expected_content(expect, sha, len(data))
        put = txn.put_blob(data)
        return put.digest.blake3, rules.check_expected_content(expect, sha, put.digest.size)
    row = txn.blob_by_sha256(sha)
    if row is not None:
        found = rules.check_expected_content(expect, row.digest.sha256, row.digest.size)
        return row.digest.blake3, found
    sole = _sole_supplied(txn, doc)
    if sole is not None:
        other_sha, other = sole
        return None, rules.check_expected_content(expect, other_sha, len(other), supplied=True)
    return None, rules.check_expected_content(expect, None, None)


def _stored_content(doc: Any, txn: Txn) -> tuple[Any, Faults]:
    """(content blob row or None, content faults), the bytes re-read and re-hashed."""
    try:
        expect = rules.content_expectations(doc)
    except EvstoreError as err:
        return None, Faults(errors=[err])
    row = txn.blob_by_sha256(expect["sha256"])
    if row is None:
        return None, rules.check_expected_content(expect, None, None)
    data = txn.read_blob(row)  # CorruptionError propagates: the bytes are not served
    return row, rules.check_expected_content(expect, sha256_hex(data), len(data))


class ManifestKind(KindHandler):
    """Kind ``manifest``: an orbidocs corpus passage evidence manifest, v1.

    Check: :func:`~evstore.contracts.manifests.rules.validate` (schema, contract rules,
    self-address)
    with the store settings. Write, in this order: rendered content (stored, or supplied with
    the command and matched by SHA-256; its size and bytes/max), refs whose text carries their
    digest, then one binding per item ``ref -> digest`` (namespace ``manifest.item-ref``, first
    write wins, all items in one :meth:`~evstore.objects.txn.Txn.bind_many`). The artifact gets an
    edge
    ``content`` to the content blob and the lookup attribute ``manifest_ref``.

    Content that is neither stored nor supplied under its SHA-256 is ``manifest.content-missing``,
    unless the command supplied exactly one byte string (not counting the manifest's own JSON,
    which a bundle supplies too): that byte string is then what the user offered as the content,
    and it is checked as the content, so its wrong SHA-256 is ``manifest.content-digest`` (then
    its size and the limit, as for any content).

    In validate mode (``evstore validate``) absent content cannot be checked: it is recorded as
    a ``manifest.content-missing`` warning instead of a fault, so upstream fixtures, whose
    content is not public, validate. Ingest and audit require the content.
    """

    name = rules.KIND
    contract_version = rules.CONTRACT_VERSION

    def detect(self, doc: Any) -> bool:
        """Whether ``doc`` is a manifest (:func:`~evstore.contracts.manifests.rules.detect`)."""
        return rules.detect(doc) is not None

    def check(self, doc: Any, txn: Txn, canonical: bytes | None = None) -> Faults:
        """Every fault of ``doc`` before bindings (``validate`` with ``txn.settings``).

        Args:
            doc: the parsed manifest (the store parses every document with the strict reader).
            txn: the transaction (settings).
            canonical: the RFC 8785 bytes of ``doc``, when the caller has them (the store has
                computed them before ``check``): the self-address is then checked on them
                without canonicalising the manifest a second time.

        Returns:
            The faults of :func:`~evstore.contracts.manifests.rules.validate`, in its order.
        """
        if canonical is None:
            return rules.validate(doc, txn.settings)
        return rules.validate_canonical(doc, canonical, txn.settings)

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Bind content and item refs, then store the manifest (see the class docstring).

        Raises:
            ManifestBindingError: in ingest mode, the first binding fault (the transaction
                rolls back); collected through ``txn.fault`` in validate mode.
        """
        return self.flush([self.stage(doc, canonical, txn, {})], txn)[0]

    def prefetch(self, docs: Sequence[Any], txn: Txn, batch: dict[str, Any]) -> None:
        """Read, in one statement, the stored bindings of every item ref of a run of manifests.

        Called by the store before the run is checked and staged (store/facade/ingest.py). Staging
        then decides each manifest's bindings in memory, in document order, and
        :meth:`flush` writes the run's contents and bindings with one batch per table (issue
        16: about five round trips per manifest before). The faults, their order and their
        documents are those of one :meth:`write` per manifest. Not in audit mode.
        """
        if txn.mode == "audit":
            return
        refs: list[str] = []
        for doc in docs:
            if isinstance(doc, dict):
                refs += [ref for _, ref, _ in rules.item_ref_digests(doc)]
        binds = txn.binding_batch(REF_NAMESPACE)
        binds.prefetch(refs)
        batch["bindings"] = binds
        batch["contents"] = []

    def flush(
        self, specs: list[Any], txn: Txn, batch: dict[str, Any] | None = None
    ) -> list[ArtifactResult]:
        """Write staged manifests with one statement per table; results in order.

        Each spec from :meth:`stage` becomes the artifact row, its ``content`` edge, its
        ``manifest_ref`` attribute and its warning rows. After :meth:`prefetch`, the run's
        new item bindings are inserted first (one statement; a key a concurrent writer bound
        first is ``manifest.ref-rebound`` of the manifest that staged it), then the supplied
        contents and the manifests are stored in one blob batch.
        """
        if not batch or "bindings" not in batch:
            return txn.put_artifacts(self.name, self.contract_version, specs)
        for (name, conflict), index, value in batch["bindings"].flush():
            err = conflict(index, value)
            err.path = err.path or name
            txn.fault(err)
        # The contents go in the same blob batch as the manifests, before them.
        return txn.put_artifacts(self.name, self.contract_version, specs, batch["contents"])

    def stage(self, doc: Any, canonical: bytes, txn: Txn, batch: dict[str, Any]) -> tuple[Any, ...]:
        """One manifest's write-time work and its row spec for :meth:`flush`.

        The work, in order: content, refs carrying their digest, item bindings; faults go
        through ``txn.fault``. Warnings (an accepted revision-2 phase; absent content in
        validate mode) become the stored warning rows of the spec.
        """
        notes = Faults(warnings=list(rules.phase_faults(doc, txn.settings).warnings))
        content, faults = _write_content(doc, txn, batch.get("contents"))
        for fault in faults.errors:
            if fault.code == rules.CONTENT_MISSING and txn.mode == "validate":
                notes.warn(fault.code, fault.message + "; not checked", fault.pointer)
            else:
                txn.fault(fault)
        for fault in rules.check_ref_self_digest(doc).errors:
            txn.fault(fault)
        origin = blake3_hex(canonical)
        binds = batch.get("bindings")
        if binds is None:
            bind_item_refs(doc, txn, origin=origin)
        else:  # decided in memory against the run's prefetched bindings (see prefetch)
            pairs = rules.item_ref_digests(doc)
            conflict = _rebound(pairs)
            tag = (batch.get("name"), conflict)
            found = binds.stage([(ref, digest) for _, ref, digest in pairs], origin, tag)
            for i, value in enumerate(found):
                if value is not None:
                    txn.fault(conflict(i, value))
        edges = [(CONTENT_EDGE, content)] if content is not None else []
        ref = doc.get("manifest/ref")
        attrs = [(FIND_ATTR, ref)] if isinstance(ref, str) else []
        return (canonical, edges, attrs, warning_rows(notes.warnings))

    def audit(self, doc: Any, address: str, txn: Txn) -> Faults:
        """Re-verify a stored manifest for ``evstore check``.

        Schema, contract rules and self-address as at ingest, except that a revision-2 phase is
        not a fault (the manifest was accepted with a recorded warning); then the content
        (present, bytes re-read and re-hashed, size, limit), refs carrying their digest, and
        the item ref bindings (compared, never written) and the ``content`` edge.

        Returns:
            The faults found (errors only: warnings were recorded at ingest); binding
            conflicts arrive through ``txn.faults``.
        """
        settings = {**txn.settings, rules.SETTING_ACCEPT_UNVERIFIED_PHASE: True}
        faults = Faults(errors=list(rules.validate(doc, settings).errors))
        if rules.detect(doc) is None or faults.errors:
            return faults
        row, content_faults = _stored_content(doc, txn)
        faults.extend(content_faults.errors)
        faults.extend(rules.check_ref_self_digest(doc).errors)
        bind_item_refs(doc, txn)
        if row is not None and (CONTENT_EDGE, row.digest.blake3) not in txn.edges_from(address):
            faults.add(
                rules.CONTENT_EDGE_MISSING,
                "the stored manifest has no content edge to its rendered content",
                "/content~1ref",
                content="blake3:" + row.digest.blake3,
            )
        return faults


class ManifestOps(PortableManifestOps):
    """``store.manifests``: orbidocs manifest operations on one :class:`~evstore.Store`.

    ``find``, ``load`` and ``content`` are :class:`PortableManifestOps`'.
    """

    def ingest(
        self, manifest: bytes, content: bytes | None = None, *, name: str = "-"
    ) -> ArtifactResult:
        """Ingest one manifest with (optionally) its rendered content, in one transaction.

        Args:
            manifest: the manifest's JSON bytes.
            content: the rendered content bytes, unless already stored.
            name: shown in errors as the input's path.

        Returns:
            The stored manifest's :class:`~evstore.objects.artifacts.ArtifactResult`.

        Raises:
            JSONFormError, ManifestError, ManifestBindingError: the first fault; nothing is
                written.
        """
        supplied = [content] if content is not None else []
        report = self.store.ingest([Document(manifest, name, rules.KIND)], supplied=supplied)
        result: ArtifactResult = report.results[0]
        return result

    def validate(self, manifest: bytes, content: bytes | None = None, *, name: str = "-") -> Any:
        """Every fault of one manifest against the store as it is; writes nothing.

        Returns:
            The ``IngestReport`` of :meth:`Store.validate` (``faults``, and ``results`` with
            warnings).
        """
        supplied = [content] if content is not None else []
        return self.store.validate([Document(manifest, name, rules.KIND)], supplied=supplied)
