"""Run records and the bundle layout as pure rules: run_rules.validate/detect, bundle_layout."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from evstore.contracts.contexts.rules import DESCRIPTOR_KEYS, EVIDENCE_CONTEXT_DESCRIPTOR
from evstore.contracts.runs import rules as run_rules
from evstore.contracts.runs import rules_bundle as bundle_layout
from evstore.core.errors import CODES, BundleError, Faults

RAW = "blake3:" + "0" * 64


def _descriptor(name: str) -> dict[str, str]:
    return {
        "artifact_kind": "run/log",
        "media_type": "text/plain",
        "schema_id": "",
        "schema_name": "",
        "schema_version": "",
        "logical_file": name,
    }


def _record() -> dict[str, Any]:
    return {
        "record": run_rules.RUN_RECORD_FORMAT,
        "index": {"raw": RAW, "size": 10},
        "files": {
            "notes.txt": {
                "descriptor_name": "notes",
                "descriptor": _descriptor("notes.txt"),
                "raw": RAW,
                "size": 3,
            }
        },
    }


def test_detect_and_validate_a_record() -> None:
    assert run_rules.detect(_record()) == "run"
    assert run_rules.detect({"record": "other"}) is None
    assert run_rules.detect([]) is None
    faults = run_rules.validate(_record())
    assert isinstance(faults, Faults) and faults.ok
    assert run_rules.record_edges(_record()) == [("index", RAW), ("file", RAW)]
    assert run_rules.record_index(_record()) == {"notes": _descriptor("notes.txt")}


def test_record_shape_fault_is_the_first_one() -> None:
    tree = _record()
    tree["files"]["notes.txt"]["size"] = -1
    tree["extra"] = 1
    faults = run_rules.validate(tree, {}, kind="run")
    assert [(e.code, e.pointer) for e in faults.errors] == [("run.record-shape", "/extra")]
    assert isinstance(faults.errors[0], BundleError)
    assert faults.errors[0].rule == run_rules.RULE_RECORD == CODES["run.record-shape"].rule
    with pytest.raises(ValueError):
        run_rules.validate(tree, kind="evidence-context")


def test_record_descriptors_follow_the_layout() -> None:
    tree = _record()
    tree["files"]["notes.txt"]["descriptor"]["media_type"] = 5
    faults = run_rules.validate(tree)
    assert [(e.code, e.pointer) for e in faults.errors] == [
        ("bundle.index-shape", "/notes/media_type")
    ]
    assert faults.errors[0].rule == bundle_layout.RULE_LAYOUT


def test_bundle_index_schema_says_what_python_says() -> None:
    schema = bundle_layout.load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    descriptor = schema["$defs"]["rule-index-descriptor"]
    assert descriptor["required"] == list(DESCRIPTOR_KEYS) == list(descriptor["properties"])
    assert set(bundle_layout.RULE_DEFS) == {n for n in schema["$defs"] if n.startswith("rule-")}


@pytest.mark.parametrize(
    ("index", "expected"),
    [
        ([], [("bundle.index-shape", "")]),
        ({"a": {"logical_file": "a"}}, [("bundle.index-shape", "/a")]),
        ({"a": {**_descriptor("a"), "x": 1, "media_type": 1}}, [("bundle.index-shape", "/a")]),
        (
            {"a": {**_descriptor("a"), "schema_name": 1, "media_type": None}},
            [("bundle.index-shape", "/a/media_type")],
        ),
        (
            {"b": {**_descriptor("a"), "artifact_kind": "source/evidence-context"}},
            [("bundle.descriptor-misplaced", "/b")],
        ),
        (
            {"a": _descriptor("../a"), "b": _descriptor("b"), "c": _descriptor("b")},
            [
                ("bundle.path-unsafe", "/a/logical_file"),
                ("bundle.file-duplicate", "/c/logical_file"),
            ],
        ),
        (
            {"evidence_context": dict(EVIDENCE_CONTEXT_DESCRIPTOR)},
            [("context.logical-file-missing", "/evidence_context/logical_file")],
        ),
    ],
)
def test_index_faults(index: Any, expected: list[tuple[str, str]]) -> None:
    faults = bundle_layout.index_faults(index, {"a": True, "b": True})
    assert [(e.code, e.pointer) for e in faults.errors] == expected
