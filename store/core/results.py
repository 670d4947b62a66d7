"""The result types every store returns, a local :class:`~evstore.Store` and a remote one.

One set of values for both implementations of :class:`evstore.StoreProtocol`
(store/protocol.py): a program, the CLI and the server read the same attributes and print
the same ``to_dict()`` whichever store answered. Each type is a plain value (no database, no
I/O), so the HTTP client (store/client/) builds them from the server's JSON without loading
the library's database layers. The modules that produce them import them from here
(``evstore.objects.artifacts``, ``objects.blobs``, ``objects.lineage``, ``retention.gc``,
``contracts.contexts.store``, ``contracts.runs.store`` keep their names).

Sizes are in bytes; addresses are ``blake3:`` + 64 lowercase hex.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .digests import Digest
from .errors import EvstoreError

__all__ = [
    "ArtifactInfo",
    "ArtifactResult",
    "AuditRun",
    "Closure",
    "Document",
    "Excerpt",
    "GcReport",
    "IngestReport",
    "PutResult",
    "RunReport",
    "Warning_",
]


@dataclass(frozen=True, slots=True)
class PutResult:
    """What a put did: the blob's :class:`Digest`, and whether this call stored new bytes."""

    digest: Digest
    new: bool


@dataclass(frozen=True, slots=True)
class Warning_:
    """A warning recorded with an accepted artifact: stable ``code``, ``message``, ``pointer``."""

    code: str
    message: str
    pointer: str = ""

    def to_dict(self) -> dict[str, str]:
        """JSON-ready form."""
        return {"code": self.code, "message": self.message, "pointer": self.pointer}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Warning_:
        """The warning of its :meth:`to_dict` form (members beyond the three are ignored).

        Raises:
            KeyError, TypeError: ``code``, ``message`` or ``pointer`` is missing.
        """
        return cls(str(d["code"]), str(d["message"]), str(d["pointer"]))


@dataclass(frozen=True, slots=True)
class ArtifactResult:
    """What storing an artifact did.

    Attributes:
        digest: the canonical bytes' :class:`~evstore.core.digests.Digest` (address = its blake3).
        kind: the registry kind name.
        new: True when this (address, kind) was not stored before.
        warnings: warnings recorded with it.
        info: kind-specific facts for the caller's report (JSON-ready).
    """

    digest: Digest
    kind: str
    new: bool
    warnings: tuple[Warning_, ...] = ()
    info: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        out: dict[str, Any] = {
            "address": self.digest.address,
            "kind": self.kind,
            "new": self.new,
            "size": self.digest.size,
        }
        if self.warnings:
            out["warnings"] = [w.to_dict() for w in self.warnings]
        if self.info:
            out.update(self.info)
        return out


@dataclass(frozen=True, slots=True)
class ArtifactInfo:
    """An artifact index row.

    Address (``blake3:...``), kind, contract version, accepted_at (ISO 8601), size in bytes.
    ``damage`` is None for a sound entry, or the ``check`` code of the damage a listing can
    see without reading bytes (``check.artifact-without-blob``: the index row's blob row is
    missing; ``size`` is then None). Listings show such an entry instead of hiding it.
    """

    address: str
    kind: str
    contract_version: str
    accepted_at: str
    size: int | None
    damage: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``damage`` only when there is damage)."""
        out: dict[str, Any] = {
            "address": self.address,
            "kind": self.kind,
            "contract_version": self.contract_version,
            "accepted_at": self.accepted_at,
            "size": self.size,
        }
        if self.damage is not None:
            out["damage"] = self.damage
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ArtifactInfo:
        """The index row of its :meth:`to_dict` form (a listing answered over HTTP).

        Members beyond :meth:`to_dict`'s are ignored; an absent ``contract_version`` or
        ``accepted_at`` reads as ``""``, an absent ``size`` as None.

        Raises:
            KeyError, TypeError, ValueError: ``address`` or ``kind`` missing, or ``size`` not
                an integer.
        """
        size = d.get("size")
        return cls(
            str(d["address"]),
            str(d["kind"]),
            str(d.get("contract_version", "")),
            str(d.get("accepted_at", "")),
            None if size is None else int(size),
            d.get("damage"),
        )


@dataclass(frozen=True)
class Document:
    """One JSON input: ``data`` (raw bytes, as read), its ``name`` (a path or "-") and ``kind``.

    ``kind`` None means detect it (docs/kinds.md).
    """

    data: bytes
    name: str = "-"
    kind: str | None = None


@dataclass
class IngestReport:
    """The result of :meth:`Store.ingest` / :meth:`Store.validate`.

    Attributes:
        results: one :class:`ArtifactResult` per stored artifact, in input order.
        faults: every fault found (validate only; ingest raises the first instead).
        documents: how many documents were read.
    """

    results: list[ArtifactResult] = field(default_factory=list)
    faults: list[EvstoreError] = field(default_factory=list)
    documents: int = 0

    @property
    def ok(self) -> bool:
        """True when no fault was found."""
        return not self.faults

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "ok": self.ok,
            "documents": self.documents,
            "artifacts": [r.to_dict() for r in self.results],
            "faults": [f.to_dict() for f in self.faults],
        }


@dataclass(frozen=True)
class Excerpt:
    """An excerpt selected from a stored source document, with its byte form.

    Attributes:
        units: the payload (the selected units, in source position order).
        data: its canonical bytes (RFC 8785, nothing appended): the form hosts compare.
        digest: the digest of ``data`` (``digest.address`` is its BLAKE3 address).
    """

    units: list[dict[str, Any]]
    data: bytes
    digest: Digest


@dataclass
class Closure:
    """Everything an object needs, each object verified on read.

    Attributes:
        root: the object asked about (``blake3:...``).
        items: one dict per object, root first, then breadth-first: ``address``, ``size``
            (bytes), ``kinds`` (artifact kinds; empty for a plain blob), ``via`` (``{from,
            role}`` of the edge that reached it; absent for the root), ``ok``, and ``error``
            (the fault's dict) when not ok.
    """

    root: str
    items: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every object is present and its bytes match its address."""
        return all(item["ok"] for item in self.items)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"ok": self.ok, "root": self.root, "objects": len(self.items), "items": self.items}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Closure:
        """The closure of its :meth:`to_dict` form (``ok`` and ``objects`` follow from ``items``).

        Raises:
            KeyError, TypeError: ``root`` or ``items`` missing or not a list.
        """
        return cls(str(d["root"]), list(d["items"]))


@dataclass
class RunReport:
    """What ingesting a run bundle did (``store.runs.ingest_bundle``, local or remote).

    Attributes:
        record: the run record's :class:`ArtifactResult` (``new`` False for a bundle seen before).
        files: per logical file: its blob and, for an artifact, the kind's result.
        tree: the run record itself.
    """

    record: ArtifactResult
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    tree: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"ok": True, "run": self.record.to_dict(), "files": self.files, "record": self.tree}


@dataclass
class GcReport:
    """What a collection found or did.

    Attributes:
        dry_run: True when nothing was deleted (``gc --dry-run``).
        objects: ``{"address": "blake3:...", "size": bytes}`` per object deleted (or, dry
            run, that would be deleted), in deletion order.
        leased: dry run only: ``{"address", "size", "until"}`` per object no root reaches
            that a lease still holds (its own, or that of a leased artifact referring to it),
            ``until`` the latest such lease's end (ISO 8601 UTC), by address. These go once
            their leases end (``gc.lease-seconds``; setting it shortens leases taken before).
        batches: write transactions that deleted something.
        rounds: passes over the garbage.
        skipped: objects found collectable at first whose re-check kept them (a write
            referred to, rooted or leased them meanwhile, or held their row).
        seconds: wall time of the run.
        vacuumed: True when SQLite's VACUUM ran afterwards (``--vacuum``).
        backend_deleted: objects deleted from a blob backend by this run's drain of the
            deletion queue (rows collected earlier, once their delay passed; issue 25).
        backend_kept: queued deletions this run dropped because a row needs the object
            again (a put of the same bytes since).
    """

    dry_run: bool
    objects: list[dict[str, Any]] = field(default_factory=list)
    leased: list[dict[str, Any]] = field(default_factory=list)
    batches: int = 0
    rounds: int = 0
    skipped: int = 0
    seconds: float = 0.0
    vacuumed: bool = False
    backend_deleted: int = 0
    backend_kept: int = 0

    @property
    def count(self) -> int:
        """Objects deleted (or that would be)."""
        return len(self.objects)

    @property
    def bytes(self) -> int:
        """Bytes of blob content freed (or that would be)."""
        return sum(int(o["size"]) for o in self.objects)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "dry_run": self.dry_run,
            "count": self.count,
            "bytes": self.bytes,
            "batches": self.batches,
            "rounds": self.rounds,
            "skipped": self.skipped,
            "seconds": round(self.seconds, 3),
            "vacuumed": self.vacuumed,
            "backend_deleted": self.backend_deleted,
            "backend_kept": self.backend_kept,
            "objects": self.objects,
            "leased": self.leased,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GcReport:
        """The report of its :meth:`to_dict` form (a gc answered over HTTP).

        ``count`` and ``bytes`` follow from ``objects``, so
        ``GcReport.from_dict(r.to_dict()).to_dict() == r.to_dict()``.

        Raises:
            KeyError, TypeError, ValueError: a member is missing or of the wrong type.
        """
        return cls(
            bool(d["dry_run"]),
            list(d["objects"]),
            list(d.get("leased", [])),
            int(d.get("batches", 0)),
            int(d.get("rounds", 0)),
            int(d.get("skipped", 0)),
            float(d.get("seconds", 0.0)),
            bool(d.get("vacuumed", False)),
            int(d.get("backend_deleted", 0)),
            int(d.get("backend_kept", 0)),
        )


@dataclass
class AuditRun:
    """The result of one audit.

    Attributes:
        id: the run's id in the ``audits`` table (None when not recorded).
        started_at, finished_at: RFC 3339 UTC (:func:`~evstore.core.times.utc_text`; the
            database's clock).
        scope: the options as asked (JSON-ready).
        roots: per root: ``{"root", "verdict", "entries": [{"address", "kinds", "objects",
            "verdict", "faults"}]}``.
        objects: distinct objects verified by this run (bytes re-hashed).
        skipped: objects skipped as verified since ``since``.
        not_recorded: why the run is not in ``audits`` although recording was asked (the
            store is read-only, or its disk is full: ``store.full``), or None. The verdict
            stands either way: it is reached before anything is written.
    """

    id: int | None = None
    started_at: str = ""
    finished_at: str = ""
    scope: dict[str, Any] = field(default_factory=dict)
    roots: list[dict[str, Any]] = field(default_factory=list)
    objects: int = 0
    skipped: int = 0
    not_recorded: str | None = None

    @property
    def faults(self) -> list[dict[str, Any]]:
        """Every fault, once each (dicts of the errors), in root and entry order."""
        seen: dict[str, dict[str, Any]] = {}
        for r in self.roots:
            for e in r["entries"]:
                for f in e["faults"]:
                    seen.setdefault(json.dumps(f, sort_keys=True), f)
        return list(seen.values())

    @property
    def verdict(self) -> str:
        """``pass`` when no fault was found, else ``fail``."""
        return "fail" if any(r["verdict"] == "fail" for r in self.roots) else "pass"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``not_recorded`` only when recording failed)."""
        out: dict[str, Any] = {
            "id": self.id,
            "verdict": self.verdict,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "scope": self.scope,
            "objects": self.objects,
            "skipped": self.skipped,
            "roots": self.roots,
            "faults": self.faults,
        }
        if self.not_recorded is not None:
            out["not_recorded"] = self.not_recorded
        return out

    def junit(self) -> str:
        """The run as JUnit XML: one test suite per root, one test case per entry."""
        from xml.etree import ElementTree as ET

        top = ET.Element("testsuites", name="evstore audit")
        for r in self.roots:
            failed = sum(1 for e in r["entries"] if e["verdict"] == "fail")
            suite = ET.SubElement(
                top,
                "testsuite",
                name=r["root"],
                tests=str(len(r["entries"])),
                failures=str(failed),
            )
            for e in r["entries"]:
                case = ET.SubElement(suite, "testcase", classname=r["root"], name=e["address"])
                for f in e["faults"]:
                    node = ET.SubElement(case, "failure", type=f["code"], message=f["message"])
                    node.text = json.dumps(f, sort_keys=True)
        return ET.tostring(top, encoding="unicode", xml_declaration=True)
