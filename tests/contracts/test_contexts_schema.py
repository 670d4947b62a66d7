"""The notarius v1 unit shape and descriptors by JSON Schema: schemas, rule-* codes, validate.

Pure: no database. The faults themselves (codes, pointers, order) are pinned by
test_contexts_rules.py; here, that the schemas say what the Python definitions say.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from evstore.contracts.contexts import rules as context_rules
from evstore.contracts.contexts import schema as context_schema
from evstore.contracts.contexts.rules import (
    DESCRIPTOR_KEYS,
    EVIDENCE_CONTEXT_DESCRIPTOR,
    REF_FIELDS,
    SOURCE_DOCUMENT_DESCRIPTOR,
    UNIT_FIELDS,
    UNIT_OPTIONAL_FIELDS,
    check_descriptor,
)
from evstore.core.errors import CODES, ContextError, Faults


def _unit(uid: Any = 1) -> dict[str, Any]:
    ref = {"source_id": "s", "start_unit_id": uid, "end_unit_id": uid}
    return {"id": uid, "kind": "k", "text": "t", "ref": ref}


def test_schema_is_valid_2020_12_and_every_rule_def_has_a_code() -> None:
    schema = context_schema.load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    rules = {name for name in schema["$defs"] if name.startswith("rule-")}
    assert rules == set(context_schema.RULE_CODES)
    for code in context_schema.RULE_CODES.values():
        assert CODES[code].family == "contract"
        assert CODES[code].rule == context_rules.RULE_PAYLOAD


def test_schema_members_are_the_python_definitions() -> None:
    defs = context_schema.load_schema()["$defs"]
    unit = defs["rule-unit-shape"]
    assert unit["required"] == list(UNIT_FIELDS)
    assert set(unit["properties"]) == set(UNIT_FIELDS + UNIT_OPTIONAL_FIELDS)
    assert unit["additionalProperties"] is False
    ref = defs["rule-ref-shape"]
    assert ref["required"] == list(REF_FIELDS) == list(ref["properties"])
    assert defs["rule-unit-id"]["maximum"] == 2**53 - 1 == -defs["rule-unit-id"]["minimum"]


@pytest.mark.parametrize("expected", [EVIDENCE_CONTEXT_DESCRIPTOR, SOURCE_DOCUMENT_DESCRIPTOR])
def test_descriptor_schema_is_built_from_the_one_definition(expected: Any) -> None:
    assert tuple(context_schema.DESCRIPTOR_RULES) == DESCRIPTOR_KEYS
    schema = context_schema.descriptor_schema(expected)
    jsonschema.Draft202012Validator.check_schema(schema)
    for key, (rule, code) in context_schema.DESCRIPTOR_RULES.items():
        assert CODES[code].rule == context_rules.RULE_DISCOVERY
        value = schema["$defs"][rule]["properties"][key]
        assert value == (
            {"const": expected[key]} if key in expected else {"type": "string", "minLength": 1}
        )
    # The schema agrees with the reference validator on the valid descriptor and a few faults.
    good = dict(expected, logical_file=expected.get("logical_file", "sources/a.json"))
    assert jsonschema.Draft202012Validator(schema).is_valid(good)
    assert check_descriptor(good, expected=expected) == []
    for bad in ({**good, "extra": "x"}, {**good, "media_type": 1}, [good]):
        assert not jsonschema.Draft202012Validator(schema).is_valid(bad)
        assert check_descriptor(bad, expected=expected) != []


def test_validate_is_the_shared_entry_point() -> None:
    ok = context_rules.validate([_unit(1), _unit(2)])
    assert isinstance(ok, Faults) and ok.ok and ok.warnings == []
    bad = context_rules.validate([_unit(1), _unit(1)], {}, kind="evidence-context")
    assert [(e.code, e.pointer) for e in bad.errors] == [("context.unit-duplicate", "/1/id")]
    assert bad.errors[0].rule == context_rules.RULE_PAYLOAD
    as_source = context_rules.validate([_unit(1), _unit(1)], kind="source-document")
    assert [e.rule for e in as_source.errors] == [context_rules.RULE_SOURCE_DOCUMENT]
    assert all(isinstance(e, ContextError) for e in as_source.errors)
    assert context_rules.detect([_unit(1)]) is None
    with pytest.raises(ValueError):
        context_rules.validate([], kind="run")


def test_integral_float_id_is_refused_although_json_schema_accepts_it() -> None:
    # JSON Schema's data model equates 10.0 and 10: the Python rule catches it.
    assert jsonschema.Draft202012Validator({"type": "integer"}).is_valid(10.0)
    faults = context_rules.validate([_unit(10.0)])
    assert [(e.code, e.pointer) for e in faults.errors] == [
        ("context.unit-id", "/0/id"),
    ]


def test_schema_and_python_faults_interleave_unit_by_unit() -> None:
    first = {**_unit(1), "extra": 1}
    second = _unit(2)
    second["ref"] = {**second["ref"], "source_id": "other"}
    third = _unit(1)
    del third["text"]
    faults = context_rules.validate([first, second, third])
    assert [(e.code, e.pointer) for e in faults.errors] == [
        ("context.unit-shape", "/0/extra"),
        ("context.source-mixed", "/1/ref/source_id"),
        ("context.unit-shape", "/2/text"),
        ("context.unit-duplicate", "/2/id"),
    ]
