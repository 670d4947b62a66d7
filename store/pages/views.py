"""What each general page shows: home, search, kind lists, artifact, JSON subtree, blob.

Every view takes the open Store and returns the template's context (a dict) or raises an
evstore error (the router turns it into an error page with its code). Views read through the
public API only (``evstore``): they never write, so no GET changes state.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Any

from markupsafe import Markup

from .. import (
    CorruptionError,
    EvstoreError,
    NotFound,
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
    "DOC_MAX",
    "DocumentTooLarge",
    "artifact_view",
    "blob_view",
    "closure_check",
    "edges_in",
    "home_view",
    "is_stored",
    "json_view",
    "kind_view",
    "page_for",
    "read_window",
    "search_hits",
    "stream_verified",
    "summary",
]

#: Bytes of a blob shown per page (the rest is paged by byte offset).
BLOB_WINDOW = 65536
#: Artifacts per page of a kind list.
LIST_PAGE = 100
#: A document larger than this (bytes) is not parsed for a page: the page says so and links
#: its raw bytes (a 16 MiB JSON document once cost 856 MiB and 22 s of CPU to draw).
DOC_MAX = 4 << 20
#: Objects of a closure listed on the artifact page's verify-now section.
CLOSURE_SHOWN = 500
_UUID = re.compile(r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")


def is_stored(store: Any, ref: str) -> bool:
    """Whether a stored blob answers ``ref`` (any ref form), by its index row alone.

    A page links a ref to its object's page when the store holds it; the bytes are not re-read
    (that is the object page's "Verify now"), so a page of many refs costs one point lookup a
    ref, not a re-hash of each blob. A damaged blob still gets its link: its page names the
    damage. Raises what :meth:`Store.stat` raises other than ``NotFound`` (``store.*``).
    """
    try:
        store.stat(ref)
    except NotFound:
        return False
    return True


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


class DocumentTooLarge(Exception):
    """A kind page was asked of a document over :data:`DOC_MAX` bytes (the router answers
    with the object's facts and a note saying what is not drawn, never a parse of it).
    """  # noqa: D205

    def __init__(self, address: str, size: int) -> None:
        super().__init__(f"{address} is {size} bytes, over the pages' {DOC_MAX} bytes")
        self.address = address
        self.size = size


def read_window(
    store: Any, ref: str, lo: int, hi: int, quote: tuple[int, int] | None = None
) -> dict[str, Any]:
    """Bytes ``[lo, hi)`` of a stored blob, read in one streamed pass that verifies all of it.

    Memory: one chunk (1 MiB) and the window, whatever the blob's size. The SHA-256 of the
    whole blob and, with ``quote`` ``(start, end)``, of that byte range are computed on the way.

    Returns:
        ``{"data": bytes, "from": lo, "to": lo + len(data), "size": bytes, "sha256": hex,
        "quote_sha256": hex or None}``.

    Raises:
        CorruptionError: the blob's bytes do not hash to its address (after the pass: nothing
            read is returned). RefSyntaxError, NotFound: as :meth:`Store.get`.
    """
    whole = hashlib.sha256()
    part = hashlib.sha256() if quote is not None else None
    out = bytearray()
    pos = 0
    with store.open_blob(ref, verify_first=False) as (_digest, chunks):
        for chunk in chunks:
            end = pos + len(chunk)
            whole.update(chunk)
            if lo < end and hi > pos:
                out += chunk[max(lo - pos, 0) : min(hi, end) - pos]
            if part is not None and quote is not None and quote[0] < end and quote[1] > pos:
                part.update(chunk[max(quote[0] - pos, 0) : min(quote[1], end) - pos])
            pos = end
    lo = min(lo, pos)
    return {
        "data": bytes(out),
        "from": lo,
        "to": lo + len(out),
        "size": pos,
        "sha256": whole.hexdigest(),
        "quote_sha256": part.hexdigest() if part is not None else None,
    }


def stream_verified(store: Any, ref: str) -> Iterator[bytes]:
    """A stored blob's bytes in chunks (1 MiB), verified whole before the first is yielded.

    The first chunk is taken at once, so damage is raised by this call (CorruptionError,
    no byte sent); the rest is read when iterated (two reads in all, memory one chunk).
    Once started, the generator closes its read snapshot when exhausted or collected.
    """

    def chunks() -> Iterator[bytes]:
        with store.open_blob(ref, verify_first=True) as (_digest, parts):
            yield from parts

    gen = chunks()
    first = next(gen, None)

    def rest() -> Iterator[bytes]:
        if first is not None:
            yield first
        yield from gen

    return rest()


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
        if is_ref(ref) and is_stored(store, ref):
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
    (at most :data:`DOC_MAX` bytes parsed; the page says when the document is larger), and
    the verify-now result computed for this response: the object's own bytes and audits,
    then every object of its closure re-hashed (each damaged member named).
    """  # noqa: D205
    info = summary(store, ref)
    address = info["address"]
    verdict = verify_now(store, address)
    closure = closure_check(store, address)
    if closure["damaged"]:
        verdict["ok"] = False
    value: Any = None
    tree: Markup | None = None
    size = int(info["stat"]["size"])
    too_big = size > DOC_MAX
    if verdict["faults"] == [] and info["kinds"] and not too_big:
        try:
            value = store.load(address)
        except CorruptionError as exc:  # damaged between the two reads: say so, never raise
            verdict["ok"] = False
            verdict["faults"].append(exc.to_dict())
        else:
            tree = _tree(base, address, value, "", 0)
    damaged = {d["address"] for d in closure["damaged"]}
    out = _edges_out(store, base, address)
    for e in out:
        e["damaged"] = e["dst"] in damaged
    return {
        **info,
        "paged_kinds": [k for k in info["kinds"] if kind_page(k) is not None],
        "verdict": verdict,
        "closure": closure,
        "tree": tree,
        "too_big": too_big,
        "doc_max": DOC_MAX,
        "edges_out": out,
        "edges_in": edges_in(store, base, address),
        "raw_url": f"{base}/raw/{address}",
    }


def closure_check(store: Any, address: str) -> dict[str, Any]:
    """Every object the closure of ``address`` holds, re-hashed now (``store.runs.closure``).

    Returns:
        ``{"objects": count with the object itself, "damaged": [{"address", "via", "code",
        "message"}] for each member (not the object itself) missing or not hashing to its
        address}``; at most :data:`CLOSURE_SHOWN` damaged members are listed, ``cut`` says
        how many more there are.
    """
    items = store.runs.closure(address).items
    damaged = [
        {
            "address": i["address"],
            "via": i.get("via") or {},
            "code": (i.get("error") or {}).get("code", "corruption.digest"),
            "message": (i.get("error") or {}).get("message", ""),
        }
        for i in items[1:]
        if not i["ok"]
    ]
    return {
        "objects": len(items),
        "damaged": damaged[:CLOSURE_SHOWN],
        "cut": max(0, len(damaged) - CLOSURE_SHOWN),
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
    """One subtree of an artifact's canonical JSON, from child ``offset`` (paged); a document
    over :data:`DOC_MAX` bytes is not parsed (``tree`` None, ``too_big`` True).
    """  # noqa: D205
    from .render import pointer_get

    info = summary(store, ref)
    if int(info["stat"]["size"]) > DOC_MAX:
        return {
            **info,
            "at": at,
            "tree": None,
            "too_big": True,
            "doc_max": DOC_MAX,
            "raw_url": f"{base}/raw/{info['address']}",
        }
    value = store.load(info["address"])
    try:
        sub = pointer_get(value, at)
    except KeyError:
        raise error("input.invalid", f"no member at {at!r} in this artifact", at) from None
    tree = _tree(base, info["address"], sub, at, offset)
    return {**info, "at": at, "tree": tree, "too_big": False, "doc_max": DOC_MAX}


def blob_view(store: Any, base: str, ref: str, offset: int) -> dict[str, Any]:
    """A stored blob: digests, size, referrers, and a window of its bytes as text or hex.

    The bytes are read in one streamed pass that verifies the whole blob and keeps only the
    window (:func:`read_window`: memory one chunk and :data:`BLOB_WINDOW` bytes). A blob that
    does not hash to its address shows its facts and the fault (``damage``), no bytes.
    """
    info = summary(store, ref)
    address = info["address"]
    size = int(info["stat"]["size"])
    offset = min(offset, size)
    lo = max(0, offset - 3)
    base_info = {
        **info,
        "edges_in": edges_in(store, base, address),
        "raw_url": f"{base}/raw/{address}",
    }
    try:
        got = read_window(store, address, lo, offset + BLOB_WINDOW + 4)
    except CorruptionError as exc:
        return {**base_info, "text": None, "hex": None, "page": None, "damage": exc.to_dict()}
    data, size = got["data"], got["size"]

    def rel(n: int) -> int:  # an offset of the blob -> an index into ``data``
        return n - lo

    start = utf8_floor(data, rel(offset)) + lo if offset < size else size
    want = start + BLOB_WINDOW
    end = utf8_floor(data, rel(want)) + lo if want < size else size
    window = data[rel(start) : rel(end)]
    try:
        text: Markup | None = ev_text(window.decode("utf-8"))
        hexdump = None
    except UnicodeDecodeError:
        text = None
        hexdump = _hex(data[rel(offset) : rel(offset) + 4096], offset)
        start, end = offset, min(size, offset + 4096)
    page = {
        "from": start,
        "to": end,
        "size": size,
        "prev": max(0, start - BLOB_WINDOW) if start > 0 else None,
        "next": end if end < size else None,
    }
    return {**base_info, "text": text, "hex": hexdump, "page": page, "damage": None}


def _hex(data: bytes, base: int) -> str:
    lines = []
    for i in range(0, len(data), 16):
        chunk = data[i : i + 16]
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{base + i:08x}  {chunk.hex(' '):<47}  {text}")
    return "\n".join(lines)
