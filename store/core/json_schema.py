"""evstore's own JSON Schemas (package data under ``schemas/``), read and compiled one way.

Every contract whose shape a schema can express (manifests, answer evidence packages,
evidence contexts, the run bundle's ``index.json``) keeps its schema as a JSON file in
``store/schemas/`` and compiles it here: JSON Schema draft 2020-12 through ``jsonschema-rs``,
with every ``$ref`` internal. Retrieving a schema from anywhere else is a bug in the schema,
never a fetch: the retriever refuses.

``jsonschema_rs`` is imported at module level on purpose: where it is missing, importing a
contract module that needs it fails, and the kind registry turns that into
``store.kind-unavailable`` (fail closed) rather than skipping the shape checks.

:func:`schema_faults` is the one translator of a validator's verdict into faults that every
contract with a schema reads (manifests, packages, evidence contexts and their descriptors, a
bundle's ``index.json``): at most :data:`MAX_SCHEMA_FAULTS` of them per document, messages
cut at :data:`MAX_SCHEMA_MESSAGE` characters, and then one more fault saying the list was cut
(:func:`truncated_fault`). Each contract maps the faults to its own codes and messages.
"""

from __future__ import annotations

import json
from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import jsonschema_rs

from .errors import EvstoreError, error, join_pointer

__all__ = [
    "MAX_SCHEMA_FAULTS",
    "MAX_SCHEMA_MESSAGE",
    "SchemaFault",
    "SchemaFaults",
    "compile_schema",
    "read_schema",
    "read_schema_text",
    "refuse_retrieval",
    "schema_faults",
    "truncated_fault",
]

#: At most this many schema faults are listed per document, then one more that says so
#: (:func:`truncated_fault`). A 270 KB manifest of wrong items gave 120,002 faults in 12 s;
#: capped, it gives 257 in well under a second (tests/contracts/test_schema_faults.py).
MAX_SCHEMA_FAULTS = 256
#: jsonschema-rs quotes the offending value in its messages, which may be megabytes long: a
#: message is cut after this many characters and ``...`` added.
MAX_SCHEMA_MESSAGE = 400
#: A document of at most this many JSON values is judged by one ``iter_errors`` pass (its
#: faults are few); a larger one is counted first (``evaluate``, no Python objects per fault).
_SMALL_NODES = 4 * MAX_SCHEMA_FAULTS
#: The small facts of a keyword copied from the validator (``as_dict``), in this order.
_FACTS = ("property", "unexpected", "limit", "pattern", "format", "types")
#: Keywords judged together with siblings (JSON Schema 2020-12 section 10.3): a fault is
#: re-judged with them.
_SIBLINGS: Mapping[str, tuple[str, ...]] = {
    "additionalProperties": ("properties", "patternProperties"),
    "items": ("prefixItems",),
    "contains": ("minContains", "maxContains"),
    "minContains": ("contains",),
    "maxContains": ("contains",),
}


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


@dataclass(frozen=True)
class SchemaFault:
    """One fault of a schema over a document, as every contract reads it.

    Attributes:
        path: the instance path of the failing value (member names and array indexes).
        schema_path: the keyword's path in the schema, after ``$ref`` resolution (a fault in a
            referenced subschema starts at its ``$defs`` entry).
        keyword: the validator's name of the failing keyword (``required``, ``type``,
            ``additionalProperties``, ``falseSchema``, ...).
        message: the validator's message, at most :data:`MAX_SCHEMA_MESSAGE` characters and
            ``...``.
        member: for ``additionalProperties``, the one unexpected member this fault is about
            (a fault per member, at the member); else None.
        facts: the keyword's small facts: ``property`` (required), ``unexpected``,
            ``limit``, ``pattern``, ``format``, ``types``, when the validator gives them.
    """

    path: tuple[str | int, ...]
    schema_path: tuple[str | int, ...]
    keyword: str
    message: str
    member: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def pointer(self) -> str:
        """The JSON Pointer (RFC 6901) of the fault: the value, or the unexpected member."""
        if self.member is None:
            return join_pointer("", *self.path)
        return join_pointer("", *self.path, self.member)

    @property
    def schema_pointer(self) -> str:
        """:attr:`schema_path` as a JSON Pointer into the schema."""
        return join_pointer("", *self.schema_path)

    def rule(self, names: Container[str] | None = None) -> str | None:
        """The ``$defs`` entry the fault comes from, or None.

        The first ``$defs`` entry on the schema path that is one of ``names`` (any, when
        None).
        """
        path = self.schema_path
        for i in range(len(path) - 1):
            if path[i] == "$defs" and (names is None or path[i + 1] in names):
                return str(path[i + 1])
        return None


@dataclass
class SchemaFaults:
    """What :func:`schema_faults` found: the faults, and whether the list was cut."""

    faults: list[SchemaFault]
    truncated: bool = False


def truncated_fault(code: str, pointer: str = "") -> EvstoreError:
    """The fault that ends a cut list: ``code`` at ``pointer``.

    Its details are ``truncated`` (true) and ``limit`` (:data:`MAX_SCHEMA_FAULTS`).
    """
    return error(
        code,
        f"more structural faults than the {MAX_SCHEMA_FAULTS} listed; fix these first",
        pointer,
        truncated=True,
        limit=MAX_SCHEMA_FAULTS,
    )


def schema_faults(
    validator: Any,
    doc: Any,
    *,
    schema: Mapping[str, Any],
    formats: bool = False,
) -> SchemaFaults:
    """The faults ``validator`` finds in ``doc``: at most :data:`MAX_SCHEMA_FAULTS`.

    The validator's own order, one fault per unexpected member (``additionalProperties``).
    A valid document costs one ``is_valid`` pass. A small invalid one (at most 1,024 JSON
    values) is judged by one ``iter_errors`` pass; a larger one is counted first by
    ``evaluate`` (which builds no Python object per fault), and when it holds more faults
    than the cap, only the first ones (in ``evaluate``'s order) are judged again, each by its
    keyword alone (with the siblings JSON Schema judges it with) over its value: a document
    of 120,000 faults costs well under a second instead of seconds.

    Args:
        validator: the compiled validator (``jsonschema_rs``) that judges ``doc``.
        doc: the parsed JSON value.
        schema: the schema the validator judges with: the (sub)schema its schema paths
            start at, holding the ``$defs`` (and ``$id``) its references resolve in.
        formats: whether the validator asserts ``format`` (so its faults are re-judged alike).

    Returns:
        :class:`SchemaFaults`; ``truncated`` when more faults exist than are listed (callers
        end their list with :func:`truncated_fault`).

    Raises:
        ValueError: ``doc`` holds a Python value with no JSON form (from the validator).
    """
    if validator.is_valid(doc):
        return SchemaFaults([])
    errors: list[tuple[tuple[str | int, ...], tuple[str | int, ...], Any]] = []
    over = False
    if _at_most_nodes(doc, _SMALL_NODES):
        errors = [((), (), e) for e in validator.iter_errors(doc)]
    else:
        entries = validator.evaluate(doc).errors()
        if len(entries) <= MAX_SCHEMA_FAULTS:
            errors = [((), (), e) for e in validator.iter_errors(doc)]
        else:
            over = True
            errors = _first_errors(entries, doc, schema, formats)
    out: list[SchemaFault] = []
    for base, schema_base, e in errors:
        for fault in _faults_of(base, schema_base, e):
            if len(out) >= MAX_SCHEMA_FAULTS:
                return SchemaFaults(out, True)
            out.append(fault)
    return SchemaFaults(out, over)


def _at_most_nodes(doc: Any, budget: int) -> bool:
    """Whether ``doc`` holds at most ``budget`` JSON values (stops counting past it)."""
    stack = [doc]
    seen = 0
    while stack:
        value = stack.pop()
        seen += 1
        if seen > budget:
            return False
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return True


def _faults_of(
    base: tuple[str | int, ...], schema_base: tuple[str | int, ...], e: Any
) -> list[SchemaFault]:
    """One validator error as faults (one per unexpected member); paths prefixed by the bases."""
    path = base + tuple(e.instance_path)
    schema_path = schema_base + tuple(e.schema_path)
    keyword = e.kind.name
    message = e.message
    if len(message) > MAX_SCHEMA_MESSAGE:
        message = message[:MAX_SCHEMA_MESSAGE] + "..."
    if isinstance(e.kind, jsonschema_rs.ValidationErrorKind.AdditionalProperties):
        return [
            SchemaFault(path, schema_path, keyword, message, name, {"unexpected": [name]})
            for name in e.kind.unexpected
        ]
    extra = e.kind.as_dict()
    facts = {key: extra[key] for key in _FACTS if key in extra}
    return [SchemaFault(path, schema_path, keyword, message, None, facts)]


def _tokens(pointer: str, within: Any) -> tuple[str | int, ...] | None:
    """The tokens of a JSON Pointer into ``within`` (array indexes as int), or None."""
    if not pointer:
        return ()
    out: list[str | int] = []
    value = within
    for raw in pointer.split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(value, list):
            if not token.isdigit() or int(token) >= len(value):
                return None
            out.append(int(token))
            value = value[int(token)]
        elif isinstance(value, Mapping) and token in value:
            out.append(token)
            value = value[token]
        else:
            return None
    return tuple(out)


def _at(value: Any, tokens: tuple[str | int, ...]) -> Any:
    for token in tokens:
        value = value[token]
    return value


class _Judged:
    """A fault as ``evaluate`` gives it, in the shape of a validator error (no facts)."""

    def __init__(self, keyword: str, message: str) -> None:
        self.instance_path: list[str | int] = []
        self.schema_path: list[str | int] = []
        self.kind = _JudgedKind(keyword)
        self.message = message


class _JudgedKind:
    def __init__(self, name: str) -> None:
        self.name = name

    def as_dict(self) -> dict[str, Any]:
        return {}


def _first_errors(
    entries: list[Mapping[str, Any]], doc: Any, schema: Mapping[str, Any], formats: bool
) -> list[tuple[tuple[str | int, ...], tuple[str | int, ...], Any]]:
    """The validator errors of the first entries of ``evaluate``, enough for the cap.

    Each (value, keyword) is judged again alone: a schema of the keyword with its siblings
    and the root's ``$defs`` (compiled once per keyword), over the value only. A keyword
    that cannot be judged alone keeps ``evaluate``'s own words (its keyword and message).
    """
    out: list[tuple[tuple[str | int, ...], tuple[str | int, ...], Any]] = []
    compiled: dict[str, list[tuple[Any, str | None]]] = {}
    seen: set[tuple[str, str]] = set()
    count = 0
    for entry in entries:
        if count > MAX_SCHEMA_FAULTS:
            break
        location = str(entry["schemaLocation"]).split("#", 1)[-1]
        where = str(entry["instanceLocation"])
        if (where, location) in seen:
            continue  # one keyword at one value gives all its errors at once (required)
        seen.add((where, location))
        path = _tokens(where, doc)
        spath = _tokens(location, schema)
        if path is None or spath is None:  # not a place in the document or the schema
            continue
        if location not in compiled:
            compiled[location] = _judges(schema, spath, formats)
        found = []
        for check, keyword in compiled[location]:
            base = spath if keyword is None else spath[:-1]
            found = [
                (path, base, e)
                for e in check.iter_errors(_at(doc, path))
                if keyword is None or e.schema_path[:1] == [keyword]
            ]
            if found:
                break
        if not found:
            name = str(spath[-1]) if spath else "falseSchema"
            found = [(path, spath, _Judged(name, str(entry["error"])))]
        out.extend(found)
        count += sum(len(e.kind.unexpected) if _unexpected(e) else 1 for _, _, e in found)
    return out


def _unexpected(e: Any) -> bool:
    return isinstance(e.kind, jsonschema_rs.ValidationErrorKind.AdditionalProperties)


def _judges(
    schema: Mapping[str, Any], spath: tuple[str | int, ...], formats: bool
) -> list[tuple[Any, str | None]]:
    """Validators that judge the place ``spath`` alone, each with its keyword, to try in turn.

    First the keyword at ``spath`` with its siblings (``additionalProperties: false`` is a
    keyword's fault on the object); then, where ``spath`` holds the schema ``false``
    (``items: false``, a ``properties`` entry), that schema over the value (keyword None).
    A keyword jsonschema-rs will not compile alone is left out.
    """
    judges: list[tuple[Any, str | None]] = []
    parent = _at(schema, spath[:-1]) if spath else None
    keyword = spath[-1] if spath else None
    if isinstance(parent, Mapping) and isinstance(keyword, str):
        alone: dict[str, Any] = {
            k: parent[k] for k in (keyword, *_SIBLINGS.get(keyword, ())) if k in parent
        }
        for k in ("$schema", "$id", "$defs"):
            if k in schema and k not in alone:
                alone[k] = schema[k]
        try:
            judges.append((_compile(alone, formats), keyword))
        except ValueError:  # not a keyword that stands alone (a properties entry's name)
            pass
    if _at(schema, spath) is False:
        judges.append((_compile(False, formats), None))
    return judges


def _compile(schema: Any, formats: bool) -> Any:
    return jsonschema_rs.Draft202012Validator(
        schema, validate_formats=formats, retriever=refuse_retrieval
    )
