"""Notarius v1 published evidence contexts and evstore's generic source documents: the rules.

This module owns every rule of ``notarius-evidence-context-v1`` and every ``context.*``
error code. It is pure (no database, no files): the functions take values produced by the
strict JSON reader (``canonical.loads``) and return or raise typed
:class:`~evstore.core.errors.ContextError` faults built by :func:`evstore.core.errors.error`, each
with a stable code, the contract section (``rule``) and an RFC 6901 pointer. The store side
(kind handlers, ``store.contexts``) is store/contracts/contexts/store.py.

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
:func:`validate` is the contract-module entry point shared by every contract.

Shapes go through JSON Schema (store/contracts/contexts/schema.py: the unit and ref shape from
``schemas/notarius-evidence-context-v1.schema.json``, descriptors from a schema built from
:data:`EVIDENCE_CONTEXT_DESCRIPTOR` / :data:`SOURCE_DOCUMENT_DESCRIPTOR`), each ``rule-*``
subschema mapped to its code. What a schema cannot state stays here, in Python: a unit id
written without fraction (JSON Schema's data model equates ``10.0`` and ``10``), self refs,
one source per excerpt and unique ids (members compared with each other), and the source
check. Faults of both are reported unit by unit in one documented order.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from ...core.errors import EvstoreError, Faults, error, join_pointer
from ...core.json_schema import truncated_fault
from ...core.near import near_member, near_members
from .schema import (
    DESCRIPTOR_RULES,
    STEP_MEMBER,
    STEP_SOURCE_ID,
    ShapeFault,
    descriptor_verdict,
    json_type,
    shape_faults,
    show,
)

__all__ = [
    "CONTRACT",
    "CONTRACT_VERSION",
    "DESCRIPTOR_KEYS",
    "EVIDENCE_CONTEXT_DESCRIPTOR",
    "INDEX_KEY",
    "KINDS",
    "REF_FIELDS",
    "RULE_DISCOVERY",
    "RULE_PAYLOAD",
    "RULE_SELECTION",
    "RULE_SOURCE_DOCUMENT",
    "SOURCE_DOCUMENT_DESCRIPTOR",
    "UNIT_FIELDS",
    "UNIT_OPTIONAL_FIELDS",
    "check_against_source",
    "check_descriptor",
    "check_index",
    "detect",
    "looks_like_units",
    "select_excerpt",
    "source_id_of",
    "validate",
    "validate_payload",
    "validate_source_document",
]

#: The contract this module implements, and its version (the only decodable schema version).
CONTRACT: Final = "notarius-evidence-context-v1"
CONTRACT_VERSION: Final = "v1"
RULE_DISCOVERY: Final = CONTRACT + "#identity-and-discovery"
RULE_PAYLOAD: Final = CONTRACT + "#payload"
RULE_SELECTION: Final = CONTRACT + "#selection-and-citations"
#: The source document is evstore's own definition (the contract names it, never its shape).
RULE_SOURCE_DOCUMENT: Final = "docs/bundle.md#generic-source-documents"
#: The evstore kinds of this contract: the published excerpt and the source it is cut from.
KINDS: Final[tuple[str, ...]] = ("evidence-context", "source-document")

_SettingsMap = Mapping[str, Any]

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

# I-JSON (RFC 7493) interoperable integers; the strict reader enforces the same bound, and
# repeating it here keeps these pure rules right for values that did not come through it.
_MAX_SAFE_INT = 2**53 - 1


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
) -> list[EvstoreError]:
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
        ``context.descriptor-logical-file``. More unknown members than
        :data:`~evstore.core.json_schema.MAX_SCHEMA_FAULTS`: the first are listed, then one
        ``context.descriptor-shape`` fault at ``pointer`` with ``details.truncated``.
    """
    faults = Faults()
    verdict = descriptor_verdict(desc, expected)
    if verdict.not_object:
        faults.add("context.descriptor-shape", "descriptor is not a JSON object", pointer)
        return faults.errors
    for key in verdict.unexpected:
        faults.add(
            "context.descriptor-shape",
            f"unknown descriptor member {key!r}; the members are {', '.join(DESCRIPTOR_KEYS)}",
            join_pointer(pointer, key),
        )
    if verdict.truncated:  # the schema's faults were cut: the values were not all judged
        faults.errors.append(truncated_fault("context.descriptor-shape", pointer))
        return faults.errors
    for key in DESCRIPTOR_KEYS:
        rule, code = DESCRIPTOR_RULES[key]
        if rule not in verdict.failed:
            continue
        value = desc.get(key)
        if key == "schema_version":
            faults.add(
                code,
                f"schema version {show(value)} is not supported; "
                f"evstore decodes only {expected[key]!r}",
                join_pointer(pointer, key),
                expected=expected[key],
            )
            return faults.errors  # the other values belong to a schema evstore does not know
        want = repr(expected[key]) if key in expected else "a non-empty string"
        got = f"is {show(value)}" if key in desc else "is missing"
        faults.add(
            code,
            f"descriptor {key} {got}, expected {want}",
            join_pointer(pointer, key),
            expected=expected.get(key),
        )
    return faults.errors


def check_index(index: Mapping[str, Any], files: Container[str]) -> list[EvstoreError]:
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
            error(
                "context.logical-file-missing",
                f"the descriptor names {desc['logical_file']!r}, which is not in the bundle",
                join_pointer(pointer, "logical_file"),
                rule=RULE_DISCOVERY,
            )
        )
    return faults


# --------------------------------------------------------------------------- unit arrays

# Steps of one unit's faults after the schema's (store/contracts/contexts/schema.py), in report
# order.
_STEP_SELF_REF, _STEP_DUPLICATE = 8, 9


class _Pending(NamedTuple):
    key: tuple[int, int, int]
    code: str
    message: str
    pointer: str
    details: dict[str, Any]


def _validate_units(doc: Any, rule: str) -> list[EvstoreError]:
    """Apply the unit-array rules shared by payloads and source documents.

    The shape is our JSON Schema's (:func:`~evstore.contracts.contexts.schema.shape_faults`); the
    rules
    that compare members with each other are here. Both are reported unit by unit, each
    unit's faults in one documented order (shape, typed members, ref, source, self ref,
    duplicate id), whichever of the two found them.
    """
    faults = Faults()
    shapes = shape_faults(doc)
    pending: list[_Pending | ShapeFault] = list(shapes)
    if isinstance(doc, list):
        pending.extend(_member_rules(doc))
    for f in sorted(pending, key=lambda f: f.key):
        details = f.details or {}
        # One code is raised under two sections (payload, source document): name it each time.
        faults.add(f.code, f.message, f.pointer, rule=rule, **details)
    return faults.errors


def _member_rules(doc: list[Any]) -> list[_Pending]:
    """The rules JSON Schema cannot state, for every unit of a unit array."""
    out: list[_Pending] = []
    first_at: dict[int, int] = {}
    source: tuple[str, str] | None = None  # (source_id, pointer where first seen)
    for i, unit in enumerate(doc):
        if not isinstance(unit, dict):
            continue
        at = join_pointer("", i)
        value = unit.get("id")
        # JSON Schema's data model equates 10.0 and 10; the contract asks for an integer
        # written without fraction or exponent. The strict reader keeps 10.0 and 1e1 as
        # floats for these kinds (loads(number_tokens=True)), so they arrive here as floats.
        if type(value) is float and value.is_integer() and abs(value) <= _MAX_SAFE_INT:
            message = (
                f"unit id must be a JSON integer written without fraction or exponent, got "
                f"{show(value)} (write {int(value)})"
            )
            out.append(_Pending((i, STEP_MEMBER, 0), "context.unit-id", message, at + "/id", {}))
        uid = value if _is_json_int(value) else None
        ref = unit.get("ref")
        if isinstance(ref, dict):
            source = _ref_rules(ref, uid, i, join_pointer(at, "ref"), source, out)
        if uid is not None:
            if uid in first_at:
                first = join_pointer("", first_at[uid])
                message = f"unit id {uid} already occurs at {first}"
                key = (i, _STEP_DUPLICATE, 0)
                out.append(
                    _Pending(key, "context.unit-duplicate", message, at + "/id", {"first": first})
                )
            else:
                first_at[uid] = i
    return out


def _ref_rules(
    ref: dict[str, Any],
    uid: int | None,
    i: int,
    at: str,
    source: tuple[str, str] | None,
    out: list[_Pending],
) -> tuple[str, str] | None:
    """One source per excerpt and self refs, into ``out``; returns the source (first seen)."""
    sid = ref.get("source_id")
    if isinstance(sid, str) and sid:
        where = join_pointer(at, "source_id")
        if source is None:
            source = (sid, where)
        elif sid != source[0]:
            message = f"source_id {sid!r} differs from {source[0]!r} at {source[1]}"
            key = (i, STEP_SOURCE_ID, 0)
            out.append(
                _Pending(key, "context.source-mixed", message, where, {"expected": source[0]})
            )
    # Without a valid id there is nothing to compare against; unit-id already says why.
    if uid is not None:
        for j, name in enumerate(("start_unit_id", "end_unit_id")):
            if name in ref and not (_is_json_int(ref[name]) and ref[name] == uid):
                message = f"{name} is {show(ref[name])}; a self ref names the unit's own id {uid}"
                key = (i, _STEP_SELF_REF, j)
                out.append(_Pending(key, "context.self-ref", message, join_pointer(at, name), {}))
    return source


def validate_payload(payload: Any) -> list[EvstoreError]:
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

    Raises:
        TypeError: ``payload`` holds a Python value with no JSON form (API misuse).
    """
    return _validate_units(payload, RULE_PAYLOAD)


def validate_source_document(doc: Any) -> list[EvstoreError]:
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
    return _validate_units(doc, RULE_SOURCE_DOCUMENT)


# --------------------------------------------------------------------------- source checks


def _first_difference(a: Any, b: Any, pointer: str) -> str | None:
    """Pointer to the first place two JSON values differ, or None when they are equal.

    Equality is JSON equality, the one canonical (RFC 8785) bytes express: member order is
    irrelevant, booleans are not numbers, and numbers compare by value (1 and 1.0 both
    canonicalise to ``1``).
    """
    kind = json_type(a)
    if kind != json_type(b):
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


def check_against_source(payload: Any, source_doc: Any) -> list[EvstoreError]:
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
            error(
                "context.source-mismatch",
                f"the excerpt is from source {mine[0]!r}, the document is source {theirs[0]!r}",
                join_pointer("", mine[1], "ref", "source_id"),
                rule=RULE_PAYLOAD,
                expected=theirs[0],
            )
        ]
    positions = _positions(source_doc)
    faults: list[EvstoreError] = []
    previous: tuple[int, int] | None = None  # (position, unit id) of the last known unit
    for i, unit in enumerate(payload):
        if not isinstance(unit, dict) or not _is_json_int(unit.get("id")):
            continue
        uid = unit["id"]
        at = join_pointer("", i)
        pos = positions.get(uid)
        if pos is None:
            faults.append(
                error(
                    "context.unit-unknown",
                    f"unit id {uid} is not in the source document",
                    join_pointer(at, "id"),
                    rule=RULE_SELECTION,
                )
            )
            continue
        where = _first_difference(unit, source_doc[pos], at)
        if where is not None:
            faults.append(
                error(
                    "context.source-mismatch",
                    f"unit id {uid} differs from the source document's unit "
                    f"(position {pos}) at {where}",
                    where,
                    rule=RULE_PAYLOAD,
                    position=pos,
                )
            )
        # Equal positions are a duplicate, which validate_payload reports.
        if previous is not None and pos < previous[0]:
            faults.append(
                error(
                    "context.source-order",
                    f"unit id {uid} (source position {pos}) follows unit id "
                    f"{previous[1]} (source position {previous[0]}); units must be "
                    "in source position order",
                    at,
                    rule=RULE_SELECTION,
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
                raise error(
                    "context.range-unknown",
                    f"unit id {uid} is not in the source document",
                    join_pointer("", r, side),
                    rule=RULE_SELECTION,
                )
            ends.append(positions[uid])
        lo, hi = ends
        if lo > hi:
            raise error(
                "context.range-order",
                f"range {pair[0]}:{pair[1]} starts at source position {lo}, after its "
                f"end at position {hi}",
                join_pointer("", r),
                rule=RULE_SELECTION,
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
    required unit members, or a near miss of them (docs/kinds.md#near-misses): each present
    exactly or under a near spelling (:func:`evstore.core.near.spelling`), or three of the four
    with ``ref`` among them. It does not validate. ``[]`` does not look like units: an empty
    array says nothing about its role and stays plain JSON unless a kind is given.
    """
    return isinstance(doc, list) and bool(doc) and all(_near_unit(unit) for unit in doc)


def _near_unit(unit: Any) -> bool:
    """An object with the four unit members, or three of them including ``ref`` (near)."""
    if not isinstance(unit, dict):
        return False
    count = near_members(unit, UNIT_FIELDS)
    return count == len(UNIT_FIELDS) or (
        count == len(UNIT_FIELDS) - 1 and near_member(unit, "ref") is not None
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


# --------------------------------------------------------------------------- entry point


def validate(doc: Any, settings: _SettingsMap | None = None, *, kind: str | None = None) -> Faults:
    """Every store-free fault of ``doc`` as an evidence context or a source document.

    The contract-module entry point (same signature in every ``*_rules`` module). The
    payload rules (:func:`validate_payload`) or the source-document rules
    (:func:`validate_source_document`) in document order, unit by unit; there are no
    warnings. The source check (:func:`check_against_source`) needs the source document, so
    the store module runs it (store/contracts/contexts/store.py).

    Args:
        doc: the value from the strict JSON reader.
        settings: store settings; no setting applies to this contract (accepted for the
            shared signature).
        kind: ``"evidence-context"`` (the default) or ``"source-document"``.

    Returns:
        The :class:`~evstore.core.errors.Faults` (codes as :func:`validate_payload`).

    Raises:
        ValueError: ``kind`` is not one of :data:`KINDS` (a programming error).
    """
    if kind in (None, "evidence-context"):
        return Faults(errors=validate_payload(doc))
    if kind == "source-document":
        return Faults(errors=validate_source_document(doc))
    raise ValueError(f"{kind!r} is not a kind of {CONTRACT}: {', '.join(KINDS)}")
