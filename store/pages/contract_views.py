"""What each contract's page shows: fragment, manifest, package, envelope, context, run.

Each view returns its template's context, reading through the public API only. Evidence text
goes through :func:`evstore.pages.render.ev_text` (escaped, controls marked); quotes are
highlighted by bytes (fragments) or by the quote's first occurrence in the cited item's text
(insonic envelopes), and the page says when a quote is not found.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from .. import (
    CorruptionError,
    EvstoreError,
    NotFound,
    bindings_of_fragment,
    dumps,
    edges_from,
    error,
)
from .render import ev_text, highlight_window, is_ref, object_url, utf8_floor
from .views import (
    BLOB_WINDOW,
    DOC_MAX,
    DocumentTooLarge,
    closure_check,
    edges_in,
    is_stored,
    page_for,
    read_window,
    summary,
)

__all__ = [
    "context_view",
    "envelope_view",
    "fragment_view",
    "manifest_view",
    "package_view",
    "run_view",
]

#: Package items per page.
ITEMS_PAGE = 50
#: Other fragments of the same document listed on a fragment page.
SIBLINGS_MAX = 200


def _load(store: Any, ref: str, kind: str) -> tuple[dict[str, Any], Any]:
    """The object's facts and its parsed JSON; DocumentTooLarge over :data:`DOC_MAX` bytes."""
    info = summary(store, ref)
    if kind not in info["kinds"]:
        raise error("input.invalid", f"{info['address']} is not stored as a {kind}", kind=kind)
    if int(info["stat"]["size"]) > DOC_MAX:
        raise DocumentTooLarge(info["address"], int(info["stat"]["size"]))
    return info, store.load(info["address"])


def fragment_view(store: Any, base: str, ref: str, offset: int | None) -> dict[str, Any]:
    """A fragment: its source text with bytes [start_offset, end_offset) highlighted, the
    quote and content digests re-computed, scope and revision bindings, sibling fragments.

    ``offset`` pages through the source by byte offset (None: the window around the range).
    """  # noqa: D205
    info, frag = _load(store, ref, "fragment")
    start, end = int(frag["start_offset"]), int(frag["end_offset"])
    sources = [e for e in edges_from(store, info["address"]) if e["role"] == "source"]
    source: dict[str, Any] | None = None
    if sources:
        source = _source_window(store, sources[0]["dst"], start, end, offset)
        if "damage" not in source:
            source["quote_ok"] = source.pop("quote_sha256") == frag["quote_sha256"]
            source["content_ok"] = frag.get("content_sha256") in (None, source["sha256"])
    siblings = [
        {"address": a.address, "url": f"{base}/fragment/{a.address}"}
        for a in store.fragments.by_document(str(frag["document_id"]))[:SIBLINGS_MAX]
        if a.address != info["address"]
    ]
    return {
        **info,
        "frag": frag,
        "start": start,
        "end": end,
        "source": source,
        "bindings": bindings_of_fragment(store, frag),
        "siblings": siblings,
        "edges_in": edges_in(store, base, info["address"]),
    }


def _load_other(store: Any, ref: str) -> Any:
    """Another object a page reads beside its own: parsed, or None when over :data:`DOC_MAX`
    bytes or damaged (the page then draws without it; the object's own page names why).
    """  # noqa: D205
    try:
        if int(store.stat(ref)["size"]) > DOC_MAX:
            return None
        return store.load(ref)
    except CorruptionError:
        return None


def _source_window(
    store: Any, address: str, start: int, end: int, offset: int | None
) -> dict[str, Any]:
    """The part of a fragment's source a page shows, read in one verified, streamed pass.

    ``offset`` None: the window around bytes ``[start, end)`` with them marked; else
    :data:`BLOB_WINDOW` bytes from ``offset``. A source that does not verify answers
    ``{"address", "damage": fault dict}`` (the page names it; no byte is shown).
    """
    ctx, mark = 2048, 65536
    if offset is None:
        lo = max(0, start - ctx - 4)
        hi = min(end, start + mark) + ctx + 4 if end - start > mark else end + ctx + 4
    else:
        lo, hi = max(0, offset - 3), offset + BLOB_WINDOW + 4
    try:
        got = read_window(store, address, lo, hi, quote=(start, end))
    except CorruptionError as exc:
        return {"address": address, "damage": exc.to_dict()}
    data, size, lo = got["data"], got["size"], got["from"]
    if offset is None:
        window = highlight_window(data, start - lo, end - lo, ctx, mark, shift=lo, size=size)
    else:
        a = utf8_floor(data, min(offset, size) - lo)
        b = utf8_floor(data, a + BLOB_WINDOW) if lo + a + BLOB_WINDOW < size else len(data)
        window = {
            "html": ev_text(data[a:b].decode("utf-8", "replace")),
            "from": lo + a,
            "to": lo + b,
            "cut": 0,
        }
    return {
        "address": address,
        "size": size,
        "sha256": got["sha256"],
        "quote_sha256": got["quote_sha256"],
        "window": window,
        "prev": max(0, window["from"] - BLOB_WINDOW),
        "next": window["to"] if window["to"] < size else None,
    }


def _ref_url(store: Any, base: str, value: Any) -> str | None:
    """A link for a value that is a content ref of a stored object, else None."""
    if is_ref(value) and is_stored(store, value):
        return object_url(base, value)
    return None


def manifest_view(store: Any, base: str, ref: str, offset: int) -> dict[str, Any]:
    """A manifest: every item with required/included/omitted (and why), its exact ref and
    digest (linked where stored), the rendered content, the review target.
    """  # noqa: D205
    info, doc = _load(store, ref, "manifest")
    items = []
    for i, item in enumerate(doc.get("items", [])):
        items.append(
            {
                "n": i,
                "item": item,
                "ref_url": _ref_url(store, base, item.get("ref")),
                "digest_url": _ref_url(store, base, item.get("digest")),
            }
        )
    content: dict[str, Any] | None = None
    cref = doc.get("content/ref")
    if isinstance(cref, str) and is_ref(cref):
        # read, not has(): has() verifies, so damaged content would read as "not stored"
        content = {"url": object_url(base, cref)}
        try:
            got = read_window(store, cref, max(0, offset - 3), offset + BLOB_WINDOW + 4)
        except CorruptionError as exc:
            content["damage"] = exc.to_dict()
        except NotFound:
            content = None
        else:
            data, size, base_at = got["data"], got["size"], got["from"]
            a = utf8_floor(data, min(offset, size) - base_at)
            b = utf8_floor(data, a + BLOB_WINDOW) if base_at + a + BLOB_WINDOW < size else len(data)
            content["html"] = ev_text(data[a:b].decode("utf-8", "replace"))
            content["size"] = size
            content["next"] = base_at + b if base_at + b < size else None
            content["from"], content["to"] = base_at + a, base_at + b
    top = {k: v for k, v in doc.items() if k not in ("items", "review/target")}
    return {
        **info,
        "doc": doc,
        "top": top,
        "items": items,
        "content": content,
        "target": doc.get("review/target"),
        "edges_in": edges_in(store, base, info["address"]),
    }


def _mark_quote(text: str, quote: str) -> dict[str, Any]:
    """``text`` with the first occurrence of ``quote`` in a ``<mark>``, or unmarked."""
    at = text.find(quote) if quote else -1
    if at < 0:
        return {"html": ev_text(text, 20000), "found": False}
    html = Markup(
        f"{ev_text(text[:at])}<mark>{ev_text(quote)}</mark>{ev_text(text[at + len(quote) :])}"
    )
    return {"html": html, "found": True}


def _claims(envelope: Any, items: dict[Any, Any], item_url: Any) -> list[dict[str, Any]]:
    claims = []
    for c in envelope.get("claims", []) if isinstance(envelope, dict) else []:
        cites = []
        for cit in c.get("citations", []):
            item = items.get(cit.get("evidence_id"))
            quote = cit.get("quote", "")
            marked = _mark_quote(str(item.get("text", "")), quote) if item else None
            cites.append(
                {
                    "cit": cit,
                    "item": item,
                    "marked": marked,
                    "url": item_url(cit.get("evidence_id")),
                }
            )
        claims.append({"claim": c, "cites": cites})
    return claims


def _tree_nodes(nodes: list[Any]) -> list[dict[str, Any]]:
    """Context nodes as a forest: ``[{"node", "children": [...]}]`` by ``parent``."""
    by_id: dict[Any, dict[str, Any]] = {
        n.get("id"): {"node": n, "children": []} for n in nodes if isinstance(n, dict)
    }
    roots = []
    for entry in by_id.values():
        parent = entry["node"].get("parent")
        if parent in by_id and parent != entry["node"].get("id"):
            by_id[parent]["children"].append(entry)
        else:
            roots.append(entry)
    return roots


def package_view(store: Any, base: str, ref: str, offset: int) -> dict[str, Any]:
    """An answer evidence package: items in rank order (paged), conflicts, context tree, and
    every stored envelope's claims with each citation's quote marked in the cited item.
    """  # noqa: D205
    info, doc = _load(store, ref, "package")
    all_items = [i for i in doc.get("items", []) if isinstance(i, dict)]
    rank = {i.get("id"): n for n, i in enumerate(all_items)}
    by_id = {i.get("id"): i for i in all_items}
    here = f"{base}/package/{info['address']}"

    def item_url(evidence_id: Any) -> str | None:
        if evidence_id not in rank:
            return None
        page = rank[evidence_id] // ITEMS_PAGE * ITEMS_PAGE
        return f"{here}?offset={page}#item-{rank[evidence_id]}"

    page = [
        {"rank": offset + n + 1, "n": offset + n, "item": item}
        for n, item in enumerate(all_items[offset : offset + ITEMS_PAGE])
    ]
    conflicts = [
        {"conflict": c, "links": [(e, item_url(e)) for e in c.get("evidence_ids", [])]}
        for c in doc.get("conflicts", [])
        if isinstance(c, dict)
    ]
    envelopes = []
    pid = doc.get("id")
    if isinstance(pid, str):
        for a in store.find("package_id", pid, kind="envelope"):
            env = _load_other(store, a.address)
            envelopes.append({"address": a.address, "claims": _claims(env, by_id, item_url)})
    context = doc.get("context") if isinstance(doc.get("context"), dict) else {}
    return {
        **info,
        "doc": doc,
        "items": page,
        "total": len(all_items),
        "offset": offset,
        "prev": max(0, offset - ITEMS_PAGE) if offset else None,
        "next": offset + ITEMS_PAGE if offset + ITEMS_PAGE < len(all_items) else None,
        "conflicts": conflicts,
        "nodes": _tree_nodes(context.get("nodes", [])),
        "item_url": item_url,
        "envelopes": envelopes,
        "edges_in": edges_in(store, base, info["address"]),
    }


def envelope_view(store: Any, base: str, ref: str) -> dict[str, Any]:
    """An envelope: its claims with citations marked in the cited package's items."""
    info, env = _load(store, ref, "envelope")
    packages = [e for e in edges_from(store, info["address"]) if e["role"] == "package"]
    by_id: dict[Any, Any] = {}
    pkg_url = None
    package_damage = None
    package_size = None  # set when the package is over DOC_MAX bytes (not parsed)
    if packages:
        pkg_url = f"{base}/package/{packages[0]['dst']}"
        pkg: Any = {}
        try:  # damaged or too large: the claims are shown without the cited items
            size = int(store.stat(packages[0]["dst"])["size"])
            if size > DOC_MAX:
                package_size = size
            else:
                pkg = store.load(packages[0]["dst"])
        except CorruptionError as exc:
            package_damage = exc.to_dict()
        pkg = pkg if isinstance(pkg, dict) else {}
        by_id = {i.get("id"): i for i in pkg.get("items", []) if isinstance(i, dict)}
    rank = {k: n for n, k in enumerate(by_id)}

    def item_url(evidence_id: Any) -> str | None:
        if pkg_url is None or evidence_id not in rank:
            return None
        n = rank[evidence_id]
        return f"{pkg_url}?offset={n // ITEMS_PAGE * ITEMS_PAGE}#item-{n}"

    return {
        **info,
        "env": env,
        "package_url": pkg_url,
        "package_damage": package_damage,
        "package_size": package_size,
        "doc_max": DOC_MAX,
        "claims": _claims(env, by_id, item_url),
        "edges_in": edges_in(store, base, info["address"]),
    }


def _unit_refs(value: Any, source_id: str, out: list[tuple[int, int]], budget: list[int]) -> None:
    """Collect ``{source_id, start_unit_id, end_unit_id}`` refs to ``source_id`` in ``value``."""
    budget[0] -= 1
    if budget[0] < 0:
        return
    if isinstance(value, dict):
        if value.get("source_id") == source_id and isinstance(value.get("start_unit_id"), int):
            end = value.get("end_unit_id", value["start_unit_id"])
            if isinstance(end, int) and "text" not in value:
                out.append((value["start_unit_id"], end))
        for v in value.values():
            _unit_refs(v, source_id, out, budget)
    elif isinstance(value, list):
        for v in value:
            _unit_refs(v, source_id, out, budget)


def context_view(
    store: Any, base: str, ref: str, cites: list[tuple[int, int]], window: int | None
) -> dict[str, Any]:
    """An evidence context (or a source document): units in source order, each marked as
    selected by a citation or added by the window when the citations are known (given as
    ``cites`` ranges, or found in the artifacts of the run records that hold the excerpt),
    and the recomputed excerpt compared with the stored one.
    """  # noqa: D205
    kind = "evidence-context" if "evidence-context" in summary(store, ref)["kinds"] else None
    info, units = _load(store, ref, kind or "source-document")
    units = units if isinstance(units, list) else []
    source_id = next(
        (u.get("ref", {}).get("source_id") for u in units if isinstance(u, dict)), None
    )
    source = None
    for e in edges_from(store, info["address"]):
        if e["role"] == "source-document":
            source = e["dst"]
    found: list[tuple[int, int]] = []
    runs = [r for r in store.runs.refs(info["address"]) if "run" in r["kinds"]]
    if not cites and source_id is not None:
        budget = [200000]
        for r in runs[:5]:
            for e in edges_from(store, r["address"]):
                if e["role"] == "artifact" and e["dst"] not in (info["address"], source):
                    if "json" in e["kinds"] or "package" in e["kinds"]:
                        _unit_refs(_load_other(store, e["dst"]), source_id, found, budget)
    ranges = cites or found
    cited: set[Any] = set()
    recomputed = None
    doc: Any = None
    source_damage = None
    if ranges and source is not None:
        try:  # the units the citations select are read from the source document
            doc = store.load(source) if int(store.stat(source)["size"]) <= DOC_MAX else None
        except CorruptionError as exc:
            source_damage = exc.to_dict()
        doc = doc if isinstance(doc, list) else []
        positions = {u.get("id"): n for n, u in enumerate(doc) if isinstance(u, dict)}
        for a, b in ranges:
            if a in positions and b in positions:
                cited.update(u.get("id") for u in doc[positions[a] : positions[b] + 1])
        if window is not None:
            try:
                mine = store.contexts.excerpt(source, ranges, window)
                recomputed = {"equal": dumps(mine) == store.get(info["address"])}
            except EvstoreError as exc:
                recomputed = {"equal": False, "error": exc.to_dict()}
    rows = [
        {
            "unit": u,
            "state": ("cited" if u.get("id") in cited else "window") if ranges else "",
        }
        for u in units[:2000]
        if isinstance(u, dict)
    ]
    return {
        **info,
        "kind": kind or "source-document",
        "units": rows,
        "total": len(units),
        "source": source,
        "source_url": page_for(base, source, ["source-document"]) if source else None,
        "source_damage": source_damage,
        "ranges": ranges,
        "ranges_from": "query" if cites else ("run" if found else None),
        "window": window,
        "recomputed": recomputed,
        "runs": [{"address": r["address"], "url": f"{base}/run/{r['address']}"} for r in runs],
        "edges_in": edges_in(store, base, info["address"]),
    }


def run_view(store: Any, base: str, ref: str) -> dict[str, Any]:
    """A run record: its bundle as a tree of folders and files, each file's raw bytes and
    artifact linked, the evidence-context status, what the run used (edges out).
    """  # noqa: D205
    info, tree = _load(store, ref, "run")
    closure = closure_check(store, info["address"])
    damaged = {d["address"]: d for d in closure["damaged"]}
    folders: dict[str, Any] = {"name": "", "dirs": {}, "files": []}
    for name, entry in sorted(tree.get("files", {}).items()):
        node = folders
        parts = name.split("/")
        for part in parts[:-1]:
            node = node["dirs"].setdefault(part, {"name": part, "dirs": {}, "files": []})
        art = entry.get("artifact")
        node["files"].append(
            {
                "name": parts[-1],
                "path": name,
                "entry": entry,
                "raw_url": page_for(base, entry.get("raw", ""), []),
                "artifact_url": page_for(base, art, [entry.get("kind", "")]) if art else None,
                "damage": damaged.get(str(entry.get("raw"))) or damaged.get(str(art)),
            }
        )
    index = tree.get("index", {})
    return {
        **info,
        "tree": tree,
        "folders": folders,
        "index_url": page_for(base, index.get("raw", ""), []) if index.get("raw") else None,
        "ec": tree.get("evidence_context"),
        "closure": closure,
        "edges_in": edges_in(store, base, info["address"]),
    }
