"""Blob bytes outside the database: written before their row, deleted after it (issue 25).

A store whose ``blobs.backend`` setting names a backend (store/backends/) keeps the bytes of
each blob larger than ``blobs.inline_max`` there, under the key its address gives. The
database stays the only judge of what exists (docs/design.md, "Blob bytes outside the
database"):

* **Put**: inside the put's transaction, any pending deletion of the key is cancelled first
  (on PostgreSQL this waits for a deletion worker holding it), then the object is uploaded
  (whatever is there), its size checked, and only then is the row inserted. A committed
  row therefore always has its bytes; a crash before the commit leaves an object no row
  names, which ``check`` reports after the grace period (``gc`` never deletes it unqueued).
* **Delete**: the collector deletes rows; for each external row it queues the key in
  ``blob_deletions`` (not before now + ``blobs.deletion_delay_seconds``) in the same
  transaction. :func:`drain_deletions` takes due keys (``FOR UPDATE SKIP LOCKED`` on
  PostgreSQL; SQLite's single writer serialises it), deletes the object only when no row
  needs it (:func:`_still_needed`), and drops the queue row, in one transaction per batch.
* **Move** (``evstore blobs move``, store/retention/moves.py): the same rule as a put for
  the copy it makes, then the row repointed and the old copy queued.

A row with bytes outside the database has ``chunk_set = -1`` (:data:`EXTERNAL`) and
``stored_in`` = the backend's spec, so every read path that serves inline rows directly
leaves it to the streaming path (:func:`evstore.objects.blobs.iter_stored`).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..backends.base import BlobBackend, blob_key
from ..backends.spec import INLINE, open_backend, parse_spec, same_place
from ..core.digests import Digest
from ..core.errors import error
from ..core.settings import setting
from ..db.settings import load_settings
from ..db.tables import blob_deletions, blobs
from ..db.transactions import Transactions

__all__ = [
    "EXTERNAL",
    "Target",
    "backends_in_use",
    "cancel_deletions",
    "drain_deletions",
    "find_orphans",
    "iter_external",
    "make_backend_dir",
    "probe_backend",
    "queue_deletions",
    "target",
    "upload",
]

#: ``chunk_set`` of a row whose bytes are in a blob backend (``stored_in`` names it).
EXTERNAL = -1
#: Longest delay or grace honoured (about 100 years): a larger setting means "never".
_MAX_SECONDS = 100 * 365 * 86400


@dataclass(frozen=True)
class Target:
    """Where a transaction's new large blobs go: the ``backend``, its ``spec`` text, and
    ``inline_max`` (bytes: blobs up to this size stay in the database).
    """  # noqa: D205

    backend: BlobBackend
    spec: str
    inline_max: int


def target(conn: Connection) -> Target | None:
    """The store's blob backend for this transaction, or None (``blobs.backend`` inline).

    Raises:
        InputError: ``blobs.spec`` (a stored spec that does not parse, or no S3 client).
    """
    settings = load_settings(conn)
    spec = setting(settings, "blobs.backend")
    if spec == INLINE:
        return None
    backend = open_backend(spec, timeout=float(setting(settings, "blobs.timeout_seconds")))
    return Target(backend, spec, int(setting(settings, "blobs.inline_max")))


def upload(
    conn: Connection,
    where: Target,
    dg: Digest,
    path: str | None,
    data: bytes | None,
) -> None:
    """Make the object of ``dg`` present in ``where`` before its row is written.

    Cancels a pending deletion of the key first (in ``conn``'s transaction), uploads the
    local file ``path`` (or ``data``) whatever is there already (an object left by a failed
    put may be damaged), and checks its size after.

    Raises:
        StoreStateError: ``blobs.unreachable`` (retryable), ``blobs.backend`` (the object
            has another size after the upload).
    """
    key = blob_key(dg.blake3)
    # Every queued deletion of this key in this place, whatever spelling queued it; a copy
    # queued in another place (before a move) stays queued.
    cancel_deletions(conn, where.spec, key)
    # Always uploaded: an object already there may be damaged, or be an orphan a collector
    # is about to delete; a fresh upload also makes it young again.
    if path is not None:
        where.backend.put_file(key, path)
    else:
        assert data is not None
        where.backend.put_bytes(key, data)
    size = where.backend.stat(key)
    if size != dg.size:
        raise error(
            "blobs.backend",
            f"the blob backend {where.spec} holds {size} bytes under {key} after an "
            f"upload of {dg.size}; nothing was stored",
            backend=where.spec,
        )


def make_backend_dir(text: str) -> list[Path]:
    """For a ``file:`` spec, create its directory; the folders this call made, outermost first.

    Only ``evstore init --blobs`` creates a backend directory; every other use of a missing
    one is ``blobs.unreachable`` (store/backends/file.py).

    Raises:
        InputError: ``blobs.spec``. StoreStateError: ``blobs.backend`` (it cannot be made).
    """
    spec = parse_spec(text)
    if spec.kind != "file":
        return []
    made: list[Path] = []
    for folder in reversed([Path(spec.path), *Path(spec.path).parents]):
        if folder.exists():
            continue
        try:
            folder.mkdir()
        except OSError as exc:
            for m in reversed(made):
                with contextlib.suppress(OSError):
                    m.rmdir()
            raise error(
                "blobs.backend",
                f"cannot create the blob backend directory {folder}: {exc.strerror}",
                backend=spec.text,
            ) from None
        made.append(folder)
    return made


def probe_backend(text: str) -> str:
    """The normal form of a ``blobs.backend`` spec, once its backend answered a stat.

    Raises:
        InputError: ``blobs.spec``. StoreStateError: ``blobs.unreachable``, ``blobs.backend``.
    """
    spec = parse_spec(text)
    if spec.kind != INLINE:
        open_backend(spec.text).stat(blob_key("0" * 64))
    return spec.text


def iter_external(spec: str, address: str, conn: Connection | None = None) -> Iterator[bytes]:
    """The stored bytes of ``address`` in the backend ``spec``, streamed (not verified).

    ``conn``: the reading transaction, whose ``blobs.timeout_seconds`` applies (None: the
    setting's default).

    Raises:
        CorruptionError: ``corruption.blob-missing``. StoreStateError: ``blobs.*``.
    """
    timeout = None
    if conn is not None:
        timeout = float(setting(load_settings(conn), "blobs.timeout_seconds"))
    return open_backend(spec, timeout=timeout).iter_chunks(blob_key(address))


def queue_deletions(conn: Connection, doomed: list[tuple[str, str]]) -> None:
    """Queue the bytes of deleted rows ``[(address, spec)]`` for deletion after the delay.

    Runs in the transaction that deletes the rows; a key already queued keeps its time.
    """
    if not doomed:
        return
    delay = int(setting(load_settings(conn), "blobs.deletion_delay_seconds"))
    when = _dt.datetime.now(_dt.UTC) + _dt.timedelta(seconds=min(max(delay, 0), _MAX_SECONDS))
    rows = [{"backend": spec, "key": blob_key(a), "not_before": when} for a, spec in doomed]
    # Row by row through SQLAlchemy (not rows.insert_ignore, whose driver-level path would
    # write the time in the SQLite driver's spelling, not the column type's).
    for row in rows:
        queued = conn.execute(
            sa.select(blob_deletions.c.key).where(
                blob_deletions.c.backend == row["backend"], blob_deletions.c.key == row["key"]
            )
        ).first()
        if queued is None:  # a key already queued keeps its time
            conn.execute(sa.insert(blob_deletions), row)


def backends_in_use(conn: Connection) -> list[str]:
    """Every backend spec the store names: rows' ``stored_in``, queued deletions, the setting."""
    q = sa.select(blobs.c.stored_in).where(blobs.c.stored_in.is_not(None)).distinct()
    specs = {r[0] for r in conn.execute(q)}  # ix_blobs_stored_in: no scan of inline rows
    specs |= {r[0] for r in conn.execute(sa.select(blob_deletions.c.backend).distinct())}
    current = setting(load_settings(conn), "blobs.backend")
    if current != INLINE:
        specs.add(parse_spec(current).text)
    return sorted(specs)


def find_orphans(
    conn: Connection, *, now: _dt.datetime | None = None
) -> list[tuple[str, str, int]]:
    """``(spec, key, size)`` of each backend object that no row names and no queued
    deletion holds, older than ``blobs.orphan_grace_seconds`` (an upload whose row has not
    committed yet is younger). Lists every backend the store names, whole.

    Raises:
        StoreStateError: ``blobs.unreachable`` / ``blobs.backend``.
    """  # noqa: D205
    grace = int(setting(load_settings(conn), "blobs.orphan_grace_seconds"))
    cutoff = (now or _dt.datetime.now(_dt.UTC)) - _dt.timedelta(
        seconds=min(max(grace, 0), _MAX_SECONDS)
    )
    out: list[tuple[str, str, int]] = []
    for spec in backends_in_use(conn):
        listed = [x for x in open_backend(spec).list("blake3") if x.modified < cutoff]
        for i in range(0, len(listed), 500):
            part = listed[i : i + 500]
            addresses = [x.key.rsplit("/", 1)[-1] for x in part]
            named = {
                r[0]
                for r in conn.execute(
                    sa.select(blobs.c.address).where(blobs.c.address.in_(addresses))
                )
            }
            queued = {
                r[0]
                for r in conn.execute(
                    sa.select(blob_deletions.c.key).where(
                        blob_deletions.c.backend == spec,
                        blob_deletions.c.key.in_([x.key for x in part]),
                    )
                )
            }
            out += [
                (spec, x.key, x.size)
                for x, a in zip(part, addresses, strict=True)
                if a not in named and x.key not in queued
            ]
    return out


def _still_needed(conn: Connection, spec: str, key: str) -> bool:
    """Whether the object ``key`` in ``spec`` may hold the bytes of a row (so is kept).

    The row of the address keeps it when it names a backend that may be the same place as
    ``spec`` (:func:`~evstore.backends.spec.same_place`: two spellings of one directory or
    bucket never delete a live row's bytes). A row whose bytes are in the database, or in a
    backend that is certainly another place (``blobs move`` put them there), does not.
    """
    address = key.rsplit("/", 1)[-1]
    row = conn.execute(sa.select(blobs.c.stored_in).where(blobs.c.address == address)).first()
    if row is None or row.stored_in is None:
        return False
    return same_place(spec, row.stored_in) is not False


def cancel_deletions(conn: Connection, spec: str, key: str) -> None:
    """Cancel the queued deletions of ``key`` in any backend that may be the place ``spec``.

    On PostgreSQL this waits for a drain holding one of them; after it returns no drain
    can delete the object until this transaction ends, so a stat after it is the truth.
    """
    for (queued,) in conn.execute(
        sa.select(blob_deletions.c.backend).where(blob_deletions.c.key == key)
    ).all():
        if same_place(queued, spec) is not False:
            conn.execute(
                sa.delete(blob_deletions).where(
                    blob_deletions.c.backend == queued, blob_deletions.c.key == key
                )
            )


def drain_deletions(
    tx: Transactions, *, batch: int = 100, now: _dt.datetime | None = None
) -> tuple[int, int]:
    """Delete the due queued objects no row needs.

    One transaction per ``batch`` keys: the due rows are locked (PostgreSQL: ``FOR UPDATE
    SKIP LOCKED``, so several workers share the queue), each object is deleted from its
    backend only when no blob row names it there (a put since then keeps it), and the
    queue rows are removed. A row keeps its object only where it names that place: after
    ``blobs move`` the old copy goes (:func:`_still_needed`). A failing backend leaves its
    rows queued for the next run.

    Returns:
        ``(queue rows settled, objects deleted from a backend)``; the difference is what a
        row still needed (kept).

    Raises:
        StoreStateError: ``blobs.unreachable`` / ``blobs.backend`` from a backend (the
            batch's transaction rolls back; nothing is lost).
    """
    settled = deleted = 0

    def work(conn: Connection) -> tuple[int, int]:
        at = now or _dt.datetime.now(_dt.UTC)
        q = (
            sa.select(blob_deletions.c.backend, blob_deletions.c.key)
            .where(blob_deletions.c.not_before <= at)
            .order_by(blob_deletions.c.not_before, blob_deletions.c.key)
            .limit(batch)
        )
        if conn.dialect.name == "postgresql":
            q = q.with_for_update(skip_locked=True)
        due = conn.execute(q).all()
        gone = 0
        for spec, key in due:
            if not _still_needed(conn, spec, key):
                open_backend(spec).delete(key)
                gone += 1
            conn.execute(
                sa.delete(blob_deletions).where(
                    blob_deletions.c.backend == spec, blob_deletions.c.key == key
                )
            )
        return len(due), gone

    while True:
        n, gone = tx.run_transaction(work)
        settled += n
        deleted += gone
        if n < batch:
            return settled, deleted
