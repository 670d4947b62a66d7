"""The unit shape of notarius v1 evidence contexts and source documents, by JSON Schema.

evstore's schema ``schemas/notarius-evidence-context-v1.schema.json`` states the shape of an
array of source units: the array, each unit's members and their types, each self ref's
members and ``source_id``. Each ``rule-*`` subschema carries one ``context.*`` code
(:data:`RULE_CODES`); this module turns the validator's faults into :class:`ShapeFault`
values with the code, the message and the RFC 6901 pointer evstore has always given, plus a
sort key that places them among the Python rules of store/contracts/contexts/rules.py (unit by
unit, in
the documented order). Pure: no database.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Final, NamedTuple

import jsonschema_rs

from ...core.errors import join_pointer
from ...core.json_schema import (
    SchemaFault,
    compile_schema,
    read_schema,
    schema_faults,
    truncated_fault,
)

__all__ = [
    "DESCRIPTOR_RULES",
    "DescriptorVerdict",
    "MEMBER_WHAT",
    "RULE_CODES",
    "SCHEMA_FILE",
    "STEP_MEMBER",
    "STEP_REF_MISSING",
    "STEP_REF_TYPE",
    "STEP_REF_UNKNOWN",
    "STEP_SOURCE_ID",
    "STEP_UNIT_MISSING",
    "STEP_UNIT_TYPE",
    "STEP_UNIT_UNKNOWN",
    "ShapeFault",
    "TRUNCATED_KEY",
    "descriptor_schema",
    "descriptor_verdict",
    "json_type",
    "load_schema",
    "shape_faults",
    "show",
]

#: Our JSON Schema, a file of this package (``evstore/schemas/``).
SCHEMA_FILE: Final = "notarius-evidence-context-v1.schema.json"

#: ``rule-*`` subschema ($defs name) -> the code of a fault under it.
RULE_CODES: Final[Mapping[str, str]] = {
    "rule-payload-array": "context.payload-not-array",
    "rule-unit-shape": "context.unit-shape",
    "rule-unit-id": "context.unit-id",
    "rule-unit-kind": "context.unit-kind",
    "rule-unit-text": "context.unit-text",
    "rule-unit-metadata": "context.unit-metadata",
    "rule-ref-shape": "context.ref-shape",
    "rule-ref-source-id": "context.ref-source-id",
}

# What a typed unit member must be (messages), in the order the faults are reported.
MEMBER_WHAT: Final[Mapping[str, str]] = {
    "id": "a JSON integer within +-(2^53-1)",
    "kind": "a non-empty string",
    "text": "a string",
    "metadata": "a JSON object",
}
_MEMBER_ORDER = {name: i for i, name in enumerate(MEMBER_WHAT)}
_UNIT_FIELDS = ("id", "kind", "text", "ref")
_REF_FIELDS = ("source_id", "start_unit_id", "end_unit_id")

# Steps of one unit's faults, in report order (store/contracts/contexts/rules.py adds its own
# steps).
STEP_UNIT_TYPE, STEP_UNIT_MISSING, STEP_UNIT_UNKNOWN, STEP_MEMBER = 0, 1, 2, 3
STEP_REF_TYPE, STEP_REF_MISSING, STEP_REF_UNKNOWN, STEP_SOURCE_ID = 4, 5, 6, 7


#: The key of the fault that says the shape faults were cut: after every unit's faults.
TRUNCATED_KEY: Final = (2**63, 0, 0)


class ShapeFault(NamedTuple):
    """One shape fault: ``(unit index, step, order within step)`` sorts it; then code etc."""

    key: tuple[int, int, int]
    code: str
    message: str
    pointer: str
    details: dict[str, Any] | None = None


# bool before number: bool is an int subclass.
_JSON_TYPES: tuple[tuple[str, type | tuple[type, ...]], ...] = (
    ("boolean", bool),
    ("number", (int, float)),
    ("string", str),
    ("array", list),
    ("object", dict),
)


def json_type(value: Any) -> str:
    """The JSON type name of a parsed value (``null``, ``boolean``, ``number``, ...)."""
    for name, types in _JSON_TYPES:
        if isinstance(value, types):
            return name
    return "null" if value is None else type(value).__name__


def show(value: Any) -> str:
    """A bounded repr for messages: a fault must not echo a whole document back."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def load_schema() -> dict[str, Any]:
    """Our JSON Schema for arrays of source units, parsed (a fresh copy on each call)."""
    return read_schema(SCHEMA_FILE)


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return load_schema()  # one copy, read only


@lru_cache(maxsize=1)
def _validator() -> jsonschema_rs.Draft202012Validator:
    return compile_schema(_schema())


def _rule_def(fault: SchemaFault) -> str:
    """The ``rule-*`` subschema a fault comes from (refs are resolved)."""
    rule = fault.rule(RULE_CODES)
    if rule is None:
        raise AssertionError(f"a schema fault outside every rule-* subschema: {fault}")
    return rule


def _at(doc: Any, path: list[str | int]) -> Any:
    value = doc
    for token in path:
        value = value[token]
    return value


def _convert(doc: Any, fault: SchemaFault) -> ShapeFault:
    """One schema fault as a shape fault, with its key among the Python rules' faults."""
    path = list(fault.path)
    rule = _rule_def(fault)
    code, value = RULE_CODES[rule], _at(doc, path)
    if rule == "rule-payload-array":
        message = f"expected a top-level JSON array of source units, got {json_type(value)}"
        return ShapeFault((-1, 0, 0), code, message, "")
    unit = int(path[0])
    at = join_pointer("", *path)
    if rule in ("rule-unit-shape", "rule-ref-shape"):
        is_unit = rule == "rule-unit-shape"
        if fault.keyword == "required":
            fields = _UNIT_FIELDS if is_unit else _REF_FIELDS
            step = STEP_UNIT_MISSING if is_unit else STEP_REF_MISSING
            what = "unit" if is_unit else "ref"
            name = str(fault.facts["property"])
            key = (unit, step, fields.index(name))
            return ShapeFault(key, code, f"{what} has no {name}", join_pointer(at, name))
        if fault.member is not None:
            name = fault.member
            message = (
                f"unknown fixed unit member {name!r}; source-owned data belongs in metadata"
                if is_unit
                else f"unknown ref member {name!r}"
            )
            step = STEP_UNIT_UNKNOWN if is_unit else STEP_REF_UNKNOWN
            key = (unit, step, list(value).index(name))
            return ShapeFault(key, code, message, fault.pointer)
        if is_unit:
            message = f"a unit is a JSON object, not {json_type(value)}"
            return ShapeFault((unit, STEP_UNIT_TYPE, 0), code, message, at)
        message = f"ref must be a JSON object, got {json_type(value)}"
        return ShapeFault((unit, STEP_REF_TYPE, 0), code, message, at)
    if rule == "rule-ref-source-id":
        message = f"source_id must be a non-empty string without U+0000, got {show(value)}"
        return ShapeFault((unit, STEP_SOURCE_ID, 0), code, message, at)
    name = str(path[-1])
    message = f"unit {name} must be {MEMBER_WHAT[name]}, got {show(value)}"
    return ShapeFault((unit, STEP_MEMBER, _MEMBER_ORDER[name]), code, message, at)


def shape_faults(doc: Any) -> list[ShapeFault]:
    """The schema faults of an array of units, sorted into report order (unit by unit).

    Args:
        doc: the value from the strict JSON reader.

    Returns:
        Shape faults sorted by key; one per keyword fault (one per unexpected member),
        deduplicated. ``[]`` when the schema holds (checked first, cheaply). At most
        :data:`~evstore.core.json_schema.MAX_SCHEMA_FAULTS`; a longer list is cut and ends
        with one ``context.unit-shape`` fault at ``""`` (key :data:`TRUNCATED_KEY`, after
        every unit) saying so.

    Raises:
        TypeError: ``doc`` holds a Python value with no JSON form (e.g. an arbitrary object).
    """
    if not isinstance(doc, list):
        # jsonschema-rs would read a Python tuple as an array; the contract wants a JSON array.
        message = f"expected a top-level JSON array of source units, got {json_type(doc)}"
        return [ShapeFault((-1, 0, 0), RULE_CODES["rule-payload-array"], message, "")]
    try:
        result = schema_faults(_validator(), doc, schema=_schema())
    except ValueError as exc:  # a Python value with no JSON form (API misuse, not input)
        raise TypeError(f"not a JSON value (parse documents with evstore's reader): {exc}") from exc
    found: dict[tuple[tuple[int, int, int], str, str], ShapeFault] = {}
    for fault in result.faults:
        shape = _convert(doc, fault)
        found.setdefault((shape.key, shape.code, shape.pointer), shape)
    out = sorted(found.values(), key=lambda f: f.key)
    if result.truncated:
        cut = truncated_fault(RULE_CODES["rule-unit-shape"])
        out.append(ShapeFault(TRUNCATED_KEY, cut.code, cut.message, cut.pointer, cut.details))
    return out


# --------------------------------------------------------------------------- descriptors

#: Descriptor key -> the ``rule-*`` subschema of its value (and the code of a fault there).
DESCRIPTOR_RULES: Final[Mapping[str, tuple[str, str]]] = {
    "artifact_kind": ("rule-descriptor-kind", "context.descriptor-kind"),
    "media_type": ("rule-descriptor-media-type", "context.descriptor-media-type"),
    "schema_id": ("rule-descriptor-schema-id", "context.descriptor-schema-id"),
    "schema_name": ("rule-descriptor-schema-name", "context.descriptor-schema-name"),
    "schema_version": ("rule-unsupported-version", "context.unsupported-version"),
    "logical_file": ("rule-descriptor-logical-file", "context.descriptor-logical-file"),
}


def descriptor_schema(expected: Mapping[str, str]) -> dict[str, Any]:
    """The JSON Schema of a descriptor whose fixed values are ``expected``.

    Built from the one definition of the values (``context_rules.EVIDENCE_CONTEXT_DESCRIPTOR``
    or ``SOURCE_DOCUMENT_DESCRIPTOR``), so no value is written twice: ``rule-descriptor-shape``
    (an object of exactly the six keys), then, only when ``schema_version`` is the decodable
    one, a ``rule-*`` subschema per key (``const`` the expected value, or a non-empty string
    for a key ``expected`` leaves free); otherwise ``rule-unsupported-version``.
    """
    defs: dict[str, Any] = {
        "rule-descriptor-shape": {
            "type": "object",
            "properties": dict.fromkeys(DESCRIPTOR_RULES, True),
            "additionalProperties": False,
        }
    }
    for key, (rule, _) in DESCRIPTOR_RULES.items():
        value: dict[str, Any] = (
            {"const": expected[key]} if key in expected else {"type": "string", "minLength": 1}
        )
        defs[rule] = {"required": [key], "properties": {key: value}}
    version = DESCRIPTOR_RULES["schema_version"][0]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": defs,
        "allOf": [
            {"$ref": "#/$defs/rule-descriptor-shape"},
            {
                "if": {"$ref": f"#/$defs/{version}"},
                "then": {
                    "allOf": [
                        {"$ref": f"#/$defs/{rule}"}
                        for key, (rule, _) in DESCRIPTOR_RULES.items()
                        if key != "schema_version"
                    ]
                },
                "else": {"$ref": f"#/$defs/{version}"},
            },
        ],
    }


@lru_cache(maxsize=8)
def _descriptor_validator(
    expected: tuple[tuple[str, str], ...],
) -> tuple[dict[str, Any], jsonschema_rs.Draft202012Validator]:
    schema = descriptor_schema(dict(expected))
    return schema, compile_schema(schema)


class DescriptorVerdict(NamedTuple):
    """What the descriptor schema found: ``failed`` holds ``rule-*`` names.

    ``truncated``: the schema found more faults than
    :data:`~evstore.core.json_schema.MAX_SCHEMA_FAULTS` (unexpected members, one each) and
    ``unexpected`` lists the first.
    """

    not_object: bool
    unexpected: list[str]
    failed: frozenset[str]
    truncated: bool = False


def descriptor_verdict(desc: Any, expected: Mapping[str, str]) -> DescriptorVerdict:
    """Run the descriptor schema of ``expected`` over ``desc``.

    Returns:
        Whether ``desc`` is not an object, its members outside the six keys (in document
        order), and the ``rule-*`` subschemas that failed.
    """
    schema, validator = _descriptor_validator(tuple(sorted(expected.items())))
    result = schema_faults(validator, desc, schema=schema)
    not_object, unexpected, failed = False, set(), set()
    for fault in result.faults:
        rule = fault.rule() or ""
        failed.add(rule)
        if fault.member is not None:
            unexpected.add(fault.member)
        elif rule == "rule-descriptor-shape":
            not_object = True  # the shape's other keyword is the object type
    order = [key for key in desc if key in unexpected] if isinstance(desc, dict) else []
    return DescriptorVerdict(not_object, order, frozenset(failed), result.truncated)
