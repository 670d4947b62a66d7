"""The semantic rules of insonic answer evidence 1.3.0: what its JSON Schema cannot say.

Pure functions over parsed documents, used by :mod:`evstore.packages` (which owns the error
classes, the schema and the public API). Each rule yields faults as
``(code, pointer, message, details)`` tuples; the caller turns them into errors.

The rules run even on structurally faulty documents (the caller reports schema faults
first), so every accessor here tolerates a wrong type by skipping the part it cannot read:
a missing or malformed member is the schema's fault to report, never a crash here.

Decimal strings (``start_us``, ``recording_revision``...) are read with :func:`decimal_value`,
which accepts ASCII digits only and returns an exact ``int``: ``int()`` alone would also take
``"1_000"``, ``" 7"`` or non-ASCII digits, and ``float()`` would merge 2**53 and 2**53 + 1.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from .errors import join_pointer

__all__ = [
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
    "CODE_PACKAGE_SCHEMA",
    "CODE_REQUEST_INTERVAL_ORDER",
    "CODE_REQUEST_SCHEMA",
    "CODE_REVISION_CONFLICT",
    "CODE_UNKNOWN_PACKAGE",
    "Fault",
    "context_fixed_point",
    "decimal_value",
    "effective_item_budget",
    "envelope_faults",
    "json_equal",
    "measure_context",
    "package_faults",
    "request_faults",
    "revision_bindings",
    "revision_conflict_faults",
]

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

#: ``(code, pointer, message, details)``
Fault = tuple[str, str, str, dict[str, Any] | None]

_DIGITS = re.compile(r"[0-9]+", re.ASCII)
_KEY_FIELDS = ("workspace_id", "recording_id", "recording_revision")
_VALUE_FIELDS = ("document_digest", "source_digest", "source_map_digest", "identity_digest")
# A quoted value in a message is cut here; the full value is in the document at the pointer.
_SHOW = 80


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


def effective_item_budget(request: Any, default: int) -> int:
    """``request.budget.items`` when a positive integer, else ``default`` (absent or 0)."""
    limit = _int(_obj(_obj(request).get("budget")).get("items"))
    return limit if limit is not None and limit > 0 else default


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


def _count_rules(doc: dict[str, Any], items: list[Any], default_items: int) -> Iterator[Fault]:
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
        budget = effective_item_budget(request, default_items)
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


def _size_rules(doc: dict[str, Any]) -> Iterator[Fault]:
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


def package_faults(doc: Any, default_items: int) -> tuple[list[Fault], list[Fault]]:
    """All semantic faults of a package.

    Args:
        doc: the parsed package.
        default_items: the schema's default item budget.

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
    hard += _count_rules(doc, items, default_items)
    hard += revision_conflict_faults(doc)
    return hard, list(_size_rules(doc))


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
