"""The rules of insonic answer evidence 1.3.0, pure (no database): detect, shape, semantics.

Contract: ``insonic-answer-evidence-1.3.0.schema.json`` (GitHub shruggietech/insonic,
schemas/v1.3.0), a JSON Schema 2020-12 whose root is the retained package and whose ``$defs``
hold the request, the answer envelope, its claims and citations. Each code's default rule
(in :data:`evstore.core.errors.CODES`) is a JSON Pointer into that published file, e.g.
``insonic-answer-evidence-1.3.0#/$defs/citation/properties/quote``.

:func:`validate` judges one document (a package, a request or an envelope alone) and
returns a :class:`~evstore.core.errors.Faults` in the documented fault order:

1. Shape, by evstore's own schema (``schemas/insonic-answer-evidence-1.3.0.schema.json``:
   the contract's constraints in our wording and layout) through jsonschema-rs, draft
   2020-12, formats (``uuid``, ``date``) asserted, no network: ``package.schema``,
   ``request.schema``, ``envelope.schema`` at the instance pointer, ordered by pointer.
2. Contract rules the schema cannot state (unique ids, ids that must resolve, interval order,
   counts and budgets, one binding per recording revision within a package), then the
   context size rules (:mod:`evstore.contracts.packages.rules_context`: warnings unless
   ``packages.strict_context_bytes``).

An envelope's citations are judged against its package by :func:`validate_envelope`, given
the package (the store module passes the stored one).

The semantic rules run even on structurally faulty documents, so one report lists
everything: every accessor here tolerates a wrong type by skipping the part it cannot read (a
missing or malformed member is the schema's fault to report, never a crash here).

Decimal strings (``start_us``, ``recording_revision``...) are read with :func:`decimal_value`,
which accepts ASCII digits only and returns an exact ``int``: ``int()`` alone would also take
``"1_000"``, ``" 7"`` or non-ASCII digits, and ``float()`` would merge 2**53 and 2**53 + 1.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any

from ...core.errors import EvstoreError, Faults, error, join_pointer
from ...core.near import near_member, spelling
from ...core.settings import setting
from .rules_context import context_size_faults
from .schema import budget_default, schema_faults

__all__ = [
    "CONTRACT",
    "CONTRACT_VERSION",
    "DOCUMENT_KINDS",
    "PACKAGE_KIND",
    "STRICT_CONTEXT_BYTES",
    "decimal_value",
    "detect",
    "effective_item_budget",
    "json_equal",
    "normalize_uuid",
    "revision_bindings",
    "revision_conflicts",
    "validate",
    "validate_envelope",
    "validate_package",
    "validate_request",
]

#: Contract name used in ``rule`` (the published file's name without ``.schema.json``).
CONTRACT = "insonic-answer-evidence-1.3.0"
#: The contract release: const of ``schema_version`` (package) and ``version`` (request,
#: envelope); also the stored artifacts' contract version.
CONTRACT_VERSION = "1.3.0"
#: The kinds this contract claims, in detection order.
DOCUMENT_KINDS = ("package", "request", "envelope")
#: The package discriminator, ``kind``'s const value.
PACKAGE_KIND = "answer-evidence-context"
#: Store setting (bool): when true, a wrong ``context.bytes``/``context.tokens`` rejects the
#: package instead of being recorded as a warning.
STRICT_CONTEXT_BYTES = "packages.strict_context_bytes"

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


def _normalisation_hint(quote: str, text: str) -> str:
    """A message tail when ``quote`` occurs in ``text`` once both share a Unicode normal form.

    Quotes are compared code point for code point (never normalised); a quote copied through an
    editor that composes or decomposes characters (NFC vs NFD) differs only in form, and the
    message says so instead of leaving the reader to compare invisible differences.
    """
    for form in ("NFC", "NFD"):
        if unicodedata.normalize(form, quote) in unicodedata.normalize(form, text):
            return (
                f"; it does occur under Unicode normalisation {form}: the quote and the text "
                "use different normal forms (NFC vs NFD), and quotes are compared without "
                "normalising, so copy the quote from the text exactly"
            )
    return ""


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


def _interval_fault(interval: Any, pointer: str, code: str) -> Iterator[EvstoreError]:
    interval = _obj(interval)
    start = decimal_value(interval.get("start_us"))
    end = decimal_value(interval.get("end_us"))
    if start is not None and end is not None and end <= start:
        yield error(
            code,
            f"source interval ends at {end} us, not after its start {start} us",
            join_pointer(pointer, "end_us"),
            start_us=str(start),
            end_us=str(end),
        )


def _request_rules(request: Any, base: str, code: str) -> list[EvstoreError]:
    """Semantic faults of a request at ``base`` (``""`` alone, ``"/request"`` in a package)."""
    interval = _obj(_obj(request).get("filters")).get("source_interval")
    if interval is None:
        return []
    return list(_interval_fault(interval, join_pointer(base, "filters", "source_interval"), code))


# --------------------------------------------------------------------------- package rules


def _item_rules(
    doc: dict[str, Any], items: list[Any], ids: dict[str, int]
) -> Iterator[EvstoreError]:
    for i, item in enumerate(items):
        ident = _obj(item).get("id")
        if isinstance(ident, str) and ids.get(ident) != i:
            yield error(
                "package.item-id-duplicate",
                f"item id {_show(ident)} is already used by /items/{ids[ident]}",
                f"/items/{i}/id",
                first=f"/items/{ids[ident]}",
            )
    for i, item in enumerate(items):
        source = _obj(_obj(item).get("reference")).get("source")
        if isinstance(source, dict):
            yield from _interval_fault(
                source, f"/items/{i}/reference/source", "package.interval-order"
            )
    yield from _request_rules(doc.get("request"), "/request", "package.interval-order")
    for i, conflict in enumerate(_arr(doc.get("conflicts"))):
        for j, ident in enumerate(_arr(_obj(conflict).get("evidence_ids"))):
            if isinstance(ident, str) and ident not in ids:
                yield error(
                    "package.conflict-unknown-evidence",
                    f"conflict names evidence {_show(ident)}, which is not an item",
                    f"/conflicts/{i}/evidence_ids/{j}",
                )


def _node_rules(nodes: list[Any], items: list[Any], ids: dict[str, int]) -> Iterator[EvstoreError]:
    node_ids: dict[str, int] = {}
    for i, node in enumerate(nodes):
        ident = _obj(node).get("id")
        if isinstance(ident, str):
            if ident in node_ids:
                yield error(
                    "package.node-id-duplicate",
                    f"context node id {_show(ident)} is already used by "
                    f"/context/nodes/{node_ids[ident]}",
                    f"/context/nodes/{i}/id",
                    first=f"/context/nodes/{node_ids[ident]}",
                )
            else:
                node_ids[ident] = i
    parent_of: list[int | None] = [None] * len(nodes)
    for i, node in enumerate(nodes):
        node = _obj(node)
        base = f"/context/nodes/{i}"
        for j, source in enumerate(_arr(node.get("sources"))):
            if isinstance(source, str) and source not in ids:
                yield error(
                    "package.node-source-unknown",
                    f"context node source {_show(source)} is not an item",
                    f"{base}/sources/{j}",
                )
        parent = node.get("parent")
        if isinstance(parent, str):
            if parent in node_ids:
                parent_of[i] = node_ids[parent]
            else:
                yield error(
                    "package.node-parent-unknown",
                    f"parent {_show(parent)} names no context node",
                    f"{base}/parent",
                )
        text = node.get("text")
        if not isinstance(text, str):
            continue
        if node.get("level") != "cue":
            yield error(
                "package.node-text-level",
                f"only cue nodes carry text; this node is {node.get('level')!r}",
                f"{base}/text",
            )
            continue
        sources = _arr(node.get("sources"))
        if len(sources) != 1:
            yield error(
                "package.node-text-sources",
                f"a cue node with text needs exactly one source, it has {len(sources)}",
                f"{base}/sources",
                sources=len(sources),
            )
            continue
        source = sources[0]
        if isinstance(source, str) and source in ids:
            item_text = _obj(items[ids[source]]).get("text")
            if isinstance(item_text, str) and not item_text.startswith(text):
                yield error(
                    "package.node-text-prefix",
                    f"cue node text is not a prefix of the text of item {_show(source)}",
                    f"{base}/text",
                    item=f"/items/{ids[source]}",
                )
    yield from _cycles(nodes, parent_of)


def _cycles(nodes: list[Any], parent_of: list[int | None]) -> Iterator[EvstoreError]:
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
            yield error(
                "package.node-parent-cycle",
                f"context node parents form a cycle of {len(cycle)} node(s)",
                f"/context/nodes/{first}/parent",
                cycle=[_obj(nodes[n]).get("id") for n in order],
            )
        for n in walk:
            state[n] = 2


def _count_rules(doc: dict[str, Any], items: list[Any]) -> Iterator[EvstoreError]:
    request = _obj(doc.get("request"))
    context = _obj(doc.get("context"))
    asked, shown = request.get("question"), context.get("question")
    if isinstance(asked, str) and isinstance(shown, str) and asked != shown:
        yield error(
            "package.context-question",
            f"context question {_show(shown)} differs from request question {_show(asked)}",
            "/context/question",
        )
    omitted = _int(context.get("omitted"))
    if omitted is not None and omitted > len(items):
        yield error(
            "package.context-omitted",
            f"context omits {omitted} items but the package has only {len(items)}",
            "/context/omitted",
            omitted=omitted,
            items=len(items),
        )
    if isinstance(doc.get("items"), list):
        budget = effective_item_budget(request)
        if len(items) > budget:
            yield error(
                "package.item-budget",
                f"{len(items)} items exceed the effective item budget of {budget}",
                "/items",
                items=len(items),
                budget=budget,
            )
    claimed = _int(doc.get("independent_families"))
    families = {f for f in (_obj(it).get("family") for it in items) if isinstance(f, str)}
    if claimed is not None and claimed > len(families):
        yield error(
            "package.independent-families",
            f"{claimed} independent families claimed, items show {len(families)} distinct",
            "/independent_families",
            claimed=claimed,
            families=len(families),
        )


def _package_rules(doc: Any) -> list[EvstoreError]:
    """The contract rules of a package beyond its shape, context size excluded."""
    if not isinstance(doc, dict):
        return []
    items = _items(doc)
    ids = _item_index(items)
    found = list(_item_rules(doc, items, ids))
    found += _node_rules(_arr(_obj(doc.get("context")).get("nodes")), items, ids)
    found += _count_rules(doc, items)
    found += revision_conflicts(doc)
    return found


# --------------------------------------------------------------------------- bindings


def _binding(reference: Any) -> tuple[tuple[str, str, str], tuple[str, str, str, str]] | None:
    ref = _obj(reference)
    workspace, recording = ref.get("workspace_id"), ref.get("recording_id")
    revision = decimal_value(ref.get("recording_revision"))
    value = [ref.get(f) for f in _VALUE_FIELDS]
    if not (isinstance(workspace, str) and isinstance(recording, str) and revision is not None):
        return None
    digests = [v for v in value if isinstance(v, str)]
    if len(digests) != len(value):
        return None
    key = (normalize_uuid(workspace), normalize_uuid(recording), str(revision))
    return key, (digests[0], digests[1], digests[2], digests[3])


def revision_bindings(
    package: Any,
) -> list[tuple[str, tuple[str, str, str], tuple[str, str, str, str]]]:
    """The recording-revision bindings a package asks the store to hold, one per item.

    Args:
        package: a parsed package (items with a malformed reference are skipped).

    Returns:
        ``[(pointer, key, value), ...]`` in item order: ``pointer`` is
        ``/items/<i>/reference``, ``key`` is ``(workspace_id, recording_id,
        recording_revision)``, ``value`` is ``(document_digest, source_digest,
        source_map_digest, identity_digest)``. UUIDs are lowercased (:func:`normalize_uuid`)
        and the revision is the canonical decimal string of its integer value (it may
        exceed 2**63: keep it as text or numeric in a database).

    Contract:
        ``$defs/reference``; the first accepted write binds the key to the value.
    """
    out = []
    for i, item in enumerate(_items(package)):
        bound = _binding(_obj(item).get("reference"))
        if bound is not None:
            out.append((f"/items/{i}/reference", bound[0], bound[1]))
    return out


def revision_conflicts(package: Any) -> list[EvstoreError]:
    """Items of one package that bind one recording revision to different digests.

    Returns:
        One ``package.revision-conflict`` (:class:`~evstore.core.errors.PackageBindingError`) per
        item disagreeing with the first item that bound its key, at ``/items/<i>/reference``,
        details ``key``, ``bound_by`` (that item's pointer) and ``differs``. Also part of
        :func:`validate_package`.

    Contract:
        ``$defs/reference``: one recording revision, one set of digests.
    """
    first: dict[tuple[str, str, str], tuple[str, tuple[str, str, str, str]]] = {}
    faults: list[EvstoreError] = []
    for pointer, key, value in revision_bindings(package):
        if key not in first:
            first[key] = (pointer, value)
            continue
        where, bound = first[key]
        if value != bound:
            differ = [f for f, a, b in zip(_VALUE_FIELDS, bound, value, strict=True) if a != b]
            faults.append(
                error(
                    "package.revision-conflict",
                    f"recording {key[1]} revision {key[2]} is bound to other "
                    f"{', '.join(differ)} by {where}",
                    pointer,
                    key=dict(zip(_KEY_FIELDS, key, strict=True)),
                    bound_by=where,
                    differs=differ,
                )
            )
    return faults


# --------------------------------------------------------------------------- envelopes


def _envelope_rules(doc: Any, package: Any) -> list[EvstoreError]:
    """Semantic faults of an answer envelope, alone (``package`` None) or against its package.

    Alone: ``envelope.interval-order`` on citation references. With the package also
    ``envelope.package-mismatch`` and, per citation, unknown evidence, quote and reference.
    """
    if not isinstance(doc, dict):
        return []
    faults: list[EvstoreError] = []
    citations = [
        (i, j, _obj(c))
        for i, claim in enumerate(_arr(doc.get("claims")))
        for j, c in enumerate(_arr(_obj(claim).get("citations")))
    ]
    for i, j, cite in citations:
        source = _obj(cite.get("reference")).get("source")
        if source is not None:
            base = f"/claims/{i}/citations/{j}/reference/source"
            faults += _interval_fault(source, base, "envelope.interval-order")
    if package is None:
        return faults
    package = _obj(package)
    mine, theirs = doc.get("package_id"), package.get("id")
    # UUID text is case-insensitive (RFC 4122 section 3).
    if (
        isinstance(mine, str)
        and isinstance(theirs, str)
        and normalize_uuid(mine) != normalize_uuid(theirs)
    ):
        faults.append(
            error(
                "envelope.package-mismatch",
                f"package_id {mine} is not the id of the package checked against ({theirs})",
                "/package_id",
                package_id=theirs,
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
                error(
                    "envelope.citation-unknown-evidence",
                    f"citation names evidence {_show(ident)}, which is not an item of the package",
                    f"{base}/evidence_id",
                )
            )
            continue
        item = _obj(items[ids[ident]])
        text, quote = item.get("text"), cite.get("quote")
        if isinstance(text, str) and isinstance(quote, str) and quote not in text:
            faults.append(
                error(
                    "envelope.citation-quote",
                    f"quote {_show(quote)} does not occur verbatim in the text of item "
                    f"{_show(ident)}{_normalisation_hint(quote, text)}",
                    f"{base}/quote",
                    item=f"/items/{ids[ident]}",
                )
            )
        if "reference" in cite and not json_equal(cite["reference"], item.get("reference")):
            faults.append(
                error(
                    "envelope.citation-reference",
                    f"citation reference differs from the reference of item {_show(ident)}",
                    f"{base}/reference",
                    item=f"/items/{ids[ident]}/reference",
                )
            )
    return faults


# --------------------------------------------------------------------------- the contract


def normalize_uuid(value: str) -> str:
    """A UUID as evstore keys and looks it up: lowercased (RFC 4122: case does not matter).

    Package ids, workspace ids and recording ids are bound, indexed and searched in this
    form (``evstore find --package-id``, ``evstore ls --workspace``); the text is otherwise
    kept as written.
    """
    return value.lower()


def detect(doc: Any) -> str | None:
    """Tell which document of this contract ``doc`` is, by its discriminators.

    - ``"package"``: an object whose ``kind`` is ``"answer-evidence-context"`` (the
      package's const). ``schema_version`` is not required here, so a package of another
      release is still recognized and then fails ``package.schema`` at ``/schema_version``.
    - ``"envelope"``: no ``kind``/``schema_version``, ``version == "1.3.0"`` and a
      ``package_id`` or ``claims`` member (both required by the envelope, forbidden in a request).
    - ``"request"``: no ``kind``/``schema_version``, ``version == "1.3.0"`` and a
      ``question`` member (required by the request, forbidden in an envelope).

    Near misses (docs/kinds.md#near-misses) are claimed too, so validation rejects them with
    the kind's schema code and a pointer: a member named near ``kind`` whose value is spelt
    near ``answer-evidence...`` is a package; without ``kind``/``schema_version``, a
    ``version`` of release 1.3 spelt another way (``1.3``, ``v1.3.0``, ``1.3.1``) or a member
    named near ``package_id``, ``claims`` or ``question`` (``packageId``) makes an envelope
    or a request as above.

    Args:
        doc: a parsed JSON value.

    Returns:
        ``"package"``, ``"request"``, ``"envelope"`` or ``None`` when none matches.
    """
    if not isinstance(doc, dict):
        return None
    if doc.get("kind") == PACKAGE_KIND:
        return "package"
    kind = near_member(doc, "kind")
    if kind is not None and isinstance(kind[1], str) and spelling(kind[1]).startswith(_NEAR_KIND):
        return "package"
    if "kind" in doc or "schema_version" in doc:
        return None
    version = doc.get("version")
    if not isinstance(version, str) or not _NEAR_VERSION.fullmatch(version.strip()):
        return None
    if near_member(doc, "package_id") is not None or near_member(doc, "claims") is not None:
        return "envelope"
    if near_member(doc, "question") is not None:
        return "request"
    return None


#: Near misses of the package's ``kind`` start with this spelling.
_NEAR_KIND = spelling("answer-evidence")
#: Near misses of the request's and envelope's ``version`` (release 1.3, any spelling).
_NEAR_VERSION = re.compile(r"[vV]?1\.3(\.[0-9]+)?")


def validate(
    doc: Any, settings: Mapping[str, Any] | None = None, *, kind: str | None = None
) -> Faults:
    """Every store-free fault of one document of this contract, in fault order.

    Args:
        doc: the parsed document (from the strict JSON reader).
        settings: store settings (typed, as loaded) or None for the defaults; read:
            ``packages.strict_context_bytes`` (packages only).
        kind: ``package``, ``request`` or ``envelope``; None detects it (:func:`detect`),
            and a document no kind claims is judged as a package (the schema's root).

    Returns:
        :func:`validate_package`, :func:`validate_request` or :func:`validate_envelope`
        (alone: the citations against the package need the package, see there).

    Raises:
        ValueError: ``kind`` is not one of this contract's kinds (a programming error).
    """
    kind = kind or detect(doc) or "package"
    if kind == "package":
        return validate_package(doc, settings)
    if kind == "request":
        return validate_request(doc)
    if kind == "envelope":
        return validate_envelope(doc)
    raise ValueError(f"{kind!r} is not a kind of {CONTRACT}")


def validate_package(doc: Any, settings: Mapping[str, Any] | None = None) -> Faults:
    """Check a retained package against every structural and semantic rule.

    Args:
        doc: the parsed package (a dict from the strict JSON reader).
        settings: store settings or None; ``packages.strict_context_bytes`` (bool, True
            only) turns context size faults from warnings into errors.

    Returns:
        Errors: :class:`~evstore.core.errors.PackageError` (and
        :class:`~evstore.core.errors.PackageBindingError` for ``package.revision-conflict``
        between two items of this package), shape first (``package.schema``, ordered by
        pointer), then the semantic rules (then the context size rules when strict).
        Warnings: ``package.context-bytes``/``package.context-tokens`` when not strict.
        No errors means the package is acceptable.

    Contract:
        the whole schema; each code's section is its rule in :data:`evstore.core.errors.CODES`.
    """
    faults = Faults(errors=schema_faults("package", doc, "package.schema"))
    faults.extend(_package_rules(doc))
    size = context_size_faults(doc)
    if setting(settings, STRICT_CONTEXT_BYTES) is True:
        faults.extend(size)
    else:
        faults.warnings.extend(size)
    return faults


def validate_request(doc: Any) -> Faults:
    """Check a standalone request (``$defs/request``).

    Args:
        doc: the parsed request.

    Returns:
        Errors: ``request.schema`` faults, then ``request.interval-order`` for
        ``filters.source_interval``; never warnings.
    """
    faults = Faults(errors=schema_faults("request", doc, "request.schema"))
    faults.extend(_request_rules(doc, "", "request.interval-order"))
    return faults


def validate_envelope(doc: Any, package: Any = None) -> Faults:
    """Check an answer envelope, and, given its package, every citation against it.

    Args:
        doc: the parsed envelope.
        package: the (accepted) package the envelope answers from, or ``None`` to check the
            envelope alone.

    Returns:
        Errors: ``envelope.schema`` faults (the claim conditionals included), then
        ``envelope.interval-order``; with ``package`` also ``envelope.package-mismatch``
        (package_id is not the package's id, compared as UUIDs, case-insensitively), and per
        citation ``envelope.citation-unknown-evidence``, ``envelope.citation-quote`` (quote
        not an exact substring of the item's text) and ``envelope.citation-reference``
        (reference not the item's). Never warnings.

    Contract:
        ``$defs/envelope``, ``$defs/claim``, ``$defs/citation``.
    """
    faults = Faults(errors=schema_faults("envelope", doc, "envelope.schema"))
    faults.extend(_envelope_rules(doc, package))
    return faults
