"""The evstore error tree: one root, a few families, stable dotted codes.

Every error raised on bad input, a missing object, corrupt bytes or a store in the
wrong state is an :class:`EvstoreError`. Programs catch the family class; scripts,
tests and people read ``code``, a stable dotted string documented in
``docs/errors.md``::

    EvstoreError            code, message, rule (contract section), pointer (RFC 6901)
    |- InputError           the caller's bytes or arguments are wrong; the store is untouched
    |  |- RefSyntaxError    a content ref outside the accepted forms          (ref.syntax)
    |  |- JSONFormError     strict reader faults                              (json.*)
    |  |- ContractError     a contract rule fails                             (fragment.*, manifest.*, ...)
    |  |- BindingConflict   a write-time binding is violated                  (binding.*, *.scope-reuse, ...)
    |- NotFound             no object for that ref                            (not-found.*)
    |- CorruptionError      stored bytes do not match their address           (corruption.*)
    |- StoreStateError      missing store, schema behind/ahead, backend down  (store.*)

Leaf classes for a contract live next to the code that raises them; each still
descends from a family here. API misuse (wrong Python types, a closed Store) stays a
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
]


def escape_pointer(token: str | int) -> str:
    """Escape one JSON Pointer reference token (RFC 6901 section 3)."""
    return str(token).replace("~", "~0").replace("/", "~1")


def join_pointer(base: str, *tokens: str | int) -> str:
    """Append reference tokens to a JSON Pointer: ``join_pointer("/a", "b/c", 0) == "/a/b~1c/0"``."""
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
        """The error as a JSON-ready dict: family, code, message, rule, pointer (and path, details)."""
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
        where = f" at {self.pointer}" if self.pointer else ""
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


def _c(code: str, family: str, rule: str, meaning: str) -> Code:
    return Code(code, family, rule, meaning)


#: Every code evstore raises, with its family, default rule and meaning. docs/errors.md is
#: generated from this table, and a test checks that every code raised in store/ and cli/ is
#: here.
_TABLE: tuple[Code, ...] = (
    # -- errors --------------------------------------------------------------------------
    _c("ref.syntax", "input", "", "a content ref is not one of the four accepted forms"),
    _c("json.bom", "input", "", "a UTF-8 byte-order mark precedes the JSON text"),
    _c("json.utf8", "input", "", "the input is not valid UTF-8"),
    _c("json.syntax", "input", "", "the input is not JSON (or has trailing data)"),
    _c("json.duplicate-key", "input", "", "a member name appears twice in one object"),
    _c("json.non-finite", "input", "", "NaN or Infinity, or a number that overflows a double"),
    _c("json.surrogate", "input", "", "a string or member name holds a lone surrogate"),
    _c(
        "json.int-range",
        "input",
        "",
        "an integer beyond +-(2**53-1), or a number canonically read back as one",
    ),
    _c("json.depth", "input", "", "nesting deeper than the reader's limit (128)"),
    _c(
        "input.invalid",
        "input",
        "",
        "an argument or input value is not acceptable (the message says which)",
    ),
    _c("input.unreadable", "input", "", "an input file cannot be read"),
    _c(
        "input.unused-content",
        "input",
        "",
        "bytes supplied with the command (--content, --source) are used by no document",
    ),
    _c(
        "input.unused-option",
        "input",
        "",
        "an option was given that no document of the command uses",
    ),
    _c("input.argument-encoding", "input", "", "a command-line argument is not valid UTF-8"),
    _c("output.unwritable", "input", "", "the output file cannot be written"),
    _c(
        "corruption.row",
        "corruption",
        "",
        "a stored row is malformed (wrong type or value); its bytes are not served",
    ),
    _c(
        "corruption.setting",
        "corruption",
        "",
        "a stored setting is not valid JSON of its declared type",
    ),
    _c(
        "json.number-range",
        "input",
        "",
        "a non-zero number that underflows to zero (it would not round-trip)",
    ),
    _c("kind.unknown", "input", "", "no such artifact kind"),
    _c("config.unknown", "input", "", "no such setting"),
    _c("config.value", "input", "", "a setting value of the wrong type"),
    _c("not-found.blob", "not-found", "", "no stored blob for that content ref"),
    _c("not-found.artifact", "not-found", "", "no artifact matches the query"),
    _c(
        "corruption.digest",
        "corruption",
        "",
        "stored bytes do not hash to their address; never served",
    ),
    _c(
        "corruption.size",
        "corruption",
        "",
        "stored bytes have another length than recorded; never served",
    ),
    _c(
        "corruption.sha256-index",
        "corruption",
        "",
        "the SHA-256 recorded for a blob does not match its bytes",
    ),
    _c(
        "check.not-canonical",
        "corruption",
        "",
        "a stored artifact's bytes are not in canonical form",
    ),
    _c("check.artifact-without-blob", "corruption", "", "an artifact index row has no blob"),
    _c("store.missing", "store", "", "no store at that URL (create one with evstore init)"),
    _c(
        "store.schema-behind",
        "store",
        "",
        "the store's schema is older than the code (run evstore migrate)",
    ),
    _c("store.schema-ahead", "store", "", "the store's schema is newer than the code"),
    _c("store.url", "store", "", "the store URL cannot be used"),
    _c("store.unreachable", "store", "", "the database cannot be reached"),
    _c("store.busy", "store", "", "the database stayed locked after retries"),
    _c(
        "store.timeout",
        "store",
        "",
        "a statement ran past the database's time limit (PostgreSQL statement_timeout)",
    ),
    _c("store.full", "store", "", "the disk or file system holding the store is full"),
    _c(
        "store.read-only",
        "store",
        "",
        "the store cannot be written (a read-only file, folder, mount or transaction)",
    ),
    _c(
        "store.kind-unavailable",
        "store",
        "",
        "the handler of a kind cannot be loaded in this installation (a dependency is missing)",
    ),
    _c("store.database", "store", "", "another database error"),
    # -- fragments -----------------------------------------------------------------------
    _c(
        "fragment.shape",
        "contract",
        "templiqx-evidence-fragment-v1alpha1#fragment-shape",
        "a fragment (or source record, or eval output) is not an object, misses a required member, or has a member of the wrong type",
    ),
    _c(
        "fragment.range",
        "contract",
        "templiqx-evidence-fragment-v1alpha1#offset-and-digest-invariants",
        "start_offset < 0, end_offset <= start_offset (empty or reversed range), or end_offset beyond the content length in bytes",
    ),
    _c(
        "fragment.boundary",
        "contract",
        "templiqx-evidence-fragment-v1alpha1#offset-and-digest-invariants",
        "an offset falls inside a UTF-8 character, or the quoted bytes are not well-formed UTF-8",
    ),
    _c(
        "fragment.quote-mismatch",
        "contract",
        "templiqx-evidence-fragment-v1alpha1#offset-and-digest-invariants",
        "quote_sha256 is not the SHA-256 of the bytes in [start_offset, end_offset)",
    ),
    _c(
        "fragment.content-mismatch",
        "contract",
        "templiqx-evidence-fragment-v1alpha1#offset-and-digest-invariants",
        "content_sha256 names bytes other than the selected content version",
    ),
    _c(
        "fragment.unknown-content",
        "binding",
        "templiqx-evidence-fragment-v1alpha1#offset-and-digest-invariants",
        "no source content is registered (or supplied) for the fragment's (document_id, fragment_id), or a source record's bytes are absent",
    ),
    _c(
        "fragment.ambiguous-content",
        "binding",
        "templiqx-evidence-fragment-v1alpha1#offset-and-digest-invariants",
        "the pair has several content versions and neither content_sha256 nor a revision extension selects one",
    ),
    _c(
        "fragment.digest-format",
        "contract",
        "templiqx-evidence-fragment-v1alpha1#fragment-shape",
        "quote_sha256 or content_sha256 is not 64 lowercase hex (uppercase, sha256:-prefixed, wrong length)",
    ),
    _c(
        "fragment.scope-incomplete",
        "contract",
        "templiqx-evidence-fragment-v1alpha1#host-scope-metadata",
        "scope is not exactly host_id, tenant_id and authorization_scope_id, each a non-empty string",
    ),
    _c(
        "fragment.scope-reuse",
        "binding",
        "templiqx-evidence-fragment-v1alpha1#host-scope-metadata",
        "the fragment identity is bound to another scope (or to a scope while this write has none), or the fragment's scope differs from the ingest's",
    ),
    _c(
        "fragment.revision-mismatch",
        "binding",
        "templiqx-evidence-fragment-v1alpha1#document-revision-checksum-extension",
        "a revision checksum is bound to another document_id or another content version, or disagrees with content_sha256",
    ),
    _c(
        "fragment.unknown-revision",
        "binding",
        "templiqx-evidence-fragment-v1alpha1#document-revision-checksum-extension",
        "a revision checksum (or its fragment_id) is not known to the store",
    ),
    _c(
        "fragment.revision-format",
        "contract",
        "templiqx-evidence-fragment-v1alpha1#document-revision-checksum-extension",
        "a configured revision extension is not an object with revision_checksum as 64 lowercase hex",
    ),
    _c(
        "fragment.source-encoding",
        "contract",
        "templiqx-evidence-fragment-v1alpha1#offset-and-digest-invariants",
        "registered source bytes are not well-formed UTF-8 (the contract measures offsets over UTF-8)",
    ),
    _c("not-found.fragment", "not-found", "", "the ref names no stored fragment artifact"),
    # -- manifests -----------------------------------------------------------------------
    _c(
        "manifest.schema",
        "contract",
        "orbidocs-corpus-passage-evidence-manifest-v1#fields",
        "the manifest breaks evstore's JSON Schema for orbidocs v1 (shape, pattern, bound, enum, missing or unexpected member)",
    ),
    _c(
        "manifest.rule-1",
        "contract",
        "orbidocs-corpus-passage-evidence-manifest-v1#rule-1",
        "projection revision 1 with no item or with a phase (contract Rule 1)",
    ),
    _c(
        "manifest.phase-missing",
        "contract",
        "orbidocs-corpus-passage-evidence-manifest-v1#phase",
        "projection revision 2 without a phase object",
    ),
    _c(
        "manifest.phase-unverifiable",
        "contract",
        "orbidocs-corpus-passage-evidence-manifest-v1#phase",
        "projection revision 2: the phase schema is not public, so the phase cannot be verified (a warning when manifests.accept_unverified_phase is on)",
    ),
    _c(
        "manifest.item-required-excluded",
        "contract",
        "orbidocs-corpus-passage-evidence-manifest-v1#items",
        "a required item is not included",
    ),
    _c(
        "manifest.item-omitted-reason",
        "contract",
        "orbidocs-corpus-passage-evidence-manifest-v1#items",
        "an item left out (included: false) names no omitted/reason",
    ),
    _c(
        "manifest.item-included-reason",
        "contract",
        "orbidocs-corpus-passage-evidence-manifest-v1#items",
        "an included item carries omitted/reason",
    ),
    _c(
        "manifest.item-artifact-execution",
        "contract",
        "orbidocs-corpus-passage-evidence-manifest-v1#items",
        "an artifact item names no execution/ref",
    ),
    _c(
        "manifest.ref-not-exact",
        "contract",
        "orbidocs-corpus-passage-evidence-manifest-v1#items",
        "a ref has a ':'-separated segment 'latest'",
    ),
    _c(
        "manifest.review-target",
        "contract",
        "orbidocs-corpus-passage-evidence-manifest-v1#review-target",
        "review/target's candidate/digest names no required, included candidate item",
    ),
    _c(
        "manifest.self-address",
        "contract",
        "contracts/README#corpus-passage-evidence-manifests-orbidocs",
        "manifest/ref differs from the SHA-256 of the manifest's RFC 8785 form without it",
    ),
    _c(
        "manifest.content-missing",
        "binding",
        "orbidocs-corpus-passage-evidence-manifest-v1#content-ref",
        "the rendered content is neither stored nor supplied with the command",
    ),
    _c(
        "manifest.content-digest",
        "binding",
        "orbidocs-corpus-passage-evidence-manifest-v1#content-digest",
        "the rendered content's SHA-256 is not content/digest (or content/digest is not a canonical SHA-256)",
    ),
    _c(
        "manifest.content-size",
        "binding",
        "orbidocs-corpus-passage-evidence-manifest-v1#content-size-bytes",
        "the rendered content's length in bytes is not content/size-bytes",
    ),
    _c(
        "manifest.content-over-limit",
        "binding",
        "orbidocs-corpus-passage-evidence-manifest-v1#bytes-max",
        "the rendered content is longer than bytes/max (never truncated)",
    ),
    _c(
        "manifest.ref-digest",
        "binding",
        "orbidocs-corpus-passage-evidence-manifest-v1#items",
        "a ref whose text carries sha256:X has a digest other than sha256:X",
    ),
    _c(
        "manifest.ref-rebound",
        "binding",
        "orbidocs-corpus-passage-evidence-manifest-v1#items",
        "the ref is already bound to another digest (an earlier manifest or item)",
    ),
    _c(
        "manifest.content-edge",
        "corruption",
        "orbidocs-corpus-passage-evidence-manifest-v1#content-ref",
        "(check) a stored manifest has no content edge to its rendered content",
    ),
    # -- packages ------------------------------------------------------------------------
    _c(
        "package.schema",
        "contract",
        "insonic-answer-evidence-1.3.0#",
        "the package breaks a structural rule of the schema",
    ),
    _c(
        "request.schema",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/request",
        "the request breaks a structural rule of the schema",
    ),
    _c(
        "envelope.schema",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/envelope",
        "the answer envelope breaks a structural rule of the schema (claims included)",
    ),
    _c(
        "package.item-id-duplicate",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/item/properties/id",
        "two items share one id",
    ),
    _c(
        "package.conflict-unknown-evidence",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/conflict/properties/evidence_ids",
        "a conflict names an evidence id that is not an item of the package",
    ),
    _c(
        "package.node-source-unknown",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/contextNode/properties/sources",
        "a context node names a source that is not an item of the package",
    ),
    _c(
        "package.node-id-duplicate",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/contextNode/properties/id",
        "two context nodes share one id",
    ),
    _c(
        "package.node-parent-unknown",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/contextNode/properties/parent",
        "a context node's parent names no node of the context",
    ),
    _c(
        "package.node-parent-cycle",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/contextNode/properties/parent",
        "context node parents form a cycle (a node that is its own parent included)",
    ),
    _c(
        "package.node-text-level",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/contextNode",
        "a context node that is not cue-level carries text",
    ),
    _c(
        "package.node-text-sources",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/contextNode/properties/text",
        "a cue node with text does not have exactly one source",
    ),
    _c(
        "package.node-text-prefix",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/contextNode/properties/text",
        "a cue node's text is not a prefix of its source item's text",
    ),
    _c(
        "package.interval-order",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/interval/properties/end_us",
        "a source interval in the package does not end after it starts",
    ),
    _c(
        "package.context-question",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/context/properties/question",
        "context.question differs from request.question",
    ),
    _c(
        "package.context-omitted",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/context/properties/omitted",
        "context.omitted exceeds the number of items",
    ),
    _c(
        "package.item-budget",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/budget/properties/items",
        "the package has more items than the request's effective item budget",
    ),
    _c(
        "package.independent-families",
        "contract",
        "insonic-answer-evidence-1.3.0#/properties/independent_families",
        "independent_families exceeds the number of distinct item families",
    ),
    _c(
        "package.context-bytes",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/context/properties/bytes",
        "context.bytes is not the UTF-8 size of the compact context JSON (warning unless strict)",
    ),
    _c(
        "package.context-tokens",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/context/properties/tokens",
        "context.tokens differs from context.bytes under utf8-byte-upper-bound (warning unless strict)",
    ),
    _c(
        "request.interval-order",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/interval/properties/end_us",
        "the request's source interval does not end after it starts",
    ),
    _c(
        "envelope.interval-order",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/interval/properties/end_us",
        "a citation's source interval does not end after it starts",
    ),
    _c(
        "envelope.package-mismatch",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/envelope/properties/package_id",
        "the envelope's package_id is not the id of the package it is checked against",
    ),
    _c(
        "envelope.citation-unknown-evidence",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/citation/properties/evidence_id",
        "a citation names an evidence id that is not an item of the package",
    ),
    _c(
        "envelope.citation-quote",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/citation/properties/quote",
        "a citation's quote is not an exact substring of the cited item's text",
    ),
    _c(
        "envelope.citation-reference",
        "contract",
        "insonic-answer-evidence-1.3.0#/$defs/citation/properties/reference",
        "a citation's reference differs from the cited item's reference",
    ),
    _c(
        "package.revision-conflict",
        "binding",
        "insonic-answer-evidence-1.3.0#/$defs/reference/properties/recording_revision",
        "one (workspace_id, recording_id, recording_revision) is bound to other digests (by another item of the package, or by an earlier accepted package)",
    ),
    _c(
        "package.id-reuse",
        "binding",
        "insonic-answer-evidence-1.3.0#/properties/id",
        "a different package is already stored under this package id",
    ),
    _c(
        "package.binding-missing",
        "corruption",
        "insonic-answer-evidence-1.3.0#/$defs/reference/properties/recording_revision",
        "(check) a stored package's id or recording revision binding row is missing",
    ),
    _c(
        "envelope.package-edge",
        "corruption",
        "insonic-answer-evidence-1.3.0#/$defs/envelope/properties/package_id",
        "(check) a stored envelope has no package edge to the package it cites",
    ),
    _c(
        "envelope.unknown-package",
        "binding",
        "insonic-answer-evidence-1.3.0#/$defs/envelope/properties/package_id",
        "the envelope's package_id names no stored package",
    ),
    # -- contexts ------------------------------------------------------------------------
    _c(
        "context.descriptor-shape",
        "contract",
        "",
        "descriptor not an object, or a member outside DESCRIPTOR_KEYS",
    ),
    _c(
        "context.descriptor-kind",
        "contract",
        "",
        "descriptor artifact_kind missing or not the contract's",
    ),
    _c(
        "context.descriptor-media-type",
        "contract",
        "",
        "descriptor media_type missing or not the contract's",
    ),
    _c(
        "context.descriptor-schema-id",
        "contract",
        "",
        "descriptor schema_id missing or not the contract's",
    ),
    _c(
        "context.descriptor-schema-name",
        "contract",
        "",
        "descriptor schema_name missing or not the contract's",
    ),
    _c(
        "context.unsupported-version",
        "contract",
        "",
        "descriptor schema_version missing or not v1 (only v1 decodes)",
    ),
    _c(
        "context.descriptor-logical-file",
        "contract",
        "",
        "descriptor logical_file missing or not the contract's",
    ),
    _c(
        "context.logical-file-missing",
        "contract",
        "",
        "the descriptor's logical file is not in the bundle",
    ),
    _c(
        "context.payload-not-array",
        "contract",
        "",
        "payload or source document is not a top-level JSON array",
    ),
    _c(
        "context.unit-shape",
        "contract",
        "",
        "unit not an object, a required member missing, or an unknown member",
    ),
    _c(
        "context.unit-id",
        "contract",
        "",
        "unit id not a JSON integer within +-(2^53-1) (no bool, no fraction)",
    ),
    _c("context.unit-kind", "contract", "", "unit kind not a non-empty string"),
    _c("context.unit-text", "contract", "", "unit text not a string"),
    _c("context.unit-metadata", "contract", "", "unit metadata present but not a JSON object"),
    _c(
        "context.ref-shape",
        "contract",
        "",
        "ref not an object of exactly source_id, start_unit_id, end_unit_id",
    ),
    _c("context.ref-source-id", "contract", "", "ref source_id not a non-empty string"),
    _c(
        "context.self-ref",
        "contract",
        "",
        "ref start_unit_id or end_unit_id is not the unit's own id",
    ),
    _c(
        "context.source-mixed",
        "contract",
        "",
        "a unit's source_id differs from the excerpt's first source_id",
    ),
    _c("context.unit-duplicate", "contract", "", "a unit id occurs twice (each unit at most once)"),
    _c(
        "context.source-mismatch",
        "contract",
        "",
        "unit differs from the source document's unit, or another source",
    ),
    _c("context.source-order", "contract", "", "units not in the source document's position order"),
    _c(
        "context.unit-unknown",
        "contract",
        "",
        "a unit id that the source document does not contain",
    ),
    _c(
        "context.range-unknown",
        "contract",
        "",
        "an excerpt range endpoint is not a unit id of the source document",
    ),
    _c(
        "context.range-order",
        "contract",
        "",
        "an excerpt range starts after its end in source position order",
    ),
    _c(
        "context.kind-ambiguous",
        "contract",
        "",
        "an array of source units given without --kind (two kinds fit)",
    ),
    _c(
        "not-found.source-document",
        "not-found",
        "",
        "the ref names no stored source-document artifact",
    ),
    # -- runs ----------------------------------------------------------------------------
    _c(
        "bundle.unreadable",
        "contract",
        "",
        "the bundle directory or one of its files cannot be read",
    ),
    _c("bundle.index-missing", "contract", "", "the bundle has no regular index.json"),
    _c(
        "bundle.index-shape",
        "contract",
        "",
        "index.json is not an object of descriptors (six strings each)",
    ),
    _c(
        "bundle.path-unsafe",
        "contract",
        "",
        "a logical file is absolute, has '..'/'.'/empty segments or a backslash, names index.json, or resolves outside the bundle",
    ),
    _c(
        "bundle.file-missing",
        "contract",
        "",
        "a logical file named by a descriptor is not a regular file",
    ),
    _c("bundle.file-duplicate", "contract", "", "two descriptors name one logical file"),
    _c(
        "bundle.descriptor-mismatch",
        "contract",
        "",
        "a known artifact_kind with other fixed descriptor values",
    ),
    _c(
        "bundle.descriptor-misplaced",
        "contract",
        "",
        "the evidence-context descriptor under a name other than evidence_context",
    ),
    _c(
        "bundle.source-ambiguous",
        "contract",
        "",
        "two source documents in the bundle carry the excerpt's source_id",
    ),
    _c("run.record-shape", "contract", "", "a run record is not the documented tree"),
    _c("run.missing-object", "contract", "", "a blob or artifact a run record names is not stored"),
    # -- log (store/merkle.py, store/checkpoint.py) -------------------------------------
    _c(
        "log.range",
        "input",
        "RFC 9162 section 2.1",
        "a proof was asked for an index or tree size outside the log",
    ),
    _c(
        "checkpoint.malformed",
        "input",
        "c2sp.org/tlog-checkpoint",
        "a checkpoint or signed note is not in the C2SP format",
    ),
    _c(
        "checkpoint.unsigned",
        "input",
        "c2sp.org/signed-note",
        "no signature line of the trusted key signs the note",
    ),
    _c(
        "checkpoint.signature",
        "input",
        "c2sp.org/signed-note",
        "a signature line of the trusted key does not verify",
    ),
    _c(
        "checkpoint.origin",
        "input",
        "c2sp.org/tlog-checkpoint",
        "the checkpoint names another log (origin line)",
    ),
    _c(
        "checkpoint.key",
        "input",
        "c2sp.org/signed-note",
        "a verifier or private key is malformed, or its file is readable by others",
    ),
    _c(
        "tlog-proof.malformed",
        "input",
        "c2sp.org/tlog-proof",
        "a proof file is not in the C2SP tlog-proof format",
    ),
    _c(
        "tlog-proof.inclusion",
        "input",
        "RFC 9162 section 2.1.3.2",
        "the inclusion proof does not lead to the checkpoint root",
    ),
)

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
