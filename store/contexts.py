"""Notarius v1 published evidence contexts and evstore's generic source documents.

This module owns every rule of ``notarius-evidence-context-v1`` and every ``context.*``
error code. All functions are pure: no database, no files, no canonical bytes. They take
values produced by the strict JSON reader (``canonical.loads``) and return or raise typed
:class:`ContextError` faults, each with a stable code, the contract section (``rule``) and an
RFC 6901 pointer.

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

from collections.abc import Container, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from .errors import ContractError, join_pointer

__all__ = [
    "CODES",
    "DESCRIPTOR_KEYS",
    "EVIDENCE_CONTEXT_DESCRIPTOR",
    "INDEX_KEY",
    "REF_FIELDS",
    "SOURCE_DOCUMENT_DESCRIPTOR",
    "UNIT_FIELDS",
    "UNIT_OPTIONAL_FIELDS",
    "ContextError",
    "check_against_source",
    "check_descriptor",
    "check_index",
    "detect",
    "looks_like_units",
    "select_excerpt",
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

#: Every code this module raises, with its meaning (for docs/errors.md and uniqueness tests).
CODES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "context.descriptor-shape": "descriptor is not an object, or has a member other than "
        "the six DESCRIPTOR_KEYS",
        "context.descriptor-kind": "descriptor artifact_kind is missing or not the contract value",
        "context.descriptor-media-type": "descriptor media_type is missing or not the contract "
        "value",
        "context.descriptor-schema-id": "descriptor schema_id is missing or not the contract value",
        "context.descriptor-schema-name": "descriptor schema_name is missing or not the contract "
        "value",
        "context.unsupported-version": "descriptor schema_version is missing or not a version "
        "evstore decodes (v1 only)",
        "context.descriptor-logical-file": "descriptor logical_file is missing or not the "
        "contract value (a non-empty string for source documents)",
        "context.logical-file-missing": "the descriptor's logical file is not in the bundle",
        "context.payload-not-array": "the payload or source document is not a top-level JSON array",
        "context.unit-shape": "a unit is not an object, lacks a required member or has an "
        "unknown fixed member",
        "context.unit-id": "unit id is not a JSON integer in +-(2^53-1) (booleans and "
        "fractions rejected)",
        "context.unit-kind": "unit kind is not a non-empty string",
        "context.unit-text": "unit text is not a string",
        "context.unit-metadata": "unit metadata is present but not a JSON object",
        "context.ref-shape": "ref is not an object with exactly source_id, start_unit_id and "
        "end_unit_id",
        "context.ref-source-id": "ref source_id is not a non-empty string",
        "context.self-ref": "ref start_unit_id or end_unit_id is not the unit's own id",
        "context.source-mixed": "a unit's source_id differs from the first unit's",
        "context.unit-duplicate": "a unit id occurs more than once",
        "context.source-mismatch": "a unit differs from the source document's unit of that id "
        "(metadata included), or the excerpt is from another source",
        "context.source-order": "units do not follow the source document's position order",
        "context.unit-unknown": "a unit id does not occur in the source document",
        "context.range-unknown": "an excerpt range endpoint is not a unit id of the source "
        "document",
        "context.range-order": "an excerpt range starts after its end in source position order",
    }
)


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
    the single ``context.unsupported-version`` fault plus any shape faults.

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
    if not isinstance(desc, dict):
        return [
            _err(
                "context.descriptor-shape",
                pointer,
                "descriptor is not a JSON object",
                _RULE_DISCOVERY,
            )
        ]
    faults = [
        _err(
            "context.descriptor-shape",
            join_pointer(pointer, key),
            f"unknown descriptor member {key!r}; the members are {', '.join(DESCRIPTOR_KEYS)}",
            _RULE_DISCOVERY,
        )
        for key in desc
        if key not in DESCRIPTOR_KEYS
    ]
    version = desc.get("schema_version")
    if not isinstance(version, str) or version != expected["schema_version"]:
        faults.append(
            _err(
                "context.unsupported-version",
                join_pointer(pointer, "schema_version"),
                "descriptor has no schema_version"
                if "schema_version" not in desc
                else f"schema version {version!r} is not supported; evstore decodes only "
                f"{expected['schema_version']!r}",
                _RULE_DISCOVERY,
                expected=expected["schema_version"],
            )
        )
        return faults
    for key in DESCRIPTOR_KEYS:
        where = join_pointer(pointer, key)
        if key not in desc:
            faults.append(
                _err(_DESCRIPTOR_CODES[key], where, f"descriptor has no {key}", _RULE_DISCOVERY)
            )
            continue
        value = desc[key]
        if key in expected:
            ok = isinstance(value, str) and value == expected[key]
            want = repr(expected[key])
        else:
            ok = _is_nonempty_str(value)
            want = "a non-empty string"
        if not ok:
            faults.append(
                _err(
                    _DESCRIPTOR_CODES[key],
                    where,
                    f"descriptor {key} is {value!r}, expected {want}",
                    _RULE_DISCOVERY,
                    expected=expected.get(key),
                )
            )
    return faults


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


def _validate_units(doc: Any, rule: str) -> list[ContextError]:
    """Apply the unit-array rules shared by payloads and source documents."""
    if not isinstance(doc, list):
        return [
            _err(
                "context.payload-not-array",
                "",
                f"expected a top-level JSON array of source units, got {_json_type(doc)}",
                rule,
            )
        ]
    faults: list[ContextError] = []
    first_at: dict[int, int] = {}
    source: tuple[str, str] | None = None  # (source_id, pointer where first seen)
    for i, unit in enumerate(doc):
        at = join_pointer("", i)
        if not isinstance(unit, dict):
            faults.append(
                _err(
                    "context.unit-shape",
                    at,
                    f"a unit must be a JSON object, got {_json_type(unit)}",
                    rule,
                )
            )
            continue
        faults.extend(
            _err("context.unit-shape", join_pointer(at, name), f"unit has no {name}", rule)
            for name in UNIT_FIELDS
            if name not in unit
        )
        faults.extend(
            _err(
                "context.unit-shape",
                join_pointer(at, name),
                f"unknown fixed unit member {name!r}; source-owned data belongs in metadata",
                rule,
            )
            for name in unit
            if name not in _UNIT_ALLOWED
        )
        uid = unit.get("id")
        id_ok = _is_json_int(uid)
        if "id" in unit and not id_ok:
            faults.append(
                _err(
                    "context.unit-id",
                    join_pointer(at, "id"),
                    f"unit id must be a JSON integer in +-(2^53-1), got {uid!r}",
                    rule,
                )
            )
        if "kind" in unit and not _is_nonempty_str(unit["kind"]):
            faults.append(
                _err(
                    "context.unit-kind",
                    join_pointer(at, "kind"),
                    f"unit kind must be a non-empty string, got {unit['kind']!r}",
                    rule,
                )
            )
        if "text" in unit and not isinstance(unit["text"], str):
            faults.append(
                _err(
                    "context.unit-text",
                    join_pointer(at, "text"),
                    f"unit text must be a string, got {_json_type(unit['text'])}",
                    rule,
                )
            )
        if "metadata" in unit and not isinstance(unit["metadata"], dict):
            faults.append(
                _err(
                    "context.unit-metadata",
                    join_pointer(at, "metadata"),
                    f"unit metadata must be a JSON object, got {_json_type(unit['metadata'])}",
                    rule,
                )
            )
        if "ref" in unit:
            source, ref_faults = _check_ref(
                unit["ref"], uid if id_ok else None, join_pointer(at, "ref"), source, rule
            )
            faults.extend(ref_faults)
        if id_ok:
            if uid in first_at:
                faults.append(
                    _err(
                        "context.unit-duplicate",
                        join_pointer(at, "id"),
                        f"unit id {uid} already occurs at /{first_at[uid]}",
                        rule,
                        first=join_pointer("", first_at[uid]),
                    )
                )
            else:
                first_at[uid] = i
    return faults


def _check_ref(
    ref: Any, uid: int | None, at: str, source: tuple[str, str] | None, rule: str
) -> tuple[tuple[str, str] | None, list[ContextError]]:
    """Check one self ref; returns the excerpt's source (first seen) and the faults."""
    if not isinstance(ref, dict):
        return source, [
            _err("context.ref-shape", at, f"ref must be a JSON object, got {_json_type(ref)}", rule)
        ]
    faults = [
        _err("context.ref-shape", join_pointer(at, name), f"ref has no {name}", rule)
        for name in REF_FIELDS
        if name not in ref
    ]
    faults.extend(
        _err("context.ref-shape", join_pointer(at, name), f"unknown ref member {name!r}", rule)
        for name in ref
        if name not in _REF_ALLOWED
    )
    if "source_id" in ref:
        sid = ref["source_id"]
        where = join_pointer(at, "source_id")
        if not _is_nonempty_str(sid):
            faults.append(
                _err(
                    "context.ref-source-id",
                    where,
                    f"source_id must be a non-empty string, got {sid!r}",
                    rule,
                )
            )
        elif source is None:
            source = (sid, where)
        elif sid != source[0]:
            faults.append(
                _err(
                    "context.source-mixed",
                    where,
                    f"source_id {sid!r} differs from {source[0]!r} at {source[1]}",
                    rule,
                    expected=source[0],
                )
            )
    # Without a valid id there is nothing to compare against; unit-id already says why.
    if uid is not None:
        for name in ("start_unit_id", "end_unit_id"):
            if name in ref and not (_is_json_int(ref[name]) and ref[name] == uid):
                faults.append(
                    _err(
                        "context.self-ref",
                        join_pointer(at, name),
                        f"{name} is {ref[name]!r}; a self ref names the unit's own id {uid}",
                        rule,
                    )
                )
    return source, faults


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


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


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

    A shape hint only, for a message such as "pass --kind evidence-context or --kind
    source-document"; it does not validate. ``[]`` looks like units.
    """
    return isinstance(doc, list) and all(
        isinstance(unit, dict) and all(name in unit for name in UNIT_FIELDS) for unit in doc
    )


def detect(doc: Any) -> str | None:
    """Content detection for this module's kinds: always ``None``.

    An evidence-context payload and a source document have the same shape, and the
    contract allows an excerpt to equal its whole source document, so no content rule can
    tell them apart, and a wrong guess could not be caught later by any validator. evstore
    therefore never guesses: a standalone file needs ``--kind evidence-context`` or
    ``--kind source-document``, and inside a run bundle the descriptor decides (see
    docs/bundle.md#detection). Use :func:`looks_like_units` to word the error.

    Args:
        doc: a parsed JSON value.

    Returns:
        None.
    """
    return None
