"""Fragments in the store: content versions, their selection, and the write-time bindings.

Used by the kind handlers of ``store/contracts/fragments/store.py``; no kind handler lives here.
Terms:

* source (content version): the exact bytes a fragment's offsets are measured over, registered
  for a pair (document_id, fragment_id) and identified by SHA-256; recorded as a
  ``fragment-source`` artifact (a small JSON record) with a ``source`` edge to the blob. A pair
  may gain versions.
* selection: content_sha256 names the version; else the revision extension; else the pair's
  only version. Several and no pin: ``fragment.ambiguous-content``.

Bindings (first write wins, store/objects/bindings.py)::

    fragment.scope              identity_key(fragment)                -> JCS(scope)
    fragment.revision-document  revision checksum                     -> document_id
    fragment.revision-content   JCS([revision checksum, fragment_id]) -> content SHA-256

Faults are :class:`~evstore.core.errors.EvstoreError` values built with
:func:`evstore.core.errors.error`;
the write path reports them through ``txn.fault`` (ingest: raise and roll back; validate:
collect and go on).
"""

from __future__ import annotations

import dataclasses
import hashlib
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...core.canonical import dumps, loads
from ...core.digests import digest_bytes
from ...core.errors import EvstoreError, error, join_pointer
from ...core.refs import parse_ref
from ...core.settings import setting
from ...objects import blobs as _blobs
from ...objects.artifacts import ArtifactResult
from .rules import (
    AMBIGUOUS_CONTENT,
    CONTENT_MISMATCH,
    CONTRACT_VERSION,
    FRAGMENT_KIND,
    REVISION_KEYS_SETTING,
    REVISION_MISMATCH,
    SCOPE_FIELDS,
    SCOPE_REUSE,
    SOURCE_KIND,
    UNKNOWN_CONTENT,
    UNKNOWN_REVISION,
    identity_key,
    revision_checksums,
    scope_faults,
    scope_of,
    validate_shape,
)
from .rules_bytes import verify_against

if TYPE_CHECKING:
    from ...objects.txn import Txn

__all__ = [
    "ATTR_SOURCE_PAIR",
    "NS_REV_CONTENT",
    "NS_REV_DOC",
    "NS_SCOPE",
    "REPLAY",
    "TxnState",
    "bind_scopes",
    "check_fragment",
    "command_sources",
    "content_bytes",
    "content_versions",
    "ingest_scope",
    "jcs",
    "lookup_scope_bindings",
    "pair_hash",
    "put_fragments",
    "read_json_artifact",
    "revision_binding",
    "revision_content_key",
    "revision_keys",
    "select",
    "state",
    "unknown_content",
    "write_fragments",
]

#: ``txn.options`` key an archive import sets: its writes replay what another store accepted.
REPLAY = "replay"
NS_SCOPE = "fragment.scope"
NS_REV_DOC = "fragment.revision-document"
NS_REV_CONTENT = "fragment.revision-content"
#: Lookup attribute of source records: SHA-256 hex of JCS([document_id, fragment_id]).
ATTR_SOURCE_PAIR = "fragment_source"
SOURCE_FIELDS = ("document_id", "fragment_id", "content_sha256", "revision_checksum")
_SOURCE_REQUIRED = SOURCE_FIELDS[:3]


def jcs(value: Any) -> str:
    """The RFC 8785 (JCS) text of ``value``."""
    return dumps(value).decode("utf-8")


def pair_hash(document_id: str, fragment_id: str) -> str:
    """SHA-256 hex of JCS([document_id, fragment_id]): the source records' lookup attribute."""
    return hashlib.sha256(dumps([document_id, fragment_id])).hexdigest()


def revision_content_key(checksum: str, fragment_id: str) -> str:
    """The ``fragment.revision-content`` binding key: JCS([checksum, fragment_id])."""
    return jcs([checksum, fragment_id])


class TxnState:
    """Per-transaction caches (content versions, bytes, revision bindings, command sources).

    Never holds the Txn itself: the states live in a WeakKeyDictionary keyed by it.
    """

    def __init__(self) -> None:
        self.versions: dict[tuple[str, str], set[str]] = {}
        self.content: dict[str, bytes] = {}
        self.revisions: dict[tuple[str, str], str | None] = {}
        self.command: list[tuple[str, str, str, bytes]] | None = None
        self.registered = False
        self.rows: dict[str, _blobs.BlobRow] = {}
        self.scopes: dict[str, str] = {}  # scope bindings made in this transaction


_STATES: weakref.WeakKeyDictionary[Any, TxnState] = weakref.WeakKeyDictionary()


def state(txn: Txn) -> TxnState:
    """The fragment caches of this transaction (made on first use)."""
    st = _STATES.get(txn)
    if st is None:
        st = _STATES[txn] = TxnState()
    return st


def command_sources(txn: Txn, st: TxnState) -> list[tuple[str, str, str, bytes]]:
    """``(document_id, fragment_id, sha256, bytes)`` given with the command (``--source``)."""
    if st.command is None:
        st.command = []
        for entry in txn.options.get("sources") or ():
            d, f, data = entry
            data = bytes(data)
            sha = txn.supply(data)  # so blob_by_sha256 can store them when used
            st.command.append((d, f, sha, data))
            st.content.setdefault(sha, data)
    return st.command


def read_json_artifact(txn: Txn, address: str) -> Any:
    """The parsed JSON of the stored blob ``blake3:address``, or None when absent."""
    row = txn.blob(parse_ref("blake3:" + address))
    if row is None:
        return None
    return loads(txn.read_blob(row))


def content_versions(txn: Txn, st: TxnState, document_id: str, fragment_id: str) -> set[str]:
    """SHA-256s of the content versions of a pair: registered ones and this command's."""
    key = (document_id, fragment_id)
    found = st.versions.get(key)
    if found is None:
        found = set()
        for address, _kind in txn.find_attr(
            ATTR_SOURCE_PAIR, pair_hash(document_id, fragment_id), kind=SOURCE_KIND
        ):
            rec = read_json_artifact(txn, address)
            if isinstance(rec, dict) and isinstance(rec.get("content_sha256"), str):
                found.add(rec["content_sha256"])
        for d, f, sha, _data in command_sources(txn, st):
            if (d, f) == key:
                found.add(sha)
        st.versions[key] = found
    return found


def content_bytes(txn: Txn, st: TxnState, sha: str) -> bytes | None:
    """The bytes of content version ``sha`` (SHA-256 hex): supplied or stored, else None."""
    data = st.content.get(sha)
    if data is None:
        # Txn.blob_by_sha256 trusts no index row it has not re-hashed, and repairs a corrupt
        # copy from supplied bytes.
        row = txn.blob_by_sha256(sha)
        if row is not None:
            data = txn.read_blob(row)
        if data is not None:
            st.content[sha] = data
    return data


def revision_binding(txn: Txn, st: TxnState, namespace: str, key: str) -> str | None:
    """A revision binding's value (cached per transaction), or None when unbound."""
    ck = (namespace, key)
    if ck not in st.revisions:
        st.revisions[ck] = txn.binding(namespace, key)
    return st.revisions[ck]


def revision_keys(txn: Txn) -> Sequence[str]:
    """The configured revision extension keys (setting ``fragments.revision_extension_keys``)."""
    return tuple(setting(txn.settings, REVISION_KEYS_SETTING) or ())


def _select_by_revision(
    frag: dict[str, Any], pointer: str, txn: Txn, st: TxnState
) -> tuple[str | None, str, EvstoreError | None]:
    """The content version the revision extensions select: ``(sha256 or None, pointer, fault)``.

    Each configured extension must name a known checksum bound to this document_id and to a
    version for this fragment_id; all extensions must agree.
    """
    d, f = frag["document_id"], frag["fragment_id"]
    by_revision: str | None = None
    rev_ptr = ""
    for ptr, checksum in revision_checksums(frag, revision_keys(txn), pointer):
        bound_doc = revision_binding(txn, st, NS_REV_DOC, checksum)
        if bound_doc is None:
            return (
                None,
                "",
                error(
                    UNKNOWN_REVISION,
                    "the store knows no document revision with this checksum",
                    ptr,
                    revision_checksum=checksum,
                ),
            )
        if bound_doc != d:
            return (
                None,
                "",
                error(
                    REVISION_MISMATCH,
                    "this revision checksum belongs to another document_id",
                    ptr,
                    revision_checksum=checksum,
                    bound_document_id=bound_doc,
                ),
            )
        bound_sha = revision_binding(txn, st, NS_REV_CONTENT, revision_content_key(checksum, f))
        if bound_sha is None:
            return (
                None,
                "",
                error(
                    UNKNOWN_REVISION,
                    "the store knows this revision, but no content for this fragment_id in it",
                    ptr,
                    revision_checksum=checksum,
                    fragment_id=f,
                ),
            )
        if by_revision is not None and bound_sha != by_revision:
            return (
                None,
                "",
                error(
                    REVISION_MISMATCH,
                    "two revision extensions select different content versions",
                    ptr,
                    content_sha256=bound_sha,
                    other=by_revision,
                    other_pointer=rev_ptr,
                ),
            )
        by_revision, rev_ptr = bound_sha, ptr
    return by_revision, rev_ptr, None


def select(
    frag: dict[str, Any], pointer: str, txn: Txn, st: TxnState
) -> tuple[str | None, list[EvstoreError]]:
    """Select the content version a shape-valid fragment is measured over.

    Order: each configured revision extension (known checksum, bound to this document_id and
    to a version for this fragment_id, all extensions agreeing); then content_sha256 (a
    registered version of the pair, agreeing with the revision); then the pair's only version.
    """
    d, f = frag["document_id"], frag["fragment_id"]
    by_revision, rev_ptr, fault = _select_by_revision(frag, pointer, txn, st)
    if fault is not None:
        return None, [fault]
    versions = content_versions(txn, st, d, f)
    if "content_sha256" in frag:
        wanted = frag["content_sha256"]
        if by_revision is not None and by_revision != wanted:
            return None, [
                error(
                    REVISION_MISMATCH,
                    "the revision extension is bound to another content version than "
                    "content_sha256 names",
                    rev_ptr,
                    content_sha256=wanted,
                    revision_content_sha256=by_revision,
                )
            ]
        if wanted in versions:
            return wanted, []
        if not versions and by_revision is None:
            return None, [unknown_content(d, f, pointer)]
        return None, [
            error(
                CONTENT_MISMATCH,
                "content_sha256 names no content version registered for this document and fragment",
                join_pointer(pointer, "content_sha256"),
                content_sha256=wanted,
                versions=sorted(versions),
            )
        ]
    if by_revision is not None:
        return by_revision, []
    if not versions:
        return None, [unknown_content(d, f, pointer)]
    if len(versions) > 1:
        return None, [
            error(
                AMBIGUOUS_CONTENT,
                f"{len(versions)} content versions are registered for this document and "
                "fragment; pin one with content_sha256 or a revision extension",
                join_pointer(pointer, "fragment_id"),
                versions=sorted(versions),
            )
        ]
    return next(iter(versions)), []


def unknown_content(document_id: str, fragment_id: str, pointer: str) -> EvstoreError:
    """``fragment.unknown-content`` for a pair with no (readable) content version."""
    return error(
        UNKNOWN_CONTENT,
        "no source content is registered for this document_id and fragment_id "
        "(evstore ingest-source, or --source with the ingest)",
        join_pointer(pointer, "fragment_id"),
        document_id=document_id,
        fragment_id=fragment_id,
    )


def check_fragment(
    frag: Any, pointer: str, txn: Txn, st: TxnState
) -> tuple[str | None, list[EvstoreError]]:
    """Every content-dependent rule for one fragment: ``(selected sha256, faults)``."""
    faults = validate_shape(frag, pointer, revision_keys=revision_keys(txn))
    if faults:
        return None, faults
    sha, faults = select(frag, pointer, txn, st)
    if faults or sha is None:
        return None, faults
    content = content_bytes(txn, st, sha)
    if content is None:  # a record whose blob went missing: fail closed
        return None, [unknown_content(frag["document_id"], frag["fragment_id"], pointer)]
    return sha, verify_against(
        frag, content, pointer, content_sha256=sha, shape_checked=True, source=True
    )


def ingest_scope(txn: Txn, pointer: str = "") -> tuple[dict[str, str] | None, list[EvstoreError]]:
    """The enclosing ingest's scope (``options["scope"]``), checked like a fragment's scope."""
    scope = txn.options.get("scope")
    if scope is None:
        return None, []
    faults = scope_faults({"scope": scope}, "")
    if faults:
        return None, [
            error(
                f.code,
                "the ingest's scope: " + f.message,
                pointer,
                scope_member=f.pointer.removeprefix("/scope"),
            )
            for f in faults
        ]
    return {name: scope[name] for name in SCOPE_FIELDS}, []


def lookup_scope_bindings(txn: Txn, idents: Sequence[str]) -> dict[str, str]:
    """Scope bindings of many identities in one query per 500 (read-only; see tables.bindings).

    Through :meth:`~evstore.objects.txn.Txn.bindings_of`, so a validate also sees the scopes
    its own earlier documents bound.
    """
    return txn.bindings_of(NS_SCOPE, idents)


def write_fragments(
    items: Sequence[tuple[str, dict[str, Any], bytes]], txn: Txn, st: TxnState, origin: str
) -> list[ArtifactResult]:
    """Store checked fragments ``(pointer, fragment, canonical)``: bindings first, then artifacts.

    ``origin`` (64 hex) is the artifact whose write makes new bindings: the batch, or the
    single fragment.

    Scope rule (contract "Host scope metadata", issue: scope reuse): the first scoped write of
    an identity binds it; afterwards every write of it must carry that scope (on the fragment or
    from the enclosing ingest), and the two must agree when both are given; an archive import
    may write again an unscoped fragment the store already holds (:func:`_replayed`). Faults
    go through ``txn.fault`` (ingest: raise and roll back; validate: collect and go on).
    """
    outer, faults = ingest_scope(txn)
    for fault in faults:
        txn.fault(fault)
    prepared: list[tuple[str, dict[str, Any], bytes, str, str, dict[str, str] | None]] = []
    for pointer, frag, canonical in items:
        sha, faults = select(frag, pointer, txn, st)
        for fault in faults:
            txn.fault(fault)
        if faults or sha is None:
            continue
        own = scope_of(frag)
        if own is not None and outer is not None and own != outer:
            txn.fault(
                error(
                    SCOPE_REUSE,
                    "the fragment's scope differs from the scope of the enclosing ingest",
                    join_pointer(pointer, "scope"),
                    fragment_scope=own,
                    ingest_scope=outer,
                )
            )
        prepared.append((pointer, frag, canonical, identity_key(frag), sha, own or outer))

    bound = lookup_scope_bindings(txn, [i for _, _, _, i, _, _ in prepared if i not in st.scopes])
    bound.update(st.scopes)
    to_store: list[tuple[dict[str, Any], bytes, str, str, bool]] = []
    to_bind: list[tuple[str, str, str, dict[str, str], bool]] = []
    jcs_of: dict[tuple[str, ...], str] = {}
    for pointer, frag, canonical, ident, sha, scope in prepared:
        existing = bound.get(ident)
        if scope is None:
            if existing is not None and not _replayed(txn, canonical):
                txn.fault(
                    error(
                        SCOPE_REUSE,
                        "this fragment identity is bound to a scope; a write without one is "
                        "refused",
                        pointer,
                        bound_scope=loads(existing),
                    )
                )
                continue
        else:
            values = tuple(scope[name] for name in SCOPE_FIELDS)
            value = jcs_of.get(values)
            if value is None:  # one serialisation per distinct scope, not per fragment
                value = jcs_of[values] = jcs(scope)
            if existing is None:
                # the pointer is built only if the binding conflicts (bind_scopes)
                to_bind.append((ident, value, pointer, scope, "scope" in frag))
                bound[ident] = st.scopes[ident] = value
            elif existing != value:
                txn.fault(
                    error(
                        SCOPE_REUSE,
                        "this fragment identity was first written under another scope",
                        _scope_pointer(pointer, "scope" in frag),
                        bound_scope=loads(existing),
                        scope=scope,
                    )
                )
                continue
        to_store.append((frag, canonical, ident, sha, scope is not None))
    bind_scopes(txn, to_bind, origin)
    return put_fragments(txn, st, to_store)


def _replayed(txn: Txn, canonical: bytes) -> bool:
    """An archive import writing again an unscoped fragment this store holds already.

    The store accepted it before the identity was scoped; writing the same bytes again adds
    nothing, so the import (``txn.options[REPLAY]``) is not refused for it and stays
    idempotent (docs/archive.md#import). Any other unscoped write of a scoped identity is.
    """
    if not txn.options.get(REPLAY):
        return False
    return txn.has_artifact(digest_bytes(canonical).blake3, FRAGMENT_KIND)


def _scope_pointer(pointer: str, on_fragment: bool) -> str:
    """Where a scope fault points: the fragment's ``scope``, or the fragment (ingest scope)."""
    return join_pointer(pointer, "scope") if on_fragment else pointer


def bind_scopes(
    txn: Txn, entries: Sequence[tuple[str, str, str, dict[str, str], bool]], origin: str
) -> None:
    """Make new scope bindings in one batch.

    Each entry is ``(identity key, JCS scope, fragment pointer, scope, scope on the
    fragment)``; a conflict points at the fragment's ``scope`` or, for the ingest's scope, at
    the fragment.

    They were unbound when looked up; a conflict now means a concurrent writer won.
    ``origin`` is the artifact whose write makes them (the batch, or the single fragment).
    """

    def conflict(i: int, found: str) -> EvstoreError:
        _, _, pointer, scope, on_fragment = entries[i]
        return error(
            SCOPE_REUSE,
            "this fragment identity was first written under another scope",
            _scope_pointer(pointer, on_fragment),
            bound_scope=loads(found),
            scope=scope,
        )

    if entries:
        txn.bind_many(NS_SCOPE, [(e[0], e[1]) for e in entries], conflict, origin=origin)


def put_fragments(
    txn: Txn, st: TxnState, items: Sequence[tuple[dict[str, Any], bytes, str, str, bool]]
) -> list[ArtifactResult]:
    """Store fragment artifacts ``(fragment, canonical, identity key, source sha256, scoped)``.

    Each gets a ``source`` edge to its content version's blob and the lookup attributes
    ``quote_sha256``, ``document_id`` and ``fragment_identity``, written with the core's bulk
    ``txn.put_artifacts`` (one statement per table instead of several per fragment).
    """
    specs: list[tuple[bytes, list[tuple[str, str]], list[tuple[str, str]]]] = []
    infos: list[dict[str, Any]] = []
    for frag, canonical, ident, sha, scoped in items:
        row = st.rows.get(sha)
        if row is None:
            row = txn.blob_by_sha256(sha)
            if row is None:  # cannot happen after selection; fail closed anyway
                txn.fault(unknown_content(frag["document_id"], frag["fragment_id"], ""))
                continue
            st.rows[sha] = row
        specs.append(
            (
                canonical,
                [("source", row.digest.blake3)],
                [
                    ("quote_sha256", frag["quote_sha256"]),
                    ("document_id", frag["document_id"]),
                    ("fragment_identity", hashlib.sha256(ident.encode("utf-8")).hexdigest()),
                ],
            )
        )
        infos.append({"source_sha256": sha, "scoped": scoped})
    results = txn.put_artifacts(FRAGMENT_KIND, CONTRACT_VERSION, specs)
    return [dataclasses.replace(r, info=i) for r, i in zip(results, infos, strict=True)]
