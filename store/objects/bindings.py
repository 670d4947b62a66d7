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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.digests import sha256_hex
from ..db.engine import driver_rows
from ..db.tables import bindings
from .rows import insert_returning

__all__ = ["BindResult", "BindingBatch", "bind", "bind_many", "lookup_binding"]


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
    :class:`~evstore.core.errors.BindingConflict` code, and the transaction rolls back.

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
        rows = driver_rows(
            conn,
            "SELECT key_digest, value FROM bindings WHERE key_digest = ANY(%b) AND namespace = %s",
            (list(digests), namespace),
        )
        return dict(rows)
    for i in range(0, len(digests), 500):
        part = tuple(digests[i : i + 500])
        sql = (
            "SELECT key_digest, value FROM bindings WHERE namespace = ? AND key_digest IN ("
            + ",".join("?" * len(part))
            + ")"
        )
        found.update(driver_rows(conn, sql, (namespace, *part)))
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


class BindingBatch:
    """The bindings of one namespace for a whole command: one lookup, one insert.

    :func:`bind_many` for a run of documents (issue 16): :meth:`prefetch` reads the stored
    values of every key the run will bind in one statement (one array parameter on
    PostgreSQL, lists of 500 on SQLite); :meth:`stage` then decides each document's pairs in
    memory, in document order and pair order (first write wins across the run, as one
    :func:`bind_many` per document would); :meth:`flush` inserts every new binding with one
    ``INSERT ... ON CONFLICT DO NOTHING RETURNING`` and reads back, in one statement, the keys
    a concurrent writer bound first, so a lost race is still a conflict.

    An instance lives inside one transaction (the command's batch); nothing it read is used
    by another transaction.
    """

    def __init__(self, conn: Connection, namespace: str) -> None:
        self.conn, self.namespace = conn, namespace
        self._bound: dict[str, str] = {}  # key digest -> stored or staged value
        self._looked: set[str] = set()
        self._pending: dict[str, tuple[dict[str, str], Any]] = {}  # key digest -> (row, tag)

    def prefetch(self, keys: Iterable[str]) -> None:
        """Read the stored values of ``keys`` (text) in one statement per 500 (SQLite) or one."""
        self._lookup([sha256_hex(k.encode()) for k in keys])

    def _lookup(self, digests: Sequence[str]) -> None:
        new = [d for d in dict.fromkeys(digests) if d not in self._looked]
        if new:
            self._bound.update(_lookup_many(self.conn, self.namespace, new))
            self._looked.update(new)

    def stage(self, pairs: Sequence[tuple[str, str]], origin: str, tag: Any) -> list[str | None]:
        """Decide ``(key, value)`` pairs in order; new ones are inserted by :meth:`flush`.

        Args:
            pairs: the document's pairs, in order.
            origin: 64 hex of the artifact whose write makes the new bindings.
            tag: handed back by :meth:`flush` for a pair a concurrent writer won (the caller
                attributes the fault with it).

        Returns:
            Per pair: the value the key is already bound to when it differs from the pair's
            (a conflict), else None.
        """
        digests = [sha256_hex(k.encode()) for k, _ in pairs]
        self._lookup(digests)  # keys not prefetched (none, when the caller prefetched)
        out: list[str | None] = []
        for i, ((key, value), dg) in enumerate(zip(pairs, digests, strict=True)):
            landed = self._bound.get(dg)
            if landed is None:
                self._bound[dg] = value
                row = {
                    "namespace": self.namespace,
                    "key_digest": dg,
                    "key": key,
                    "value": value,
                    "origin": origin,
                }
                self._pending[dg] = (row, (tag, i))
                out.append(None)
            else:
                out.append(landed if landed != value else None)
        return out

    def flush(self) -> list[tuple[Any, int, str]]:
        """Insert the staged bindings.

        Returns:
            ``(tag, pair index, bound value)`` of each staged pair whose key a concurrent
            writer bound to another value first, in staging order.
        """
        if not self._pending:
            return []
        rows = [row for row, _ in self._pending.values()]
        written = {k[0] for k in insert_returning(self.conn, bindings, rows)}
        lost = [dg for dg in self._pending if dg not in written]
        landed = _lookup_many(self.conn, self.namespace, lost) if lost else {}
        out = []
        for dg in lost:
            row, (tag, index) = self._pending[dg]
            value = landed.get(dg)
            if value is not None and value != row["value"]:
                out.append((tag, index, value))
            if value is not None:
                self._bound[dg] = value
        self._pending.clear()
        return out
