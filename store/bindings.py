"""First-write-wins bindings: bind a key to a value once; another value later is a conflict.

Contract modules decide what is bound (a revision checksum to a document, a fragment identity
to its scope, a ref to its digest, a package id to its address); this module only makes the
binding atomic. A binding is ``(namespace, key) -> value``; the key is indexed by its SHA-256,
so keys of any length work on both backends.

Atomicity: the row is inserted with ``ON CONFLICT DO NOTHING RETURNING`` (the insert itself
says whether this call made the binding) and a key it did not write is read back inside the
same transaction. Under concurrent ingests from several processes exactly one value lands
(SQLite serialises writers with ``BEGIN IMMEDIATE``; PostgreSQL's unique index makes the
second inserter wait for the first to commit), and every loser sees the winner's value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .blobs import insert_returning
from .digests import sha256_hex
from .tables import bindings

__all__ = ["BindResult", "bind", "bind_many", "lookup_binding"]


@dataclass(frozen=True, slots=True)
class BindResult:
    """The outcome of :func:`bind`.

    Attributes:
        value: the value the key is bound to now (the existing one on a conflict).
        new: True when this call made the binding.
        conflict: True when the key was already bound to another value.
    """

    value: str
    new: bool
    conflict: bool


def lookup_binding(conn: Connection, namespace: str, key: str) -> str | None:
    """The value bound to ``(namespace, key)``, or None."""
    return conn.execute(
        sa.select(bindings.c.value).where(
            bindings.c.namespace == namespace, bindings.c.key_digest == sha256_hex(key.encode())
        )
    ).scalar()


def bind(conn: Connection, namespace: str, key: str, value: str, origin: str = "") -> BindResult:
    """Bind ``key`` to ``value`` in ``namespace`` unless it is already bound.

    Never raises on a conflict: the caller turns ``conflict`` into its contract's
    :class:`~evstore.errors.BindingConflict` code, and the transaction rolls back.

    Args:
        conn: the open write transaction.
        namespace: e.g. ``"fragment.scope"`` (at most 64 characters).
        key: the bound key, any text.
        value: the value, any text.
        origin: the address (64 hex) of the artifact whose write makes the binding.
    """
    return bind_many(conn, namespace, [(key, value)], origin)[0]


def _lookup_many(conn: Connection, namespace: str, digests: Sequence[str]) -> dict[str, str]:
    """key_digest -> value for the bound keys among ``digests``.

    One query per 500 keys; one array parameter on PostgreSQL.
    """
    found: dict[str, str] = {}
    if not digests:
        return found
    if conn.dialect.name == "postgresql":
        rows = conn.exec_driver_sql(
            "SELECT key_digest, value FROM bindings WHERE key_digest = ANY(%s) AND namespace = %s",
            (list(digests), namespace),
        )
        return {r.key_digest: r.value for r in rows}
    for i in range(0, len(digests), 500):
        part = tuple(digests[i : i + 500])
        sql = (
            "SELECT key_digest, value FROM bindings WHERE namespace = ? AND key_digest IN ("
            + ",".join("?" * len(part))
            + ")"
        )
        for r in conn.exec_driver_sql(sql, (namespace, *part)):
            found[r.key_digest] = r.value
    return found


def bind_many(
    conn: Connection, namespace: str, pairs: Sequence[tuple[str, str]], origin: str = ""
) -> list[BindResult]:
    """:func:`bind` for many ``(key, value)`` pairs in one lookup and one insert.

    Pairs are bound in order, so a key repeated within ``pairs`` with another value conflicts
    with its first occurrence (first write wins inside the batch too).

    Returns:
        One :class:`BindResult` per pair, in order.
    """
    digests = [sha256_hex(k.encode()) for k, _ in pairs]
    existing = _lookup_many(conn, namespace, list(dict.fromkeys(digests)))
    pending: dict[str, dict[str, str]] = {}
    for (key, value), dg in zip(pairs, digests, strict=True):
        if dg not in existing and dg not in pending:
            pending[dg] = {
                "namespace": namespace,
                "key_digest": dg,
                "key": key,
                "value": value,
                "origin": origin,
            }
    written: set[str] = set()
    if pending:
        # "new" is what this insert wrote (RETURNING), never what a SELECT did not see.
        written = {k[0] for k in insert_returning(conn, bindings, list(pending.values()))}
        # Read back the keys a concurrent writer won.
        lost = [dg for dg in pending if dg not in written]
        existing.update({dg: pending[dg]["value"] for dg in written})
        existing.update(_lookup_many(conn, namespace, lost))
    results: list[BindResult] = []
    for (_key, value), dg in zip(pairs, digests, strict=True):
        landed = existing[dg]
        new = dg in written and landed == value
        written.discard(dg)  # only the first occurrence within pairs made it
        results.append(BindResult(landed, new, landed != value))
    return results
