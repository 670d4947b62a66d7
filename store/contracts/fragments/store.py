"""Evidence fragments, templiqx ``v1alpha1``, in the store: kind handlers and ``store.fragments``.

Implements the store side of ``../shared/contracts/templiqx-evidence-fragment-v1alpha1.md``;
the pure rules are ``store/contracts/fragments/rules.py`` and the content versions, their selection
and
the write-time bindings (scope reuse, revision checksums) are
``store/contracts/fragments/bindings.py``.
This module holds the kind handlers ``fragment`` (:class:`FragmentKind`), ``fragment-batch``
(:class:`FragmentBatchKind`) and ``fragment-source`` (:class:`FragmentSourceKind`), whose
``check`` and ``audit`` return :class:`~evstore.core.errors.Faults` in the documented fault order
(shape, contract rules, then write-time bindings), and :class:`FragmentOps`
(``store.fragments``). docs/fragments.md describes the decisions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...core.canonical import dumps, loads
from ...core.digests import digest_bytes
from ...core.errors import EvstoreError, Faults, error, join_pointer
from ...core.refs import parse_ref
from ...objects.artifacts import ArtifactResult, Document
from ...objects.kinds import KindHandler
from .bindings import (
    ATTR_SOURCE_PAIR,
    NS_REV_CONTENT,
    NS_REV_DOC,
    NS_SCOPE,
    TxnState,
    check_fragment,
    command_sources,
    content_bytes,
    jcs,
    pair_hash,
    revision_content_key,
    revision_keys,
    state,
    write_fragments,
)
from .portable import PortableFragmentOps
from .rules import (
    BATCH_KIND,
    CONTRACT_VERSION,
    FRAGMENT_KIND,
    NOT_FOUND_FRAGMENT,
    REVISION_MISMATCH,
    SCOPE_FIELDS,
    SCOPE_REUSE,
    SOURCE_FIELDS,
    SOURCE_KIND,
    UNKNOWN_CONTENT,
    UNKNOWN_REVISION,
    detect,
    extract_evidence,
    identity_key,
    revision_checksums,
    scope_from_parts,
    scope_of,
    validate,
    validate_shape,
    validate_source,
)
from .rules_bytes import source_encoding_fault, verify_against

if TYPE_CHECKING:
    from ...objects.txn import Txn

__all__ = [
    "FragmentBatchKind",
    "FragmentKind",
    "FragmentOps",
    "FragmentSourceKind",
    "PortableFragmentOps",
    "audit_fragment",
    "register_command_sources",
]


def register_command_sources(txn: Txn, st: TxnState) -> None:
    """Record every ``--source`` of the command as a content version (once per transaction).

    A write-time step of the fragment kinds: each source is checked and written as a
    ``fragment-source`` record; faults (their details name the pair) go through ``txn.fault``.
    """
    if st.registered:
        return
    st.registered = True
    handler = FragmentSourceKind()
    for d, f, sha, _data in command_sources(txn, st):
        record = {"document_id": d, "fragment_id": f, "content_sha256": sha}
        faults = handler.check(record, txn)
        for fault in faults:
            fault.details.setdefault("source", {"document_id": d, "fragment_id": f})
            txn.fault(fault)
        if not faults:
            handler.write(record, dumps(record), txn)


def audit_fragment(frag: Any, address: str, pointer: str, txn: Txn) -> Faults:
    """Re-verify a stored fragment against its recorded source version and its bindings.

    Returns:
        The faults: shape; ``fragment.unknown-content`` (no recorded or stored source); the
        byte rules over each recorded source; revision bindings not selecting it
        (``fragment.revision-mismatch``/``fragment.unknown-revision``). A conflicting scope
        binding goes through ``txn.bind`` (``fragment.scope-reuse``).
    """
    faults = Faults(errors=validate_shape(frag, pointer, revision_keys=revision_keys(txn)))
    if faults:
        return faults
    sources = [dst for role, dst in txn.edges_from(address) if role == "source"]
    if not sources:
        faults.add(
            UNKNOWN_CONTENT,
            "the fragment has no recorded source version",
            join_pointer(pointer, "fragment_id"),
        )
        return faults
    for dst in sources:
        row = txn.blob(parse_ref("blake3:" + dst))
        if row is None:
            faults.errors.append(
                error(
                    UNKNOWN_CONTENT,
                    f"the recorded source blake3:{dst} is not stored",
                    join_pointer(pointer, "fragment_id"),
                )
            )
            continue
        content = txn.read_blob(row)  # CorruptionError propagates: reported by check
        faults.errors += verify_against(
            frag,
            content,
            pointer,
            content_sha256=row.digest.sha256,
            shape_checked=True,
            source=True,
        )
        for ptr, checksum in revision_checksums(frag, revision_keys(txn), pointer):
            bound = txn.binding(NS_REV_CONTENT, revision_content_key(checksum, frag["fragment_id"]))
            if bound != row.digest.sha256:
                fault = error(
                    REVISION_MISMATCH if bound else UNKNOWN_REVISION,
                    "the revision extension does not select the recorded source version",
                    ptr,
                )
                # revision_content_sha256 is null when unbound: kept, as the check reports it
                fault.details = {
                    "revision_content_sha256": bound,
                    "source_sha256": row.digest.sha256,
                }
                faults.errors.append(fault)
    own = scope_of(frag)
    if own is not None:
        value = jcs(own)
        txn.bind(
            NS_SCOPE,
            identity_key(frag),
            value,
            on_conflict=lambda existing: error(
                SCOPE_REUSE,
                "this fragment identity is bound to another scope",
                join_pointer(pointer, "scope"),
                bound_scope=loads(existing),
                scope=own,
            ),
        )
    return faults


class FragmentKind(KindHandler):
    """Kind ``fragment``: one templiqx v1alpha1 evidence fragment (rules: fragment_rules).

    Detection: an object with all five required member names (:func:`detect`).
    check: shape, content selection, every byte rule. write: scope binding, then the artifact
    with a ``source`` edge to the verified content version and attributes ``quote_sha256``,
    ``document_id``, ``fragment_identity`` (SHA-256 hex of :func:`identity_key`).
    """

    name = FRAGMENT_KIND
    contract_version = CONTRACT_VERSION

    def detect(self, doc: Any) -> bool:
        """True for an object carrying the five required member names."""
        return detect(doc) == "fragment"

    def check(self, doc: Any, txn: Txn, canonical: bytes | None = None) -> Faults:
        """Every fault of one fragment (shape, content selection, bytes)."""
        return Faults(errors=check_fragment(doc, "", txn, state(txn))[1])

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Register the command's sources, bind the scope, store the fragment."""
        st = state(txn)
        register_command_sources(txn, st)
        stored = write_fragments([("", doc, canonical)], txn, st, digest_bytes(canonical).blake3)
        if not stored:  # validate mode after a fault: report the document anyway
            return txn.put_artifact(FRAGMENT_KIND, CONTRACT_VERSION, canonical)
        return stored[0]

    def audit(self, doc: Any, address: str, txn: Txn) -> Faults:
        """Re-verify against the recorded source version; compare the scope binding."""
        return audit_fragment(doc, address, "", txn)


class FragmentBatchKind(KindHandler):
    """Kind ``fragment-batch``: a templiqx eval output whose ``evidence`` array holds fragments.

    The output is stored as it is (facts included) with a ``fragment`` edge to each of its
    fragments, which are stored as ``fragment`` artifacts. One bad fragment rejects the whole
    ingest (one transaction).
    """

    name = BATCH_KIND
    contract_version = CONTRACT_VERSION

    def detect(self, doc: Any) -> bool:
        """True for an object with an ``evidence`` array holding at least one fragment."""
        return detect(doc) == "fragment-batch"

    def check(self, doc: Any, txn: Txn, canonical: bytes | None = None) -> Faults:
        """Every fault of every fragment, pointers ``/evidence/N/...``."""
        try:
            items = extract_evidence(doc)
        except EvstoreError as err:
            return Faults(errors=[err])
        st = state(txn)
        faults = Faults()
        for pointer, frag in items:
            faults.errors += check_fragment(frag, pointer, txn, st)[1]
        return faults

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Register sources, store each fragment (bindings first), then the output itself."""
        st = state(txn)
        register_command_sources(txn, st)
        evidence = extract_evidence(doc)
        stored = write_fragments(
            [(pointer, frag, dumps(frag)) for pointer, frag in evidence],
            txn,
            st,
            digest_bytes(canonical).blake3,
        )
        documents = sorted({f["document_id"] for _, f in evidence})
        res = txn.put_artifact(
            BATCH_KIND,
            CONTRACT_VERSION,
            canonical,
            edges=[("fragment", r.digest.blake3) for r in stored],
            attrs=[("document_id", d) for d in documents],
        )
        return dataclasses.replace(
            res,
            info={
                "fragments": len(stored),
                "new_fragments": sum(1 for r in stored if r.new),
            },
        )

    def audit(self, doc: Any, address: str, txn: Txn) -> Faults:
        """Each fragment is stored as a ``fragment`` artifact (those are audited themselves)."""
        try:
            items = extract_evidence(doc)
        except EvstoreError as err:
            return Faults(errors=[err])
        faults = Faults()
        for pointer, frag in items:
            shape = validate_shape(frag, pointer)
            if shape:
                faults.errors += shape
                continue
            if not txn.has_artifact(digest_bytes(dumps(frag)).blake3, FRAGMENT_KIND):
                faults.add(
                    UNKNOWN_CONTENT,
                    "this fragment of the batch is not stored as a fragment artifact",
                    pointer,
                )
        return faults


class FragmentSourceKind(KindHandler):
    """Kind ``fragment-source``: a content version of (document_id, fragment_id).

    The record is ``{"document_id", "fragment_id", "content_sha256"[, "revision_checksum"]}``
    (no other member); the bytes travel with the command (``supplied``) or are stored already.
    They must be well-formed UTF-8 and are stored exactly (no decoding, no normalisation).
    write: revision bindings (checksum -> document_id; (checksum, fragment_id) -> content
    SHA-256), then the record with a ``source`` edge to the blob and attributes
    ``fragment_source`` (SHA-256 of JCS([document_id, fragment_id])) and ``document_id``.
    Not detected automatically: ``evstore ingest-source`` (or ``--kind fragment-source``).
    """

    name = SOURCE_KIND
    contract_version = CONTRACT_VERSION

    def detect(self, doc: Any) -> bool:
        """True for an object with exactly the source record's members (never auto-detected)."""
        return (
            isinstance(doc, dict)
            and all(k in doc for k in SOURCE_FIELDS[:3])
            and all(k in SOURCE_FIELDS for k in doc)
        )

    def _bytes(self, doc: dict[str, Any], txn: Txn) -> bytes | None:
        return content_bytes(txn, state(txn), doc["content_sha256"])

    def _revision_faults(self, doc: dict[str, Any], txn: Txn) -> list[EvstoreError]:
        checksum = doc.get("revision_checksum")
        if checksum is None:
            return []
        faults: list[EvstoreError] = []
        bound_doc = txn.binding(NS_REV_DOC, checksum)
        if bound_doc is not None and bound_doc != doc["document_id"]:
            faults.append(
                error(
                    REVISION_MISMATCH,
                    "this revision checksum is bound to another document_id",
                    "/revision_checksum",
                    bound_document_id=bound_doc,
                )
            )
        key = revision_content_key(checksum, doc["fragment_id"])
        bound_sha = txn.binding(NS_REV_CONTENT, key)
        if bound_sha is not None and bound_sha != doc["content_sha256"]:
            faults.append(
                error(
                    REVISION_MISMATCH,
                    "this revision already has other content for this fragment_id",
                    "/revision_checksum",
                    bound_content_sha256=bound_sha,
                )
            )
        return faults

    def check(self, doc: Any, txn: Txn, canonical: bytes | None = None) -> Faults:
        """Shape, bytes present and well-formed UTF-8, revision bindings not contradicted."""
        faults = Faults(errors=validate_source(doc))
        if faults:
            return faults
        data = self._bytes(doc, txn)
        if data is None:
            faults.add(
                UNKNOWN_CONTENT,
                "the source bytes are neither supplied with the command nor stored",
                "/content_sha256",
            )
            return faults
        bad = source_encoding_fault(
            data, "", document_id=doc["document_id"], fragment_id=doc["fragment_id"]
        )
        faults.errors += [bad] if bad is not None else self._revision_faults(doc, txn)
        return faults

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Bind the revision (if any), store the record, and make the version visible."""
        address = digest_bytes(canonical).blake3
        d, f, sha = doc["document_id"], doc["fragment_id"], doc["content_sha256"]
        checksum = doc.get("revision_checksum")
        st = state(txn)
        if checksum is not None:
            for namespace, key, value, what in (
                (NS_REV_DOC, checksum, d, "document_id"),
                (NS_REV_CONTENT, revision_content_key(checksum, f), sha, "content version"),
            ):

                def conflict(existing: str, what: str = what) -> EvstoreError:
                    return error(
                        REVISION_MISMATCH,
                        f"this revision checksum is bound to another {what}",
                        "/revision_checksum",
                        bound=existing,
                    )

                txn.bind(namespace, key, value, on_conflict=conflict, origin=address)
                st.revisions[(namespace, key)] = txn.binding(namespace, key)
        row = txn.blob_by_sha256(sha)
        edges = [("source", row.digest.blake3)] if row is not None else []
        res = txn.put_artifact(
            SOURCE_KIND,
            CONTRACT_VERSION,
            canonical,
            edges=edges,
            attrs=[(ATTR_SOURCE_PAIR, pair_hash(d, f)), ("document_id", d)],
        )
        if (d, f) in st.versions:  # keep a cached version list current
            st.versions[(d, f)].add(sha)
        info: dict[str, Any] = {"content_sha256": sha, "size": row.digest.size if row else None}
        if checksum is not None:
            info["revision_checksum"] = checksum
        return dataclasses.replace(res, info=info)

    def audit(self, doc: Any, address: str, txn: Txn) -> Faults:
        """Bytes still stored and UTF-8; revision bindings still say this record's values."""
        faults = Faults(errors=validate_source(doc))
        if faults:
            return faults
        row = txn.blob_by_sha256(doc["content_sha256"])
        if row is None:
            faults.add(UNKNOWN_CONTENT, "the source bytes are not stored", "/content_sha256")
            return faults
        bad = source_encoding_fault(txn.read_blob(row))
        if bad is not None:
            faults.errors.append(bad)
        checksum = doc.get("revision_checksum")
        if checksum is not None:
            if txn.binding(NS_REV_DOC, checksum) != doc["document_id"]:
                faults.add(
                    REVISION_MISMATCH,
                    "the revision binding names another document_id",
                    "/revision_checksum",
                )
            key = revision_content_key(checksum, doc["fragment_id"])
            if txn.binding(NS_REV_CONTENT, key) != doc["content_sha256"]:
                faults.add(
                    REVISION_MISMATCH,
                    "the revision binding names another content version",
                    "/revision_checksum",
                )
        return faults


class FragmentOps(PortableFragmentOps):
    """Fragment operations on a Store (``store.fragments``): sources, ingest, quote, lists.

    ``ingest_source`` and ``find`` are :class:`PortableFragmentOps`'; the others read the
    database.
    """

    def ingest(
        self,
        data: bytes,
        *,
        sources: Sequence[tuple[str, str, bytes]] = (),
        scope: Mapping[str, str] | None = None,
        name: str = "-",
        kind: str | None = None,
    ) -> Any:
        """Ingest a fragment or an eval output with its source bytes, in one transaction.

        Args:
            data: the JSON bytes (a fragment, or a templiqx eval output).
            sources: ``(document_id, fragment_id, bytes)`` content versions to register.
            scope: the enclosing scope (host_id, tenant_id, authorization_scope_id), bound to
                every fragment without changing it.
            name: the input's name for error messages.
            kind: ``fragment`` or ``fragment-batch``; detected when None.

        Returns:
            The ``IngestReport`` of ``store.ingest``.

        Raises:
            Every ``fragment.*`` code (the first fault); nothing is written then.
        """
        document = Document
        options: dict[str, Any] = {}
        if sources:
            options["sources"] = [(d, f, bytes(b)) for d, f, b in sources]
        if scope is not None:
            options["scope"] = dict(scope)
        return self.store.ingest(
            [document(bytes(data), name=name, kind=kind)],
            options=options,
            supplied=[bytes(b) for _, _, b in sources],
        )

    def quote(self, ref: str) -> bytes:
        """The exact quoted bytes of a stored fragment, from its recorded source version.

        Args:
            ref: a content ref of the fragment artifact (``blake3:…`` or ``sha256:…``).

        Returns:
            ``source[start_offset:end_offset]``, re-verified against quote_sha256.

        Raises:
            RefSyntaxError; NotFound (``not-found.blob``, ``not-found.fragment``);
            FragmentError (``fragment.unknown-content`` when no source is recorded, or any
            byte rule if re-verification fails); CorruptionError.
        """
        with self.store.reading() as txn:
            row = txn.blob(parse_ref(ref))
            if row is None:
                raise error("not-found.blob", f"no blob for {ref}", ref=ref)
            address = row.digest.blake3
            if not txn.has_artifact(address, FRAGMENT_KIND):
                raise error(NOT_FOUND_FRAGMENT, f"{ref} is not a stored fragment", ref=ref)
            frag = loads(txn.read_blob(row))
            sources = [dst for role, dst in txn.edges_from(address) if role == "source"]
            if not sources:
                raise error(UNKNOWN_CONTENT, "the fragment has no recorded source")
            src = txn.blob(parse_ref("blake3:" + sources[0]))
            if src is None:
                raise error(UNKNOWN_CONTENT, "the recorded source is not stored")
            content = txn.read_blob(src)
        faults = verify_against(frag, content, content_sha256=src.digest.sha256, source=True)
        if faults:
            raise faults[0]
        return content[int(frag["start_offset"]) : int(frag["end_offset"])]

    @staticmethod
    def scope(
        host_id: str | None,
        tenant_id: str | None,
        authorization_scope_id: str | None,
        *,
        names: Sequence[str] = SCOPE_FIELDS,
    ) -> dict[str, str] | None:
        """The ingest scope from its three parts, all or none (:func:`scope_from_parts`).

        Raises:
            FragmentError: ``fragment.scope-incomplete`` (family ``contract``) when some but
                not all of the three are given.
        """
        return scope_from_parts(host_id, tenant_id, authorization_scope_id, names=names)

    def validate(self, doc: Any, *, kind: str | None = None) -> Faults:
        """Every store-free fault of a parsed fragment document (:func:`fragment_rules.validate`).

        Uses this store's ``fragments.revision_extension_keys`` setting.
        """
        return validate(doc, self.store.config(), kind=kind)

    def by_document(self, document_id: str) -> list[Any]:
        """Stored fragments of one document_id (oldest first)."""
        return list(self.store.find("document_id", document_id, kind=FRAGMENT_KIND))

    def sources(self, document_id: str, fragment_id: str) -> list[Any]:
        """The content versions (``fragment-source`` records) registered for a pair."""
        return list(
            self.store.find(ATTR_SOURCE_PAIR, pair_hash(document_id, fragment_id), kind=SOURCE_KIND)
        )
