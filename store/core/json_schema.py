"""evstore's own JSON Schemas (package data under ``schemas/``), read and compiled one way.

Every contract whose shape a schema can express (manifests, answer evidence packages,
evidence contexts, the run bundle's ``index.json``) keeps its schema as a JSON file in
``store/schemas/`` and compiles it here: JSON Schema draft 2020-12 through ``jsonschema-rs``,
with every ``$ref`` internal. Retrieving a schema from anywhere else is a bug in the schema,
never a fetch: the retriever refuses.

``jsonschema_rs`` is imported at module level on purpose: where it is missing, importing a
contract module that needs it fails, and the kind registry turns that into
``store.kind-unavailable`` (fail closed) rather than skipping the shape checks.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import jsonschema_rs

__all__ = ["compile_schema", "read_schema", "read_schema_text", "refuse_retrieval"]


def read_schema_text(filename: str) -> str:
    """The text of ``store/schemas/<filename>`` (UTF-8), as shipped in the package."""
    return resources.files("evstore").joinpath("schemas", filename).read_text("utf-8")


def read_schema(filename: str) -> dict[str, Any]:
    """``store/schemas/<filename>`` parsed: a fresh copy on each call (callers may edit it)."""
    result: dict[str, Any] = json.loads(read_schema_text(filename))
    return result


def refuse_retrieval(uri: str) -> Any:
    """The retriever of every evstore validator: our schemas are self-contained.

    Raises:
        ValueError: always; jsonschema-rs reports it as a schema error at compile time.
    """
    raise ValueError(f"evstore never retrieves schemas ({uri})")


def compile_schema(
    schema: dict[str, Any], *, formats: bool = False
) -> jsonschema_rs.Draft202012Validator:
    """A draft 2020-12 validator of ``schema`` that never retrieves anything.

    Args:
        schema: the schema document.
        formats: also assert ``format`` keywords (``date-time``, ``uri``...), as the
            manifest and package contracts require.
    """
    return jsonschema_rs.Draft202012Validator(
        schema, validate_formats=formats, retriever=refuse_retrieval
    )
