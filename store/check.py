"""The whole-store check (``evstore check``): every fault, one by one, over a full run.

Two passes over one consistent snapshot:

1. every blob is re-hashed (size and BLAKE3, then the SHA-256 index);
2. every artifact is re-read: its blob exists, its bytes parse and are canonical
   (stored bytes == canonical(parse(stored bytes)), RFC 8785), and its kind's ``audit``
   (default: ``check``) finds no contract or binding fault.

Faults are yielded as found (never stopping at the first); each carries
``details["address"]``. Progress goes through a callback, so callers choose how to show it.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterator
from typing import Any

import sqlalchemy as sa

from . import blobs as _blobs
from .canonical import dumps, loads
from .db import Database
from .errors import CorruptionError, EvstoreError, Faults, error
from .kinds import get_handler
from .refs import parse_ref
from .settings import SETTINGS, load_settings
from .tables import artifacts, blobs
from .txn import Txn

__all__ = ["Progress", "check_store"]

#: ``progress(done, total)``: objects (blobs plus artifacts) checked so far, and in all.
Progress = Callable[[int, int], None]


def check_store(
    db: Database, progress: Progress | None = None, warnings: list[dict[str, str]] | None = None
) -> Iterator[EvstoreError]:
    """Re-verify the whole store at ``db``, yielding every fault.

    Args:
        db: the store's database.
        progress: called as ``progress(done, total)`` after each object.
        warnings: when given, the kinds' audit warnings are appended to it (dicts with
            ``address``, ``code``, ``message``, ``pointer``), e.g. a stored ``json`` document
            a contract kind now claims (docs/kinds.md#a-forced-json-kind): not faults.

    Yields:
        CorruptionError (``corruption.*``, ``check.*``), NotFound
        (``check.artifact-without-blob``), StoreStateError (``store.kind-unavailable``: an
        artifact whose kind handler cannot be loaded) and the kinds' own errors, each with
        ``details["address"]`` (and ``details["kind"]`` for a kind's fault).

    Raises:
        StoreStateError: the database cannot be read (``store.*``).
    """
    with db.read() as conn:
        try:
            settings = load_settings(conn)
        except CorruptionError as err:  # report it, check the rest with the defaults
            yield err
            settings = {name: st.default for name, st in SETTINGS.items()}
        txn = Txn(conn, settings, "audit")
        total = conn.execute(sa.select(sa.func.count()).select_from(blobs)).scalar_one()
        total += conn.execute(sa.select(sa.func.count()).select_from(artifacts)).scalar_one()
        done = 0
        rows = conn.execute(
            sa.select(blobs.c.address, blobs.c.sha256, blobs.c.size, blobs.c.chunk_set).order_by(
                blobs.c.address
            )
        ).all()
        for r in rows:
            fault = _check_blob(conn, r)
            if fault is not None:
                yield fault
            done += 1
            if progress:
                progress(done, total)
        arts = conn.execute(
            sa.select(
                artifacts.c.address,
                artifacts.c.kind,
                artifacts.c.contract_version,
                sa.cast(artifacts.c.accepted_at, sa.String).label("accepted_text"),
            ).order_by(artifacts.c.address, artifacts.c.kind)
        ).all()
        for a in arts:
            done += 1
            bad = _bad_artifact_row(a)
            if bad is not None:
                yield bad
            yield from _audit_one(txn, a.address, a.kind, warnings)
            if progress:
                progress(done, total)


def _check_blob(conn: sa.Connection, r: Any) -> EvstoreError | None:
    """One blob row re-hashed: its fault, or None."""
    try:
        return _blobs.verify_stored(conn, _blobs._row(r))
    except EvstoreError as exc:  # a malformed row: report it and carry on
        return exc


def _audit_one(
    txn: Txn, address: str, kind: str, warnings: list[dict[str, str]] | None = None
) -> Iterator[EvstoreError]:
    """Every fault of the artifact ``kind`` at ``address`` (its blob already re-hashed)."""
    where = "blake3:" + address
    row = _blobs.lookup(txn.conn, parse_ref(where))
    if row is None:
        yield error(
            "check.artifact-without-blob", f"artifact {kind} {where} has no blob", address=where
        )
        return
    try:
        data = _blobs.read_verified(txn.conn, row)
    except EvstoreError:
        return  # already reported by the blob pass
    try:
        value = loads(data)
    except EvstoreError as err:
        err.details["address"] = where
        yield err
        return
    if dumps(value) != data:
        yield error(
            "check.not-canonical",
            f"{kind} {where} is not in canonical form",
            rule="RFC 8785",
            address=where,
        )
    try:
        handler = get_handler(kind)
    except EvstoreError as err:  # kind.unknown, store.kind-unavailable
        err.details["address"] = where
        yield err
        return
    txn.faults = []
    audit = getattr(handler, "audit", None)
    try:
        faults = Faults.of(audit(value, address, txn) if audit else handler.check(value, txn))
        found = faults.errors
        if warnings is not None:
            warnings.extend(
                {"address": where, "code": w.code, "message": w.message, "pointer": w.pointer}
                for w in faults.warnings
            )
    except EvstoreError as err:
        found = [err]
    for f in [*found, *txn.faults]:
        f.details.setdefault("address", where)
        f.details.setdefault("kind", kind)
        yield f
    txn.faults = []


def _bad_artifact_row(a: Any) -> EvstoreError | None:
    """A malformed artifacts row (edited outside evstore), or None."""
    ok = isinstance(a.kind, str) and isinstance(a.contract_version, str)
    try:
        _dt.datetime.fromisoformat(str(a.accepted_text))
    except ValueError:
        ok = False
    if ok:
        return None
    return error(
        "corruption.row",
        f"the artifact row of {a.kind!r} blake3:{a.address} is malformed",
        address="blake3:" + str(a.address),
    )
