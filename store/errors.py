"""The evstore error tree: one root, a few families, stable dotted codes.

Every error raised on bad input, a missing object, corrupt bytes or a store in the
wrong state is an :class:`EvstoreError`. Programs catch the family class; scripts,
tests and people read ``code``, a stable dotted string documented in
``docs/errors.md``::

    EvstoreError          code, message, rule (contract section), pointer (RFC 6901)
    |- InputError         the caller's bytes or arguments are wrong     (input.*, kind.*, ...)
    |  |- RefSyntaxError  a content ref outside the accepted forms      (ref.syntax)
    |  |- JSONFormError   strict reader faults                          (json.*)
    |  |- ContractError   a contract rule fails                         (fragment.*, ...)
    |  |- BindingConflict a write-time binding is violated              (*.scope-reuse, ...)
    |- NotFound           no object for that ref                        (not-found.*)
    |- CorruptionError    stored bytes do not match their address       (corruption.*)
    |- StoreStateError    missing store, schema behind/ahead, busy, ... (store.*)

Contract leaf classes (FragmentError, ManifestBindingError, ...) sit under ContractError and
BindingConflict. Every code is a row of :data:`CODES` (family, default rule, meaning), and
:func:`error` is the one builder: the code decides the class.

API misuse (wrong Python types, a closed Store) stays a
TypeError/ValueError/RuntimeError and is not an EvstoreError.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = [
    "BindingConflict",
    "BundleError",
    "CODES",
    "Code",
    "ContextError",
    "ContractError",
    "CorruptionError",
    "EvstoreError",
    "Faults",
    "FragmentBindingError",
    "FragmentError",
    "InputError",
    "JSONFormError",
    "ManifestBindingError",
    "ManifestError",
    "NotFound",
    "PackageBindingError",
    "PackageError",
    "RefSyntaxError",
    "StoreStateError",
    "error",
    "error_class",
    "escape_pointer",
    "join_pointer",
    "pointer_phrase",
]


def escape_pointer(token: str | int) -> str:
    """Escape one JSON Pointer reference token (RFC 6901 section 3)."""
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer_phrase(pointer: str) -> str:
    """Where a fault is, for people: ``"at /a/0"``, and ``"at the document root"`` for ``""``.

    RFC 6901 reads ``"/"`` as the member named ``""``, so the root is never written that way.
    """
    return f"at {pointer}" if pointer else "at the document root"


def join_pointer(base: str, *tokens: str | int) -> str:
    """Append reference tokens to a JSON Pointer (RFC 6901).

    ``join_pointer("/a", "b/c", 0) == "/a/b~1c/0"``.
    """
    # Called for every member that validation visits: keep the common case cheap.
    out = base
    for token in tokens:
        text = token if type(token) is str else str(token)
        if "~" in text or "/" in text:
            text = text.replace("~", "~0").replace("/", "~1")
        out += "/" + text
    return out


class EvstoreError(Exception):
    """Root of every evstore error.

    Attributes:
        code: stable dotted code such as ``fragment.range`` (see docs/errors.md).
        message: a human sentence.
        rule: the contract rule or section implemented, e.g.
            ``templiqx-evidence-fragment-v1alpha1#offset-and-digest-invariants``; empty
            for errors that are not about a contract.
        pointer: RFC 6901 JSON Pointer to the offending field ("" is the whole document).
        path: the input file the error is about, when known.
    """

    family = "error"
    default_code = "error"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        rule: str = "",
        pointer: str = "",
        path: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code or self.default_code
        self.message = message
        self.rule = rule
        self.pointer = pointer
        self.path = path
        self.details = details or {}

    def to_dict(self) -> dict[str, Any]:
        """The error as a JSON-ready dict: family, code, message, rule, pointer, path, details."""
        out: dict[str, Any] = {
            "family": self.family,
            "code": self.code,
            "message": self.message,
            "rule": self.rule,
            "pointer": self.pointer,
        }
        if self.path is not None:
            out["path"] = self.path
        if self.details:
            out["details"] = self.details
        return out

    def __str__(self) -> str:
        # "" is the whole document (RFC 6901), never "/" (the member named ""); errors that are
        # not about a document (no rule) name no place.
        where = f" {pointer_phrase(self.pointer)}" if self.pointer or self.rule else ""
        src = f"{self.path}: " if self.path else ""
        return f"{src}{self.code}{where}: {self.message}"


class InputError(EvstoreError):
    """The caller's bytes or arguments are wrong; nothing was written."""

    family = "input"
    default_code = "input.invalid"


class RefSyntaxError(InputError):
    """A content ref is not in one of the accepted forms (code ``ref.syntax``)."""

    default_code = "ref.syntax"


class JSONFormError(InputError):
    """The strict JSON reader refused the bytes (codes ``json.*``)."""

    default_code = "json.syntax"


class ContractError(InputError):
    """A contract rule failed; subclasses per contract live in the contract modules."""

    family = "contract"
    default_code = "contract.invalid"


class BindingConflict(InputError):
    """A write-time binding (first write wins) would be violated; nothing was written."""

    family = "binding"
    default_code = "binding.conflict"


class NotFound(EvstoreError):
    """No stored object answers that ref or query."""

    family = "not-found"
    default_code = "not-found"


class CorruptionError(EvstoreError):
    """Stored bytes do not match their recorded size or digest; they are never served."""

    family = "corruption"
    default_code = "corruption.digest"


class StoreStateError(EvstoreError):
    """The store cannot serve: missing, schema behind or ahead of the code, backend unreachable."""

    family = "store"
    default_code = "store.state"


# ---------------------------------------------------------------------------------------
# Contract leaf classes: one contract error and one binding conflict per contract, so that a
# program can catch "any manifest fault" without parsing codes. The builder picks them.
# ---------------------------------------------------------------------------------------


class FragmentError(ContractError):
    """A templiqx v1alpha1 evidence-fragment rule failed (codes ``fragment.*``)."""


class FragmentBindingError(BindingConflict):
    """A fragment's write-time binding fails (scope reuse, revision, unknown content)."""


class ManifestError(ContractError):
    """An orbidocs v1 manifest breaks its contract (codes ``manifest.*``)."""


class ManifestBindingError(BindingConflict):
    """A manifest's write-time binding fails (content, ref digest, ref rebinding)."""


class PackageError(ContractError):
    """An insonic 1.3.0 package, request or envelope breaks its contract."""


class PackageBindingError(BindingConflict):
    """A package's write-time binding fails (revision conflict, id reuse, unknown package)."""


class ContextError(ContractError):
    """A notarius v1 evidence-context or generic source-document rule failed."""


class BundleError(ContractError):
    """A run bundle or run record breaks its layout rules (codes ``bundle.*``, ``run.*``)."""


@dataclass(frozen=True)
class Code:
    """One row of the code table.

    Attributes:
        code: the stable dotted code.
        family: ``input``, ``contract``, ``binding``, ``not-found``, ``corruption`` or
            ``store`` (the :class:`EvstoreError` subclass the builder raises).
        rule: the contract rule or section the code enforces by default ("" for codes that
            are not about a contract); a raise site may name a narrower section.
        meaning: one line for docs/errors.md.
    """

    code: str
    family: str
    rule: str
    meaning: str


#: Every code evstore raises, with its family, default rule and meaning. docs/errors.md is
#: generated from this table, and a test checks that every code raised in store/ and cli/ is
#: here.
# Contract sections of the notarius and bundle rows (several codes each).
_NOTARIUS_DISCOVERY = "notarius-evidence-context-v1#identity-and-discovery"
_NOTARIUS_PAYLOAD = "notarius-evidence-context-v1#payload"
_NOTARIUS_SELECTION = "notarius-evidence-context-v1#selection-and-citations"
_SOURCE_DOCUMENT = "docs/bundle.md#generic-source-documents"
_BUNDLE_LAYOUT = "docs/bundle.md#indexjson"
_RUN_RECORD = "docs/bundle.md#the-run-record"
_AR, _AR_LIM = "docs/archive.md#hostile-archives", "docs/archive.md#limits"
_AR_CHK, _AR_PRF = "docs/archive.md#what-verify-checks", "docs/archive.md#proofs"

# fmt: off
_TABLE: tuple[Code, ...] = tuple(Code(*row) for row in (
    # (code, family, default rule, meaning)
    # -- core: references, JSON form, inputs, settings, kinds
    ("ref.syntax", "input", "", "a content ref is not one of the four accepted forms"),
    ("json.bom", "input", "", "a UTF-8 byte-order mark precedes the JSON text"),
    ("json.utf8", "input", "", "the input is not valid UTF-8"),
    ("json.syntax", "input", "", "the input is not JSON (or has trailing data)"),
    ("json.duplicate-key", "input", "", "a member name appears twice in one object"),
    ("json.non-finite", "input", "", "NaN or Infinity, or a number that overflows a double"),
    ("json.surrogate", "input", "", "a string or member name holds a lone surrogate"),
    ("json.int-range", "input", "",
     "an integer beyond +-(2**53-1), or a number canonically read back as one"),
    ("json.depth", "input", "", "nesting deeper than the reader's limit (128)"),
    ("input.invalid", "input", "",
     "an argument or input value is not acceptable (the message says which)"),
    ("input.unreadable", "input", "", "an input file cannot be read"),
    ("input.unused-content", "input", "",
     "bytes supplied with the command (--content, --source) are used by no document"),
    ("input.argument-encoding", "input", "", "a command-line argument is not valid UTF-8"),
    ("output.unwritable", "input", "", "the output file cannot be written"),
    ("json.number-range", "input", "",
     "a non-zero number that underflows to zero (it would not round-trip)"),
    ("kind.unknown", "input", "", "no such artifact kind"),
    ("kind.claimed", "input", "docs/kinds.md#near-misses",
     "a document a contract kind claims cannot be stored as kind json"),
    ("config.unknown", "input", "", "no such setting"),
    ("config.value", "input", "", "a setting value of the wrong type"),
    # -- objects not found
    ("not-found.blob", "not-found", "", "no stored blob for that content ref"),
    ("not-found.artifact", "not-found", "", "no artifact matches the query"),
    ("not-found.fragment", "not-found", "", "the ref names no stored fragment artifact"),
    ("not-found.source-document", "not-found", "",
     "the ref names no stored source-document artifact"),
    # -- stored bytes and rows
    ("corruption.row", "corruption", "",
     "a stored row is malformed (wrong type or value); its bytes are not served"),
    ("corruption.setting", "corruption", "",
     "a stored setting is not valid JSON of its declared type"),
    ("corruption.digest", "corruption", "",
     "stored bytes do not hash to their address; never served"),
    ("corruption.size", "corruption", "",
     "stored bytes have another length than recorded; never served"),
    ("corruption.sha256-index", "corruption", "",
     "the SHA-256 recorded for a blob does not match its bytes"),
    ("check.not-canonical", "corruption", "",
     "a stored artifact's bytes are not in canonical form"),
    ("check.artifact-without-blob", "corruption", "", "an artifact index row has no blob"),
    # -- the store and its database
    ("store.missing", "store", "", "no store at that URL (create one with evstore init)"),
    ("store.schema-behind", "store", "",
     "the store's schema is older than the code (run evstore migrate)"),
    ("store.schema-ahead", "store", "", "the store's schema is newer than the code"),
    ("store.url", "store", "", "the store URL cannot be used"),
    ("store.unreachable", "store", "", "the database cannot be reached"),
    ("store.busy", "store", "", "the database stayed locked after retries"),
    ("store.timeout", "store", "",
     "a statement ran past the database's time limit (PostgreSQL statement_timeout)"),
    ("store.full", "store", "", "the disk or file system holding the store is full"),
    ("store.read-only", "store", "",
     "the store cannot be written (a read-only file, folder, mount or transaction)"),
    ("store.kind-unavailable", "store", "",
     "the handler of a kind cannot be loaded in this installation (a dependency is missing)"),
    ("store.replaced", "store", "",
     "the SQLite store file was deleted or replaced while the process had it open"),
    ("store.database", "store", "", "another database error"),
    ("interrupted.signal", "store", "",
     "the command was interrupted (Ctrl-C, exit 130); its open transaction was rolled back"),
    # -- templiqx v1alpha1 evidence fragments
    ("fragment.shape", "contract", "templiqx-evidence-fragment-v1alpha1#fragment-shape",
     "a fragment (or source record, or eval output) is not an object, misses a required "
     "member, or has a member of the wrong type"),
    ("fragment.range", "contract",
     "templiqx-evidence-fragment-v1alpha1#offset-and-digest-invariants",
     "start_offset < 0, end_offset <= start_offset (empty or reversed range), or end_offset "
     "beyond the content length in bytes"),
    ("fragment.boundary", "contract",
     "templiqx-evidence-fragment-v1alpha1#offset-and-digest-invariants",
     "an offset falls inside a UTF-8 character, or the quoted bytes are not well-formed UTF-8"),
    ("fragment.quote-mismatch", "contract",
     "templiqx-evidence-fragment-v1alpha1#offset-and-digest-invariants",
     "quote_sha256 is not the SHA-256 of the bytes in [start_offset, end_offset)"),
    ("fragment.content-mismatch", "contract",
     "templiqx-evidence-fragment-v1alpha1#offset-and-digest-invariants",
     "content_sha256 names bytes other than the selected content version"),
    ("fragment.unknown-content", "binding",
     "templiqx-evidence-fragment-v1alpha1#offset-and-digest-invariants",
     "no source content is registered (or supplied) for the fragment's (document_id, "
     "fragment_id), or a source record's bytes are absent"),
    ("fragment.ambiguous-content", "binding",
     "templiqx-evidence-fragment-v1alpha1#offset-and-digest-invariants",
     "the pair has several content versions and neither content_sha256 nor a revision "
     "extension selects one"),
    ("fragment.digest-format", "contract", "templiqx-evidence-fragment-v1alpha1#fragment-shape",
     "quote_sha256 or content_sha256 is not 64 lowercase hex (uppercase, sha256:-prefixed, "
     "wrong length)"),
    ("fragment.scope-incomplete", "contract",
     "templiqx-evidence-fragment-v1alpha1#host-scope-metadata",
     "scope is not exactly host_id, tenant_id and authorization_scope_id, each a non-empty "
     "string"),
    ("fragment.scope-reuse", "binding", "templiqx-evidence-fragment-v1alpha1#host-scope-metadata",
     "the fragment identity is bound to another scope (or to a scope while this write has "
     "none), or the fragment's scope differs from the ingest's"),
    ("fragment.revision-mismatch", "binding",
     "templiqx-evidence-fragment-v1alpha1#document-revision-checksum-extension",
     "a revision checksum is bound to another document_id or another content version, or "
     "disagrees with content_sha256"),
    ("fragment.unknown-revision", "binding",
     "templiqx-evidence-fragment-v1alpha1#document-revision-checksum-extension",
     "a revision checksum (or its fragment_id) is not known to the store"),
    ("fragment.revision-format", "contract",
     "templiqx-evidence-fragment-v1alpha1#document-revision-checksum-extension",
     "a configured revision extension is not an object with revision_checksum as 64 lowercase "
     "hex"),
    ("fragment.source-encoding", "contract",
     "templiqx-evidence-fragment-v1alpha1#offset-and-digest-invariants",
     "registered source bytes are not well-formed UTF-8 (the contract measures offsets over "
     "UTF-8)"),
    # -- orbidocs v1 manifests
    ("manifest.schema", "contract", "orbidocs-corpus-passage-evidence-manifest-v1#fields",
     "the manifest breaks evstore's JSON Schema for orbidocs v1 (shape, pattern, bound, enum, "
     "missing or unexpected member)"),
    ("manifest.rule-1", "contract", "orbidocs-corpus-passage-evidence-manifest-v1#rule-1",
     "projection revision 1 with no item or with a phase (contract Rule 1)"),
    ("manifest.phase-missing", "contract", "orbidocs-corpus-passage-evidence-manifest-v1#phase",
     "projection revision 2 without a phase object"),
    ("manifest.phase-unverifiable", "contract",
     "orbidocs-corpus-passage-evidence-manifest-v1#phase",
     "projection revision 2: the phase schema is not public, so the phase cannot be verified "
     "(a warning when manifests.accept_unverified_phase is on)"),
    ("manifest.item-required-excluded", "contract",
     "orbidocs-corpus-passage-evidence-manifest-v1#items",
     "a required item is not included"),
    ("manifest.item-omitted-reason", "contract",
     "orbidocs-corpus-passage-evidence-manifest-v1#items",
     "an item left out (included: false) names no omitted/reason"),
    ("manifest.item-included-reason", "contract",
     "orbidocs-corpus-passage-evidence-manifest-v1#items",
     "an included item carries omitted/reason"),
    ("manifest.item-artifact-execution", "contract",
     "orbidocs-corpus-passage-evidence-manifest-v1#items",
     "an artifact item names no execution/ref"),
    ("manifest.ref-not-exact", "contract", "orbidocs-corpus-passage-evidence-manifest-v1#items",
     "a ref has a ':'-separated segment 'latest'"),
    ("manifest.review-target", "contract",
     "orbidocs-corpus-passage-evidence-manifest-v1#review-target",
     "review/target's candidate/digest names no required, included candidate item"),
    ("manifest.self-address", "contract",
     "contracts/README#corpus-passage-evidence-manifests-orbidocs",
     "manifest/ref differs from the SHA-256 of the manifest's RFC 8785 form without it"),
    ("manifest.content-missing", "binding",
     "orbidocs-corpus-passage-evidence-manifest-v1#content-ref",
     "the rendered content is neither stored nor supplied with the command"),
    ("manifest.content-digest", "binding",
     "orbidocs-corpus-passage-evidence-manifest-v1#content-digest",
     "the rendered content's SHA-256 is not content/digest (or content/digest is not a "
     "canonical SHA-256)"),
    ("manifest.content-size", "binding",
     "orbidocs-corpus-passage-evidence-manifest-v1#content-size-bytes",
     "the rendered content's length in bytes is not content/size-bytes"),
    ("manifest.content-over-limit", "binding",
     "orbidocs-corpus-passage-evidence-manifest-v1#bytes-max",
     "the rendered content is longer than bytes/max (never truncated)"),
    ("manifest.ref-digest", "binding", "orbidocs-corpus-passage-evidence-manifest-v1#items",
     "a ref whose text carries sha256:X has a digest other than sha256:X"),
    ("manifest.ref-rebound", "binding", "orbidocs-corpus-passage-evidence-manifest-v1#items",
     "the ref is already bound to another digest (an earlier manifest or item)"),
    ("manifest.content-edge", "corruption",
     "orbidocs-corpus-passage-evidence-manifest-v1#content-ref",
     "(check) a stored manifest has no content edge to its rendered content"),
    # -- insonic 1.3.0 packages, requests, envelopes
    ("package.schema", "contract", "insonic-answer-evidence-1.3.0#",
     "the package breaks a structural rule of the schema"),
    ("request.schema", "contract", "insonic-answer-evidence-1.3.0#/$defs/request",
     "the request breaks a structural rule of the schema"),
    ("envelope.schema", "contract", "insonic-answer-evidence-1.3.0#/$defs/envelope",
     "the answer envelope breaks a structural rule of the schema (claims included)"),
    ("package.item-id-duplicate", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/item/properties/id",
     "two items share one id"),
    ("package.conflict-unknown-evidence", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/conflict/properties/evidence_ids",
     "a conflict names an evidence id that is not an item of the package"),
    ("package.node-source-unknown", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/contextNode/properties/sources",
     "a context node names a source that is not an item of the package"),
    ("package.node-id-duplicate", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/contextNode/properties/id",
     "two context nodes share one id"),
    ("package.node-parent-unknown", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/contextNode/properties/parent",
     "a context node's parent names no node of the context"),
    ("package.node-parent-cycle", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/contextNode/properties/parent",
     "context node parents form a cycle (a node that is its own parent included)"),
    ("package.node-text-level", "contract", "insonic-answer-evidence-1.3.0#/$defs/contextNode",
     "a context node that is not cue-level carries text"),
    ("package.node-text-sources", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/contextNode/properties/text",
     "a cue node with text does not have exactly one source"),
    ("package.node-text-prefix", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/contextNode/properties/text",
     "a cue node's text is not a prefix of its source item's text"),
    ("package.interval-order", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/interval/properties/end_us",
     "a source interval in the package does not end after it starts"),
    ("package.context-question", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/context/properties/question",
     "context.question differs from request.question"),
    ("package.context-omitted", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/context/properties/omitted",
     "context.omitted exceeds the number of items"),
    ("package.item-budget", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/budget/properties/items",
     "the package has more items than the request's effective item budget"),
    ("package.independent-families", "contract",
     "insonic-answer-evidence-1.3.0#/properties/independent_families",
     "independent_families exceeds the number of distinct item families"),
    ("package.context-bytes", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/context/properties/bytes",
     "context.bytes is not the UTF-8 size of the compact context JSON (warning unless strict)"),
    ("package.context-tokens", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/context/properties/tokens",
     "context.tokens differs from context.bytes under utf8-byte-upper-bound (warning unless "
     "strict)"),
    ("request.interval-order", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/interval/properties/end_us",
     "the request's source interval does not end after it starts"),
    ("envelope.interval-order", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/interval/properties/end_us",
     "a citation's source interval does not end after it starts"),
    ("envelope.package-mismatch", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/envelope/properties/package_id",
     "the envelope's package_id is not the id of the package it is checked against"),
    ("envelope.citation-unknown-evidence", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/citation/properties/evidence_id",
     "a citation names an evidence id that is not an item of the package"),
    ("envelope.citation-quote", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/citation/properties/quote",
     "a citation's quote is not an exact substring of the cited item's text"),
    ("envelope.citation-reference", "contract",
     "insonic-answer-evidence-1.3.0#/$defs/citation/properties/reference",
     "a citation's reference differs from the cited item's reference"),
    ("package.revision-conflict", "binding",
     "insonic-answer-evidence-1.3.0#/$defs/reference/properties/recording_revision",
     "one (workspace_id, recording_id, recording_revision) is bound to other digests (by "
     "another item of the package, or by an earlier accepted package)"),
    ("package.id-reuse", "binding", "insonic-answer-evidence-1.3.0#/properties/id",
     "a different package is already stored under this package id"),
    ("package.binding-missing", "corruption",
     "insonic-answer-evidence-1.3.0#/$defs/reference/properties/recording_revision",
     "(check) a stored package's id or recording revision binding row is missing"),
    ("envelope.package-edge", "corruption",
     "insonic-answer-evidence-1.3.0#/$defs/envelope/properties/package_id",
     "(check) a stored envelope has no package edge to the package it cites"),
    ("envelope.unknown-package", "binding",
     "insonic-answer-evidence-1.3.0#/$defs/envelope/properties/package_id",
     "the envelope's package_id names no stored package"),
    # -- notarius v1 evidence contexts and source documents
    ("context.descriptor-shape", "contract", _NOTARIUS_DISCOVERY,
     "descriptor not an object, or a member outside DESCRIPTOR_KEYS"),
    ("context.descriptor-kind", "contract", _NOTARIUS_DISCOVERY,
     "descriptor artifact_kind missing or not the contract's"),
    ("context.descriptor-media-type", "contract", _NOTARIUS_DISCOVERY,
     "descriptor media_type missing or not the contract's"),
    ("context.descriptor-schema-id", "contract", _NOTARIUS_DISCOVERY,
     "descriptor schema_id missing or not the contract's"),
    ("context.descriptor-schema-name", "contract", _NOTARIUS_DISCOVERY,
     "descriptor schema_name missing or not the contract's"),
    ("context.unsupported-version", "contract", _NOTARIUS_DISCOVERY,
     "descriptor schema_version missing or not v1 (only v1 decodes)"),
    ("context.descriptor-logical-file", "contract", _NOTARIUS_DISCOVERY,
     "descriptor logical_file missing or not the contract's"),
    ("context.logical-file-missing", "contract", _NOTARIUS_DISCOVERY,
     "the descriptor's logical file is not in the bundle"),
    ("context.payload-not-array", "contract", _NOTARIUS_PAYLOAD,
     "payload or source document is not a top-level JSON array"),
    ("context.unit-shape", "contract", _NOTARIUS_PAYLOAD,
     "unit not an object, a required member missing, or an unknown member"),
    ("context.unit-id", "contract", _NOTARIUS_PAYLOAD,
     "unit id not a JSON integer within +-(2^53-1) (no bool, no fraction)"),
    ("context.unit-kind", "contract", _NOTARIUS_PAYLOAD, "unit kind not a non-empty string"),
    ("context.unit-text", "contract", _NOTARIUS_PAYLOAD, "unit text not a string"),
    ("context.unit-metadata", "contract", _NOTARIUS_PAYLOAD,
     "unit metadata present but not a JSON object"),
    ("context.ref-shape", "contract", _NOTARIUS_PAYLOAD,
     "ref not an object of exactly source_id, start_unit_id, end_unit_id"),
    ("context.ref-source-id", "contract", _NOTARIUS_PAYLOAD,
     "ref source_id not a non-empty string"),
    ("context.self-ref", "contract", _NOTARIUS_PAYLOAD,
     "ref start_unit_id or end_unit_id is not the unit's own id"),
    ("context.source-mixed", "contract", _NOTARIUS_PAYLOAD,
     "a unit's source_id differs from the excerpt's first source_id"),
    ("context.unit-duplicate", "contract", _NOTARIUS_PAYLOAD,
     "a unit id occurs twice (each unit at most once)"),
    ("context.source-mismatch", "contract", _NOTARIUS_PAYLOAD,
     "unit differs from the source document's unit, or another source"),
    ("context.source-order", "contract", _NOTARIUS_SELECTION,
     "units not in the source document's position order"),
    ("context.unit-unknown", "contract", _NOTARIUS_SELECTION,
     "a unit id that the source document does not contain"),
    ("context.range-unknown", "contract", _NOTARIUS_SELECTION,
     "an excerpt range endpoint is not a unit id of the source document"),
    ("context.range-order", "contract", _NOTARIUS_SELECTION,
     "an excerpt range starts after its end in source position order"),
    ("context.kind-ambiguous", "contract", _SOURCE_DOCUMENT,
     "an array of source units given without --kind (two kinds fit)"),
    # -- run bundles and run records
    ("bundle.unreadable", "contract", _BUNDLE_LAYOUT,
     "the bundle directory or one of its files cannot be read"),
    ("bundle.index-missing", "contract", _BUNDLE_LAYOUT, "the bundle has no regular index.json"),
    ("bundle.index-shape", "contract", _BUNDLE_LAYOUT,
     "index.json is not an object of descriptors (six strings each)"),
    ("bundle.path-unsafe", "contract", _BUNDLE_LAYOUT,
     "a logical file is absolute, has '..'/'.'/empty segments or a backslash, names "
     "index.json, or resolves outside the bundle"),
    ("bundle.file-missing", "contract", _BUNDLE_LAYOUT,
     "a logical file named by a descriptor is not a regular file"),
    ("bundle.file-duplicate", "contract", _BUNDLE_LAYOUT, "two descriptors name one logical file"),
    ("bundle.descriptor-mismatch", "contract", _BUNDLE_LAYOUT,
     "a known artifact_kind with other fixed descriptor values"),
    ("bundle.descriptor-misplaced", "contract", _BUNDLE_LAYOUT,
     "the evidence-context descriptor under a name other than evidence_context"),
    ("bundle.source-ambiguous", "contract", _BUNDLE_LAYOUT,
     "two source documents in the bundle carry the excerpt's source_id"),
    ("run.record-shape", "contract", _RUN_RECORD, "a run record is not the documented tree"),
    ("run.missing-object", "contract", _RUN_RECORD,
     "a blob or artifact a run record names is not stored"),
    # -- archives (OCI Image Layout export, verify, import): docs/archive.md; the log after them
    ("archive.unsafe-path", "input", _AR, "an entry name is absolute or has a '..' or '.' segment"),
    ("archive.link", "input", _AR, "an archive entry is a symbolic or hard link"),
    ("archive.special-file", "input", _AR, "an entry is a device, FIFO or other non-regular file"),
    ("archive.duplicate-entry", "input", _AR, "an archive holds one entry name twice"),
    ("archive.too-large", "input", _AR_LIM, "sizes, entry count or a JSON file beyond the limits"),
    ("archive.truncated", "input", _AR, "a tar member's data runs past the end, or a damaged tar"),
    ("archive.layout", "input", _AR_CHK, "not the documented OCI Image Layout (the message says)"),
    ("archive.missing-blob", "input", _AR_CHK, "a descriptor names a blob the archive lacks"),
    ("archive.size-mismatch", "input", _AR_CHK, "a descriptor's size differs from its blob's"),
    ("archive.digest-mismatch", "input", _AR_CHK, "a blob's SHA-256 is not its file name"),
    ("archive.address-mismatch", "input", _AR_CHK, "a BLAKE3 address annotation is wrong"),
    ("archive.closure-incomplete", "input", _AR_CHK, "an edge leads outside its manifest"),
    ("archive.cycle", "input", _AR_CHK, "the indexes or the members' edges form a cycle"),
    ("archive.not-canonical", "input", _AR_CHK, "an artifact member is not canonical JSON"),
    ("archive.no-proofs", "input", _AR_PRF, "verify --key on an archive without proofs"),
    ("log.range", "input", "RFC 9162 section 2.1",
     "a proof was asked for an index or tree size outside the log"),
    ("checkpoint.malformed", "input", "c2sp.org/tlog-checkpoint",
     "a checkpoint or signed note is not in the C2SP format"),
    ("checkpoint.unsigned", "input", "c2sp.org/signed-note",
     "no signature line of the trusted key signs the note"),
    ("checkpoint.signature", "input", "c2sp.org/signed-note",
     "a signature line of the trusted key does not verify"),
    ("checkpoint.origin", "input", "c2sp.org/tlog-checkpoint",
     "the checkpoint names another log (origin line)"),
    ("checkpoint.key", "input", "c2sp.org/signed-note",
     "a verifier or private key is malformed, or its file is readable by others"),
    ("tlog-proof.malformed", "input", "c2sp.org/tlog-proof",
     "a proof file is not in the C2SP tlog-proof format"),
    ("tlog-proof.inclusion", "input", "RFC 9162 section 2.1.3.2",
     "the inclusion proof does not lead to the checkpoint root"),
    ("log.entry-malformed", "input", "docs/log.md#entries", "a log entry is not of the format"),
    ("log.proof-malformed", "input", "docs/log.md#proof-files", "a proof file is of no format"),
    ("log.consistency", "input", "RFC 9162 section 2.1.4.2",
     "the consistency proof does not link the old root to the checkpoint"),
    ("log.content-mismatch", "input", "docs/log.md#entries",
     "the content given is not the object the proven entry names"),
    ("log.no-key", "store", "docs/log.md#keys", "the log has no verifier key (log init-key)"),
    ("log.key-exists", "store", "docs/log.md#keys", "the log has a verifier key already"),
    ("log.key-mismatch", "input", "docs/log.md#keys",
     "the private key is not the one whose verifier key the store holds"),
    ("log.key-file", "input", "docs/log.md#keys",
     "no private key file named, or it cannot be created or read"),
    ("log.no-checkpoint", "not-found", "docs/log.md#checkpoints",
     "no signed checkpoint (at that size) to serve a proof with"),
    ("log.not-logged", "not-found", "docs/log.md#proofs",
     "no log entry for that ref within the latest checkpoint"),
    ("log.inconsistent", "corruption", "RFC 9162 section 2.1.4",
     "the log's tree is not consistent with its previous checkpoint: nothing signed"),
    ("corruption.log", "corruption", "RFC 9162 section 2.1", "a stored log subtree is missing"),
    ("check.log-entry", "corruption", "docs/log.md#entries",
     "a log entry is missing, out of order or malformed, or its leaf differs"),
    ("check.log-node", "corruption", "RFC 9162 section 2.1",
     "a stored subtree hash differs from the one recomputed from the entries"),
    ("check.log-checkpoint", "corruption", "c2sp.org/tlog-checkpoint",
     "a stored checkpoint does not verify or names another root than the entries give"),
))
# fmt: on

CODES: Mapping[str, Code] = MappingProxyType({c.code: c for c in _TABLE})

_FAMILY_CLASS: dict[str, type[EvstoreError]] = {
    "input": InputError,
    "contract": ContractError,
    "binding": BindingConflict,
    "not-found": NotFound,
    "corruption": CorruptionError,
    "store": StoreStateError,
}

#: (code prefix, family) -> leaf class; the prefix is the code's first dotted segment.
_LEAF_CLASS: dict[tuple[str, str], type[EvstoreError]] = {
    ("ref", "input"): RefSyntaxError,
    ("json", "input"): JSONFormError,
    ("fragment", "contract"): FragmentError,
    ("fragment", "binding"): FragmentBindingError,
    ("manifest", "contract"): ManifestError,
    ("manifest", "binding"): ManifestBindingError,
    ("package", "contract"): PackageError,
    ("request", "contract"): PackageError,
    ("envelope", "contract"): PackageError,
    ("package", "binding"): PackageBindingError,
    ("envelope", "binding"): PackageBindingError,
    ("context", "contract"): ContextError,
    ("bundle", "contract"): BundleError,
    ("run", "contract"): BundleError,
}


def error_class(code: str) -> type[EvstoreError]:
    """The class :func:`error` raises for ``code`` (from its family and prefix).

    Raises:
        KeyError: ``code`` is not in :data:`CODES` (a programming error, not user input).
    """
    entry = CODES[code]
    prefix = code.split(".", 1)[0]
    return _LEAF_CLASS.get((prefix, entry.family), _FAMILY_CLASS[entry.family])


def error(
    code: str,
    message: str,
    pointer: str = "",
    *,
    rule: str | None = None,
    path: str | None = None,
    **details: Any,
) -> EvstoreError:
    """Build the typed error for ``code``: the one error builder of evstore.

    Args:
        code: a code of :data:`CODES`; it decides the class (family, contract leaf).
        message: a human sentence.
        pointer: RFC 6901 JSON Pointer to the offending value ("" is the whole document).
        rule: the contract section, when narrower than the table's default for ``code``.
        path: the input file, when known.
        details: extra JSON-ready facts (``None`` values are dropped).

    Returns:
        The error (not raised: callers raise it or collect it in :class:`Faults`).

    Raises:
        KeyError: ``code`` is not in the table (a bug in evstore, caught by the tests).
    """
    cls = error_class(code)
    kept = {k: v for k, v in details.items() if v is not None}
    return cls(
        message,
        code=code,
        rule=CODES[code].rule if rule is None else rule,
        pointer=pointer,
        path=path,
        details=kept or None,
    )


@dataclass
class Faults:
    """Every fault one validation found: ``errors`` then ``warnings``, each in fault order.

    The documented fault order of every contract is: shape (JSON Schema), contract rules,
    self-address, then write-time bindings. ``ingest`` reports ``errors[0]``; ``validate``
    lists them all. A warning is an :class:`EvstoreError` that does not refuse the document
    (it is recorded with the artifact).
    """

    errors: list[EvstoreError] = field(default_factory=list)
    warnings: list[EvstoreError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when there is no error (warnings allowed)."""
        return not self.errors

    def __bool__(self) -> bool:
        return bool(self.errors)

    def __iter__(self) -> Iterator[EvstoreError]:
        return iter(self.errors)

    def __len__(self) -> int:
        return len(self.errors)

    def add(self, code: str, message: str, pointer: str = "", **kw: Any) -> EvstoreError:
        """Build an error with :func:`error` and append it; returns it."""
        err = error(code, message, pointer, **kw)
        self.errors.append(err)
        return err

    def warn(self, code: str, message: str, pointer: str = "", **kw: Any) -> EvstoreError:
        """Build a warning with :func:`error` and append it; returns it."""
        err = error(code, message, pointer, **kw)
        self.warnings.append(err)
        return err

    def extend(self, other: Faults | Iterable[EvstoreError]) -> Faults:
        """Append another Faults (errors and warnings) or a sequence of errors; returns self."""
        if isinstance(other, Faults):
            self.errors.extend(other.errors)
            self.warnings.extend(other.warnings)
        else:
            self.errors.extend(other)
        return self

    def first(self) -> EvstoreError | None:
        """The first error, or None."""
        return self.errors[0] if self.errors else None

    def raise_first(self) -> None:
        """Raise the first error, if any (``ingest`` semantics)."""
        if self.errors:
            raise self.errors[0]

    @classmethod
    def of(cls, value: Faults | Iterable[EvstoreError] | None) -> Faults:
        """``value`` as Faults (a Faults is returned as is; a sequence becomes its errors)."""
        if isinstance(value, Faults):
            return value
        return cls(errors=list(value or ()))
