"""Artifacts: JSON documents of a kind, stored in canonical form as blobs.

An artifact's address is the address of its canonical bytes (RFC 8785). Its index row records
the kind and contract version; edge rows (artifact -> blob or artifact it refers to, with a
role), lookup attributes and warnings are written in the same transaction, so lineage and
``find`` need no backfill. One byte string may be indexed under several kinds (``[]`` is both
an empty evidence context and an empty JSON array).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .blobs import PutResult, insert_ignore, put_bytes
from .digests import Digest
from .tables import artifacts, attrs, edges, warnings

__all__ = [
    "ArtifactInfo",
    "ArtifactResult",
    "Warning_",
    "artifact_kinds",
    "iso_utc",
    "put_artifact",
    "warnings_of",
]


@dataclass(frozen=True, slots=True)
class Warning_:
    """A warning recorded with an accepted artifact: stable ``code``, ``message``, ``pointer``."""

    code: str
    message: str
    pointer: str = ""

    def to_dict(self) -> dict[str, str]:
        """JSON-ready form."""
        return {"code": self.code, "message": self.message, "pointer": self.pointer}


@dataclass(frozen=True, slots=True)
class ArtifactResult:
    """What storing an artifact did.

    Attributes:
        digest: the canonical bytes' :class:`~evstore.digests.Digest` (address = its blake3).
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
    """An artifact index row: address (``blake3:...``), kind, contract version, accepted_at (ISO 8601)."""

    address: str
    kind: str
    contract_version: str
    accepted_at: str
    size: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "address": self.address,
            "kind": self.kind,
            "contract_version": self.contract_version,
            "accepted_at": self.accepted_at,
            "size": self.size,
        }


def put_artifact(
    conn: Connection,
    kind: str,
    contract_version: str,
    canonical: bytes,
    *,
    edge_rows: Iterable[tuple[str, str]] = (),
    attr_rows: Iterable[tuple[str, str]] = (),
    warning_rows: Sequence[Warning_] = (),
    blob: PutResult | None = None,
) -> ArtifactResult:
    """Store canonical bytes as a blob and index them as an artifact of ``kind``.

    Args:
        kind: registry kind name (docs/kinds.md).
        contract_version: e.g. ``"v1alpha1"``.
        canonical: RFC 8785 bytes (the caller canonicalised them).
        edge_rows: ``(role, dst)`` pairs, ``dst`` 64 hex of a blob or artifact address.
        attr_rows: ``(name, value)`` lookup keys for ``find`` (values up to 512 characters).
        warning_rows: warnings to record.
        blob: the result of an earlier put of the same bytes, to skip putting them again.

    Returns:
        :class:`ArtifactResult`; ``new`` is False when the same (address, kind) existed.
    """
    put = blob or put_bytes(conn, canonical)
    address = put.digest.blake3
    existed = conn.execute(
        sa.select(artifacts.c.kind).where(artifacts.c.address == address, artifacts.c.kind == kind)
    ).first()
    if existed is None:
        insert_ignore(
            conn,
            artifacts,
            [{"address": address, "kind": kind, "contract_version": contract_version}],
        )
    insert_ignore(
        conn, edges, [{"src": address, "role": r, "dst": d} for r, d in dict.fromkeys(edge_rows)]
    )
    insert_ignore(
        conn,
        attrs,
        [
            {"name": n, "value": v[:512], "address": address, "kind": kind}
            for n, v in dict.fromkeys(attr_rows)
        ],
    )
    insert_ignore(
        conn,
        warnings,
        [
            {"address": address, "code": w.code, "pointer": w.pointer[:512], "message": w.message}
            for w in warning_rows
        ],
    )
    return ArtifactResult(put.digest, kind, existed is None, tuple(warning_rows))


def artifact_kinds(conn: Connection, address: str) -> list[tuple[str, str, Any]]:
    """``(kind, contract_version, accepted_at)`` for every kind the address is stored as."""
    return [
        (r.kind, r.contract_version, r.accepted_at)
        for r in conn.execute(
            sa.select(artifacts.c.kind, artifacts.c.contract_version, artifacts.c.accepted_at)
            .where(artifacts.c.address == address)
            .order_by(artifacts.c.kind)
        )
    ]


def warnings_of(conn: Connection, address: str) -> list[Warning_]:
    """The warnings recorded with an artifact."""
    return [
        Warning_(r.code, r.message, r.pointer)
        for r in conn.execute(
            sa.select(warnings.c.code, warnings.c.message, warnings.c.pointer)
            .where(warnings.c.address == address)
            .order_by(warnings.c.code, warnings.c.pointer)
        )
    ]


def iso_utc(t: Any) -> str:
    """An ``accepted_at`` value as ISO 8601 in UTC.

    SQLite's CURRENT_TIMESTAMP is UTC written without an offset; PostgreSQL returns an aware
    datetime. Both come out as ``YYYY-MM-DDTHH:MM:SS+00:00``.
    """
    import datetime as _dt

    if isinstance(t, _dt.datetime):
        if t.tzinfo is None:
            t = t.replace(tzinfo=_dt.UTC)
        return t.astimezone(_dt.UTC).isoformat()
    return str(t)
