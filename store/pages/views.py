"""What each general page shows: home, search, kind lists, artifact, JSON subtree, blob.

Every view takes the open Store and returns the template's context (a dict) or raises an
evstore error (the router turns it into an error page with its code). Views read through the
public API only (``evstore``): they never write, so no GET changes state.
"""

from __future__ import annotations

import re
from typing import Any

from markupsafe import Markup

from .. import (
    EvstoreError,
    edges_from,
    error,
    kind_counts,
    kind_page,
    list_page,
    normalize_uuid,
    verify_now,
)
from .render import JsonBudget, ev_text, is_ref, json_tree, object_url, query, utf8_floor

__all__ = [
    "artifact_view",
    "blob_view",
    "edges_in",
    "home_view",
    "json_view",
    "kind_view",
    "page_for",
    "search_hits",
    "summary",
]

#: Bytes of a blob shown per page (the rest is paged by byte offset).
BLOB_WINDOW = 65536
#: Artifacts per page of a kind list.
LIST_PAGE = 100
_UUID = re.compile(r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")


def page_for(base: str, address: str, kinds: list[str]) -> str:
    """The URL of the page that shows ``address`` best, given its kinds.

    The first kind with a reviewer page (its kind registry record's ``page``,
    :func:`evstore.kind_page`) wins; else the generic artifact page, or the blob page.
    """
    for kind in kinds:
        page = kind_page(kind)
        if page is not None:
            return f"{base}/{page}/{address}"
    if kinds:
        return f"{base}/artifact/{address}"
    return f"{base}/blob/{address}"


def summary(store: Any, ref: str) -> dict[str, Any]:
    """The facts every page of one object starts with (``Store.stat``, recorded, not re-hashed)."""
    stat = store.stat(ref)
    kinds = [a["kind"] for a in stat["artifacts"]]
    return {"stat": stat, "address": stat["address"], "kinds": kinds, "ref": ref}


def home_view(store: Any, extras: dict[str, Any]) -> dict[str, Any]:
    """Counts by kind and whatever retention and log facts this store keeps."""
    counts = kind_counts(store)
    return {"counts": counts, **extras}


def kind_view(store: Any, base: str, kind: str, after: str | None) -> dict[str, Any]:
    """One page of the artifacts of ``kind`` in key order, with the cursor of the next page."""
    page = list_page(store, kind=kind, after=after, limit=LIST_PAGE)
    items = [{"info": r, "url": page_for(base, r["address"], [r["kind"]])} for r in page]
    return {"kind": kind, "items": items, "next": page.next, "after": after}


def _find(store: Any, name: str, value: str, kind: str | None = None) -> list[Any]:
    try:
        return list(store.find(name, value, kind=kind))
    except EvstoreError:  # a value of the wrong form for this attribute
        return []


def search_hits(store: Any, base: str, q: str) -> list[dict[str, str]]:
    """Every page that ``q`` names: a stored object by any content ref form, or an artifact
    by any contract identifier (manifest ref, package id or key, quote SHA-256, document id,
    source id, a run's index address).

    Returns:
        ``[{"url", "label", "what"}]``, each page once, in the order tried (a run found by
        its index address first: the search box then opens the run).
    """  # noqa: D205 - the summary needs two lines
    q = q.strip()
    hits: list[dict[str, str]] = []
    if not q or len(q) > 4096 or "\x00" in q:
        return hits
    refs = [q]
    if re.fullmatch(r"[0-9a-f]{64}|[A-Za-z0-9_-]{43}", q):
        refs.append("sha256:" + q)
    for ref in refs:
        if is_ref(ref) and not store.has([ref]):
            info = summary(store, ref)
            url = page_for(base, info["address"], info["kinds"])
            hits.append({"url": url, "label": info["address"], "what": "stored object"})
    lookups: list[tuple[str, str, str | None]] = [
        ("manifest_ref", q, None),
        ("quote_sha256", q, None),
        ("document_id", q, None),
        ("source_id", q, None),
        ("key", q, None),
        ("run", q, None),
    ]
    if _UUID.match(q):
        lookups.insert(1, ("package_id", normalize_uuid(q), None))
    for name, value, kind in lookups:
        for a in _find(store, name, value, kind):
            url = page_for(base, a.address, [a.kind])
            hit = {"url": url, "label": a.address, "what": f"{a.kind} by {name}"}
            if name == "run":  # a run's index address names the run first, then the blob
                hits.insert(0, hit)
            else:
                hits.append(hit)
    seen: set[str] = set()
    out = []
    for h in hits:
        if h["url"] not in seen:
            seen.add(h["url"])
            out.append(h)
    return out


def artifact_view(store: Any, base: str, ref: str) -> dict[str, Any]:
    """The generic artifact page: digests, size, warnings, edges both ways, canonical JSON
    (bounded), and the verify-now result computed for this response.
    """  # noqa: D205
    info = summary(store, ref)
    address = info["address"]
    verdict = verify_now(store, address)
    value: Any = None
    tree: Markup | None = None
    if verdict["ok"] and info["kinds"]:
        value = store.load(address)
        tree = _tree(base, address, value, "", 0)
    return {
        **info,
        "paged_kinds": [k for k in info["kinds"] if kind_page(k) is not None],
        "verdict": verdict,
        "tree": tree,
        "edges_out": _edges_out(store, base, address),
        "edges_in": edges_in(store, base, address),
        "raw_url": f"{base}/raw/{address}",
    }


def _tree(base: str, address: str, value: Any, at: str, offset: int) -> Markup:
    def more(pointer: str, off: int) -> str:
        return f"{base}/artifact/{address}/json" + query(at=pointer, offset=off or None)

    return json_tree(
        value,
        pointer=at,
        offset=offset,
        budget=JsonBudget(),
        more=more,
        link=lambda r: object_url(base, r),
    )


def _edges_out(store: Any, base: str, address: str) -> list[dict[str, Any]]:
    return [{**e, "url": page_for(base, e["dst"], e["kinds"])} for e in edges_from(store, address)]


def edges_in(store: Any, base: str, address: str) -> list[dict[str, Any]]:
    """The referrers of ``address``, each with the URL of its page under ``base``."""
    return [
        {**r, "url": page_for(base, r["address"], r["kinds"])} for r in store.runs.refs(address)
    ]


def json_view(store: Any, base: str, ref: str, at: str, offset: int) -> dict[str, Any]:
    """One subtree of an artifact's canonical JSON, from child ``offset`` (paged)."""
    from .render import pointer_get

    info = summary(store, ref)
    value = store.load(info["address"])
    try:
        sub = pointer_get(value, at)
    except KeyError:
        raise error("input.invalid", f"no member at {at!r} in this artifact", at) from None
    return {**info, "at": at, "tree": _tree(base, info["address"], sub, at, offset)}


def blob_view(store: Any, base: str, ref: str, offset: int) -> dict[str, Any]:
    """A stored blob: digests, size, referrers, and a window of its bytes as text or hex."""
    info = summary(store, ref)
    address = info["address"]
    data = store.get(address)  # verified before any byte is shown
    start = utf8_floor(data, offset)
    end = utf8_floor(data, start + BLOB_WINDOW) if start + BLOB_WINDOW < len(data) else len(data)
    window = data[start:end]
    try:
        text: Markup | None = ev_text(window.decode("utf-8"))
        hexdump = None
    except UnicodeDecodeError:
        text = None
        hexdump = _hex(data[offset : offset + 4096], offset)
        end = min(len(data), offset + 4096)
    page = {
        "from": start,
        "to": end,
        "size": len(data),
        "prev": max(0, start - BLOB_WINDOW) if start > 0 else None,
        "next": end if end < len(data) else None,
    }
    return {
        **info,
        "text": text,
        "hex": hexdump,
        "page": page,
        "edges_in": edges_in(store, base, address),
        "raw_url": f"{base}/raw/{address}",
    }


def _hex(data: bytes, base: int) -> str:
    lines = []
    for i in range(0, len(data), 16):
        chunk = data[i : i + 16]
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{base + i:08x}  {chunk.hex(' '):<47}  {text}")
    return "\n".join(lines)
