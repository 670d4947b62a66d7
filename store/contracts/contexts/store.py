"""Notarius v1 evidence contexts and generic source documents in the store.

The store side of ``notarius-evidence-context-v1``: the kind handlers
:class:`EvidenceContextKind` and :class:`SourceDocumentKind` (check, write, audit, each
returning :class:`~evstore.core.errors.Faults`), the stored source-document lookup, and
:class:`ContextOps` (``store.contexts``). Every rule is in store/contracts/contexts/rules.py
(pure); this
module reads the source document an excerpt names and writes rows and edges.

Rows and edges: both kinds store the lookup attribute ``source_id``; an evidence context
checked against a source document gets an edge ``source-document`` to it, so ``evstore
check`` re-checks it and lineage shows it.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence
from typing import Any, Protocol

from ...core.canonical import dumps, loads
from ...core.digests import digest_bytes
from ...core.errors import EvstoreError, Faults, error
from ...core.refs import parse_ref
from ...core.results import Excerpt
from ...objects import blobs
from ...objects.artifacts import ArtifactResult
from ...objects.kinds import KindHandler
from ...objects.txn import Txn
from .rules import (
    CONTRACT_VERSION,
    RULE_SOURCE_DOCUMENT,
    check_against_source,
    looks_like_units,
    select_excerpt,
    source_id_of,
    validate,
)

__all__ = [
    "ContextOps",
    "EvidenceContextKind",
    "Excerpt",
    "SourceDocumentKind",
    "load_source_document",
]


class _Reader(Protocol):
    """What :class:`ContextOps` needs of the Store it serves (never imported: no cycle)."""

    def reading(self) -> contextlib.AbstractContextManager[Txn]: ...


def load_source_document(txn: Txn, ref: str) -> tuple[str, Any]:
    """The stored source document a content ref names, read and verified.

    Args:
        txn: an open transaction (any mode).
        ref: a content ref in any accepted form (evstore.core.refs) of the document's canonical
            bytes.

    Returns:
        ``(address hex, parsed document)``.

    Raises:
        RefSyntaxError: ``ref.syntax``.
        NotFound: ``not-found.source-document`` when the bytes are absent or are not stored
            as a ``source-document`` artifact.
        CorruptionError: the stored bytes do not match their address.
    """
    row = _source_row(txn, ref)
    return row.digest.blake3, loads(txn.read_blob(row))


def _source_row(txn: Txn, ref: str) -> blobs.BlobRow:
    """The blob of the stored source-document artifact ``ref`` names (bytes not read)."""
    row = txn.blob(parse_ref(ref))
    if row is None or not txn.has_artifact(row.digest.blake3, SourceDocumentKind.name):
        raise error(
            "not-found.source-document",
            f"{ref} is not a stored source document (ingest it with --kind source-document)",
            ref=ref,
        )
    return row


def _source_attrs(doc: Any) -> list[tuple[str, str]]:
    sid = source_id_of(doc)
    return [("source_id", sid)] if sid else []


class EvidenceContextKind(KindHandler):
    """Kind ``evidence-context``: a notarius v1 published evidence context (the payload).

    check: the payload rules (:func:`~evstore.contracts.contexts.rules.validate`); then, when
    ``txn.options["source_document"]`` names a stored source document (``--source-document
    REF``, or the bundle's own source document),
    :func:`~evstore.contracts.contexts.rules.check_against_source`. write: the artifact with lookup
    attribute ``source_id`` and, when it was checked, an edge ``source-document`` to the
    document it was checked against; the result's ``info`` says ``source_check``:
    ``checked`` or ``unchecked``.
    """

    name = "evidence-context"
    contract_version = CONTRACT_VERSION

    def detect(self, doc: Any) -> bool:
        """Never claims a document; refuses to let an array of units pass as plain JSON.

        Raises:
            ContextError: ``context.kind-ambiguous`` when ``doc``
                :func:`~evstore.contracts.contexts.rules.looks_like_units`: it is an evidence
                context
                or a source document, and only the caller knows which (see
                :func:`~evstore.contracts.contexts.rules.detect`).
        """
        if looks_like_units(doc):
            raise error(
                "context.kind-ambiguous",
                "an array of source units is an evidence context or a source document; "
                "say which with --kind evidence-context or --kind source-document",
                rule=RULE_SOURCE_DOCUMENT,
            )
        return False

    def check(self, doc: Any, txn: Txn, canonical: bytes | None = None) -> Faults:
        """Payload rules, then source consistency when a source document is named."""
        faults = validate(doc, txn.settings, kind=self.name)
        ref = txn.options.get("source_document")
        if faults or not ref:
            return faults
        try:
            _, source = load_source_document(txn, ref)
        except EvstoreError as err:  # reported, not raised: validate mode lists every fault
            return Faults(errors=[err])
        return Faults(errors=check_against_source(doc, source))

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Store the payload with its ``source_id`` and ``source-document`` edge."""
        ref = txn.options.get("source_document")
        edges: list[tuple[str, str]] = []
        info: dict[str, Any] = {"source_check": "unchecked"}
        if ref:
            source = _source_row(txn, ref).digest
            edges.append(("source-document", source.blake3))
            info = {"source_check": "checked", "source_document": source.address}
        result = txn.put_artifact(
            self.name, self.contract_version, canonical, edges=edges, attrs=_source_attrs(doc)
        )
        return dataclasses.replace(result, info=info)

    def audit(self, doc: Any, address: str, txn: Txn) -> Faults:
        """Payload rules, and the source check again for each document it was checked against."""
        faults = validate(doc, txn.settings, kind=self.name)
        for role, dst in txn.edges_from(address):
            if role != "source-document":
                continue
            try:
                _, source = load_source_document(txn, "blake3:" + dst)
            except EvstoreError as err:
                faults.errors.append(err)
                continue
            faults.extend(check_against_source(doc, source))
        return faults


class SourceDocumentKind(KindHandler):
    """Kind ``source-document``: a generic source document (docs/bundle.md).

    Never detected from content (see :func:`~evstore.contracts.contexts.rules.detect`). check: the
    source-document rules (:func:`~evstore.contracts.contexts.rules.validate`). write: the artifact
    with lookup attribute ``source_id``; ``info`` gives the number of units.
    """

    name = "source-document"
    contract_version = CONTRACT_VERSION

    def detect(self, doc: Any) -> bool:
        """Always False: a source document is only ever ingested by name."""
        return False

    def check(self, doc: Any, txn: Txn, canonical: bytes | None = None) -> Faults:
        """The source-document rules."""
        return validate(doc, txn.settings, kind=self.name)

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Store the document with its ``source_id``."""
        result = txn.put_artifact(
            self.name, self.contract_version, canonical, attrs=_source_attrs(doc)
        )
        return dataclasses.replace(result, info={"units": len(doc)})


class ContextOps:
    """Evidence-context operations beyond ingest (``store.contexts``)."""

    def __init__(self, store: _Reader) -> None:
        self.store = store

    def excerpt(
        self, source_ref: str, ranges: Sequence[tuple[int, int]], window: int
    ) -> list[dict[str, Any]]:
        """Select an excerpt from a stored source document (``context_rules.select_excerpt``).

        Args:
            source_ref: content ref of a stored ``source-document`` artifact.
            ranges: ``(start_unit_id, end_unit_id)`` pairs, inclusive.
            window: units of context on each side (``window_units``), in source positions.

        Returns:
            The payload; ``canonical.dumps`` of it is the byte form hosts compare.

        Raises:
            RefSyntaxError, NotFound (``not-found.source-document``), CorruptionError,
            ContextError (``context.range-unknown``, ``context.range-order``), and as
            ``select_excerpt`` for a bad window (TypeError, ValueError).
        """
        with self.store.reading() as txn:
            _, doc = load_source_document(txn, source_ref)
        return select_excerpt(doc, ranges, window)

    def excerpt_bytes(
        self, source_ref: str, ranges: Sequence[tuple[int, int]], window: int
    ) -> Excerpt:
        """:meth:`excerpt` with its canonical bytes and digest (what ``evstore excerpt`` prints).

        Same arguments and errors as :meth:`excerpt`.
        """
        units = self.excerpt(source_ref, ranges, window)
        data = dumps(units)
        return Excerpt(units, data, digest_bytes(data))
