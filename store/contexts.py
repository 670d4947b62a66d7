"""Notarius v1 published evidence contexts and evstore's generic source documents.

This module owns every rule of ``notarius-evidence-context-v1`` and every ``context.*``
error code. The rules are pure functions (no database, no files): they take values produced
by the strict JSON reader (``canonical.loads``) and return or raise typed
:class:`ContextError` faults, each with a stable code, the contract section (``rule``) and an
RFC 6901 pointer. At the end, the store integration: the kind handlers
:class:`EvidenceContextKind` and :class:`SourceDocumentKind`, and :class:`ContextOps`
(``store.contexts``).

Terms:
    unit: a generic source unit, a JSON object with exactly ``id`` (a JSON integer),
        ``kind`` (a non-empty string), ``text`` (a string) and ``ref``, plus an optional
        ``metadata`` object owned by the source.
    self ref: a unit's ``ref``, exactly ``source_id`` (a non-empty string),
        ``start_unit_id`` and ``end_unit_id``, both equal to the unit's own ``id``.
    payload (evidence context): the published excerpt, a top-level JSON array of units of
        one source, each unit at most once, in source position order. ``[]`` is valid.
    source document: the complete unit list of one source in position order, the same
        array-of-units shape (see docs/bundle.md#generic-source-documents). Position is
        the array index; numeric ids need not be monotonic.
    descriptor: the six-value object that announces a logical file in a run bundle's
        ``index.json``; its key names are :data:`DESCRIPTOR_KEYS` (docs/bundle.md).

Checks are split the way the contract splits them: :func:`check_descriptor` and
:func:`check_index` (identity and discovery), :func:`validate_payload` (payload),
:func:`check_against_source` (exactness and order, possible only when the store holds the
source document) and :func:`select_excerpt` (the producer's selection rule).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Container, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from . import blobs
from .artifacts import ArtifactResult
from .canonical import loads
from .errors import ContractError, EvstoreError, InputError, NotFound, join_pointer
from .refs import parse_ref
from .txn import Txn

if TYPE_CHECKING:
    from .api import Store

__all__ = [
    "CODES",
    "ContextError",
    "ContextOps",
    "DESCRIPTOR_KEYS",
    "EVIDENCE_CONTEXT_DESCRIPTOR",
    "EvidenceContextKind",
    "INDEX_KEY",
    "REF_FIELDS",
    "SOURCE_DOCUMENT_DESCRIPTOR",
    "SourceDocumentKind",
    "UNIT_FIELDS",
    "UNIT_OPTIONAL_FIELDS",
    "check_against_source",
    "check_descriptor",
    "check_index",
    "detect",
    "load_source_document",
    "looks_like_units",
    "select_excerpt",
    "source_id_of",
    "validate_payload",
    "validate_source_document",
]

_CONTRACT = "notarius-evidence-context-v1"
_RULE_DISCOVERY = _CONTRACT + "#identity-and-discovery"
_RULE_PAYLOAD = _CONTRACT + "#payload"
_RULE_SELECTION = _CONTRACT + "#selection-and-citations"
# The source document is evstore's own definition (the contract names it, never its shape).
_RULE_SOURCE_DOCUMENT = "docs/bundle.md#generic-source-documents"

#: JSON key names of a descriptor, in the contract's table order. Defined here once; the
#: contract gives the six values but not their key names (docs/bundle.md#descriptors).
DESCRIPTOR_KEYS: Final[tuple[str, ...]] = (
    "artifact_kind",
    "media_type",
    "schema_id",
    "schema_name",
    "schema_version",
    "logical_file",
)

#: The member of ``index.json`` that holds the evidence-context descriptor (contract text).
INDEX_KEY: Final = "evidence_context"

#: The six descriptor values fixed by notarius-evidence-context-v1#identity-and-discovery.
EVIDENCE_CONTEXT_DESCRIPTOR: Final[Mapping[str, str]] = MappingProxyType(
    {
        "artifact_kind": "source/evidence-context",
        "media_type": "application/json",
        "schema_id": "notarius.source.evidence_context",
        "schema_name": "notarius_source_evidence_context_v1",
        "schema_version": "v1",
        "logical_file": "evidence-context.json",
    }
)

#: evstore's descriptor for a generic source document inside a bundle. Five values are
#: fixed; ``logical_file`` is free (a bundle may hold several sources), so it is absent here.
SOURCE_DOCUMENT_DESCRIPTOR: Final[Mapping[str, str]] = MappingProxyType(
    {
        "artifact_kind": "source/document",
        "media_type": "application/json",
        "schema_id": "evstore.source.document",
        "schema_name": "evstore_source_document_v1",
        "schema_version": "v1",
    }
)

#: Required unit members, then the one optional member (contract: Payload).
UNIT_FIELDS: Final[tuple[str, ...]] = ("id", "kind", "text", "ref")
UNIT_OPTIONAL_FIELDS: Final[tuple[str, ...]] = ("metadata",)
#: The exact members of a unit's self ref.
REF_FIELDS: Final[tuple[str, ...]] = ("source_id", "start_unit_id", "end_unit_id")

_UNIT_ALLOWED = frozenset(UNIT_FIELDS + UNIT_OPTIONAL_FIELDS)
_REF_ALLOWED = frozenset(REF_FIELDS)
# I-JSON (RFC 7493) interoperable integers; the strict reader enforces the same bound, and
# repeating it here keeps these pure rules right for values that did not come through it.
_MAX_SAFE_INT = 2**53 - 1

_DESCRIPTOR_CODES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "artifact_kind": "context.descriptor-kind",
        "media_type": "context.descriptor-media-type",
        "schema_id": "context.descriptor-schema-id",
        "schema_name": "context.descriptor-schema-name",
        "schema_version": "context.unsupported-version",
        "logical_file": "context.descriptor-logical-file",
    }
)

#: Every code this module raises -> its meaning (docs/errors.md is generated from it).
CODES: Final[dict[str, str]] = {
    "context.descriptor-shape": "descriptor not an object, or a member outside DESCRIPTOR_KEYS",
    "context.descriptor-kind": "descriptor artifact_kind missing or not the contract's",
    "context.descriptor-media-type": "descriptor media_type missing or not the contract's",
    "context.descriptor-schema-id": "descriptor schema_id missing or not the contract's",
    "context.descriptor-schema-name": "descriptor schema_name missing or not the contract's",
    "context.unsupported-version": "descriptor schema_version missing or not v1 (only v1 decodes)",
    "context.descriptor-logical-file": "descriptor logical_file missing or not the contract's",
    "context.logical-file-missing": "the descriptor's logical file is not in the bundle",
    "context.payload-not-array": "payload or source document is not a top-level JSON array",
    "context.unit-shape": "unit not an object, a required member missing, or an unknown member",
    "context.unit-id": "unit id not a JSON integer within +-(2^53-1) (no bool, no fraction)",
    "context.unit-kind": "unit kind not a non-empty string",
    "context.unit-text": "unit text not a string",
    "context.unit-metadata": "unit metadata present but not a JSON object",
    "context.ref-shape": "ref not an object of exactly source_id, start_unit_id, end_unit_id",
    "context.ref-source-id": "ref source_id not a non-empty string",
    "context.self-ref": "ref start_unit_id or end_unit_id is not the unit's own id",
    "context.source-mixed": "a unit's source_id differs from the excerpt's first source_id",
    "context.unit-duplicate": "a unit id occurs twice (each unit at most once)",
    "context.source-mismatch": "unit differs from the source document's unit, or another source",
    "context.source-order": "units not in the source document's position order",
    "context.unit-unknown": "a unit id that the source document does not contain",
    "context.range-unknown": "an excerpt range endpoint is not a unit id of the source document",
    "context.range-order": "an excerpt range starts after its end in source position order",
    "context.kind-ambiguous": "an array of source units given without --kind (two kinds fit)",
    "not-found.source-document": "the ref names no stored source-document artifact",
}


class ContextError(ContractError):
    """A notarius v1 evidence-context or generic source-document rule failed.

    ``code`` is one of :data:`CODES`; ``rule`` names the contract section; ``pointer``
    addresses the offending value inside the document checked (the payload, the source
    document, the descriptor, or for :func:`select_excerpt` the ``ranges`` argument).
    """

    default_code = "context.invalid"


def _err(code: str, pointer: str, message: str, rule: str, **details: Any) -> ContextError:
    kept = {k: v for k, v in details.items() if v is not None}
    return ContextError(message, code=code, rule=rule, pointer=pointer, details=kept or None)


class _Faults(list[ContextError]):
    """A fault list bound to one contract rule, so each check is one short ``add`` line."""

    def __init__(self, rule: str) -> None:
        super().__init__()
        self.rule = rule

    def add(self, code: str, pointer: str, message: str, **details: Any) -> None:
        self.append(_err(code, pointer, message, self.rule, **details))


def _is_json_int(value: Any) -> bool:
    # bool is an int subclass in Python but a distinct JSON type; floats such as 10.0 are
    # rejected too: the issue asks for a JSON integer, written without fraction or exponent.
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT
    )


def _is_nonempty_str(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def _show(value: Any) -> str:
    """A bounded repr for messages: a fault must not echo a whole document back."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _json_type(value: Any) -> str:
    for name, types in _JSON_TYPES:
        if isinstance(value, types):
            return name
    return "null" if value is None else type(value).__name__


# bool before number: bool is an int subclass.
_JSON_TYPES: tuple[tuple[str, type | tuple[type, ...]], ...] = (
    ("boolean", bool),
    ("number", (int, float)),
    ("string", str),
    ("array", list),
    ("object", dict),
)


# --------------------------------------------------------------------------- descriptors


def check_descriptor(
    desc: Any,
    pointer: str = "/" + INDEX_KEY,
    *,
    expected: Mapping[str, str] = EVIDENCE_CONTEXT_DESCRIPTOR,
) -> list[ContextError]:
    """Verify a descriptor's six values (notarius-evidence-context-v1#identity-and-discovery).

    The descriptor must be a JSON object whose members are exactly :data:`DESCRIPTOR_KEYS`,
    each equal (type and value) to ``expected``. A key absent from ``expected`` (only
    ``logical_file`` of :data:`SOURCE_DOCUMENT_DESCRIPTOR`) must be a non-empty string.
    Only schema version ``v1`` is decodable: when ``schema_version`` differs, the other
    values are not judged (they belong to a schema evstore does not know) and the result is
    the ``context.unsupported-version`` fault after any shape faults.

    Args:
        desc: the descriptor value as parsed from ``index.json``.
        pointer: JSON Pointer of ``desc`` inside ``index.json``; faults extend it.
        expected: the fixed values; :data:`EVIDENCE_CONTEXT_DESCRIPTOR` or
            :data:`SOURCE_DOCUMENT_DESCRIPTOR`.

    Returns:
        Every fault found, in key order; ``[]`` when the descriptor is valid. Codes:
        ``context.descriptor-shape``, ``context.descriptor-kind``,
        ``context.descriptor-media-type``, ``context.descriptor-schema-id``,
        ``context.descriptor-schema-name``, ``context.unsupported-version``,
        ``context.descriptor-logical-file``.
    """
    faults = _Faults(_RULE_DISCOVERY)
    if not isinstance(desc, dict):
        faults.add("context.descriptor-shape", pointer, "descriptor is not a JSON object")
        return list(faults)
    for key in desc:
        if key not in DESCRIPTOR_KEYS:
            faults.add(
                "context.descriptor-shape",
                join_pointer(pointer, key),
                f"unknown descriptor member {key!r}; the members are {', '.join(DESCRIPTOR_KEYS)}",
            )
    want_version = expected["schema_version"]
    version = desc.get("schema_version")
    if not isinstance(version, str) or version != want_version:
        faults.add(
            "context.unsupported-version",
            join_pointer(pointer, "schema_version"),
            f"schema version {_show(version)} is not supported; "
            f"evstore decodes only {want_version!r}",
            expected=want_version,
        )
        return list(faults)
    for key in DESCRIPTOR_KEYS:
        value = desc.get(key)
        if key in expected:
            ok, want = isinstance(value, str) and value == expected[key], repr(expected[key])
        else:
            ok, want = _is_nonempty_str(value), "a non-empty string"
        if not ok:
            got = f"is {_show(value)}" if key in desc else "is missing"
            faults.add(
                _DESCRIPTOR_CODES[key],
                join_pointer(pointer, key),
                f"descriptor {key} {got}, expected {want}",
                expected=expected.get(key),
            )
    return list(faults)


def check_index(index: Mapping[str, Any], files: Container[str]) -> list[ContextError]:
    """Check the evidence-context descriptor of a bundle's ``index.json``, if there is one.

    An index without the :data:`INDEX_KEY` member means evidence publication was not
    enabled for that bundle: that is not an error and the result is ``[]``. Otherwise the
    descriptor is verified by :func:`check_descriptor` and, when valid, its logical file
    must be one of ``files``. Path safety of logical files is the bundle reader's job.

    Args:
        index: the parsed ``index.json`` object (its top-level shape is checked by the
            bundle reader).
        files: the logical file names present in the bundle.

    Returns:
        Every fault; codes as :func:`check_descriptor`, plus
        ``context.logical-file-missing`` (pointer ``/evidence_context/logical_file``).
    """
    if INDEX_KEY not in index:
        return []
    pointer = "/" + INDEX_KEY
    desc = index[INDEX_KEY]
    faults = check_descriptor(desc, pointer)
    if not faults and desc["logical_file"] not in files:
        faults.append(
            _err(
                "context.logical-file-missing",
                join_pointer(pointer, "logical_file"),
                f"the descriptor names {desc['logical_file']!r}, which is not in the bundle",
                _RULE_DISCOVERY,
            )
        )
    return faults


# --------------------------------------------------------------------------- unit arrays

# Typed unit members: name -> (test, code, what the value must be).
_MEMBER_RULES: Final[dict[str, tuple[Any, str, str]]] = {
    "id": (_is_json_int, "context.unit-id", "a JSON integer within +-(2^53-1)"),
    "kind": (_is_nonempty_str, "context.unit-kind", "a non-empty string"),
    "text": (lambda v: isinstance(v, str), "context.unit-text", "a string"),
    "metadata": (lambda v: isinstance(v, dict), "context.unit-metadata", "a JSON object"),
}


def _validate_units(doc: Any, rule: str) -> list[ContextError]:
    """Apply the unit-array rules shared by payloads and source documents."""
    faults = _Faults(rule)
    if not isinstance(doc, list):
        faults.add(
            "context.payload-not-array",
            "",
            f"expected a top-level JSON array of source units, got {_json_type(doc)}",
        )
        return list(faults)
    first_at: dict[int, int] = {}
    source: tuple[str, str] | None = None  # (source_id, pointer where first seen)
    for i, unit in enumerate(doc):
        at = join_pointer("", i)
        if not isinstance(unit, dict):
            faults.add("context.unit-shape", at, f"a unit is a JSON object, not {_json_type(unit)}")
            continue
        for name in UNIT_FIELDS:
            if name not in unit:
                faults.add("context.unit-shape", join_pointer(at, name), f"unit has no {name}")
        for name in unit:
            if name not in _UNIT_ALLOWED:
                faults.add(
                    "context.unit-shape",
                    join_pointer(at, name),
                    f"unknown fixed unit member {name!r}; source-owned data belongs in metadata",
                )
        for name, (test, code, what) in _MEMBER_RULES.items():
            if name in unit and not test(unit[name]):
                faults.add(
                    code,
                    join_pointer(at, name),
                    f"unit {name} must be {what}, got {_show(unit[name])}",
                )
        uid = unit["id"] if _is_json_int(unit.get("id")) else None
        if "ref" in unit:
            source = _check_ref(unit["ref"], uid, join_pointer(at, "ref"), source, faults)
        if uid is not None:
            if uid in first_at:
                first = join_pointer("", first_at[uid])
                faults.add(
                    "context.unit-duplicate",
                    join_pointer(at, "id"),
                    f"unit id {uid} already occurs at {first}",
                    first=first,
                )
            else:
                first_at[uid] = i
    return list(faults)


def _check_ref(
    ref: Any, uid: int | None, at: str, source: tuple[str, str] | None, faults: _Faults
) -> tuple[str, str] | None:
    """Check one self ref into ``faults``; returns the excerpt's source (first seen)."""
    if not isinstance(ref, dict):
        faults.add("context.ref-shape", at, f"ref must be a JSON object, got {_json_type(ref)}")
        return source
    for name in REF_FIELDS:
        if name not in ref:
            faults.add("context.ref-shape", join_pointer(at, name), f"ref has no {name}")
    for name in ref:
        if name not in _REF_ALLOWED:
            faults.add("context.ref-shape", join_pointer(at, name), f"unknown ref member {name!r}")
    if "source_id" in ref:
        sid, where = ref["source_id"], join_pointer(at, "source_id")
        if not _is_nonempty_str(sid):
            faults.add(
                "context.ref-source-id",
                where,
                f"source_id must be a non-empty string, got {_show(sid)}",
            )
        elif source is None:
            source = (sid, where)
        elif sid != source[0]:
            faults.add(
                "context.source-mixed",
                where,
                f"source_id {sid!r} differs from {source[0]!r} at {source[1]}",
                expected=source[0],
            )
    # Without a valid id there is nothing to compare against; unit-id already says why.
    if uid is not None:
        for name in ("start_unit_id", "end_unit_id"):
            if name in ref and not (_is_json_int(ref[name]) and ref[name] == uid):
                faults.add(
                    "context.self-ref",
                    join_pointer(at, name),
                    f"{name} is {_show(ref[name])}; a self ref names the unit's own id {uid}",
                )
    return source


def validate_payload(payload: Any) -> list[ContextError]:
    """Apply the v1 payload rules to a parsed ``evidence-context.json``.

    The payload is a top-level JSON array (``[]`` is valid: publication enabled, no
    contributing evidence). Each unit is an object with exactly ``id`` (a JSON integer,
    not a boolean or fraction, within +-(2^53-1)), ``kind`` (a non-empty string), ``text``
    (a string) and ``ref``, plus an optional ``metadata`` object. ``ref`` has exactly
    ``source_id`` (a non-empty string), ``start_unit_id`` and ``end_unit_id``, both equal to
    ``id``. One ``source_id`` across the excerpt; each unit id at most once.

    Implements notarius-evidence-context-v1#payload. Exactness and order need the source
    document: see :func:`check_against_source`.

    Args:
        payload: the value from the strict JSON reader.

    Returns:
        Every fault, in document order, pointers such as ``/3/ref/start_unit_id``; ``[]``
        when valid. Codes: ``context.payload-not-array``, ``context.unit-shape``,
        ``context.unit-id``, ``context.unit-kind``, ``context.unit-text``,
        ``context.unit-metadata``, ``context.ref-shape``, ``context.ref-source-id``,
        ``context.self-ref``, ``context.source-mixed``, ``context.unit-duplicate``.
    """
    return _validate_units(payload, _RULE_PAYLOAD)


def validate_source_document(doc: Any) -> list[ContextError]:
    """Apply the generic source-document rules (docs/bundle.md#generic-source-documents).

    A source document is the complete unit list of one source in position order: a
    top-level JSON array of units of exactly the payload's unit shape (so excerpt units
    compare to it member for member), one ``source_id``, each unit id once (ids are how
    refs and ranges name units). Numeric ids need not increase with position. ``[]`` is a
    valid, empty source.

    Args:
        doc: the value from the strict JSON reader.

    Returns:
        Every fault, same codes and pointers as :func:`validate_payload`, with ``rule``
        naming the source-document section.
    """
    return _validate_units(doc, _RULE_SOURCE_DOCUMENT)


# --------------------------------------------------------------------------- source checks


def _first_difference(a: Any, b: Any, pointer: str) -> str | None:
    """Pointer to the first place two JSON values differ, or None when they are equal.

    Equality is JSON equality, the one canonical (RFC 8785) bytes express: member order is
    irrelevant, booleans are not numbers, and numbers compare by value (1 and 1.0 both
    canonicalise to ``1``).
    """
    kind = _json_type(a)
    if kind != _json_type(b):
        return pointer
    if kind == "object":
        for key in sorted(a.keys() | b.keys()):
            where = join_pointer(pointer, key)
            if key not in a or key not in b:
                return where
            found = _first_difference(a[key], b[key], where)
            if found is not None:
                return found
        return None
    if kind == "array":
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = _first_difference(x, y, join_pointer(pointer, i))
            if found is not None:
                return found
        return None if len(a) == len(b) else join_pointer(pointer, min(len(a), len(b)))
    return None if a == b else pointer


def _positions(doc: Any) -> dict[int, int]:
    """Unit id -> position for the well-formed units of a source document (first wins)."""
    out: dict[int, int] = {}
    if isinstance(doc, list):
        for pos, unit in enumerate(doc):
            if isinstance(unit, dict) and _is_json_int(unit.get("id")):
                out.setdefault(unit["id"], pos)
    return out


def source_id_of(units: Any) -> str | None:
    """The excerpt's (or source document's) source_id: the first unit's valid one, if any."""
    found = _source_id(units)
    return found[0] if found else None


def _source_id(units: Any) -> tuple[str, int] | None:
    """The first valid source_id of a unit array and the index of its unit."""
    if isinstance(units, list):
        for i, unit in enumerate(units):
            if isinstance(unit, dict):
                ref = unit.get("ref")
                if isinstance(ref, dict) and _is_nonempty_str(ref.get("source_id")):
                    return ref["source_id"], i
    return None


def check_against_source(payload: Any, source_doc: Any) -> list[ContextError]:
    """Check an excerpt against the source document it was selected from.

    Each unit must equal the document's unit of the same id exactly (JSON equality,
    ``metadata`` included: the excerpt "preserves each selected unit exactly", contract
    Payload section), and units must follow the document's position order whatever their
    numeric ids (Selection And Citations). The payload carries no digest, so this is the
    only exactness check possible.

    Call it after :func:`validate_payload` and :func:`validate_source_document` returned
    ``[]``; malformed units (no dict, no valid id) are skipped here because those
    validators already report them, so no input makes it raise. When the excerpt's
    ``source_id`` is not the document's, a single ``context.source-mismatch`` fault is
    returned: comparing units of two sources says nothing more.

    Args:
        payload: the parsed evidence-context payload.
        source_doc: the parsed source document.

    Returns:
        Every fault; pointers address the payload. Codes: ``context.source-mismatch``
        (pointer to the first differing member, e.g. ``/0/metadata/speaker``),
        ``context.source-order`` (pointer to the unit out of order),
        ``context.unit-unknown`` (pointer ``/i/id``).
    """
    if not isinstance(payload, list):
        return []
    mine, theirs = _source_id(payload), _source_id(source_doc)
    if mine is not None and theirs is not None and mine[0] != theirs[0]:
        return [
            _err(
                "context.source-mismatch",
                join_pointer("", mine[1], "ref", "source_id"),
                f"the excerpt is from source {mine[0]!r}, the document is source {theirs[0]!r}",
                _RULE_PAYLOAD,
                expected=theirs[0],
            )
        ]
    positions = _positions(source_doc)
    faults: list[ContextError] = []
    previous: tuple[int, int] | None = None  # (position, unit id) of the last known unit
    for i, unit in enumerate(payload):
        if not isinstance(unit, dict) or not _is_json_int(unit.get("id")):
            continue
        uid = unit["id"]
        at = join_pointer("", i)
        pos = positions.get(uid)
        if pos is None:
            faults.append(
                _err(
                    "context.unit-unknown",
                    join_pointer(at, "id"),
                    f"unit id {uid} is not in the source document",
                    _RULE_SELECTION,
                )
            )
            continue
        where = _first_difference(unit, source_doc[pos], at)
        if where is not None:
            faults.append(
                _err(
                    "context.source-mismatch",
                    where,
                    f"unit id {uid} differs from the source document's unit "
                    f"(position {pos}) at {where}",
                    _RULE_PAYLOAD,
                    position=pos,
                )
            )
        # Equal positions are a duplicate, which validate_payload reports.
        if previous is not None and pos < previous[0]:
            faults.append(
                _err(
                    "context.source-order",
                    at,
                    f"unit id {uid} (source position {pos}) follows unit id "
                    f"{previous[1]} (source position {previous[0]}); units must be "
                    "in source position order",
                    _RULE_SELECTION,
                    position=pos,
                )
            )
        previous = (pos, uid)
    return faults


# --------------------------------------------------------------------------- producer


def select_excerpt(
    source_doc: Any, ranges: Sequence[tuple[int, int]], window: int
) -> list[dict[str, Any]]:
    """Build an evidence-context payload from a source document (the contract's selection).

    For each range ``(start, end)`` of unit ids (inclusive), both ids must be units of the
    document and ``start`` must not come after ``end`` in position order. The range of
    positions is widened by ``window`` positions on each side and clamped at the document
    boundaries; the union of all widened ranges is returned in position order, each unit
    once. Overlapping or repeated ranges never duplicate a unit; no ranges give ``[]``.
    Implements notarius-evidence-context-v1#selection-and-citations.

    The result holds the document's own unit objects (not copies), so it satisfies
    :func:`validate_payload` and :func:`check_against_source` by construction.

    Args:
        source_doc: a parsed source document; it is validated first.
        ranges: ``(start_unit_id, end_unit_id)`` pairs, JSON integers.
        window: units of context on each side, in source positions (``window_units``).

    Returns:
        The selected units in source position order.

    Raises:
        ContextError: the first fault of :func:`validate_source_document` (pointer into the
            document), ``context.range-unknown`` (an endpoint is not a unit id of the
            document; pointer ``/r/0`` or ``/r/1`` into ``ranges``) or
            ``context.range-order`` (start after end; pointer ``/r``).
        TypeError: ``window`` or a range endpoint is not an int (bools rejected), or a
            range is not a pair.
        ValueError: ``window`` is negative.
    """
    if not isinstance(window, int) or isinstance(window, bool):
        raise TypeError(f"window must be an int, got {type(window).__name__}")
    if window < 0:
        raise ValueError(f"window must be >= 0, got {window}")
    faults = validate_source_document(source_doc)
    if faults:
        raise faults[0]
    positions = {unit["id"]: pos for pos, unit in enumerate(source_doc)}
    last = len(source_doc) - 1
    spans: list[tuple[int, int]] = []
    for r, pair in enumerate(ranges):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise TypeError(f"range {r} must be a (start_unit_id, end_unit_id) pair")
        ends: list[int] = []
        for side, uid in enumerate(pair):
            if not isinstance(uid, int) or isinstance(uid, bool):
                raise TypeError(f"range {r} endpoint {side} must be an int, got {uid!r}")
            if uid not in positions:
                raise _err(
                    "context.range-unknown",
                    join_pointer("", r, side),
                    f"unit id {uid} is not in the source document",
                    _RULE_SELECTION,
                )
            ends.append(positions[uid])
        lo, hi = ends
        if lo > hi:
            raise _err(
                "context.range-order",
                join_pointer("", r),
                f"range {pair[0]}:{pair[1]} starts at source position {lo}, after its "
                f"end at position {hi}",
                _RULE_SELECTION,
            )
        spans.append((max(0, lo - window), min(last, hi + window)))
    selected: list[dict[str, Any]] = []
    upto = -1  # last position already emitted; spans are sorted, so this merges them
    for lo, hi in sorted(spans):
        for pos in range(max(lo, upto + 1), hi + 1):
            selected.append(source_doc[pos])
        upto = max(upto, hi)
    return selected


# --------------------------------------------------------------------------- detection


def looks_like_units(doc: Any) -> bool:
    """Whether ``doc`` has the array-of-units shape (an excerpt or a source document).

    A shape hint only: a non-empty array whose every element is an object carrying the four
    required unit members. It does not validate. ``[]`` does not look like units: an empty
    array says nothing about its role and stays plain JSON unless a kind is given.
    """
    return (
        isinstance(doc, list)
        and bool(doc)
        and all(
            isinstance(unit, dict) and all(name in unit for name in UNIT_FIELDS) for unit in doc
        )
    )


def detect(doc: Any) -> str | None:
    """Content detection for this module's kinds: always ``None``.

    An evidence-context payload and a source document have the same shape, and the
    contract allows an excerpt to equal its whole source document, so no content rule can
    tell them apart, and a wrong guess could not be caught later by any validator. evstore
    therefore never guesses: a standalone file needs ``--kind evidence-context`` or
    ``--kind source-document``, and inside a run bundle the descriptor decides (see
    docs/bundle.md#detection). :meth:`EvidenceContextKind.detect` turns a document that
    :func:`looks_like_units` into a ``context.kind-ambiguous`` error instead.

    Args:
        doc: a parsed JSON value.

    Returns:
        None.
    """
    return None


# --------------------------------------------------------------------------- store integration


def load_source_document(txn: Txn, ref: str) -> tuple[str, Any]:
    """The stored source document a content ref names, read and verified.

    Args:
        txn: an open transaction (any mode).
        ref: a content ref in any accepted form (evstore.refs) of the document's canonical
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
    row = blobs.lookup(txn.conn, parse_ref(ref))
    if row is None or not txn.has_artifact(row.digest.blake3, SourceDocumentKind.name):
        raise NotFound(
            f"{ref} is not a stored source document (ingest it with --kind source-document)",
            code="not-found.source-document",
            details={"ref": ref},
        )
    return row


def _source_attrs(doc: Any) -> list[tuple[str, str]]:
    sid = source_id_of(doc)
    return [("source_id", sid)] if sid else []


class EvidenceContextKind:
    """Kind ``evidence-context``: a notarius v1 published evidence context (the payload).

    check: :func:`validate_payload`; then, when ``txn.options["source_document"]`` names a
    stored source document (``--source-document REF``, or the bundle's own source document),
    :func:`check_against_source`. write: the artifact with lookup attribute ``source_id``
    and, when it was checked, an edge ``source-document`` to the document it was checked
    against (so ``evstore check`` re-checks it and lineage shows it); the result's ``info``
    says ``source_check``: ``checked`` or ``unchecked``.
    """

    name = "evidence-context"
    contract_version = "v1"

    def detect(self, doc: Any) -> bool:
        """Never claims a document; refuses to let an array of units pass as plain JSON.

        Raises:
            InputError: ``context.kind-ambiguous`` when ``doc`` :func:`looks_like_units`:
                it is an evidence context or a source document, and only the caller knows
                which (see :func:`detect`).
        """
        if looks_like_units(doc):
            raise InputError(
                "an array of source units is an evidence context or a source document; "
                "say which with --kind evidence-context or --kind source-document",
                code="context.kind-ambiguous",
                rule=_RULE_SOURCE_DOCUMENT,
            )
        return False

    def check(self, doc: Any, txn: Txn) -> list[EvstoreError]:
        """Payload rules, then source consistency when a source document is named."""
        faults: list[EvstoreError] = list(validate_payload(doc))
        ref = txn.options.get("source_document")
        if faults or not ref:
            return faults
        try:
            _, source = load_source_document(txn, ref)
        except EvstoreError as err:  # reported, not raised: validate mode lists every fault
            return [err]
        return list(check_against_source(doc, source))

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

    def audit(self, doc: Any, address: str, txn: Txn) -> list[EvstoreError]:
        """Payload rules, and the source check again for each document it was checked against."""
        faults: list[EvstoreError] = list(validate_payload(doc))
        for role, dst in txn.edges_from(address):
            if role != "source-document":
                continue
            try:
                _, source = load_source_document(txn, "blake3:" + dst)
            except EvstoreError as err:
                faults.append(err)
                continue
            faults.extend(check_against_source(doc, source))
        return faults


class SourceDocumentKind:
    """Kind ``source-document``: a generic source document (docs/bundle.md).

    Never detected from content (see :func:`detect`). check:
    :func:`validate_source_document`. write: the artifact with lookup attribute
    ``source_id``; ``info`` gives the number of units.
    """

    name = "source-document"
    contract_version = "v1"

    def detect(self, doc: Any) -> bool:
        """Always False: a source document is only ever ingested by name."""
        return False

    def check(self, doc: Any, txn: Txn) -> list[EvstoreError]:
        """The source-document rules."""
        return list(validate_source_document(doc))

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Store the document with its ``source_id``."""
        result = txn.put_artifact(
            self.name, self.contract_version, canonical, attrs=_source_attrs(doc)
        )
        return dataclasses.replace(result, info={"units": len(doc)})


class ContextOps:
    """Evidence-context operations beyond ingest (``store.contexts``)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def excerpt(
        self, source_ref: str, ranges: Sequence[tuple[int, int]], window: int
    ) -> list[dict[str, Any]]:
        """Select an excerpt from a stored source document (:func:`select_excerpt`).

        Args:
            source_ref: content ref of a stored ``source-document`` artifact.
            ranges: ``(start_unit_id, end_unit_id)`` pairs, inclusive.
            window: units of context on each side (``window_units``).

        Returns:
            The payload; ``canonical.dumps`` of it is the byte form hosts compare.

        Raises:
            RefSyntaxError, NotFound (``not-found.source-document``), CorruptionError,
            ContextError (``context.range-unknown``, ``context.range-order``), and as
            :func:`select_excerpt` for a bad window.
        """
        with self.store.reading() as txn:
            _, doc = load_source_document(txn, source_ref)
        return select_excerpt(doc, ranges, window)
