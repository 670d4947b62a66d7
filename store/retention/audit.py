"""The audit of retained artifacts (``evstore audit``): proof that what is kept is intact.

For every root entry in scope (all roots, or the ones named), over one consistent snapshot:

* its closure is complete: every edge from every object reached leads to a stored object
  (``audit.missing`` names the edge otherwise);
* every byte verifies: size, BLAKE3 and SHA-256 of each object in the closure
  (``corruption.*``, as ``check``);
* every artifact still passes its contract's audit: canonical form and the kind's rules, the
  same functions ``check`` runs (store/check/checker.py);
* every binding it made is intact: each binding row whose origin is the artifact is still
  keyed by the SHA-256 of its key (``audit.binding``), and the kind's audit finds no
  conflicting binding.

An object shared by several closures is verified once per run; its faults count for every
root that reaches it. ``sample`` audits a seeded, reproducible fraction of the root entries
(each entry's whole closure; at least one entry of every root in scope, so a sample never
passes having checked nothing); ``since`` skips objects a check or audit verified at or after
that time (table ``verified``, revision 0004), and objects found clean are recorded there.
Every run is recorded in table ``audits`` (time, scope, verdict, per-root verdicts, faults).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..check.checker import UNWRITABLE, audit_bytes, parse_since, write_verified
from ..core.digests import digest_bytes
from ..core.errors import EvstoreError, StoreStateError, error
from ..core.results import AuditRun
from ..core.times import utc_text
from ..db.settings import load_settings
from ..db.tables import audits, bindings, blobs, edges, roots, verified
from ..db.transactions import Transactions
from ..objects import blobs as _blobs
from ..objects.leases import ACTOR, check_root_name, db_now
from ..objects.txn import Txn

__all__ = ["AuditOptions", "AuditRun", "audit_history", "check_options", "run_audit"]

#: Root entries (and objects) read ahead per statement.
_PAGE = 500
#: Inline blobs up to this size (bytes) are read ahead with their rows.
_PREFETCH_MAX = 64 << 10

#: ``progress(entries done, entries in scope)``.
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class AuditOptions:
    """What an audit covers.

    Attributes:
        roots: root names (empty: every root).
        sample: audit only this fraction (0 < sample <= 1) of the root entries, chosen by a
            hash of (seed, address): the same seed and store give the same entries; at least
            one entry of each root in scope.
        seed: the sample's seed.
        since: skip objects verified at or after this time (an aware datetime, ISO 8601 text,
            or an age such as ``"24h"``; see evstore.check.checker.parse_since).
        record: record objects found clean in ``verified`` and the run in ``audits``.
    """

    roots: tuple[str, ...] = ()
    sample: float | None = None
    seed: int = 0
    since: _dt.datetime | str | None = None
    record: bool = True


def _sample_key(seed: int, address: str) -> int:
    """A uniform 64-bit draw for ``address`` under ``seed`` (the first 8 bytes of a SHA-256)."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{address}".encode()).digest()[:8], "big")


def _sample(seed: int, addresses: list[str], fraction: float | None) -> list[str]:
    """The entries of one root that a ``fraction`` sample audits (all without a fraction).

    An entry is in when its draw is below ``fraction`` of the range; a root that holds
    entries never gets an empty sample (its audit would pass having checked nothing): when
    no draw falls below, the entry with the lowest draw is audited. Same seed, same sample.
    """
    if fraction is None or fraction >= 1 or not addresses:
        return addresses
    keyed = [(_sample_key(seed, a), a) for a in addresses]
    picked = [a for k, a in keyed if k < fraction * 2**64]
    return picked or [min(keyed)[1]]


def _entries(conn: Connection, names: Sequence[str], now: _dt.datetime) -> dict[str, list[str]]:
    """Root name -> addresses of its live entries, for ``names`` (every root when empty)."""
    q = (
        sa.select(roots.c.name, blobs.c.address)
        .join(blobs, blobs.c.id == roots.c.blob)
        .where(sa.or_(roots.c.until.is_(None), roots.c.until > now))
    )
    if names:
        q = q.where(roots.c.name.in_(list(names)))
    out: dict[str, list[str]] = {n: [] for n in names}
    for r in conn.execute(q.order_by(roots.c.name, blobs.c.address)):
        out.setdefault(r.name, []).append(r.address)
    return out


class _Auditor:
    """Verifies objects once each within one snapshot, caching faults by address."""

    def __init__(self, conn: Connection, since: _dt.datetime | None) -> None:
        self.conn = conn
        self.txn = Txn(conn, load_settings(conn), "audit")
        self.since = since
        self.cache: dict[str, list[dict[str, Any]]] = {}
        self.clean: list[tuple[str, str]] = []
        self.skipped = 0
        self.warnings: list[dict[str, str]] = []
        self.rows: dict[str, _blobs.BlobRow | None] = {}
        self.kinds: dict[str, list[str]] = {}
        self.data: dict[str, Any] = {}  # small inline bytes read ahead, until verified
        self.adj: dict[str, list[tuple[str, str]]] = {}
        self._made: dict[str, list[Any]] | None = None

    def row(self, address: str) -> _blobs.BlobRow | None:
        """The blob row at ``address`` (None: not stored); its kinds go to :attr:`kinds`."""
        if address not in self.rows:
            self.prefetch([address])
        return self.rows[address]

    def prefetch(self, addresses: Sequence[str]) -> None:
        """Read the rows, artifact kinds and small inline bytes of ``addresses`` not read
        yet: one statement per :data:`_PAGE` addresses.
        """  # noqa: D205
        todo = sorted({a for a in addresses if a not in self.rows})
        mark = "%s" if self.conn.dialect.name == "postgresql" else "?"
        for i in range(0, len(todo), _PAGE):
            part = todo[i : i + _PAGE]
            found = self.conn.exec_driver_sql(
                "SELECT b.address, b.sha256, b.size, b.chunk_set, a.kind, CASE WHEN"
                f" b.chunk_set IS NULL AND b.size <= {_PREFETCH_MAX} THEN b.data END AS data"
                " FROM blobs b LEFT JOIN artifacts a ON a.address = b.address"
                f" WHERE b.address IN ({', '.join([mark] * len(part))})",
                tuple(part),
            ).all()
            for a in part:
                self.rows[a], self.kinds[a] = None, []
            for r in found:
                if self.rows[r.address] is None:
                    self.rows[r.address] = _blobs.row_from(r)
                    if r.data is not None:
                        self.data[r.address] = r.data
                if r.kind is not None:
                    self.kinds[r.address].append(r.kind)
            for a in part:
                self.kinds[a].sort()

    def edges_of(self, address: str) -> list[tuple[str, str]]:
        """``(role, dst)`` of an artifact's edges (read ahead by :meth:`warm`)."""
        if address not in self.adj:
            self.adj[address] = [
                (r.role, r.dst)
                for r in self.conn.execute(
                    sa.select(edges.c.role, edges.c.dst)
                    .where(edges.c.src == address)
                    .order_by(edges.c.role, edges.c.dst)
                )
            ]
        return self.adj[address]

    def warm(self, entries: Sequence[str]) -> None:
        """Read a page of entries' closures ahead, level by level: rows, kinds, small bytes
        and edges in a few statements for the whole page.
        """  # noqa: D205
        frontier = list(dict.fromkeys(entries))
        seen = set(frontier)
        while frontier:
            self.prefetch(frontier)
            srcs = [a for a in frontier if self.kinds.get(a) and a not in self.adj]
            for a in srcs:
                self.adj[a] = []
            for i in range(0, len(srcs), _PAGE):
                q = (
                    sa.select(edges.c.src, edges.c.role, edges.c.dst)
                    .where(edges.c.src.in_(srcs[i : i + _PAGE]))
                    .order_by(edges.c.src, edges.c.role, edges.c.dst)
                )
                for src, role, dst in self.conn.execute(q):
                    self.adj[src].append((role, dst))
            frontier = []
            for a in srcs:
                for _, dst in self.adj[a]:
                    if dst not in seen:
                        seen.add(dst)
                        frontier.append(dst)

    def made(self, address: str) -> list[Any]:
        """The binding rows whose origin is ``address`` (every origin read in one query)."""
        if self._made is None:
            self._made = {}
            q = sa.select(
                bindings.c.origin, bindings.c.namespace, bindings.c.key, bindings.c.key_digest
            ).where(bindings.c.origin != "")
            for b in self.conn.execute(q):
                self._made.setdefault(b.origin, []).append(b)
        return self._made.get(address, [])

    def _verified_since(self, address: str) -> bool:
        if self.since is None:
            return False
        when = self.conn.execute(
            sa.select(sa.func.min(verified.c.verified_at)).where(verified.c.address == address)
        ).scalar()
        if when is None:
            return False
        if when.tzinfo is None:
            when = when.replace(tzinfo=_dt.UTC)
        return bool(when >= self.since)

    def object_faults(self, address: str) -> list[dict[str, Any]]:
        """Faults of one object: bytes, each artifact kind's audit, its bindings (cached)."""
        if address in self.cache:
            return self.cache[address]
        found: list[EvstoreError] = []
        row = self.row(address)
        if row is None:
            found.append(
                error(
                    "audit.missing", f"blake3:{address} is not stored", address="blake3:" + address
                )
            )
        elif self._verified_since(address):
            self.skipped += 1
            self.data.pop(address, None)
        else:
            found.extend(self._verify(row, address))
        out = [f.to_dict() for f in found]
        self.cache[address] = out
        return out

    def _verify(self, row: _blobs.BlobRow, address: str) -> list[EvstoreError]:
        where = "blake3:" + address
        ahead = self.data.pop(address, None)
        try:
            if ahead is None:
                data = _blobs.read_verified(self.conn, row)
            else:
                data = _blobs.as_bytes(ahead, address)
                bad = _blobs.compare_digest(row, digest_bytes(data))
                if bad is not None:
                    raise bad
        except EvstoreError as err:
            err.details.setdefault("address", where)
            return [err]
        found: list[EvstoreError] = []
        kinds = self.kinds[address]
        for kind in kinds:
            found.extend(audit_bytes(self.txn, address, kind, data, self.warnings))
        for b in self.made(address):
            if hashlib.sha256(b.key.encode("utf-8")).hexdigest() != b.key_digest:
                found.append(
                    error(
                        "audit.binding",
                        f"the binding {b.namespace} {b.key!r} made by {where} is not keyed by its"
                        " key's SHA-256",
                        address=where,
                        namespace=b.namespace,
                    )
                )
        if not found:
            self.clean.append((address, ""))
            self.clean.extend((address, k) for k in kinds)
        return found

    def entry(self, address: str) -> dict[str, Any]:
        """Audit one root entry's closure: ``{"address", "kinds", "objects", "verdict",
        "faults"}``.
        """  # noqa: D205
        faults: list[dict[str, Any]] = []
        seen = {address}
        frontier = [address]
        while frontier:
            nxt: list[str] = []
            for a in frontier:
                faults.extend(self.object_faults(a))
            srcs = [a for a in frontier if self.kinds.get(a)]  # only artifacts have edges
            rows = [(src, role, dst) for src in srcs for role, dst in self.edges_of(src)]
            for src, role, dst in rows:
                if dst in seen:
                    continue
                seen.add(dst)
                if self.row(dst) is None:
                    faults.append(
                        error(
                            "audit.missing",
                            f"the closure of blake3:{address} is incomplete: blake3:{src} refers"
                            f" to blake3:{dst} ({role}), which is not stored",
                            address="blake3:" + dst,
                            referrer="blake3:" + src,
                            role=role,
                        ).to_dict()
                    )
                    continue
                nxt.append(dst)
            frontier = nxt
        return {
            "address": "blake3:" + address,
            "kinds": self.kinds.get(address, []),
            "objects": len(seen),
            "verdict": "fail" if faults else "pass",
            "faults": faults,
        }


def _scope(options: AuditOptions) -> dict[str, Any]:
    since = options.since
    return {
        "roots": list(options.roots),
        "sample": options.sample,
        "seed": options.seed,
        "since": utc_text(since) if isinstance(since, _dt.datetime) else since,
    }


def check_options(options: AuditOptions) -> _dt.datetime | None:
    """The option rules of an audit, reading nothing: ``since`` as an aware datetime or None.

    Raises:
        InputError: ``root.name`` (a root name outside the grammar), ``input.invalid`` (a
            ``sample`` outside (0, 1], a ``since`` that is no time or age).
    """
    for name in options.roots:
        check_root_name(name)
    sample = options.sample
    if sample is not None and (
        isinstance(sample, bool) or not isinstance(sample, (int, float)) or not 0 < sample <= 1
    ):
        raise error("input.invalid", f"sample must be a number in (0, 1], not {sample!r}")
    return parse_since(options.since) if options.since is not None else None


def run_audit(
    db: Transactions, options: AuditOptions, progress: Progress | None = None
) -> AuditRun:
    """Audit the retained artifacts in scope (see the module docstring).

    Returns:
        The :class:`AuditRun`; recorded in ``audits`` (after the verdict, in its own
        transaction) unless ``options.record`` is False or the store cannot be written: a
        read-only store or a full disk (``store.full``) leaves the verdict as it is, with
        ``id`` None and :attr:`AuditRun.not_recorded` saying why.

    Raises:
        InputError: ``root.name``, ``input.invalid`` (a bad ``sample`` or ``since``).
        NotFound: ``not-found.root`` for a named root that holds nothing.
    """
    since = check_options(options)
    run = AuditRun(scope=_scope(options))
    with db.read() as conn:
        now = db_now(conn)
        run.started_at = utc_text(now)
        scope = _entries(conn, options.roots, now)
        empty = [n for n in options.roots if not scope.get(n)]
        if empty:
            raise error(
                "not-found.root", f"no root named {empty[0]!r} holds anything", root=empty[0]
            )
        picked = {n: _sample(options.seed, addrs, options.sample) for n, addrs in scope.items()}
        total = sum(len(v) for v in picked.values())
        auditor = _Auditor(conn, since)
        done = 0
        for name, addrs in picked.items():
            entries = []
            for i, a in enumerate(addrs):
                if i % _PAGE == 0:
                    auditor.warm(addrs[i : i + _PAGE])
                entries.append(auditor.entry(a))
                done += 1
                if progress is not None:
                    progress(done, total)
            verdict = "fail" if any(e["verdict"] == "fail" for e in entries) else "pass"
            run.roots.append({"root": name, "verdict": verdict, "entries": entries})
        run.objects = len(auditor.cache) - auditor.skipped
        run.skipped = auditor.skipped
        run.finished_at = utc_text(db_now(conn))  # the verdict's time; recording may move it
    if options.record and db.read_only:
        run.not_recorded = "the store is opened read-only"
    elif options.record:
        try:
            _record(db, run, auditor.clean)
        except StoreStateError as err:
            why = UNWRITABLE.get(err.code)
            if why is None:
                raise
            run.id = None
            run.not_recorded = f"{why} ({err.message})"
    return run


def _record(db: Transactions, run: AuditRun, clean: list[tuple[str, str]]) -> None:
    def write(conn: Connection) -> int:
        now = db_now(conn)
        run.finished_at = utc_text(now)
        if clean:
            write_verified(conn, sorted(set(clean)), now)
        per_root = [
            {
                "root": r["root"],
                "verdict": r["verdict"],
                "entries": len(r["entries"]),
                "faults": sum(len(e["faults"]) for e in r["entries"]),
            }
            for r in run.roots
        ]
        result = conn.execute(
            sa.insert(audits).values(
                started_at=_dt.datetime.fromisoformat(run.started_at),
                finished_at=now,
                actor=ACTOR.get(),
                scope=json.dumps(run.scope, sort_keys=True),
                verdict=run.verdict,
                per_root=json.dumps(per_root, sort_keys=True),
                faults=json.dumps(run.faults, sort_keys=True),
            )
        )
        key = result.inserted_primary_key
        assert key is not None
        run.finished_at = utc_text(now)
        return int(key[0])

    run.id = db.run_transaction(write)


def audit_history(conn: Connection, limit: int = 50) -> list[dict[str, Any]]:
    """The latest audit runs, newest first: id, times, actor, scope, verdict, per root, faults."""
    out = []
    for r in conn.execute(sa.select(audits).order_by(audits.c.id.desc()).limit(limit)):
        out.append(
            {
                "id": r.id,
                "started_at": utc_text(r.started_at),
                "finished_at": utc_text(r.finished_at),
                "actor": r.actor,
                "scope": json.loads(r.scope),
                "verdict": r.verdict,
                "roots": json.loads(r.per_root),
                "faults": json.loads(r.faults),
            }
        )
    return out
