"""``store.retention`` of a remote store: roots and gc over HTTP (docs/http.md#retention).

The same methods and answers as :class:`evstore.retention.ops.RetentionOps` for retain,
release, roots, history, missing and gc; who acts is the token's id (the server records it,
``actor`` is not sent). Audits run beside the database: ``remote.unsupported``. Writes of a
remote store send the root of :func:`evstore.rooting` (:func:`root_params`).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from .. import current_root, rooting
from ..core.errors import EvstoreError, error
from ..core.results import GcReport
from .http import unsupported

__all__ = ["RemoteRetention", "root_params"]


def root_params() -> dict[str, str]:
    """``{"root": NAME}`` inside ``evstore.rooting(NAME)`` (NAME not ``default``), else ``{}``.

    Merged into a write's query (PUT, bundles) or ingest body; the server roots what the
    request writes under it (``default`` when absent).
    """
    root = current_root()
    return {} if root == "default" else {"root": root}


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
        try:
            out: dict[str, Any] = self.store.http.json(
                "POST", _root_path(root, "retain"), idempotent=True, json=body
            )
        except EvstoreError as err:
            if err.pointer == "/until" and "until" in err.details:
                # The server points into its request body; here ``until`` is an argument,
                # refused at the document root as the local method refuses it.
                err.pointer = ""
            raise
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
    ) -> GcReport:
        """``POST /v1/gc`` ``{"dry_run", "batch"}`` (admin); ``--vacuum`` runs only locally.

        Returns:
            The library's :class:`~evstore.GcReport` of the server's answer (its ``to_dict``
            is that answer).

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
        try:
            report = GcReport.from_dict(out)
        except (KeyError, TypeError, ValueError, AttributeError):
            raise self.store.http.protocol("POST v1/gc: the answer is not a gc report") from None
        if progress is not None:
            progress(report.count, report.count)
        return report

    def audit(self, *args: Any, **kw: Any) -> Any:
        """``remote.unsupported``: an audit reads every byte beside the database."""
        raise unsupported("audit")

    def audits(self, *args: Any, **kw: Any) -> Any:
        """``remote.unsupported``: audit runs are listed beside the database."""
        raise unsupported("audits")

    def rooting(self, root: str = "default", actor: str = "local") -> AbstractContextManager[None]:
        """``evstore.rooting(root)``: remote writes in it send ``root`` (actor: the token)."""
        return rooting(root, actor)
