"""The rules of insonic answer evidence 1.3.0, pure (no database): schema and semantics.

Used by :mod:`evstore.packages`, which owns the error classes, the public API and the store
integration. Every rule reports faults as ``(code, pointer, message, details)`` tuples
(:data:`Fault`); the caller turns them into errors. :data:`CODE_TABLE` gives each code the
section of the published schema that states or implies it, and a one-line meaning.

Structure is judged by evstore's own schema (``schemas/insonic-answer-evidence-1.3.0.schema.json``)
with jsonschema-rs: draft 2020-12, formats asserted, offline (every ``$ref`` is internal).

The semantic rules run even on structurally faulty documents (the caller reports schema
faults first), so every accessor here tolerates a wrong type by skipping the part it cannot
read: a missing or malformed member is the schema's fault to report, never a crash here.

Decimal strings (``start_us``, ``recording_revision``...) are read with :func:`decimal_value`,
which accepts ASCII digits only and returns an exact ``int``: ``int()`` alone would also take
``"1_000"``, ``" 7"`` or non-ASCII digits, and ``float()`` would merge 2**53 and 2**53 + 1.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

import jsonschema_rs

from .errors import join_pointer

__all__ = [
    "CODE_BINDING_MISSING",
    "CODE_CITATION_QUOTE",
    "CODE_CITATION_REFERENCE",
    "CODE_CITATION_UNKNOWN_EVIDENCE",
    "CODE_CONFLICT_UNKNOWN_EVIDENCE",
    "CODE_CONTEXT_BYTES",
    "CODE_CONTEXT_OMITTED",
    "CODE_CONTEXT_QUESTION",
    "CODE_CONTEXT_TOKENS",
    "CODE_ENVELOPE_INTERVAL_ORDER",
    "CODE_ENVELOPE_PACKAGE_MISMATCH",
    "CODE_ENVELOPE_SCHEMA",
    "CODE_ID_REUSE",
    "CODE_INDEPENDENT_FAMILIES",
    "CODE_INTERVAL_ORDER",
    "CODE_ITEM_BUDGET",
    "CODE_ITEM_ID_DUPLICATE",
    "CODE_NODE_ID_DUPLICATE",
    "CODE_NODE_PARENT_CYCLE",
    "CODE_NODE_PARENT_UNKNOWN",
    "CODE_NODE_SOURCE_UNKNOWN",
    "CODE_NODE_TEXT_LEVEL",
    "CODE_NODE_TEXT_PREFIX",
    "CODE_NODE_TEXT_SOURCES",
    "CODE_PACKAGE_EDGE",
    "CODE_PACKAGE_SCHEMA",
    "CODE_REQUEST_INTERVAL_ORDER",
    "CODE_REQUEST_SCHEMA",
    "CODE_REVISION_CONFLICT",
    "CODE_TABLE",
    "CODE_UNKNOWN_PACKAGE",
    "CONTRACT",
    "Fault",
    "MAX_SCHEMA_FAULTS",
    "SCHEMA_FILE",
    "budget_default",
    "context_fixed_point",
    "context_size_faults",
    "decimal_value",
    "effective_item_budget",
    "envelope_faults",
    "json_equal",
    "load_schema",
    "measure_context",
    "package_faults",
    "request_faults",
    "revision_bindings",
    "revision_conflict_faults",
    "schema_faults",
    "validator",
]

#: Contract name used in ``rule`` (the published file's name without ``.schema.json``).
CONTRACT = "insonic-answer-evidence-1.3.0"
#: File name of evstore's own schema under ``store/schemas``.
SCHEMA_FILE = "insonic-answer-evidence-1.3.0.schema.json"
#: At most this many structural faults are listed per document; a 100 000-element array of
#: wrong values would otherwise cost seconds and megabytes to report. One more fault at ""
#: (details ``truncated``) says the list was cut.
MAX_SCHEMA_FAULTS = 256
# Messages from jsonschema-rs quote the offending instance, which may be megabytes long.
_MAX_MESSAGE = 400
# Which subschema of our schema judges which document.
_PARTS = {
    "package": "#/$defs/package",
    "request": "#/$defs/request",
    "envelope": "#/$defs/envelope",
    "claim": "#/$defs/claim",
    "citation": "#/$defs/citation",
}

# Structure (raised by evstore.packages from jsonschema-rs faults):
CODE_PACKAGE_SCHEMA = "package.schema"
CODE_REQUEST_SCHEMA = "request.schema"
CODE_ENVELOPE_SCHEMA = "envelope.schema"
# Package semantics:
CODE_ITEM_ID_DUPLICATE = "package.item-id-duplicate"
CODE_CONFLICT_UNKNOWN_EVIDENCE = "package.conflict-unknown-evidence"
CODE_NODE_SOURCE_UNKNOWN = "package.node-source-unknown"
CODE_NODE_ID_DUPLICATE = "package.node-id-duplicate"
CODE_NODE_PARENT_UNKNOWN = "package.node-parent-unknown"
CODE_NODE_PARENT_CYCLE = "package.node-parent-cycle"
CODE_NODE_TEXT_LEVEL = "package.node-text-level"
CODE_NODE_TEXT_SOURCES = "package.node-text-sources"
CODE_NODE_TEXT_PREFIX = "package.node-text-prefix"
CODE_INTERVAL_ORDER = "package.interval-order"
CODE_CONTEXT_QUESTION = "package.context-question"
CODE_CONTEXT_OMITTED = "package.context-omitted"
CODE_ITEM_BUDGET = "package.item-budget"
CODE_INDEPENDENT_FAMILIES = "package.independent-families"
CODE_CONTEXT_BYTES = "package.context-bytes"
CODE_CONTEXT_TOKENS = "package.context-tokens"
# Request and envelope semantics:
CODE_REQUEST_INTERVAL_ORDER = "request.interval-order"
CODE_ENVELOPE_INTERVAL_ORDER = "envelope.interval-order"
CODE_ENVELOPE_PACKAGE_MISMATCH = "envelope.package-mismatch"
CODE_CITATION_UNKNOWN_EVIDENCE = "envelope.citation-unknown-evidence"
CODE_CITATION_QUOTE = "envelope.citation-quote"
CODE_CITATION_REFERENCE = "envelope.citation-reference"
# Bindings (PackageBindingError); revision-conflict is also checked inside one package here:
CODE_REVISION_CONFLICT = "package.revision-conflict"
CODE_ID_REUSE = "package.id-reuse"
CODE_UNKNOWN_PACKAGE = "envelope.unknown-package"
# Store consistency, found by `evstore check` (CorruptionError):
CODE_BINDING_MISSING = "package.binding-missing"
CODE_PACKAGE_EDGE = "envelope.package-edge"

#: code -> (section of the published schema that states or implies the rule, meaning).
CODE_TABLE: dict[str, tuple[str, str]] = {
    CODE_PACKAGE_SCHEMA: ("", "the package breaks a structural rule of the schema"),
    CODE_REQUEST_SCHEMA: ("/$defs/request", "the request breaks a structural rule of the schema"),
    CODE_ENVELOPE_SCHEMA: (
        "/$defs/envelope",
        "the answer envelope breaks a structural rule of the schema (claims included)",
    ),
    CODE_ITEM_ID_DUPLICATE: ("/$defs/item/properties/id", "two items share one id"),
    CODE_CONFLICT_UNKNOWN_EVIDENCE: (
        "/$defs/conflict/properties/evidence_ids",
        "a conflict names an evidence id that is not an item of the package",
    ),
    CODE_NODE_SOURCE_UNKNOWN: (
        "/$defs/contextNode/properties/sources",
        "a context node names a source that is not an item of the package",
    ),
    CODE_NODE_ID_DUPLICATE: ("/$defs/contextNode/properties/id", "two context nodes share one id"),
    CODE_NODE_PARENT_UNKNOWN: (
        "/$defs/contextNode/properties/parent",
        "a context node's parent names no node of the context",
    ),
    CODE_NODE_PARENT_CYCLE: (
        "/$defs/contextNode/properties/parent",
        "context node parents form a cycle (a node that is its own parent included)",
    ),
    CODE_NODE_TEXT_LEVEL: (
        "/$defs/contextNode",
        "a context node that is not cue-level carries text",
    ),
    CODE_NODE_TEXT_SOURCES: (
        "/$defs/contextNode/properties/text",
        "a cue node with text does not have exactly one source",
    ),
    CODE_NODE_TEXT_PREFIX: (
        "/$defs/contextNode/properties/text",
        "a cue node's text is not a prefix of its source item's text",
    ),
    CODE_INTERVAL_ORDER: (
        "/$defs/interval/properties/end_us",
        "a source interval in the package does not end after it starts",
    ),
    CODE_CONTEXT_QUESTION: (
        "/$defs/context/properties/question",
        "context.question differs from request.question",
    ),
    CODE_CONTEXT_OMITTED: (
        "/$defs/context/properties/omitted",
        "context.omitted exceeds the number of items",
    ),
    CODE_ITEM_BUDGET: (
        "/$defs/budget/properties/items",
        "the package has more items than the request's effective item budget",
    ),
    CODE_INDEPENDENT_FAMILIES: (
        "/properties/independent_families",
        "independent_families exceeds the number of distinct item families",
    ),
    CODE_CONTEXT_BYTES: (
        "/$defs/context/properties/bytes",
        "context.bytes is not the UTF-8 size of the compact context JSON (warning unless strict)",
    ),
    CODE_CONTEXT_TOKENS: (
        "/$defs/context/properties/tokens",
        "context.tokens differs from context.bytes under utf8-byte-upper-bound "
        "(warning unless strict)",
    ),
    CODE_REQUEST_INTERVAL_ORDER: (
        "/$defs/interval/properties/end_us",
        "the request's source interval does not end after it starts",
    ),
    CODE_ENVELOPE_INTERVAL_ORDER: (
        "/$defs/interval/properties/end_us",
        "a citation's source interval does not end after it starts",
    ),
    CODE_ENVELOPE_PACKAGE_MISMATCH: (
        "/$defs/envelope/properties/package_id",
        "the envelope's package_id is not the id of the package it is checked against",
    ),
    CODE_CITATION_UNKNOWN_EVIDENCE: (
        "/$defs/citation/properties/evidence_id",
        "a citation names an evidence id that is not an item of the package",
    ),
    CODE_CITATION_QUOTE: (
        "/$defs/citation/properties/quote",
        "a citation's quote is not an exact substring of the cited item's text",
    ),
    CODE_CITATION_REFERENCE: (
        "/$defs/citation/properties/reference",
        "a citation's reference differs from the cited item's reference",
    ),
    CODE_REVISION_CONFLICT: (
        "/$defs/reference/properties/recording_revision",
        "one (workspace_id, recording_id, recording_revision) is bound to other digests "
        "(by another item of the package, or by an earlier accepted package)",
    ),
    CODE_ID_REUSE: (
        "/properties/id",
        "a different package is already stored under this package id",
    ),
    CODE_BINDING_MISSING: (
        "/$defs/reference/properties/recording_revision",
        "(check) a stored package's id or recording revision binding row is missing",
    ),
    CODE_PACKAGE_EDGE: (
        "/$defs/envelope/properties/package_id",
        "(check) a stored envelope has no package edge to the package it cites",
    ),
    CODE_UNKNOWN_PACKAGE: (
        "/$defs/envelope/properties/package_id",
        "the envelope's package_id names no stored package",
    ),
}


#: ``(code, pointer, message, details)``
Fault = tuple[str, str, str, dict[str, Any] | None]

_DIGITS = re.compile(r"[0-9]+", re.ASCII)
_KEY_FIELDS = ("workspace_id", "recording_id", "recording_revision")
_VALUE_FIELDS = ("document_digest", "source_digest", "source_map_digest", "identity_digest")
# A quoted value in a message is cut here; the full value is in the document at the pointer.
_SHOW = 80


# --------------------------------------------------------------------------- schema


@cache
def _schema_text() -> str:
    return resources.files(__package__).joinpath("schemas", SCHEMA_FILE).read_text("utf-8")


def load_schema() -> dict[str, Any]:
    """Return evstore's own schema for the contract, parsed (a fresh copy each call).

    Returns:
        The JSON Schema 2020-12 document; the root validates a package, and ``$defs`` has
        ``request``, ``envelope``, ``claim``, ``citation`` among others.
    """
    return json.loads(_schema_text())


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


def _sort_key(path: list[str | int]) -> tuple[tuple[int, int | str], ...]:
    # Array indexes compare as numbers, so /items/2 comes before /items/10.
    return tuple((0, t) if isinstance(t, int) else (1, t) for t in path)


def schema_faults(part: str, doc: Any, code: str) -> list[Fault]:
    """Structural faults of ``doc`` as the ``part`` subschema judges it, ordered by pointer.

    Args:
        part: ``package``, ``request``, ``envelope``, ``claim`` or ``citation``.
        doc: the parsed document.
        code: the code every fault gets (``package.schema``...).

    Returns:
        Faults at the instance pointer, with details ``keyword`` (``required``,
        ``pattern``...), ``schema_path`` (in our schema) and small facts (missing or
        unexpected names, limits, patterns, formats); at most :data:`MAX_SCHEMA_FAULTS`, then
        one fault at ``""`` with ``details["truncated"]``.
    """
    check = validator(part)
    # is_valid stops at the first fault and builds no error objects; iter_errors builds
    # all of them up front (about 20 us each), so take the fast path for the usual case.
    if check.is_valid(doc):
        return []
    found = []
    truncated = False
    for e in check.iter_errors(doc):
        if len(found) == MAX_SCHEMA_FAULTS:
            truncated = True
            break
        message = e.message
        if len(message) > _MAX_MESSAGE:
            message = message[:_MAX_MESSAGE] + "..."
        details: dict[str, Any] = {
            "keyword": e.kind.name,
            "schema_path": join_pointer("", *e.schema_path),
        }
        extra = e.kind.as_dict()
        # Only the small facts; enum and const values are in the schema already.
        for key in ("property", "unexpected", "limit", "pattern", "format", "types"):
            if key in extra:
                details[key] = extra[key]
        pointer = join_pointer("", *e.instance_path)
        found.append(
            (_sort_key(list(e.instance_path)), e.kind.name, (code, pointer, message, details))
        )
    found.sort(key=lambda f: (f[0], f[1]))
    faults: list[Fault] = [f[2] for f in found]
    if truncated:
        faults.append(
            (
                code,
                "",
                f"more structural faults than the {MAX_SCHEMA_FAULTS} listed; fix these first",
                {"truncated": True, "limit": MAX_SCHEMA_FAULTS},
            )
        )
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


# --------------------------------------------------------------------------- readers


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _arr(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: Any) -> int | None:
    # bool is an int subclass in Python, never a JSON integer.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _show(text: str) -> str:
    return repr(text if len(text) <= _SHOW else text[:_SHOW] + "...")


def decimal_value(value: Any) -> int | None:
    """The exact integer a decimal string stands for.

    Args:
        value: a string of ASCII digits, as the contract's big integers travel.

    Returns:
        The ``int`` (arbitrary size, never a float), or ``None`` for anything else.
    """
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        return int(value)
    return None


def _normalize(value: Any) -> Any:
    # JSON-equality: 1 == 1.0 (the strict reader may keep 1.0 as a float), but true != 1.
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(_normalize(v) for v in value))
    if isinstance(value, dict):
        return ("object", frozenset((k, _normalize(v)) for k, v in value.items()))
    return ("other", repr(value))


def json_equal(a: Any, b: Any) -> bool:
    """Whether two parsed JSON values are the same JSON value.

    Member order does not matter; numbers compare by value (``1 == 1.0``); ``true`` is
    not ``1``; strings compare exactly (no Unicode normalization).
    """
    return _normalize(a) == _normalize(b)


def _items(package: Any) -> list[Any]:
    return _arr(_obj(package).get("items"))


def _item_index(items: list[Any]) -> dict[str, int]:
    """Evidence id -> index of the first item carrying it."""
    index: dict[str, int] = {}
    for i, item in enumerate(items):
        ident = _obj(item).get("id")
        if isinstance(ident, str) and ident not in index:
            index[ident] = i
    return index


def effective_item_budget(request: Any) -> int:
    """The number of items a package prepared for ``request`` may hold.

    Args:
        request: the package's ``request`` object (malformed values count as absent).

    Returns:
        ``request.budget.items`` when it is a positive integer, else the schema default (128):
        the contract says an omitted or zero limit uses the default.
    """
    limit = _int(_obj(_obj(request).get("budget")).get("items"))
    return limit if limit is not None and limit > 0 else budget_default("items")


# --------------------------------------------------------------------------- shared rules


def _interval_fault(interval: Any, pointer: str, code: str) -> Iterator[Fault]:
    interval = _obj(interval)
    start = decimal_value(interval.get("start_us"))
    end = decimal_value(interval.get("end_us"))
    if start is not None and end is not None and end <= start:
        yield (
            code,
            join_pointer(pointer, "end_us"),
            f"source interval ends at {end} us, not after its start {start} us",
            {"start_us": str(start), "end_us": str(end)},
        )


def request_faults(request: Any, base: str, code: str) -> list[Fault]:
    """Semantic faults of a request at ``base`` (``""`` alone, ``"/request"`` in a package)."""
    interval = _obj(_obj(request).get("filters")).get("source_interval")
    if interval is None:
        return []
    return list(_interval_fault(interval, join_pointer(base, "filters", "source_interval"), code))


# --------------------------------------------------------------------------- package rules


def _item_rules(doc: dict[str, Any], items: list[Any], ids: dict[str, int]) -> Iterator[Fault]:
    for i, item in enumerate(items):
        ident = _obj(item).get("id")
        if isinstance(ident, str) and ids.get(ident) != i:
            yield (
                CODE_ITEM_ID_DUPLICATE,
                f"/items/{i}/id",
                f"item id {_show(ident)} is already used by /items/{ids[ident]}",
                {"first": f"/items/{ids[ident]}"},
            )
    for i, item in enumerate(items):
        ref = _obj(item).get("reference")
        if isinstance(_obj(ref).get("source"), dict):
            yield from _interval_fault(
                ref["source"], f"/items/{i}/reference/source", CODE_INTERVAL_ORDER
            )
    yield from request_faults(doc.get("request"), "/request", CODE_INTERVAL_ORDER)
    for i, conflict in enumerate(_arr(doc.get("conflicts"))):
        for j, ident in enumerate(_arr(_obj(conflict).get("evidence_ids"))):
            if isinstance(ident, str) and ident not in ids:
                yield (
                    CODE_CONFLICT_UNKNOWN_EVIDENCE,
                    f"/conflicts/{i}/evidence_ids/{j}",
                    f"conflict names evidence {_show(ident)}, which is not an item",
                    None,
                )


def _node_rules(nodes: list[Any], items: list[Any], ids: dict[str, int]) -> Iterator[Fault]:
    node_ids: dict[str, int] = {}
    for i, node in enumerate(nodes):
        ident = _obj(node).get("id")
        if isinstance(ident, str):
            if ident in node_ids:
                yield (
                    CODE_NODE_ID_DUPLICATE,
                    f"/context/nodes/{i}/id",
                    f"context node id {_show(ident)} is already used by "
                    f"/context/nodes/{node_ids[ident]}",
                    {"first": f"/context/nodes/{node_ids[ident]}"},
                )
            else:
                node_ids[ident] = i
    parent_of: list[int | None] = [None] * len(nodes)
    for i, node in enumerate(nodes):
        node = _obj(node)
        base = f"/context/nodes/{i}"
        for j, source in enumerate(_arr(node.get("sources"))):
            if isinstance(source, str) and source not in ids:
                yield (
                    CODE_NODE_SOURCE_UNKNOWN,
                    f"{base}/sources/{j}",
                    f"context node source {_show(source)} is not an item",
                    None,
                )
        parent = node.get("parent")
        if isinstance(parent, str):
            if parent in node_ids:
                parent_of[i] = node_ids[parent]
            else:
                yield (
                    CODE_NODE_PARENT_UNKNOWN,
                    f"{base}/parent",
                    f"parent {_show(parent)} names no context node",
                    None,
                )
        text = node.get("text")
        if not isinstance(text, str):
            continue
        if node.get("level") != "cue":
            yield (
                CODE_NODE_TEXT_LEVEL,
                f"{base}/text",
                f"only cue nodes carry text; this node is {node.get('level')!r}",
                None,
            )
            continue
        sources = _arr(node.get("sources"))
        if len(sources) != 1:
            yield (
                CODE_NODE_TEXT_SOURCES,
                f"{base}/sources",
                f"a cue node with text needs exactly one source, it has {len(sources)}",
                {"sources": len(sources)},
            )
            continue
        source = sources[0]
        if isinstance(source, str) and source in ids:
            item_text = _obj(items[ids[source]]).get("text")
            if isinstance(item_text, str) and not item_text.startswith(text):
                yield (
                    CODE_NODE_TEXT_PREFIX,
                    f"{base}/text",
                    f"cue node text is not a prefix of the text of item {_show(source)}",
                    {"item": f"/items/{ids[source]}"},
                )
    yield from _cycles(nodes, parent_of)


def _cycles(nodes: list[Any], parent_of: list[int | None]) -> Iterator[Fault]:
    # Each node has at most one parent, so every cycle is found by walking up from each
    # node once; 0 = unseen, 1 = on the current walk, 2 = finished.
    state = [0] * len(nodes)
    for start in range(len(nodes)):
        walk: list[int] = []
        k: int | None = start
        while k is not None and state[k] == 0:
            state[k] = 1
            walk.append(k)
            k = parent_of[k]
        if k is not None and state[k] == 1:
            cycle = walk[walk.index(k) :]
            first = min(cycle)
            # Report the cycle once, at its earliest node, listing ids in parent order.
            order = cycle[cycle.index(first) :] + cycle[: cycle.index(first)]
            yield (
                CODE_NODE_PARENT_CYCLE,
                f"/context/nodes/{first}/parent",
                f"context node parents form a cycle of {len(cycle)} node(s)",
                {"cycle": [_obj(nodes[n]).get("id") for n in order]},
            )
        for n in walk:
            state[n] = 2


def _count_rules(doc: dict[str, Any], items: list[Any]) -> Iterator[Fault]:
    request = _obj(doc.get("request"))
    context = _obj(doc.get("context"))
    asked, shown = request.get("question"), context.get("question")
    if isinstance(asked, str) and isinstance(shown, str) and asked != shown:
        yield (
            CODE_CONTEXT_QUESTION,
            "/context/question",
            f"context question {_show(shown)} differs from request question {_show(asked)}",
            None,
        )
    omitted = _int(context.get("omitted"))
    if omitted is not None and omitted > len(items):
        yield (
            CODE_CONTEXT_OMITTED,
            "/context/omitted",
            f"context omits {omitted} items but the package has only {len(items)}",
            {"omitted": omitted, "items": len(items)},
        )
    if isinstance(doc.get("items"), list):
        budget = effective_item_budget(request)
        if len(items) > budget:
            yield (
                CODE_ITEM_BUDGET,
                "/items",
                f"{len(items)} items exceed the effective item budget of {budget}",
                {"items": len(items), "budget": budget},
            )
    claimed = _int(doc.get("independent_families"))
    families = {f for f in (_obj(it).get("family") for it in items) if isinstance(f, str)}
    if claimed is not None and claimed > len(families):
        yield (
            CODE_INDEPENDENT_FAMILIES,
            "/independent_families",
            f"{claimed} independent families claimed, items show {len(families)} distinct",
            {"claimed": claimed, "families": len(families)},
        )


def measure_context(context: Mapping[str, Any]) -> int:
    """UTF-8 size of the compact JSON of ``context`` in its own member order.

    Raises:
        TypeError, ValueError: ``context`` holds values that are not JSON.
    """
    text = json.dumps(context, ensure_ascii=False, separators=(",", ":"))
    # Lone surrogates cannot come through the strict reader; count them as UTF-8 would
    # (3 bytes) rather than fail, should a caller pass one.
    return len(text.encode("utf-8", "surrogatepass"))


def context_fixed_point(context: dict[str, Any]) -> int | None:
    """Smallest n with ``measure_context`` = n once ``bytes`` (and ``tokens``) hold n.

    ``context`` is modified in place; pass a copy.
    """
    fields = [f for f in ("bytes", "tokens") if f in context]
    if "bytes" not in fields:
        return None
    for f in fields:
        context[f] = 0
    base = measure_context(context) - len(fields)  # the size without the digits
    for digits in range(1, 8):
        n = base + digits * len(fields)
        if len(str(n)) == digits:
            return n
    return None


def context_size_faults(doc: Any) -> list[Fault]:
    """``package.context-bytes`` / ``package.context-tokens`` faults of a package.

    ``context.bytes`` must equal :func:`measure_context` of the context with its values as
    given (a fixed point: the claimed value is inside what is measured), and under
    ``utf8-byte-upper-bound`` ``tokens`` must equal ``bytes``. The caller decides whether
    these are warnings or errors (``packages.strict_context_bytes``).
    """
    return list(_context_size(doc)) if isinstance(doc, dict) else []


def _context_size(doc: dict[str, Any]) -> Iterator[Fault]:
    context = doc.get("context")
    if not isinstance(context, dict):
        return
    claimed = _int(context.get("bytes"))
    if claimed is not None:
        try:
            measured = measure_context(context)
        except (TypeError, ValueError):
            measured = None
        if measured is not None and measured != claimed:
            yield (
                CODE_CONTEXT_BYTES,
                "/context/bytes",
                f"context.bytes is {claimed} but the compact UTF-8 JSON of the context "
                f"with that value is {measured} bytes",
                {
                    "claimed": claimed,
                    "measured": measured,
                    "fixed_point": context_fixed_point(dict(context)),
                },
            )
    tokens = _int(context.get("tokens"))
    if (
        context.get("token_accounting") == "utf8-byte-upper-bound"
        and tokens is not None
        and claimed is not None
        and tokens != claimed
    ):
        yield (
            CODE_CONTEXT_TOKENS,
            "/context/tokens",
            f"context.tokens is {tokens} but utf8-byte-upper-bound makes it equal to "
            f"bytes ({claimed})",
            {"tokens": tokens, "bytes": claimed},
        )


def package_faults(doc: Any) -> tuple[list[Fault], list[Fault]]:
    """All semantic faults of a package.

    Args:
        doc: the parsed package.

    Returns:
        ``(hard, soft)``: hard faults always reject; soft ones are the context size rules
        (``package.context-bytes``, ``package.context-tokens``), which the caller treats as
        warnings unless strict.
    """
    if not isinstance(doc, dict):
        return [], []
    items = _items(doc)
    ids = _item_index(items)
    hard = list(_item_rules(doc, items, ids))
    hard += _node_rules(_arr(_obj(doc.get("context")).get("nodes")), items, ids)
    hard += _count_rules(doc, items)
    hard += revision_conflict_faults(doc)
    return hard, context_size_faults(doc)


# --------------------------------------------------------------------------- bindings


def _binding(reference: Any) -> tuple[tuple[str, str, str], tuple[str, str, str, str]] | None:
    ref = _obj(reference)
    workspace, recording = ref.get("workspace_id"), ref.get("recording_id")
    revision = decimal_value(ref.get("recording_revision"))
    value = tuple(ref.get(f) for f in _VALUE_FIELDS)
    if not (isinstance(workspace, str) and isinstance(recording, str) and revision is not None):
        return None
    if not all(isinstance(v, str) for v in value):
        return None
    key = (workspace.lower(), recording.lower(), str(revision))
    return key, (value[0], value[1], value[2], value[3])


def revision_bindings(
    package: Any,
) -> list[tuple[str, tuple[str, str, str], tuple[str, str, str, str]]]:
    """``(pointer, key, value)`` per item with a readable reference; see packages."""
    out = []
    for i, item in enumerate(_items(package)):
        bound = _binding(_obj(item).get("reference"))
        if bound is not None:
            out.append((f"/items/{i}/reference", bound[0], bound[1]))
    return out


def revision_conflict_faults(package: Any) -> list[Fault]:
    """Items binding one recording revision to digests other than an earlier item's."""
    first: dict[tuple[str, str, str], tuple[str, tuple[str, str, str, str]]] = {}
    faults: list[Fault] = []
    for pointer, key, value in revision_bindings(package):
        if key not in first:
            first[key] = (pointer, value)
            continue
        where, bound = first[key]
        if value != bound:
            differ = [f for f, a, b in zip(_VALUE_FIELDS, bound, value, strict=True) if a != b]
            faults.append(
                (
                    CODE_REVISION_CONFLICT,
                    pointer,
                    f"recording {key[1]} revision {key[2]} is bound to other "
                    f"{', '.join(differ)} by {where}",
                    {
                        "key": dict(zip(_KEY_FIELDS, key, strict=True)),
                        "bound_by": where,
                        "differs": differ,
                    },
                )
            )
    return faults


# --------------------------------------------------------------------------- envelopes


def envelope_faults(doc: Any, package: Any) -> list[Fault]:
    """Semantic faults of an answer envelope, alone (``package`` None) or against its package.

    Alone: ``envelope.interval-order`` on citation references. With the package also
    ``envelope.package-mismatch`` and, per citation, unknown evidence, quote and reference.
    """
    if not isinstance(doc, dict):
        return []
    faults: list[Fault] = []
    citations = [
        (i, j, _obj(c))
        for i, claim in enumerate(_arr(doc.get("claims")))
        for j, c in enumerate(_arr(_obj(claim).get("citations")))
    ]
    for i, j, cite in citations:
        source = _obj(cite.get("reference")).get("source")
        if source is not None:
            base = f"/claims/{i}/citations/{j}/reference/source"
            faults += _interval_fault(source, base, CODE_ENVELOPE_INTERVAL_ORDER)
    if package is None:
        return faults
    package = _obj(package)
    mine, theirs = doc.get("package_id"), package.get("id")
    # UUID text is case-insensitive (RFC 4122 section 3).
    if isinstance(mine, str) and isinstance(theirs, str) and mine.lower() != theirs.lower():
        faults.append(
            (
                CODE_ENVELOPE_PACKAGE_MISMATCH,
                "/package_id",
                f"package_id {mine} is not the id of the package checked against ({theirs})",
                {"package_id": theirs},
            )
        )
    items = _items(package)
    ids = _item_index(items)
    for i, j, cite in citations:
        base = f"/claims/{i}/citations/{j}"
        ident = cite.get("evidence_id")
        if not isinstance(ident, str):
            continue
        if ident not in ids:
            faults.append(
                (
                    CODE_CITATION_UNKNOWN_EVIDENCE,
                    f"{base}/evidence_id",
                    f"citation names evidence {_show(ident)}, which is not an item of the package",
                    None,
                )
            )
            continue
        item = _obj(items[ids[ident]])
        text, quote = item.get("text"), cite.get("quote")
        if isinstance(text, str) and isinstance(quote, str) and quote not in text:
            faults.append(
                (
                    CODE_CITATION_QUOTE,
                    f"{base}/quote",
                    f"quote {_show(quote)} does not occur verbatim in the text of item "
                    f"{_show(ident)}",
                    {"item": f"/items/{ids[ident]}"},
                )
            )
        if "reference" in cite and not json_equal(cite["reference"], item.get("reference")):
            faults.append(
                (
                    CODE_CITATION_REFERENCE,
                    f"{base}/reference",
                    f"citation reference differs from the reference of item {_show(ident)}",
                    {"item": f"/items/{ids[ident]}/reference"},
                )
            )
    return faults
