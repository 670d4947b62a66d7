"""The code table: every code evstore raises, with its family, default rule and meaning.

Beside it the one table of HTTP statuses (:data:`STATUS_BY_FAMILY`, :data:`STATUS_BY_CODE`)
that the server, the pages and the client share.

Data only: store/core/errors.py builds :data:`evstore.core.errors.CODES` from :data:`TABLE` and
raises
through it; docs/errors.md is generated from it (``python tools/gen_docs.py``), and
tests/test_codes.py checks that every code raised in store/ and cli/ is a row here and every
row is raised. Split from store/core/errors.py for size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["Code", "STATUS_BY_CODE", "STATUS_BY_FAMILY", "TABLE"]


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
_HTTP_BUNDLES = "docs/http.md#bundles"
_HTTP = "docs/http.md"
_REGISTRY = "docs/registry.md"

# fmt: off
TABLE: tuple[Code, ...] = tuple(Code(*row) for row in (
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
    ("not-found.root", "not-found", "",
     "no root of that name holds anything, or the root does not hold that object"),
    # -- retention roots and the audit of retained artifacts
    ("root.name", "input", "", "a root name is not 1-128 letters, digits and . _ : @ / + -"),
    ("audit.missing", "corruption", "",
     "a retained closure is incomplete: an object it needs is not stored"),
    ("audit.binding", "corruption", "",
     "a binding a retained artifact made is no longer keyed by its key's SHA-256"),
    ("not-found.token", "not-found", "", "no token with that id in this store"),
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
    ("corruption.blob-missing", "corruption", "",
     "the bytes a blob row names are missing from its blob backend; never served"),
    ("check.not-canonical", "corruption", "",
     "a stored artifact's bytes are not in canonical form"),
    ("check.artifact-without-blob", "corruption", "", "an artifact index row has no blob"),
    ("check.blob-orphan", "corruption", "",
     "an object in a blob backend that no blob row names, older than blobs.orphan_grace_seconds"),
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
    ("install.extra-missing", "store", "",
     "this needs an extra of evidence-store that is not installed (server, client, postgresql)"),
    ("store.replaced", "store", "",
     "the SQLite store file was deleted or replaced while the process had it open"),
    ("store.database", "store", "", "another database error"),
    # -- blob backends (docs/design.md, "Blob bytes outside the database")
    ("blobs.spec", "input", "",
     "a blob backend spec is not inline, file:DIR or s3://BUCKET/PREFIX[?endpoint=&region=]"),
    ("blobs.key", "input", "", "a blob backend key is not a relative /-separated path"),
    ("blobs.unreachable", "store", "",
     "the blob backend (a directory or an S3-compatible server) cannot be reached; retryable"),
    ("blobs.backend", "store", "", "the blob backend failed (permissions, space, a refusal)"),
    ("interrupted.signal", "store", "",
     "the command was interrupted (Ctrl-C, exit 130); its open transaction was rolled back"),
    # -- the HTTP server (docs/http.md) and its bearer tokens
    ("http.request", "input", _HTTP,
     "a request's parameters or body are malformed (400; the message says which)"),
    ("http.route", "not-found", _HTTP, "no such route on this server (404)"),
    ("http.method", "input", _HTTP, "the route does not take that method (405)"),
    ("http.unauthorized", "input", _HTTP + "#auth",
     "no bearer token, or one this store does not know or has revoked (401)"),
    ("http.forbidden", "input", _HTTP + "#auth", "the token's scope does not allow this (403)"),
    ("http.too-large", "input", _HTTP + "#limits", "the request body is over the limit (413)"),
    ("http.busy", "store", _HTTP + "#limits",
     "the server has its limit of requests in flight; retry after Retry-After (503)"),
    ("http.range", "input", _HTTP, "the one byte range asked is unsatisfiable (416)"),
    ("http.internal", "store", _HTTP, "an unexpected server fault (500; logged by the server)"),
    ("put.digest-mismatch", "input", _HTTP,
     "the uploaded bytes do not hash to the expected ref; nothing was stored (422)"),
    ("token.scope", "input", _HTTP + "#auth", "no such token scope (read, ingest, admin)"),
    # -- a store served over HTTP, seen from its client (docs/http.md#the-client)
    ("remote.unreachable", "store", "", "the server cannot be reached (connection refused, "
     "name or TLS failure) after bounded retries"),
    ("remote.timeout", "store", "", "the server did not answer in time, after bounded retries"),
    ("remote.busy", "store", "", "the server stayed busy (503) after bounded retries"),
    ("remote.protocol", "store", "",
     "the server's answer breaks HTTP API v1 (a truncated body, a 5xx without a problem)"),
    ("remote.auth", "store", "", "the server refused the token (401) or its scope (403)"),
    ("remote.unsupported", "store", "",
     "the command works only beside the database (init, migrate, check, config, token)"),
    ("remote.digest", "corruption", "",
     "bytes received do not match the ref asked for (digest or size); they are discarded"),
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
    ("bundle.archive-unsafe", "contract", _HTTP_BUNDLES,
     "a bundle archive member is absolute, has '..', is a link or device, or is too large"),
    ("bundle.archive-malformed", "input", _HTTP_BUNDLES,
     "a bundle upload is not a plain tar archive of one bundle directory"),
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
    ("archive.edges-mismatch", "input", _AR_CHK,
     "an edges annotation differs from the edges the member's bytes call for"),
    ("archive.cycle", "input", _AR_CHK, "the indexes or the members' edges form a cycle"),
    ("archive.not-canonical", "input", _AR_CHK, "an artifact member is not canonical JSON"),
    ("archive.no-proofs", "input", _AR_PRF, "verify --key on an archive without proofs"),
    # -- the OCI distribution routes (/v2/): docs/registry.md
    ("registry.name", "input", _REGISTRY,
     "a repository name is not a root name, or has a '..', '.' or empty segment (NAME_INVALID)"),
    ("registry.manifest-unknown", "not-found", _REGISTRY,
     "the repository has no closure manifest of that tag or digest (MANIFEST_UNKNOWN)"),
    ("registry.manifest-invalid", "input", _REGISTRY,
     "a pushed manifest is not an evstore closure manifest, or not the digest pushed to"),
    ("registry.tag", "input", _REGISTRY,
     "a manifest pushed to a tag other than latest or its root's BLAKE3 hex (TAG_INVALID)"),
    ("registry.tag-immutable", "binding", _REGISTRY,
     "a push of another manifest to the tag latest of an existing repository (409 DENIED)"),
    ("registry.blob-unknown", "not-found", _REGISTRY,
     "a pushed manifest names a blob neither uploaded nor stored (MANIFEST_BLOB_UNKNOWN)"),
    ("registry.upload-unknown", "not-found", _REGISTRY,
     "no blob upload session of that id (BLOB_UPLOAD_UNKNOWN)"),
    ("registry.upload-invalid", "input", _REGISTRY,
     "a chunk out of order, or an upload closed without a digest (BLOB_UPLOAD_INVALID)"),
    # -- the log: Merkle tree and checkpoints
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

#: HTTP status of an error by its family (docs/http.md#errors): the server's problem answers
#: and the pages' error pages use it, and the client reads a status back to a family with
#: :func:`evstore.core.errors.family_of_status`.
STATUS_BY_FAMILY: Mapping[str, int] = MappingProxyType(
    {
        "input": 400,
        "contract": 422,
        "binding": 409,
        "not-found": 404,
        "corruption": 500,
        "store": 500,
    }
)

#: Codes whose HTTP status is not their family's: authentication and scope (401/403), the
#: method (405), limits (413), ranges (416), an expected digest not met (422), and busy or
#: unreachable databases and servers (503, retried after ``Retry-After``).
STATUS_BY_CODE: Mapping[str, int] = MappingProxyType(
    {
        "http.unauthorized": 401,
        "http.forbidden": 403,
        "http.method": 405,
        "http.too-large": 413,
        "http.range": 416,
        "put.digest-mismatch": 422,
        "http.busy": 503,
        "store.busy": 503,
        "store.timeout": 503,
        "store.unreachable": 503,
    }
)
