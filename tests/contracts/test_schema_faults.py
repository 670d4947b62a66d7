"""One translator of schema faults with one cap (store/core/json_schema.py), for all five
callers: manifests, packages, evidence contexts and source documents, descriptors, and a
bundle's index.json. A large invalid document lists MAX_SCHEMA_FAULTS faults and one more
saying the list was cut, without building the validator's error for every fault."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from evstore.contracts.contexts import rules as context_rules
from evstore.contracts.contexts import schema as context_schema
from evstore.contracts.manifests import rules as manifest_rules
from evstore.contracts.packages import rules as package_rules
from evstore.contracts.packages import schema as package_schema
from evstore.contracts.runs import rules_bundle
from evstore.core import json_schema
from evstore.core.json_schema import MAX_SCHEMA_FAULTS, MAX_SCHEMA_MESSAGE, schema_faults

EX = Path(__file__).resolve().parents[2] / "examples"
CUT = {"truncated": True, "limit": MAX_SCHEMA_FAULTS}


def big_manifest(items: int = 20000) -> dict:
    """The example manifest with ``items`` wrong items: about 22 bytes and 6 faults each."""
    doc = json.loads((EX / "manifests" / "manifest.json").read_text())
    doc["items"] = [{"kind": 5, "zz": 1} for _ in range(items)]
    return doc


class Counting:
    """A validator that counts its whole-document ``iter_errors`` passes."""

    def __init__(self, validator):
        self.validator = validator
        self.full_passes = 0

    def is_valid(self, doc):
        return self.validator.is_valid(doc)

    def evaluate(self, doc):
        return self.validator.evaluate(doc)

    def iter_errors(self, doc):
        self.full_passes += 1
        return self.validator.iter_errors(doc)


def _key(fault):
    facts = json.dumps(fault.facts, sort_keys=True)
    return (fault.pointer, fault.keyword, fault.schema_pointer, fault.message, facts)


def _every_fault(validator, doc) -> set:
    """The faults of one whole ``iter_errors`` pass, translated (the slow way, for checking)."""
    out = set()
    for e in validator.iter_errors(doc):
        out |= {_key(f) for f in json_schema._faults_of((), (), e)}
    return out


def test_a_large_invalid_manifest_lists_the_cap_and_says_so_quickly():
    doc = big_manifest()
    assert len(json.dumps(doc)) > 270_000  # the manifest: 120,002 faults in 12 s
    started = time.perf_counter()
    errors = manifest_rules.validate(doc).errors
    elapsed = time.perf_counter() - started
    shape = [e for e in errors if e.code == manifest_rules.SCHEMA]
    assert len(shape) <= MAX_SCHEMA_FAULTS + 1 and len(errors) <= MAX_SCHEMA_FAULTS + 2
    cut = shape[-1]
    assert (cut.pointer, cut.details) == ("", CUT)
    assert (
        cut.message
        == f"more structural faults than the {MAX_SCHEMA_FAULTS} listed; fix these first"
    )
    assert [e.pointer for e in shape[:3]] == ["/items", "/items/0", "/items/0"]
    assert all(len(e.message) <= MAX_SCHEMA_MESSAGE + 3 for e in errors)
    assert elapsed < 10, elapsed  # the whole list took 4 s on this machine, 12 s reported


def test_over_the_cap_no_fault_list_is_built_for_the_whole_document():
    doc = big_manifest()
    validator = Counting(manifest_rules._validator())
    found = schema_faults(validator, doc, schema=manifest_rules._schema(), formats=True)
    assert validator.full_passes == 0  # evaluate counts; only the first faults are judged
    assert found.truncated and len(found.faults) == MAX_SCHEMA_FAULTS
    # each listed fault is exactly one the whole pass gives (same words, paths and facts)
    every = _every_fault(manifest_rules._validator(), doc)
    assert {_key(f) for f in found.faults} <= every


def test_under_the_cap_the_faults_are_the_whole_pass_in_its_order():
    doc = big_manifest(items=40)
    validator = Counting(manifest_rules._validator())
    found = schema_faults(validator, doc, schema=manifest_rules._schema(), formats=True)
    assert validator.full_passes == 1 and not found.truncated
    listed = [
        _key(f)
        for e in manifest_rules._validator().iter_errors(doc)
        for f in json_schema._faults_of((), (), e)
    ]
    assert [_key(f) for f in found.faults] == listed


def test_a_large_invalid_package_stops_at_the_cap():
    doc = json.loads((EX / "packages" / "01-package-launch.json").read_text())
    doc["items"] = [{"x": 1, "y": 2}] * 5000
    started = time.perf_counter()
    errors = package_rules.validate_package(doc).errors
    assert time.perf_counter() - started < 10
    shape = [e for e in errors if e.code == "package.schema"]
    assert len(shape) == MAX_SCHEMA_FAULTS + 1 and errors[: len(shape)] == shape
    assert (shape[-1].pointer, shape[-1].details) == ("", CUT)
    validator = package_schema.validator("package")
    every = _every_fault(validator, doc)
    found = schema_faults(
        validator, doc, schema=package_schema._part_schema("package"), formats=True
    )
    assert found.truncated and {_key(f) for f in found.faults} <= every


def test_a_large_invalid_evidence_context_stops_at_the_cap():
    units = [{"id": "x", "kind": "", "text": 1, "zz": 1} for _ in range(2000)]
    errors = context_rules.validate_payload(units)
    cut = errors[-1]
    assert (cut.code, cut.pointer, cut.details) == ("context.unit-shape", "", CUT)
    shape = [e for e in errors if e.code.startswith("context.unit-")]
    assert len(shape) == MAX_SCHEMA_FAULTS + 1
    assert {e.pointer.split("/")[1] for e in shape[:-1]} <= {str(i) for i in range(100)}
    assert len(context_schema.shape_faults(units)) == MAX_SCHEMA_FAULTS + 1


def test_a_descriptor_with_many_unknown_members_stops_at_the_cap():
    desc = dict(context_rules.EVIDENCE_CONTEXT_DESCRIPTOR)
    desc.update({f"extra-{i:04d}": i for i in range(1000)})
    errors = context_rules.check_descriptor(desc)
    assert len(errors) == MAX_SCHEMA_FAULTS + 1
    assert errors[0].pointer == "/evidence_context/extra-0000"
    assert (errors[-1].code, errors[-1].pointer, errors[-1].details) == (
        "context.descriptor-shape",
        "/evidence_context",
        CUT,
    )


def test_an_index_with_many_wrong_descriptors_stops_at_the_cap():
    index = {f"d{i:04d}": {"artifact_kind": 1} for i in range(1000)}
    faults = rules_bundle.index_faults(index, {}).errors
    assert all(e.code == "bundle.index-shape" for e in faults)
    assert (faults[-1].pointer, faults[-1].details) == ("", CUT)
    assert len(faults) <= MAX_SCHEMA_FAULTS + 1
    assert [e.pointer for e in faults[:2]] == ["/d0000", "/d0001"]


@pytest.mark.parametrize("n", [MAX_SCHEMA_FAULTS - 1, MAX_SCHEMA_FAULTS, MAX_SCHEMA_FAULTS + 1])
def test_the_cap_counts_one_fault_per_unexpected_member(n):
    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    doc = {f"m{i:04d}": 0 for i in range(n)}  # one validator error, n unexpected members
    found = schema_faults(json_schema.compile_schema(schema), doc, schema=schema)
    assert [f.pointer for f in found.faults] == [f"/m{i:04d}" for i in range(n)][:MAX_SCHEMA_FAULTS]
    assert found.truncated == (n > MAX_SCHEMA_FAULTS)


def test_a_message_is_cut():
    schema = {"maxLength": 1}  # the message quotes the value
    found = schema_faults(json_schema.compile_schema(schema), "y" * 5000, schema=schema)
    (fault,) = found.faults
    assert len(fault.message) == MAX_SCHEMA_MESSAGE + 3 and fault.message.endswith("...")
