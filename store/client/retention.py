"""``store.retention`` of a remote store: roots and gc over HTTP (docs/http.md#retention).

The same methods and answers as :class:`evstore.retention.ops.RetentionOps` for retain,
release, roots, history, missing and gc; who acts is the token's id (the server records it,
``actor`` is not sent). Audits run beside the database: ``remote.unsupported``. Writes of a
remote store send the root of :func:`evstore.rooting` (:func:`root_params`).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import current_root, rooting
from ..core.errors import error
from .http import unsupported

__all__ = ["RemoteGcReport", "RemoteRetention", "root_params"]


def root_params() -> dict[str, str]:
    """``{"root": NAME}`` inside ``evstore.rooting(NAME)`` (NAME not ``default``), else ``{}``.

    Merged into a write's query (PUT, bundles) or ingest body; the server roots what the
    request writes under it (``default`` when absent).
    """
    root = current_root()
    return {} if root == "default" else {"root": root}


@dataclass
class RemoteGcReport:
    """The answer of ``POST /v1/gc``: the fields of ``evstore.retention.gc.GcReport.to_dict()``."""

    dry_run: bool
    count: int = 0
    bytes: int = 0
    objects: list[dict[str, Any]] = field(default_factory=list)
    answer: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The server's JSON, as the local report prints it."""
        return dict(self.answer)


def _root_path(root: str, action: str) -> str:
    return f"v1/roots/{urllib.parse.quote(root, safe='')}/{action}"


class RemoteRetention:
    """Retention of a :class:`~evstore.client.remote.RemoteStore` (``store.retention``)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def retain(
        self, refs: Sequence[str], root: str, *, until: Any = None, actor: str = "local"
    ) -> dict[str, Any]:
        """``POST /v1/roots/{root}/retain`` -> ``{"root", "until", "retained"}`` (ingest).

        ``until`` as the local method (a datetime is sent as ISO 8601 text). Raises the
        server's errors (``root.name``, ``input.invalid``, ``not-found.blob``, ...).
        """
        body: dict[str, Any] = {"refs": list(refs)}
        if until is not None:
            body["until"] = until.isoformat() if hasattr(until, "isoformat") else str(until)
        out: dict[str, Any] = self.store.http.json(
            "POST", _root_path(root, "retain"), idempotent=True, json=body
        )
        return out

    def release(
        self, root: str, refs: Sequence[str] = (), *, actor: str = "local"
    ) -> dict[str, Any]:
        """``POST /v1/roots/{root}/release`` -> ``{"root", "released"}`` (ingest).

        Not retried: a release sent twice would answer ``not-found.root`` the second time.
        """
        body: dict[str, Any] = {"refs": list(refs)} if refs else {}
        out: dict[str, Any] = self.store.http.json(
            "POST", _root_path(root, "release"), idempotent=False, json=body
        )
        return out

    def roots(self) -> list[dict[str, Any]]:
        """``GET /v1/roots``: ``[{"root", "entries", "held", "until"}]`` (read)."""
        out: list[dict[str, Any]] = self.store.http.json("GET", "v1/roots")["roots"]
        return out

    def history(self, limit: int = 1000) -> list[dict[str, Any]]:
        """``GET /v1/roots/history?limit=N``: the retention events, newest first (read)."""
        out = self.store.http.json("GET", "v1/roots/history", params={"limit": str(limit)})
        events: list[dict[str, Any]] = out["events"]
        return events

    def missing(self, refs: Iterable[str], *, actor: str = "local") -> list[str]:
        """``POST /v1/missing``; made with an ingest token, the server extends leases."""
        found: list[str] = self.store.has(refs)
        return found

    def gc(
        self,
        *,
        dry_run: bool = False,
        vacuum_after: bool = False,
        batch: int = 200,
        actor: str = "local",
        progress: Callable[[int, int], None] | None = None,
    ) -> RemoteGcReport:
        """``POST /v1/gc`` ``{"dry_run", "batch"}`` (admin); ``--vacuum`` runs only locally.

        Raises:
            StoreStateError: ``remote.unsupported`` (``vacuum_after``); the server's errors.
        """
        if vacuum_after:
            raise unsupported("gc --vacuum")
        if batch < 1:
            raise error("input.invalid", f"batch size must be at least 1, not {batch}")
        out = self.store.http.json(
            "POST", "v1/gc", idempotent=False, json={"dry_run": bool(dry_run), "batch": batch}
        )
        if progress is not None:
            progress(int(out["count"]), int(out["count"]))
        return RemoteGcReport(
            bool(out["dry_run"]), int(out["count"]), int(out["bytes"]), list(out["objects"]), out
        )

    def audit(self, *args: Any, **kw: Any) -> Any:
        """``remote.unsupported``: an audit reads every byte beside the database."""
        raise unsupported("audit")

    def audits(self, *args: Any, **kw: Any) -> Any:
        """``remote.unsupported``: audit runs are listed beside the database."""
        raise unsupported("audits")

    def rooting(self, root: str = "default", actor: str = "local") -> Any:
        """``evstore.rooting(root)``: remote writes in it send ``root`` (actor: the token)."""
        return rooting(root, actor)
