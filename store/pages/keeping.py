"""What the store keeps beyond its objects: retention roots, audit runs, the log's checkpoint.

These pages follow retention and audit (issue 12, ``store.retention``) and the log (issue 13,
``store.log``). Each view asks the Store whether it has that namespace, so the same pages
serve an evstore with or without them: where a namespace is missing the page says that the
store keeps no roots, no audit records or no log yet (:func:`keeps`).
"""

from __future__ import annotations

from typing import Any

from .. import EvstoreError, error
from .views import page_for, summary

__all__ = [
    "ROOT_PAGE",
    "audit_view",
    "audits_view",
    "home_extras",
    "keeps",
    "root_view",
    "roots_view",
]

#: Entries per page of a root; closures are summed over the entries of the page shown.
ROOT_PAGE = 100
#: Audit runs read to find each root's last verdict.
_AUDITS_SCANNED = 50


def keeps(store: Any, namespace: str) -> bool:
    """Whether this evstore's Store has ``namespace`` (``retention``, ``log``)."""
    return getattr(type(store), namespace, None) is not None


def _last_verdicts(audits: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Root name -> ``{"verdict", "id", "at"}`` of the newest audit run that covered it."""
    out: dict[str, dict[str, Any]] = {}
    for run in audits:  # newest first
        for r in run.get("roots") or []:
            name = r.get("root")
            if isinstance(name, str) and name not in out:
                out[name] = {"verdict": r.get("verdict"), "id": run["id"], "at": run["finished_at"]}
    return out


def home_extras(store: Any) -> dict[str, Any]:
    """The home page's roots, last audit and latest log checkpoint, where the store keeps them.

    Returns:
        ``{"roots": [...] or None, "audit": {...} or None, "log": {...} or None,
        "keeps_retention": bool, "keeps_log": bool}``.
    """
    out: dict[str, Any] = {"roots": None, "audit": None, "log": None}
    out["keeps_retention"] = keeps(store, "retention")
    out["keeps_log"] = keeps(store, "log")
    if out["keeps_retention"]:
        audits = store.retention.audits(_AUDITS_SCANNED)
        last = _last_verdicts(audits)
        out["roots"] = [{**r, "last": last.get(r["root"])} for r in store.retention.roots()]
        out["audit"] = audits[0] if audits else None
    if out["keeps_log"]:
        out["log"] = store.log.status()
    return out


def _need(store: Any, namespace: str) -> None:
    if not keeps(store, namespace):
        raise error(
            "not-found.artifact",
            f"this store keeps no {namespace} yet: this evstore has no {namespace}",
            namespace=namespace,
        )


def _closure_size(store: Any, addresses: list[str]) -> tuple[int, int, bool]:
    """Objects and bytes in the union of the closures of ``addresses``, each object read and
    verified (``store.runs.closure``); and whether all of them are present and intact.
    """  # noqa: D205
    seen: set[str] = set()
    size, ok = 0, True
    for address in addresses:
        try:
            closure = store.runs.closure(address)
        except EvstoreError:
            ok = False
            continue
        ok = ok and closure.ok
        for item in closure.items:
            if item["address"] not in seen:
                seen.add(item["address"])
                size += int(item.get("size") or 0)
    return len(seen), size, ok


def roots_view(store: Any, base: str) -> dict[str, Any]:
    """Every root: entries, held, until, the last audit verdict that covered it, and the size
    of its closure (objects, bytes) for a root of at most :data:`ROOT_PAGE` entries (a larger
    root's page sums its closure a page at a time).
    """  # noqa: D205
    _need(store, "retention")
    last = _last_verdicts(store.retention.audits(_AUDITS_SCANNED))
    rows = []
    for r in store.retention.roots():
        row = {**r, "last": last.get(r["root"]), "closure": None}
        if r["entries"] <= ROOT_PAGE:
            entries = [e["address"] for e in store.retention.entries(r["root"])]
            objects, size, ok = _closure_size(store, entries)
            row["closure"] = {"objects": objects, "bytes": size, "ok": ok}
        rows.append(row)
    return {"roots": rows}


def root_view(store: Any, base: str, name: str, offset: int) -> dict[str, Any]:
    """One root's entries (paged), each linked, with the closure of each entry shown:
    objects and bytes, every object verified on read (``store.runs.closure``).
    """  # noqa: D205
    _need(store, "retention")
    entries = store.retention.entries(name)
    page = entries[offset : offset + ROOT_PAGE]
    rows = []
    for e in page:
        try:
            info = summary(store, e["address"])
            closure = store.runs.closure(e["address"])
        except EvstoreError as exc:  # a missing root entry: shown, never raised
            rows.append({"entry": e, "url": None, "error": exc.to_dict()})
            continue
        rows.append(
            {
                "entry": e,
                "url": page_for(base, info["address"], info["kinds"]),
                "kinds": info["kinds"],
                "objects": len(closure.items),
                "ok": closure.ok,
            }
        )
    last = _last_verdicts(store.retention.audits(_AUDITS_SCANNED)).get(name)
    objects, size, _ = _closure_size(store, [e["address"] for e in page])
    return {
        "name": name,
        "rows": rows,
        "total": len(entries),
        "offset": offset,
        "objects": objects,
        "bytes": size,
        "last": last,
        "prev": max(0, offset - ROOT_PAGE) if offset else None,
        "next": offset + ROOT_PAGE if offset + ROOT_PAGE < len(entries) else None,
    }


def audits_view(store: Any) -> dict[str, Any]:
    """The recorded ``evstore audit`` runs, newest first."""
    _need(store, "retention")
    return {"audits": store.retention.audits(_AUDITS_SCANNED)}


def audit_view(store: Any, base: str, run_id: int) -> dict[str, Any]:
    """One recorded audit run: scope, verdict, per-root results and every fault."""
    _need(store, "retention")
    for run in store.retention.audits(10_000):
        if run["id"] == run_id:
            faults = []
            for f in run.get("faults") or []:
                where = (f.get("details") or {}).get("address")
                url = f"{base}/object/{where}" if isinstance(where, str) else None
                faults.append({"fault": f, "url": url})
            return {"run": run, "faults": faults}
    raise error("not-found.artifact", f"no audit run {run_id} is recorded", run=run_id)
