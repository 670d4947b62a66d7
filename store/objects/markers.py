"""The store marker: which store a blob backend's directory or bucket prefix belongs to.

Two stores must never share one place: each store's collector deletes an object when no
row *of its own* needs it, so a store would delete the bytes the other one still serves.
evstore therefore claims a place for one store: the first time a store names a backend
(``evstore init --blobs``, ``evstore config blobs.backend``, ``evstore blobs move --to``) it
writes the marker object :data:`MARKER_KEY` (``{"evstore": "store-marker-v1", "store":
ID}``) at the backend's root, with a create-only write (of two stores racing, one wins);
a backend whose marker names another store is refused with ``blobs.shared``, never
overridden (sharing bytes between stores is not supported: give each its own prefix).
``evstore check`` reports a marker of another store in a backend the store names
(``check.blob-marker``). The marker is outside ``blake3/``, so it is never taken for a blob.

The store's id is a random 128-bit hex made the first time it is needed, kept in the
``settings`` table under :data:`ID_ROW` (no declared setting has that name, so
``evstore config`` neither shows nor changes it).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..backends.base import BlobBackend
from ..backends.spec import INLINE, open_backend, parse_spec
from ..core.errors import CorruptionError, EvstoreError, error
from ..db.tables import settings
from .external import probe_backend

__all__ = [
    "ID_ROW",
    "MARKER_KEY",
    "Writes",
    "claim_backend",
    "marker_faults",
    "read_marker",
    "store_id",
]

T = TypeVar("T")


class Writes(Protocol):
    """What the claim needs of a store's database: one retried write transaction."""

    def run_transaction(self, work: Callable[[Connection], T], *, serialize: bool = False) -> T:
        """``work(conn)`` in one write transaction."""
        ...


#: The key of the marker object at a backend's root.
MARKER_KEY = "evstore-store.json"
#: The ``settings`` row holding the store's id.
ID_ROW = "_store.id"
#: What :func:`read_marker` returns for a marker that is not one evstore writes.
UNREADABLE = "(an unreadable marker)"


def _stored_id(conn: Connection) -> str | None:
    raw = conn.execute(sa.select(settings.c.value).where(settings.c.name == ID_ROW)).scalar()
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, str) or not value:
        raise error("corruption.setting", f"the store id row {ID_ROW} is damaged", name=ID_ROW)
    return value


def store_id(db: Writes) -> str:
    """This store's id (32 hex), made and committed on first use (its own transaction)."""

    def work(conn: Connection) -> str:
        found = _stored_id(conn)
        if found is not None:
            return found
        made = uuid.uuid4().hex
        conn.execute(sa.insert(settings), {"name": ID_ROW, "value": json.dumps(made)})
        return made

    return db.run_transaction(work)


def read_marker(backend: BlobBackend) -> str | None:
    """The store id the backend's marker names, None without a marker, or
    :data:`UNREADABLE` for one that is not evstore's (counted as another store's).
    """  # noqa: D205
    try:
        raw = backend.get_range(MARKER_KEY, 0, 1 << 16)
    except CorruptionError as err:
        if err.code == "corruption.blob-missing":
            return None
        raise
    try:
        doc: Any = json.loads(raw)
    except ValueError:
        return UNREADABLE
    if not isinstance(doc, dict) or not isinstance(doc.get("store"), str) or not doc["store"]:
        return UNREADABLE
    return str(doc["store"])


def _shared(spec: str, other: str, ours: str | None) -> EvstoreError:
    whose = "a new store" if ours is None else f"store {ours}"
    return error(
        "blobs.shared",
        f"the blob backend {spec} belongs to store {other} (its marker {MARKER_KEY}); "
        f"{whose} may not share it: each store's gc would delete the other's bytes. Give "
        "this store its own directory or prefix",
        backend=spec,
        marker=other,
    )


def claim_backend(db: Writes | None, text: str) -> str:
    """Check that the backend ``text`` answers and is this store's; its spec's normal form.

    With ``db`` (an existing store) a backend without a marker is claimed: the marker is
    written (create-only) naming the store. With None (a store ``init`` has not created
    yet) nothing is written, and any marker refuses it. ``inline`` needs no claim.

    Raises:
        InputError: ``blobs.spec``. StoreStateError: ``blobs.shared`` (another store's
            marker), ``blobs.unreachable``, ``blobs.backend``, ``blobs.credentials``.
    """
    spec = probe_backend(text)
    if spec == INLINE:
        return spec
    backend = open_backend(spec)
    found = read_marker(backend)
    if db is None:
        if found is not None:
            raise _shared(spec, found, None)
        return spec
    ours = store_id(db)
    if found is None:
        doc = json.dumps({"evstore": "store-marker-v1", "store": ours}).encode()
        if backend.create_bytes(MARKER_KEY, doc):
            return spec
        found = read_marker(backend)  # another store won the race
    if found != ours:
        raise _shared(spec, str(found), ours)
    return spec


def marker_faults(conn: Connection, specs: list[str]) -> list[EvstoreError]:
    """``check.blob-marker`` for each backend in ``specs`` whose marker names another store
    (a backend without a marker is not a fault: stores made before markers have none).
    """  # noqa: D205
    ours = _stored_id(conn)
    out: list[EvstoreError] = []
    for spec in specs:
        if parse_spec(spec).kind == INLINE:
            continue
        found = read_marker(open_backend(spec))
        if found is not None and found != ours:
            out.append(
                error(
                    "check.blob-marker",
                    f"the blob backend {spec} holds the marker of store {found}, not of this "
                    f"store ({ours or 'no id yet'}): two stores share it, and each one's gc "
                    "deletes bytes the other still needs",
                    backend=spec,
                    marker=found,
                    store=ours,
                )
            )
    return out
