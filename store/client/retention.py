"""``store.retention`` of a remote store: roots and gc over HTTP (docs/http.md#retention).

The same methods and answers as :class:`evstore.retention.ops.RetentionOps` for retain,
release, roots, history, missing and gc; who acts is the token's id (the server records it,
``actor`` is not sent). Audits run on the server (admin), streamed back (issue 28). Writes of a
remote store send the root of :func:`evstore.rooting` (:func:`root_params`).
"""

from __future__ import annotations

import json
import math
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import httpx

from .. import AuditRun, current_root, rooting
from ..core.errors import EvstoreError, error
from ..core.results import GcReport
from ..core.roots import check_listed, check_root_name
from .http import rebuild_error, unsupported

__all__ = ["RemoteRetention", "root_params"]


def root_params() -> dict[str, str]:
    """``{"root": NAME}`` inside ``evstore.rooting(NAME)`` (NAME not ``default``), else ``{}``.

    Merged into a write's query (PUT, bundles) or ingest body; the server roots what the
    request writes under it (``default`` when absent).
    """
    root = current_root()
    return {} if root == "default" else {"root": root}


def _root_path(root: str, action: str) -> str:
    """The route of ``root``'s ``action``; a bad name is ``root.name`` here, as locally."""
    return f"v1/roots/{urllib.parse.quote(check_root_name(root), safe='')}/{action}"


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
        out = self.store.http.json(
            "GET", "v1/roots/history", params={"limit": str(check_listed(limit))}
        )
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

    def audit(
        self,
        roots: Sequence[str] = (),
        *,
        sample: float | None = None,
        seed: int = 0,
        since: Any = None,
        actor: str = "local",
        progress: Callable[[int, int], None] | None = None,
        record: bool = True,
    ) -> AuditRun:
        """``POST /v1/audit`` (admin): the server audits and records the run (its actor: the
        token's id), streaming progress; the :class:`evstore.AuditRun` of its last line.

        Raises:
            The audit's errors (``root.name``, ``not-found.root``, ``input.invalid``);
            ``remote.protocol`` for a stream that ends before the run.
        """  # noqa: D205
        if isinstance(roots, str):
            raise error("input.invalid", "roots is a list of root names, not one string")
        body: dict[str, Any] = {"roots": list(roots), "seed": seed, "record": record}
        if sample is not None:
            if isinstance(sample, float) and not math.isfinite(sample):  # JSON has no NaN
                raise error("input.invalid", f"sample must be a number in (0, 1], not {sample!r}")
            body["sample"] = sample
        if since is not None:
            body["since"] = since.isoformat() if hasattr(since, "isoformat") else str(since)
        http = self.store.http
        resp = http.request("POST", "v1/audit", idempotent=False, json=body, stream=True)
        try:
            for line in resp.iter_lines():
                if not line.strip():
                    continue
                event = json.loads(line)
                if "progress" in event and progress is not None:
                    progress(int(event["progress"][0]), int(event["progress"][1]))
                elif "error" in event:
                    raise rebuild_error(event["error"])
                elif "end" in event:
                    end = dict(event["end"])
                    for derived in ("verdict", "faults"):
                        end.pop(derived, None)
                    return AuditRun(**end)
        except (ValueError, TypeError, KeyError):
            raise http.protocol("POST v1/audit: a line is not the route's JSON") from None
        except httpx.HTTPError as exc:
            raise http.protocol(f"POST v1/audit: the stream broke off ({exc})") from None
        finally:
            resp.close()
        raise http.protocol("POST v1/audit: the stream ended before the run did")

    def audits(self, limit: int = 50) -> list[dict[str, Any]]:
        """``GET /v1/audits?limit=N``: the recorded audit runs, newest first (read)."""
        out = self.store.http.json("GET", "v1/audits", params={"limit": str(check_listed(limit))})
        runs: list[dict[str, Any]] = out["audits"]
        return runs

    def rooting(self, root: str = "default", actor: str = "local") -> AbstractContextManager[None]:
        """``evstore.rooting(root)``: remote writes in it send ``root`` (actor: the token)."""
        return rooting(root, actor)
