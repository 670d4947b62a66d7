"""insonic answer evidence 1.3.0: retained packages, their requests and answer envelopes.

Contract: ``insonic-answer-evidence-1.3.0.schema.json`` (GitHub shruggietech/insonic,
schemas/v1.3.0), a JSON Schema 2020-12 whose root is the retained package and whose
``$defs`` hold the request, the answer envelope, its claims and citations. Rule sections in
errors are JSON Pointers into that published file, e.g.
``insonic-answer-evidence-1.3.0#/$defs/citation/properties/quote``.

Validation runs in two layers, and faults come back in that order:

1. Structure, with evstore's own schema (``schemas/insonic-answer-evidence-1.3.0.schema.json``,
   same constraints as the published one, our wording and layout) through jsonschema-rs,
   draft 2020-12, formats (``uuid``, ``date``) asserted, no network. Faults:
   ``package.schema``, ``request.schema``, ``envelope.schema``, each at the instance pointer.
2. Semantic rules the schema cannot state (unique ids, ids that must resolve, quotes that
   must occur verbatim, interval order, counts and budgets, the context's own byte size, one
   binding per recording revision); they live in :mod:`evstore.package_rules` and run even
   when the structure is faulty, skipping whatever is malformed, so one report lists all.

Integers that may exceed 2**53 travel as decimal strings; they are compared as Python
``int`` (exact), never as floats. Nothing here touches a database: the write-time bindings
(``package.revision-conflict`` across the store, ``package.id-reuse``,
``envelope.unknown-package``) are raised by the store with :class:`PackageBindingError`
using the keys :func:`revision_bindings` returns.

Every code with its meaning is in :data:`CODES`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any, Literal

import jsonschema_rs

from . import package_rules as _rules
from .errors import BindingConflict, ContractError, join_pointer
from .package_rules import (  # the codes live beside the rules that emit them
    CODE_CITATION_QUOTE,
    CODE_CITATION_REFERENCE,
    CODE_CITATION_UNKNOWN_EVIDENCE,
    CODE_CONFLICT_UNKNOWN_EVIDENCE,
    CODE_CONTEXT_BYTES,
    CODE_CONTEXT_OMITTED,
    CODE_CONTEXT_QUESTION,
    CODE_CONTEXT_TOKENS,
    CODE_ENVELOPE_INTERVAL_ORDER,
    CODE_ENVELOPE_PACKAGE_MISMATCH,
    CODE_ENVELOPE_SCHEMA,
    CODE_ID_REUSE,
    CODE_INDEPENDENT_FAMILIES,
    CODE_INTERVAL_ORDER,
    CODE_ITEM_BUDGET,
    CODE_ITEM_ID_DUPLICATE,
    CODE_NODE_ID_DUPLICATE,
    CODE_NODE_PARENT_CYCLE,
    CODE_NODE_PARENT_UNKNOWN,
    CODE_NODE_SOURCE_UNKNOWN,
    CODE_NODE_TEXT_LEVEL,
    CODE_NODE_TEXT_PREFIX,
    CODE_NODE_TEXT_SOURCES,
    CODE_PACKAGE_SCHEMA,
    CODE_REQUEST_INTERVAL_ORDER,
    CODE_REQUEST_SCHEMA,
    CODE_REVISION_CONFLICT,
    CODE_UNKNOWN_PACKAGE,
)

__all__ = [
    "CODES",
    "CODE_CITATION_QUOTE",
    "CODE_CITATION_REFERENCE",
    "CODE_CITATION_UNKNOWN_EVIDENCE",
    "CODE_CONFLICT_UNKNOWN_EVIDENCE",
    "CODE_CONTEXT_BYTES",
    "CODE_CONTEXT_OMITTED",
    "CODE_CONTEXT_QUESTION",
    "CODE_CONTEXT_TOKENS",
    "CODE_ENVELOPE_INTERVAL_ORDER",
    "CODE_ENVELOPE_PACKAGE_MISMATCH",
    "CODE_ENVELOPE_SCHEMA",
    "CODE_ID_REUSE",
    "CODE_INDEPENDENT_FAMILIES",
    "CODE_INTERVAL_ORDER",
    "CODE_ITEM_BUDGET",
    "CODE_ITEM_ID_DUPLICATE",
    "CODE_NODE_ID_DUPLICATE",
    "CODE_NODE_PARENT_CYCLE",
    "CODE_NODE_PARENT_UNKNOWN",
    "CODE_NODE_SOURCE_UNKNOWN",
    "CODE_NODE_TEXT_LEVEL",
    "CODE_NODE_TEXT_PREFIX",
    "CODE_NODE_TEXT_SOURCES",
    "CODE_PACKAGE_SCHEMA",
    "CODE_REQUEST_INTERVAL_ORDER",
    "CODE_REQUEST_SCHEMA",
    "CODE_REVISION_CONFLICT",
    "CODE_UNKNOWN_PACKAGE",
    "CONTRACT",
    "DocumentKind",
    "PACKAGE_KIND",
    "PackageBindingError",
    "PackageError",
    "RELEASE",
    "SCHEMA_FILE",
    "SCHEMA_ID",
    "STRICT_CONTEXT_BYTES",
    "binding_error",
    "budget_default",
    "context_fixed_point",
    "detect",
    "effective_item_budget",
    "load_schema",
    "measure_context",
    "revision_bindings",
    "revision_conflicts",
    "validate_envelope",
    "validate_package",
    "validate_request",
]

#: Contract name used in ``rule`` (the published file's name without ``.schema.json``).
CONTRACT = "insonic-answer-evidence-1.3.0"
#: File name of evstore's own schema under ``store/schemas``.
SCHEMA_FILE = "insonic-answer-evidence-1.3.0.schema.json"
#: ``$id`` of evstore's own schema.
SCHEMA_ID = "urn:evstore:schema:insonic-answer-evidence:1.3.0"
#: The package discriminator, ``kind``'s const value.
PACKAGE_KIND = "answer-evidence-context"
#: The contract release, the const of ``schema_version`` (package) and ``version``
#: (request, envelope).
RELEASE = "1.3.0"
#: Store setting: when true, a wrong ``context.bytes``/``context.tokens`` rejects the package
#: instead of being recorded as a warning.
STRICT_CONTEXT_BYTES = "packages.strict_context_bytes"

DocumentKind = Literal["package", "request", "envelope"]

# code -> (section of the published schema that states or implies the rule, meaning).
_CODE_TABLE: dict[str, tuple[str, str]] = {
    CODE_PACKAGE_SCHEMA: ("", "the package breaks a structural rule of the schema"),
    CODE_REQUEST_SCHEMA: ("/$defs/request", "the request breaks a structural rule of the schema"),
    CODE_ENVELOPE_SCHEMA: (
        "/$defs/envelope",
        "the answer envelope breaks a structural rule of the schema (claims included)",
    ),
    CODE_ITEM_ID_DUPLICATE: ("/$defs/item/properties/id", "two items share one id"),
    CODE_CONFLICT_UNKNOWN_EVIDENCE: (
        "/$defs/conflict/properties/evidence_ids",
        "a conflict names an evidence id that is not an item of the package",
    ),
    CODE_NODE_SOURCE_UNKNOWN: (
        "/$defs/contextNode/properties/sources",
        "a context node names a source that is not an item of the package",
    ),
    CODE_NODE_ID_DUPLICATE: ("/$defs/contextNode/properties/id", "two context nodes share one id"),
    CODE_NODE_PARENT_UNKNOWN: (
        "/$defs/contextNode/properties/parent",
        "a context node's parent names no node of the context",
    ),
    CODE_NODE_PARENT_CYCLE: (
        "/$defs/contextNode/properties/parent",
        "context node parents form a cycle (a node that is its own parent included)",
    ),
    CODE_NODE_TEXT_LEVEL: (
        "/$defs/contextNode",
        "a context node that is not cue-level carries text",
    ),
    CODE_NODE_TEXT_SOURCES: (
        "/$defs/contextNode/properties/text",
        "a cue node with text does not have exactly one source",
    ),
    CODE_NODE_TEXT_PREFIX: (
        "/$defs/contextNode/properties/text",
        "a cue node's text is not a prefix of its source item's text",
    ),
    CODE_INTERVAL_ORDER: (
        "/$defs/interval/properties/end_us",
        "a source interval in the package does not end after it starts",
    ),
    CODE_CONTEXT_QUESTION: (
        "/$defs/context/properties/question",
        "context.question differs from request.question",
    ),
    CODE_CONTEXT_OMITTED: (
        "/$defs/context/properties/omitted",
        "context.omitted exceeds the number of items",
    ),
    CODE_ITEM_BUDGET: (
        "/$defs/budget/properties/items",
        "the package has more items than the request's effective item budget",
    ),
    CODE_INDEPENDENT_FAMILIES: (
        "/properties/independent_families",
        "independent_families exceeds the number of distinct item families",
    ),
    CODE_CONTEXT_BYTES: (
        "/$defs/context/properties/bytes",
        "context.bytes is not the UTF-8 size of the compact context JSON (warning unless strict)",
    ),
    CODE_CONTEXT_TOKENS: (
        "/$defs/context/properties/tokens",
        "context.tokens differs from context.bytes under utf8-byte-upper-bound "
        "(warning unless strict)",
    ),
    CODE_REQUEST_INTERVAL_ORDER: (
        "/$defs/interval/properties/end_us",
        "the request's source interval does not end after it starts",
    ),
    CODE_ENVELOPE_INTERVAL_ORDER: (
        "/$defs/interval/properties/end_us",
        "a citation's source interval does not end after it starts",
    ),
    CODE_ENVELOPE_PACKAGE_MISMATCH: (
        "/$defs/envelope/properties/package_id",
        "the envelope's package_id is not the id of the package it is checked against",
    ),
    CODE_CITATION_UNKNOWN_EVIDENCE: (
        "/$defs/citation/properties/evidence_id",
        "a citation names an evidence id that is not an item of the package",
    ),
    CODE_CITATION_QUOTE: (
        "/$defs/citation/properties/quote",
        "a citation's quote is not an exact substring of the cited item's text",
    ),
    CODE_CITATION_REFERENCE: (
        "/$defs/citation/properties/reference",
        "a citation's reference differs from the cited item's reference",
    ),
    CODE_REVISION_CONFLICT: (
        "/$defs/reference/properties/recording_revision",
        "one (workspace_id, recording_id, recording_revision) is bound to other digests "
        "(by another item of the package, or by an earlier accepted package)",
    ),
    CODE_ID_REUSE: (
        "/properties/id",
        "a different package is already stored under this package id",
    ),
    CODE_UNKNOWN_PACKAGE: (
        "/$defs/envelope/properties/package_id",
        "the envelope's package_id names no stored package",
    ),
}

#: Every code this module defines, with a one-line meaning.
CODES: Mapping[str, str] = MappingProxyType({c: m for c, (_, m) in _CODE_TABLE.items()})

# Messages from jsonschema-rs quote the offending instance, which may be megabytes long.
_MAX_MESSAGE = 400


class PackageError(ContractError):
    """A rule of the insonic 1.3.0 contract fails.

    Codes ``package.*``, ``request.*`` and ``envelope.*`` (see :data:`CODES`).
    """

    default_code = CODE_PACKAGE_SCHEMA


class PackageBindingError(BindingConflict):
    """A revision or package-id binding would be violated; nothing is written.

    Codes ``package.revision-conflict``, ``package.id-reuse``, ``envelope.unknown-package``.
    """

    default_code = CODE_REVISION_CONFLICT


def _rule(code: str) -> str:
    return f"{CONTRACT}#{_CODE_TABLE[code][0]}"


def _make(code: str, message: str, pointer: str, details: dict[str, Any] | None) -> PackageError:
    cls = PackageBindingError if code in _BINDING_CODES else PackageError
    return cls(message, code=code, rule=_rule(code), pointer=pointer, details=details)


_BINDING_CODES = frozenset({CODE_REVISION_CONFLICT, CODE_ID_REUSE, CODE_UNKNOWN_PACKAGE})


def binding_error(
    code: str, message: str, pointer: str = "", details: dict[str, Any] | None = None
) -> PackageBindingError:
    """Build the error for a write-time binding failure, for the store to raise.

    Args:
        code: one of ``package.revision-conflict``, ``package.id-reuse``,
            ``envelope.unknown-package``.
        message: a human sentence.
        pointer: RFC 6901 pointer into the rejected document (``/items/3/reference``,
            ``/id``, ``/package_id``).
        details: JSON-ready extra facts (the bound values, the stored address...).

    Returns:
        A :class:`PackageBindingError` with the contract rule filled in.

    Raises:
        ValueError: ``code`` is not a binding code.
    """
    if code not in _BINDING_CODES:
        raise ValueError(f"{code!r} is not a package binding code")
    err = _make(code, message, pointer, details)
    assert isinstance(err, PackageBindingError)
    return err


# --------------------------------------------------------------------------- schema


@cache
def _schema_text() -> str:
    return resources.files(__package__).joinpath("schemas", SCHEMA_FILE).read_text("utf-8")


def load_schema() -> dict[str, Any]:
    """Return evstore's own schema for the contract, parsed (a fresh copy each call).

    Returns:
        The JSON Schema 2020-12 document; the root validates a package, and
        ``$defs`` has ``request``, ``envelope``, ``claim``, ``citation`` among others.
    """
    return json.loads(_schema_text())


@cache
def _validators() -> Mapping[str, jsonschema_rs.Validator]:
    # offline=True: every $ref is internal ("#/$defs/..."); a network fetch would be a bug.
    vmap = jsonschema_rs.validator_map_for(
        json.loads(_schema_text()), validate_formats=True, offline=True
    )
    return MappingProxyType(
        {
            "package": vmap["#/$defs/package"],
            "request": vmap["#/$defs/request"],
            "envelope": vmap["#/$defs/envelope"],
            "claim": vmap["#/$defs/claim"],
            "citation": vmap["#/$defs/citation"],
        }
    )


def _sort_key(path: list[str | int]) -> tuple[tuple[int, int | str], ...]:
    # Array indexes compare as numbers, so /items/2 comes before /items/10.
    return tuple((0, t) if isinstance(t, int) else (1, t) for t in path)


def _schema_faults(part: str, doc: Any, code: str) -> list[PackageError]:
    found = []
    for e in _validators()[part].iter_errors(doc):
        message = e.message
        if len(message) > _MAX_MESSAGE:
            message = message[:_MAX_MESSAGE] + "..."
        details: dict[str, Any] = {
            "keyword": e.kind.name,
            "schema_path": join_pointer("", *e.schema_path),
        }
        extra = e.kind.as_dict()
        # Only the small facts (missing or unexpected names, limits, patterns, formats);
        # enum and const values are in the schema already.
        for key in ("property", "unexpected", "limit", "pattern", "format", "types"):
            if key in extra:
                details[key] = extra[key]
        found.append(
            (
                _sort_key(list(e.instance_path)),
                e.kind.name,
                _make(code, message, join_pointer("", *e.instance_path), details),
            )
        )
    found.sort(key=lambda f: (f[0], f[1]))
    return [f[2] for f in found]


def budget_default(name: str) -> int:
    """The schema's default for one request budget limit.

    Args:
        name: a member of ``$defs/budget``, e.g. ``"items"`` or ``"context_bytes"``.

    Returns:
        The default (``items`` -> 128). Absent or zero limits mean this value.

    Raises:
        KeyError: ``name`` is not a budget limit.
    """
    return int(_budget_defaults()[name])


@cache
def _budget_defaults() -> Mapping[str, int]:
    props = json.loads(_schema_text())["$defs"]["budget"]["properties"]
    return MappingProxyType({k: v["default"] for k, v in props.items()})


def effective_item_budget(request: Any) -> int:
    """The number of items a package prepared for ``request`` may hold.

    Args:
        request: the package's ``request`` object (malformed values count as absent).

    Returns:
        ``request.budget.items`` when it is a positive integer, else the schema default (128):
        the contract says an omitted or zero limit uses the default.
    """
    return _rules.effective_item_budget(request, budget_default("items"))


# --------------------------------------------------------------------------- detection


def detect(doc: Any) -> DocumentKind | None:
    """Tell which document of this contract ``doc`` is, by its discriminators.

    - ``"package"``: an object whose ``kind`` is ``"answer-evidence-context"`` (the
      package's const). ``schema_version`` is not required here, so a package of another
      release is still recognized and then fails ``package.schema`` at ``/schema_version``.
    - ``"envelope"``: no ``kind``/``schema_version``, ``version == "1.3.0"`` and a
      ``package_id`` or ``claims`` member (both required by the envelope, forbidden in a request).
    - ``"request"``: no ``kind``/``schema_version``, ``version == "1.3.0"`` and a
      ``question`` member (required by the request, forbidden in an envelope).

    Args:
        doc: a parsed JSON value.

    Returns:
        ``"package"``, ``"request"``, ``"envelope"`` or ``None`` when none matches.
    """
    if not isinstance(doc, dict):
        return None
    if doc.get("kind") == PACKAGE_KIND:
        return "package"
    if "kind" in doc or "schema_version" in doc or doc.get("version") != RELEASE:
        return None
    if "package_id" in doc or "claims" in doc:
        return "envelope"
    if "question" in doc:
        return "request"
    return None


# --------------------------------------------------------------------------- validation

Faults = tuple[list[PackageError], list[PackageError]]


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def _emit(found: list[tuple[str, str, str, dict[str, Any] | None]]) -> list[PackageError]:
    return [_make(code, message, pointer, details) for code, pointer, message, details in found]


def validate_package(doc: Any, settings: Mapping[str, Any] | None = None) -> Faults:
    """Check a retained package against every structural and semantic rule.

    Args:
        doc: the parsed package (a dict from the strict JSON reader).
        settings: store settings; ``packages.strict_context_bytes`` (bool, or "true"/"1")
            turns context size faults from warnings into errors.

    Returns:
        ``(errors, warnings)``. Errors are :class:`PackageError` (and
        :class:`PackageBindingError` for ``package.revision-conflict`` between two items of
        this package), structure first (``package.schema``, ordered by pointer), then the
        semantic rules. Warnings are ``package.context-bytes``/``package.context-tokens``
        faults when not strict. Empty errors means the package is acceptable.

    Contract:
        the whole schema; semantic sections as listed in :data:`CODES`.
    """
    errors = _schema_faults("package", doc, CODE_PACKAGE_SCHEMA)
    hard, soft = _rules.package_faults(doc, budget_default("items"))
    errors += _emit(hard)
    soft_errors = _emit(soft)
    if settings is not None and _truthy(settings.get(STRICT_CONTEXT_BYTES, False)):
        return errors + soft_errors, []
    return errors, soft_errors


def validate_request(doc: Any) -> Faults:
    """Check a standalone request (``$defs/request``).

    Args:
        doc: the parsed request.

    Returns:
        ``(errors, warnings)``: ``request.schema`` faults, then ``request.interval-order``
        for ``filters.source_interval``; warnings is always empty (kept for one call shape).
    """
    errors = _schema_faults("request", doc, CODE_REQUEST_SCHEMA)
    errors += _emit(_rules.request_faults(doc, "", CODE_REQUEST_INTERVAL_ORDER))
    return errors, []


def validate_envelope(doc: Any, package: Any = None) -> Faults:
    """Check an answer envelope, and with its package, every citation against it.

    Args:
        doc: the parsed envelope.
        package: the stored package the envelope answers from (already accepted), or
            ``None`` to check the envelope alone.

    Returns:
        ``(errors, warnings)``: ``envelope.schema`` faults (the claim conditionals
        included), then ``envelope.interval-order``; with ``package`` also
        ``envelope.package-mismatch`` (package_id differs from the package's id, compared as
        UUIDs, case-insensitively), and per citation ``envelope.citation-unknown-evidence``,
        ``envelope.citation-quote`` (quote not an exact substring of the item's text) and
        ``envelope.citation-reference`` (reference not equal to the item's). Warnings is
        always empty.

    Contract:
        ``$defs/envelope``, ``$defs/claim``, ``$defs/citation``.
    """
    errors = _schema_faults("envelope", doc, CODE_ENVELOPE_SCHEMA)
    errors += _emit(_rules.envelope_faults(doc, package))
    return errors, []


# --------------------------------------------------------------------------- bindings


def revision_bindings(
    package: Any,
) -> list[tuple[str, tuple[str, str, str], tuple[str, str, str, str]]]:
    """The recording-revision bindings a package asks the store to hold, one per item.

    Args:
        package: a parsed package (items with a malformed reference are skipped).

    Returns:
        ``[(pointer, key, value), ...]`` in item order, where ``pointer`` is
        ``/items/<i>/reference``, ``key`` is ``(workspace_id, recording_id,
        recording_revision)`` and ``value`` is ``(document_digest, source_digest,
        source_map_digest, identity_digest)``. UUIDs are lowercased (RFC 4122: case
        does not matter) and the revision is the canonical decimal string of its integer
        value (it may exceed 2**63, so keep it as text or numeric in a database).

    Contract:
        ``$defs/reference``: the first accepted write binds the key to the value.
    """
    return _rules.revision_bindings(package)


def revision_conflicts(package: Any) -> list[PackageBindingError]:
    """Items of one package that bind one recording revision to different digests.

    Args:
        package: a parsed package.

    Returns:
        One ``package.revision-conflict`` per disagreeing item after the first item that
        bound the key, at ``/items/<i>/reference``; empty when consistent. Also part of
        :func:`validate_package`.
    """
    return [
        binding_error(code, message, pointer, details)
        for code, pointer, message, details in _rules.revision_conflict_faults(package)
    ]


def measure_context(context: Mapping[str, Any]) -> int:
    r"""UTF-8 size of the context object as the contract counts it, with its values as given.

    The object is serialized on its own, in its own member order, compactly
    (``separators=(",", ":")``), non-ASCII unescaped (``ensure_ascii=False``); control
    characters, ``"`` and ``\`` are escaped as JSON requires. The schema's one example
    (``bytes`` 150) holds under this measure.

    Args:
        context: the package's ``context`` object.

    Returns:
        The size in bytes; a correct package has
        ``context["bytes"] == measure_context(context)``.
    """
    return _rules.measure_context(context)


def context_fixed_point(context: Mapping[str, Any]) -> int | None:
    """The ``bytes`` value (= ``tokens``) that would make ``context`` self-consistent.

    Args:
        context: the package's ``context`` object (not modified).

    Returns:
        The smallest n such that setting ``bytes`` (and ``tokens`` when present) to n gives
        a serialization of n bytes, or ``None`` when no such n exists.
    """
    return _rules.context_fixed_point(copy.copy(dict(context)))
