"""Retention roots, upload leases, garbage collection and audits: ``store.retention``.

A *root* names what must be kept: each entry holds one object (and, through the edges, its
whole closure) until it is released or its ``until`` time passes on the database's clock.
Every put, ingest and ingest-bundle roots what it wrote under the root of its context
(``default`` unless :meth:`RetentionOps.rooting` names another), so a store used as before
never loses anything to ``gc``: releasing a root is the only way to make objects collectable.

Retain, release and collection are recorded (who, what, when) in ``retention_history``
through :func:`evstore.objects.leases.record`, the one place a tamper-evident log hooks in
(:data:`evstore.objects.leases.HISTORY_HOOKS`). The collector is store/retention/gc.py, the audit
store/retention/audit.py; docs/design.md#retention-and-garbage-collection gives the safety argument.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.errors import error
from ..core.refs import parse_ref
from ..core.roots import check_listed
from ..core.times import utc_text
from ..db.tables import blobs, retention_history, roots
from ..objects import blobs as _blobs
from ..objects.leases import (
    DEFAULT_ROOT,
    blob_ids,
    check_root_name,
    db_now,
    hold,
    pending,
    record,
    rooting,
    sql_time,
)
from .audit import AuditOptions, AuditRun, audit_history, check_options, run_audit
from .gc import GcReport, collect, vacuum
from .moves import BATCH as MOVE_BATCH
from .moves import MoveReport, move_blobs

__all__ = ["RetentionOps", "parse_until"]

_AHEAD = re.compile(r"^\+?([0-9]+) *([smhdw])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_until(value: _dt.datetime | str, now: _dt.datetime) -> _dt.datetime:
    """A root's ``until``: an aware datetime, ISO 8601 text (UTC when no offset), or a time
    from ``now`` such as ``"30d"`` / ``"+12h"`` (s, m, h, d, w); ASCII digits only, and
    after ``now`` (a hold that has already ended would protect nothing).

    Raises:
        InputError: ``input.invalid`` (not a time, too far ahead, or not after ``now``), with
            ``details.until`` (the text given).
    """  # noqa: D205
    if isinstance(value, _dt.datetime):
        when, text = value, value.isoformat()
    else:
        text = str(value).strip()
        ahead = _AHEAD.match(text)
        try:
            if ahead:
                when = now + _dt.timedelta(seconds=int(ahead.group(1)) * _UNIT_S[ahead.group(2)])
            elif text.isascii():
                when = _dt.datetime.fromisoformat(text)
            else:
                raise ValueError("not ASCII")
        except OverflowError:
            raise error("input.invalid", f"--until {text!r} is too far ahead", until=text) from None
        except ValueError:
            raise error(
                "input.invalid",
                f"--until {text!r} is no time: give ISO 8601 (2027-01-01T00:00:00Z) or a"
                " duration from now such as 30d",
                until=text,
            ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.UTC)
    try:
        when = when.astimezone(_dt.UTC)
    except OverflowError:  # 9999-12-31T23:59-01:00 or 0001-01-01T00:00+01:00 in UTC
        raise error(
            "input.invalid", f"--until {text!r} is beyond the calendar in UTC", until=text
        ) from None
    if when <= now:
        raise error(
            "input.invalid",
            f"--until {text!r} is not after now ({utc_text(now)}): release the entries instead",
            until=text,
        )
    return when


def _iso(t: Any) -> str | None:
    return None if t is None else utc_text(t)


def _detail(text: str) -> Any:
    """A history row's ``detail`` with its ``until`` in today's spelling.

    Rows written before issue 24 hold ``+00:00`` and a fraction only when it was not zero.
    """
    detail = json.loads(text)
    if isinstance(detail, dict) and isinstance(detail.get("until"), str):
        detail["until"] = utc_text(detail["until"])
    return detail


def _resolve(conn: Connection, refs: Sequence[str]) -> list[str]:
    """Addresses (64 hex) of the stored objects ``refs`` name, in order, without repeats.

    Raises:
        RefSyntaxError: ``ref.syntax``. NotFound: ``not-found.blob``.
    """
    out: dict[str, None] = {}
    for ref in refs:
        row = _blobs.lookup(conn, parse_ref(ref))
        if row is None:
            raise error("not-found.blob", f"no stored object for {ref}", ref=ref)
        out[row.digest.blake3] = None
    return list(out)


class RetentionOps:
    """``store.retention``: roots, upload leases, gc and audits of one open store.

    Every method takes ``actor`` (who acts: ``local`` for the CLI and library, a token id
    for the server); it is recorded in the history and audit rows.
    """

    def __init__(self, store: Any) -> None:
        self._store = store
        self._db = store.transactions

    # -- roots ----------------------------------------------------------------------------
    def rooting(
        self, root: str = DEFAULT_ROOT, actor: str = "local"
    ) -> AbstractContextManager[None]:
        """A context in which put, ingest and ingest-bundle root what they write under
        ``root`` (``with store.retention.rooting("run-42"): store.ingest(...)``).

        Raises:
            InputError: ``root.name``.
        """  # noqa: D205
        return rooting(root, actor)

    def retain(
        self,
        refs: Sequence[str],
        root: str,
        *,
        until: _dt.datetime | str | None = None,
        actor: str = "local",
    ) -> dict[str, Any]:
        """Hold the objects ``refs`` name (and their closures) under ``root``.

        Retaining an entry again sets its ``until`` anew (None: until released).

        Args:
            refs: content refs of stored objects (any accepted form).
            root: the root's name.
            until: keep until then (aware datetime, ISO 8601, or ``"30d"`` from now).
            actor: who retains (recorded in the history).

        Returns:
            ``{"root", "until", "retained": ["blake3:..."]}``.

        Raises:
            InputError: ``root.name``, ``input.invalid`` (no refs, a bad ``until``).
            RefSyntaxError, NotFound (``not-found.blob``): nothing is retained then.
        """
        check_root_name(root)
        if not refs:
            raise error("input.invalid", "retain needs at least one ref")

        def work(conn: Connection) -> dict[str, Any]:
            now = db_now(conn)
            when = None if until is None else parse_until(until, now)
            addresses = _resolve(conn, refs)
            gone = hold(conn, addresses)  # locked against a concurrent collection
            if gone:
                raise error(
                    "not-found.blob",
                    f"blake3:{gone[0]} was collected meanwhile",
                    ref="blake3:" + gone[0],
                )
            stamp = None if when is None else sql_time(conn, when)
            ids = blob_ids(conn, addresses, pending(conn).ids)
            conn.execute(
                sa.text(
                    "INSERT INTO roots (name, blob, until) VALUES (:n, :b, :u) "
                    "ON CONFLICT (name, blob) DO UPDATE SET until = excluded.until"
                ),
                [{"n": root, "b": ids[a], "u": stamp} for a in addresses],
            )
            detail = {"until": _iso(when)}
            with rooting(root, actor):
                record(conn, "retain", root=root, addresses=addresses, detail=detail, now=now)
            return {
                "root": root,
                "until": detail["until"],
                "retained": ["blake3:" + a for a in addresses],
            }

        return self._db.run_transaction(work)  # type: ignore[no-any-return]

    def release(
        self, root: str, refs: Sequence[str] = (), *, actor: str = "local"
    ) -> dict[str, Any]:
        """Release ``root`` (every entry), or only the entries ``refs`` name.

        Returns:
            ``{"root", "released": ["blake3:..."]}``.

        Raises:
            InputError: ``root.name``. NotFound: ``not-found.root`` (the root holds nothing,
            or not one of ``refs``); ``not-found.blob``. Nothing is released then.
        """
        check_root_name(root)

        def work(conn: Connection) -> dict[str, Any]:
            held = {
                r.address: r.id
                for r in conn.execute(
                    sa.select(blobs.c.address, blobs.c.id)
                    .join(roots, roots.c.blob == blobs.c.id)
                    .where(roots.c.name == root)
                )
            }
            if not held:
                raise error("not-found.root", f"no root named {root!r} holds anything", root=root)
            wanted = _resolve(conn, refs) if refs else sorted(held)
            stray = [a for a in wanted if a not in held]
            if stray:
                raise error(
                    "not-found.root",
                    f"root {root!r} does not hold blake3:{stray[0]}",
                    root=root,
                    ref="blake3:" + stray[0],
                )
            for i in range(0, len(wanted), 500):
                part = [held[a] for a in wanted[i : i + 500]]
                conn.execute(sa.delete(roots).where(roots.c.name == root, roots.c.blob.in_(part)))
            with rooting(root, actor):
                record(conn, "release", root=root, addresses=wanted)
            return {"root": root, "released": ["blake3:" + a for a in wanted]}

        return self._db.run_transaction(work)  # type: ignore[no-any-return]

    def roots(self) -> list[dict[str, Any]]:
        """Every root: ``{"root", "entries", "held", "until"}`` (``held``: entries whose
        ``until`` has not passed; ``until``: the latest, None when one holds until released).
        """  # noqa: D205
        with self._db.read() as conn:
            now = db_now(conn)
            rows = conn.execute(sa.select(roots.c.name, roots.c.until).order_by(roots.c.name)).all()
        out: dict[str, dict[str, Any]] = {}
        for name, until in rows:
            item = out.setdefault(name, {"root": name, "entries": 0, "held": 0, "until": ""})
            item["entries"] += 1
            when = _iso(until)
            if when is None or _dt.datetime.fromisoformat(when) > now:
                item["held"] += 1
            if item["until"] is not None and (when is None or when > item["until"]):
                item["until"] = when
        return list(out.values())

    def entries(self, root: str) -> list[dict[str, Any]]:
        """The entries of ``root``: ``{"address", "until"}``, by address."""
        check_root_name(root)
        with self._db.read() as conn:
            q = (
                sa.select(blobs.c.address, roots.c.until)
                .join(roots, roots.c.blob == blobs.c.id)
                .where(roots.c.name == root)
            )
            return [
                {"address": "blake3:" + a, "until": _iso(u)}
                for a, u in conn.execute(q.order_by(blobs.c.address))
            ]

    def history(self, limit: int = 1000) -> list[dict[str, Any]]:
        """The latest retention events, newest first: ``{"at", "actor", "action", "root",
        "address", "detail"}``.
        """  # noqa: D205
        check_listed(limit)
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(retention_history).order_by(retention_history.c.id.desc()).limit(limit)
            ).all()
        return [
            {
                "at": _iso(r.at),
                "actor": r.actor,
                "action": r.action,
                "root": r.root,
                "address": None if r.address is None else "blake3:" + r.address,
                "detail": _detail(r.detail),
            }
            for r in rows
        ]

    # -- uploads --------------------------------------------------------------------------
    def missing(self, refs: Iterable[str], *, actor: str = "local") -> list[str]:
        """The refs (as given) that name no stored, intact object; extends the leases of the
        others (the existence check of an upload: what it reports present stays for
        ``gc.lease-seconds`` at least, so the ingest that follows can refer to it).

        A write transaction, unlike :meth:`evstore.Store.has` (which never writes).

        Raises:
            RefSyntaxError: ``ref.syntax`` (nothing is looked up).
        """  # noqa: D205
        parsed = [parse_ref(r) for r in refs]

        def work(conn: Connection) -> list[str]:
            found: dict[str, str] = {}
            for p in parsed:
                rows = (
                    [r for r in [_blobs.lookup(conn, p)] if r is not None]
                    if p.algorithm == "blake3"
                    else _blobs.lookup_sha256_all(conn, p.hex)
                )
                for row in rows:
                    if _blobs.verify_stored(conn, row) is None:
                        found[p.text] = row.digest.blake3
                        break
            gone = set(hold(conn, found.values()))
            return [p.text for p in parsed if found.get(p.text) in (None, *gone)]

        with rooting(DEFAULT_ROOT, actor):
            return self._db.run_transaction(work)  # type: ignore[no-any-return]

    # -- collection and audit -------------------------------------------------------------
    def gc(
        self,
        *,
        dry_run: bool = False,
        vacuum_after: bool = False,
        batch: int = 200,
        actor: str = "local",
        progress: Callable[[int, int], None] | None = None,
    ) -> GcReport:
        """Collect every object no root reaches and whose lease expired (store/retention/gc.py).

        Args:
            dry_run: list what would go and the bytes it would free; delete nothing.
            vacuum_after: SQLite: run VACUUM afterwards to give the space back to the file
                system (PostgreSQL: autovacuum reclaims it).
            batch: objects deleted per transaction.
            progress: ``progress(deleted so far, garbage found)``.
            actor: who collects (recorded in the history).

        Returns:
            The :class:`~evstore.retention.gc.GcReport` (each deletion is in the history too).
        """
        with rooting(DEFAULT_ROOT, actor):
            report = collect(self._db, dry_run=dry_run, batch=batch, progress=progress)
        if vacuum_after and not dry_run:
            report.vacuumed = vacuum(self._db)
        return report

    def move_blobs(
        self,
        to: str,
        *,
        batch: int = MOVE_BATCH,
        progress: Callable[[int, int], None] | None = None,
    ) -> MoveReport:
        """Move every blob's bytes to the blob backend ``to`` (store/retention/moves.py).

        Resumable: run it again after an
        interruption; nothing is lost at any point. Old copies in a backend are queued for
        deletion and deleted by :meth:`gc` after ``blobs.deletion_delay_seconds``.

        Args:
            to: ``inline``, ``file:DIR`` or ``s3://BUCKET/PREFIX``; it becomes
                ``blobs.backend`` first (new writes go there).
            batch: blobs per repoint transaction.
            progress: ``progress(moved so far, blobs to move found at the start)``.

        Returns:
            The :class:`~evstore.retention.moves.MoveReport`.

        Raises:
            InputError: ``blobs.spec``, ``input.invalid``. StoreStateError:
                ``blobs.unreachable`` (retryable), ``blobs.backend``.
        """
        return move_blobs(self._db, to, batch=batch, progress=progress)

    def audit(
        self,
        roots: Sequence[str] = (),
        *,
        sample: float | None = None,
        seed: int = 0,
        since: _dt.datetime | str | None = None,
        actor: str = "local",
        progress: Callable[[int, int], None] | None = None,
        record: bool = True,
    ) -> AuditRun:
        """Audit the retained artifacts (store/retention/audit.py); the run is recorded.

        ``record=False`` writes nothing (neither the run nor the objects verified). A store
        that cannot be written (read-only, a full disk) still gets its verdict: the run's
        ``not_recorded`` says why it is not in ``audits``.

        Raises:
            InputError: ``root.name``, ``input.invalid``. NotFound: ``not-found.root``.
        """
        if isinstance(roots, str):
            raise error("input.invalid", "roots is a list of root names, not one string")
        options = AuditOptions(tuple(roots), sample, seed, since, record)
        with rooting(DEFAULT_ROOT, actor):
            return run_audit(self._db, options, progress)

    def check_audit_options(
        self,
        roots: Sequence[str] = (),
        *,
        sample: float | None = None,
        since: _dt.datetime | str | None = None,
    ) -> None:
        """Raise what :meth:`audit` raises for these options before it reads anything.

        The server calls it before its answer starts, so a bad option is a 400 problem
        rather than a line of the stream (docs/http.md#audit).

        Raises:
            InputError: ``root.name``, ``input.invalid`` (``sample``, ``since``).
        """
        if isinstance(roots, str):
            raise error("input.invalid", "roots is a list of root names, not one string")
        check_options(AuditOptions(tuple(roots), sample, 0, since))

    def audits(self, limit: int = 50) -> list[dict[str, Any]]:
        """The latest audit runs, newest first (:func:`~evstore.retention.audit.audit_history`)."""
        check_listed(limit)
        with self._db.read() as conn:
            return audit_history(conn, limit)
