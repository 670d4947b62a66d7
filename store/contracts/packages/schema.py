"""evstore's own schema of insonic answer evidence 1.3.0: compiled validators, shape faults.

The file ``schemas/insonic-answer-evidence-1.3.0.schema.json`` states the structural rules
of the contract (names, patterns, bounds, enums, consts, conditionals, formats, budget
defaults) in our own wording and layout; tests/contracts/test_packages_schema_diff.py keeps
its verdicts equal to the published schema's. It is compiled once with jsonschema-rs: draft
2020-12, formats (``uuid``, ``date``) asserted, offline (every ``$ref`` is internal).

Shape codes: ``package.schema`` (rule ``insonic-answer-evidence-1.3.0#``, the schema root),
``request.schema`` (``#/$defs/request``), ``envelope.schema`` (``#/$defs/envelope``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from types import MappingProxyType
from typing import Any

import jsonschema_rs

from ...core.errors import EvstoreError, error
from ...core.json_schema import MAX_SCHEMA_FAULTS, read_schema_text, truncated_fault
from ...core.json_schema import schema_faults as _faults

__all__ = [
    "MAX_SCHEMA_FAULTS",
    "SCHEMA_FILE",
    "SCHEMA_ID",
    "budget_default",
    "load_schema",
    "schema_faults",
    "validator",
]

#: File name of evstore's own schema under ``store/schemas``.
SCHEMA_FILE = "insonic-answer-evidence-1.3.0.schema.json"
#: ``$id`` of evstore's own schema.
SCHEMA_ID = "urn:evstore:schema:insonic-answer-evidence:1.3.0"
# MAX_SCHEMA_FAULTS (imported): at most this many structural faults are listed per document,
# as for every contract with a schema (store/core/json_schema.py); one more fault at ""
# (details ``truncated``) says the list was cut.
# Which subschema of our schema judges which document.
_PARTS = {
    "package": "#/$defs/package",
    "request": "#/$defs/request",
    "envelope": "#/$defs/envelope",
    "claim": "#/$defs/claim",
    "citation": "#/$defs/citation",
}

# --------------------------------------------------------------------------- schema


@cache
def _schema_text() -> str:
    return read_schema_text(SCHEMA_FILE)


def load_schema() -> dict[str, Any]:
    """Return evstore's own schema for the contract, parsed (a fresh copy each call).

    Returns:
        The JSON Schema 2020-12 document; the root validates a package, and ``$defs`` has
        ``request``, ``envelope``, ``claim``, ``citation`` among others.
    """
    schema: dict[str, Any] = json.loads(_schema_text())
    return schema


@cache
def _validators() -> Mapping[str, jsonschema_rs.Validator]:
    # offline=True: every $ref is internal ("#/$defs/..."); a network fetch would be a bug.
    vmap = jsonschema_rs.validator_map_for(
        json.loads(_schema_text()), validate_formats=True, offline=True
    )
    return MappingProxyType({part: vmap[pointer] for part, pointer in _PARTS.items()})


def validator(part: str) -> jsonschema_rs.Validator:
    """The compiled validator of one part: package, request, envelope, claim or citation."""
    return _validators()[part]


@cache
def _part_schema(part: str) -> Mapping[str, Any]:
    """The subschema a part's validator judges with, and the root's ``$defs`` and ``$id``.

    The validator's schema paths start at the part's subschema; its references resolve in
    the root's ``$defs``.
    """
    root = json.loads(_schema_text())
    sub: dict[str, Any] = dict(root["$defs"][_PARTS[part].rsplit("/", 1)[1]])
    sub.update({k: root[k] for k in ("$schema", "$id", "$defs")})
    return MappingProxyType(sub)


def _sort_key(path: list[str | int]) -> tuple[tuple[int, int | str], ...]:
    # Array indexes compare as numbers, so /items/2 comes before /items/10.
    return tuple((0, t) if isinstance(t, int) else (1, t) for t in path)


def schema_faults(part: str, doc: Any, code: str) -> list[EvstoreError]:
    """Structural faults of ``doc`` as the ``part`` subschema judges it, ordered by pointer.

    Args:
        part: ``package``, ``request``, ``envelope``, ``claim`` or ``citation``.
        doc: the parsed document.
        code: the code every fault gets (``package.schema``, ``request.schema`` or
            ``envelope.schema``).

    Returns:
        :class:`~evstore.core.errors.PackageError` faults at the instance pointer, with details
        ``keyword`` (``required``, ``pattern``...), ``schema_path`` (in our schema) and small
        facts (missing or unexpected names, limits, patterns, formats); at most
        :data:`MAX_SCHEMA_FAULTS`, then one fault at ``""`` with ``details["truncated"]``.
    """
    result = _faults(validator(part), doc, schema=_part_schema(part), formats=True)
    found: list[tuple[tuple[tuple[int, int | str], ...], str, EvstoreError]] = []
    for f in result.faults:
        if f.member is not None:
            # One fault per unexpected member, at the member itself (as manifests do): the
            # enclosing object is not what is wrong.
            err = error(
                code,
                f"member {f.member!r} is not allowed here",
                f.pointer,
                keyword=f.keyword,
                schema_path=f.schema_pointer,
                unexpected=[f.member],
            )
            found.append((_sort_key([*f.path, f.member]), f.keyword, err))
            continue
        err = error(code, f.message, f.pointer)
        # Only the small facts; enum and const values are in the schema already.
        err.details.update(keyword=f.keyword, schema_path=f.schema_pointer, **f.facts)
        found.append((_sort_key(list(f.path)), f.keyword, err))
    found.sort(key=lambda f: (f[0], f[1]))
    faults = [f[2] for f in found]
    if result.truncated:
        faults.append(truncated_fault(code))
    return faults


@cache
def _budget_defaults() -> Mapping[str, int]:
    props = json.loads(_schema_text())["$defs"]["budget"]["properties"]
    return MappingProxyType({k: v["default"] for k, v in props.items()})


def budget_default(name: str) -> int:
    """The schema's default for one request budget limit (``items`` -> 128).

    Raises:
        KeyError: ``name`` is not a member of ``$defs/budget``.
    """
    return int(_budget_defaults()[name])
