"""Artifacts: JSON documents of a kind, stored in canonical form as blobs.

An artifact's address is the address of its canonical bytes (RFC 8785). Its index row records
the kind and contract version; edge rows (artifact -> blob or artifact it refers to, with a
role), lookup attributes and warnings are written in the same transaction, so lineage and
``find`` need no backfill. One byte string may be indexed under several kinds (``[]`` is both
an empty evidence context and an empty JSON array), each with its own lookup rows (revision
0008), so ``find --kind`` answers the same whichever kind was stored first.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.errors import error
from ..core.results import ArtifactInfo, ArtifactResult, Document, IngestReport, Warning_
from ..core.times import utc_text
from ..db.tables import artifacts, attrs, blobs, edges, warnings
from .blobs import put_many
from .leases import hold, note_artifacts, step
from .log_entries import append_entry
from .rows import insert_ignore, insert_returning

__all__ = [
    "ArtifactInfo",
    "ArtifactResult",
    "Document",
    "IngestReport",
    "Warning_",
    "all_warnings",
    "artifact_kinds",
    "attr_digest",
    "attr_match",
    "find_artifacts",
    "info_query",
    "list_artifacts",
    "put_artifact",
    "put_artifacts",
    "warnings_of",
    "with_attr",
]


def put_artifact(
    conn: Connection,
    kind: str,
    contract_version: str,
    canonical: bytes,
    *,
    edge_rows: Iterable[tuple[str, str]] = (),
    attr_rows: Iterable[tuple[str, str]] = (),
    warning_rows: Sequence[Warning_] = (),
) -> ArtifactResult:
    """Store canonical bytes as a blob and index them as an artifact of ``kind``.

    Args:
        conn: the open write transaction.
        kind: registry kind name (docs/kinds.md).
        contract_version: e.g. ``"v1alpha1"``.
        canonical: RFC 8785 bytes (the caller canonicalised them).
        edge_rows: ``(role, dst)`` pairs, ``dst`` 64 hex of a blob or artifact address.
        attr_rows: ``(name, value)`` lookup keys for ``find``; values of any length are
            stored whole and found exactly (no U+0000: ``input.invalid``).
        warning_rows: warnings to record.

    Returns:
        :class:`ArtifactResult`; ``new`` is False when the same (address, kind) existed.
    """
    return put_artifacts(
        conn, kind, contract_version, [(canonical, edge_rows, attr_rows, warning_rows)]
    )[0]


def put_artifacts(
    conn: Connection,
    kind: str,
    contract_version: str,
    items: Sequence[
        tuple[bytes, Iterable[tuple[str, str]], Iterable[tuple[str, str]], Sequence[Warning_]]
    ],
    blobs: Sequence[bytes] = (),
) -> list[ArtifactResult]:
    """Store many artifacts of one kind with one batch per table (see :func:`put_artifact`).

    Args:
        conn: the open write transaction.
        kind: the registry kind of every item.
        contract_version: the contract version recorded with every item.
        items: ``(canonical, edge_rows, attr_rows, warning_rows)`` per artifact.
        blobs: other byte strings to store as plain blobs in the same batch, before the
            artifacts' own (e.g. the contents their edges name).

    Returns:
        One :class:`ArtifactResult` per item, in order; ``new`` is True only for the first
        occurrence of an (address, kind) that was not stored before.
    """
    puts = put_many(conn, [*blobs, *(item[0] for item in items)], unlogged_from=len(blobs))
    puts = puts[len(blobs) :]
    step("bytes stored")
    addresses = list(dict.fromkeys(p.digest.blake3 for p in puts))
    note_artifacts(conn, addresses)
    new_rows: list[dict[str, Any]] = []
    edge_map: dict[tuple[str, str, str], dict[str, str]] = {}
    attr_map: dict[tuple[str, str, str, str], dict[str, str]] = {}
    warn_map: dict[tuple[str, str, str], dict[str, str]] = {}
    results: list[ArtifactResult] = []
    seen: set[str] = set()
    for put, (_, item_edges, item_attrs, item_warnings) in zip(puts, items, strict=True):
        address = put.digest.blake3
        is_new = address not in seen
        if is_new:
            new_rows.append(
                {"address": address, "kind": kind, "contract_version": contract_version}
            )
        seen.add(address)
        for role, dst in item_edges:
            edge_map[(address, role, dst)] = {"src": address, "role": role, "dst": dst}
        for name, value in item_attrs:
            vd = attr_digest(value)
            attr_map[(name, vd, address, kind)] = {
                "name": name,
                "value_digest": vd,
                "value": value,
                "address": address,
                "kind": kind,
            }
        for w in item_warnings:
            p = w.pointer[:512]
            warn_map[(address, w.code, p)] = {
                "address": address,
                "code": w.code,
                "pointer": p,
                "message": w.message,
            }
        results.append(ArtifactResult(put.digest, kind, is_new, tuple(item_warnings)))
    # "new" is what this insert wrote, never what a lookup did not see: an (address, kind)
    # stored before, or by a concurrent writer that won, is skipped by ON CONFLICT DO
    # NOTHING and told not new; exactly one writer is told new, on both backends.
    written = {k[0] for k in insert_returning(conn, artifacts, new_rows)}
    if len(written) != len(new_rows):
        results = [
            dataclasses.replace(r, new=False) if r.new and r.digest.blake3 not in written else r
            for r in results
        ]
    for r in results:
        if r.new:  # the tamper-evident log: one ingest entry per new (address, kind)
            dg = r.digest
            append_entry(
                conn, op="ingest", address=dg.blake3, sha256=dg.sha256, size=dg.size, kind=kind
            )
    _hold_targets(conn, {k[2] for k in edge_map} - set(addresses), edge_map)
    insert_ignore(conn, edges, list(edge_map.values()))
    step("edges written")
    insert_ignore(conn, attrs, list(attr_map.values()))
    insert_ignore(conn, warnings, list(warn_map.values()))
    return results


def _hold_targets(
    conn: Connection, targets: set[str], edge_map: dict[tuple[str, str, str], dict[str, str]]
) -> None:
    """Lock and lease the objects the edges refer to; a collected one fails the write.

    Raises:
        NotFound: ``not-found.blob`` naming the first target that is no longer stored (an
            object collected since the document was checked): nothing is committed.
    """
    gone = hold(conn, targets)
    step("lease extended")
    if gone:
        src, role, _ = min(k for k in edge_map if k[2] == gone[0])
        raise error(
            "not-found.blob",
            f"blake3:{gone[0]} is no longer stored (collected by gc since it was checked);"
            f" blake3:{src} refers to it ({role}): nothing was written",
            ref="blake3:" + gone[0],
            referrer="blake3:" + src,
            role=role,
        )


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


def info_query() -> Any:
    """The columns of :class:`ArtifactInfo`: artifacts joined with their blob's size.

    An outer join: an artifact whose blob row is missing is listed (size NULL) as damaged,
    never silently dropped (``check`` reports it as ``check.artifact-without-blob``).
    """
    return sa.select(
        artifacts.c.address,
        artifacts.c.kind,
        artifacts.c.contract_version,
        artifacts.c.accepted_at,
        blobs.c.size,
    ).outerjoin(blobs, blobs.c.address == artifacts.c.address)


def attr_digest(value: str) -> str:
    """``attrs.value_digest`` of a lookup value: SHA-256 hex of its UTF-8 bytes.

    Raises:
        InputError: ``input.invalid`` for a value holding U+0000 (no identifier holds it:
            the contracts refuse it, and PostgreSQL text cannot store it) or a lone
            surrogate, on both backends alike.
    """
    if "\x00" in value:
        raise error("input.invalid", "a lookup value never contains U+0000", value=value)
    try:
        data = value.encode("utf-8")
    except UnicodeEncodeError:
        raise error("input.invalid", "a lookup value is not valid Unicode text") from None
    return hashlib.sha256(data).hexdigest()


def attr_match(name: str, value: str) -> Any:
    """The WHERE clause of an exact lookup ``name == value`` on ``attrs``.

    The digest finds the row through the primary key; the value is compared too.

    Raises:
        InputError: ``input.invalid`` (see :func:`attr_digest`; a ``name`` holding U+0000 or
            a lone surrogate too, on both backends alike).
    """
    if "\x00" in name:  # PostgreSQL text cannot hold it: one answer on both backends
        raise error("input.invalid", "a lookup name never contains U+0000", name=name)
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise error("input.invalid", "a lookup name is not valid Unicode text") from None
    return sa.and_(
        attrs.c.name == name,
        attrs.c.value_digest == attr_digest(value),
        attrs.c.value == value,
    )


def with_attr(q: Any, name: str, value: str) -> Any:
    """``q`` (a select of ``artifacts``) narrowed to those with attribute ``name`` = ``value``."""
    return q.join(
        attrs,
        sa.and_(attrs.c.address == artifacts.c.address, attrs.c.kind == artifacts.c.kind),
    ).where(attr_match(name, value))


def _infos(conn: Connection, q: Any) -> list[ArtifactInfo]:
    return [
        ArtifactInfo(
            "blake3:" + r.address,
            r.kind,
            r.contract_version,
            utc_text(r.accepted_at),
            None if r.size is None else int(r.size),
            "check.artifact-without-blob" if r.size is None else None,
        )
        for r in conn.execute(q.order_by(artifacts.c.accepted_at, artifacts.c.address))
    ]


def find_artifacts(
    conn: Connection, name: str, value: str, kind: str | None = None
) -> list[ArtifactInfo]:
    """Artifacts whose lookup attribute ``name`` equals ``value``, oldest first.

    Args:
        conn: a read connection.
        name: a lookup attribute (docs/kinds.md), e.g. ``manifest_ref``.
        value: the attribute's value, compared exactly.
        kind: only artifacts of this kind (not checked against the registry here).
    """
    q = with_attr(info_query(), name, value)
    if kind is not None:
        q = q.where(artifacts.c.kind == kind)
    return _infos(conn, q)


def list_artifacts(
    conn: Connection, kind: str | None = None, attr: tuple[str, str] | None = None
) -> list[ArtifactInfo]:
    """Stored artifacts, oldest first, optionally of one ``kind`` and with one attribute.

    Args:
        conn: a read connection.
        kind: only artifacts of this kind.
        attr: ``(name, value)``: only artifacts with this lookup attribute.
    """
    q = info_query()
    if kind is not None:
        q = q.where(artifacts.c.kind == kind)
    if attr is not None:
        q = with_attr(q, *attr)
    return _infos(conn, q)


def all_warnings(conn: Connection) -> list[dict[str, str]]:
    """Every warning recorded with an accepted artifact, by address then code.

    Returns:
        Dicts with ``address`` (``blake3:...``), ``code``, ``message`` and ``pointer``.
    """
    rows = conn.execute(sa.select(warnings).order_by(warnings.c.address, warnings.c.code)).all()
    return [
        {
            "address": "blake3:" + r.address,
            "code": r.code,
            "message": r.message,
            "pointer": r.pointer,
        }
        for r in rows
    ]
