"""Every `if` of every shipped schema requires what it tests (issue 17).

JSON Schema's ``properties`` holds vacuously for an absent member, so an ``if`` that tests
``/projection/revision`` without requiring it fires for a document that has no revision at
all, and its ``then`` reports a fault that is not there (``manifest.rule-1`` for a manifest
with no revision but a phase). Each object level of a condition must list in ``required``
every member its ``properties`` constrain.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from typing import Any

import pytest

SCHEMAS = sorted(
    p.name
    for p in resources.files("evstore").joinpath("schemas").iterdir()
    if p.name.endswith(".json")
)


def _conditions(node: Any, pointer: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, child in node.items():
            if key == "if":
                yield f"{pointer}/if", child
            yield from _conditions(child, f"{pointer}/{key}")
    elif isinstance(node, list):
        for i, child in enumerate(node):
            yield from _conditions(child, f"{pointer}/{i}")


def _unrequired(cond: Any, pointer: str) -> Iterator[str]:
    """Pointers of members a condition constrains without requiring them."""
    if not isinstance(cond, dict):
        return
    required = set(cond.get("required", ()))
    for name, sub in cond.get("properties", {}).items():
        if name not in required:
            yield f"{pointer}/properties/{name}"
        yield from _unrequired(sub, f"{pointer}/properties/{name}")
    for key in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(cond.get(key, ())):
            yield from _unrequired(sub, f"{pointer}/{key}/{i}")


def test_every_shipped_schema_is_checked():
    assert len(SCHEMAS) >= 4
    assert "orbidocs-manifest-v1.schema.json" in SCHEMAS


@pytest.mark.parametrize("name", SCHEMAS)
def test_conditions_require_what_they_test(name):
    schema = json.loads(resources.files("evstore").joinpath("schemas", name).read_text("utf-8"))
    bad = [p for ptr, cond in _conditions(schema) for p in _unrequired(cond, ptr)]
    assert bad == [], f"{name}: conditions test members they do not require: {bad}"


def test_the_check_finds_a_vacuous_condition():
    vacuous = {"if": {"properties": {"p": {"properties": {"r": {"const": 1}}}}}}
    assert list(_unrequired(vacuous["if"], "/if")) == [
        "/if/properties/p",
        "/if/properties/p/properties/r",
    ]
    fixed = {
        "required": ["p"],
        "properties": {"p": {"required": ["r"], "properties": {"r": {"const": 1}}}},
    }
    assert list(_unrequired(fixed, "/if")) == []
