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
  PostgreSQL; SQLite's single writer serialises it), reads the rows of their addresses in
  one statement, deletes the objects no row needs (:func:`_still_needed`) in one bulk
  delete per backend, and drops their queue rows, in one transaction per batch.
* **Move** (``evstore blobs move``, store/retention/moves.py): the same rule as a put for
  the copy it makes, then the row repointed and the old copy queued.

A row with bytes outside the database has ``chunk_set = -1`` (:data:`EXTERNAL`) and
``stored_in`` = the backend's spec, so every read path that serves inline rows directly
leaves it to the streaming path (:func:`evstore.objects.blobs.iter_stored`).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..backends.base import CHUNK, BlobBackend, blob_key
from ..backends.spec import INLINE, open_backend, parse_spec, same_place
from ..core.digests import Digest
from ..core.errors import EvstoreError, error
from ..core.settings import setting
from ..db.settings import load_settings
from ..db.tables import blob_deletions, blobs
from ..db.transactions import Transactions
from .file_sources import FileSource

__all__ = [
    "DRAIN_BATCH",
    "EXTERNAL",
    "Target",
    "UPLOADS_IN_FLIGHT",
    "backends_in_use",
    "cancel_deletions",
    "cancel_deletions_many",
    "drain_deletions",
    "find_orphans",
    "iter_external",
    "make_backend_dir",
    "probe_backend",
    "queue_deletions",
    "target",
    "upload",
    "upload_many",
]

#: ``chunk_set`` of a row whose bytes are in a blob backend (``stored_in`` names it).
EXTERNAL = -1
#: Longest delay or grace honoured (about 100 years): a larger setting means "never".
_MAX_SECONDS = 100 * 365 * 86400
#: Uploads (with their stats) a batch put runs at once (:func:`upload_many`).
UPLOADS_IN_FLIGHT = 12
#: Queue rows a drain takes per transaction, and keys per bulk delete (S3's DeleteObjects
#: takes up to 1,000 keys a request).
DRAIN_BATCH = 1000
#: Keys or addresses per ``IN`` list (SQLite's bound-parameter limit is the tightest).
_IN = 500


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
    path: str | FileSource | None,
    data: bytes | None,
) -> None:
    """Make the object of ``dg`` present in ``where`` before its row is written.

    Cancels a pending deletion of the key first (in ``conn``'s transaction), uploads the
    local file ``path`` (a spool of ours), the :class:`~.file_sources.FileSource` (a
    caller's file, read again and checked) or ``data``, whatever is there already (an
    object left by a failed put may be damaged), and checks its size after.

    Raises:
        StoreStateError: ``blobs.unreachable`` (retryable), ``blobs.backend`` (the object
            has another size after the upload). InputError: ``input.changed`` from a
            FileSource (nothing uploaded).
    """
    upload_many(conn, where, [(dg, path, data)])


def upload_many(
    conn: Connection,
    where: Target,
    entries: Sequence[tuple[Digest, str | FileSource | None, bytes | None]],
) -> None:
    """:func:`upload` of many blobs ``(digest, file or source or None, bytes or None)``, before
    their rows are written: the pending deletions of all their keys cancelled in one go (in
    ``conn``'s transaction, first), then the uploads and their stats run concurrently,
    :data:`UPLOADS_IN_FLIGHT` at a time, in threads that never touch ``conn``. Returns once
    every object is in the backend with its size; on the first failure the uploads not yet
    started are dropped, those running are waited for, and the error is raised (the
    transaction rolls back; objects already uploaded are unreferenced, as after a crash).

    Raises:
        StoreStateError: ``blobs.unreachable`` (retryable), ``blobs.backend`` (an object
            has another size after its upload).
    """  # noqa: D205
    if not entries:
        return
    # Every queued deletion of these keys in this place, whatever spelling queued it; a copy
    # queued in another place (before a move) stays queued.
    cancel_deletions_many(conn, where.spec, [blob_key(dg.blake3) for dg, _, _ in entries])
    if len(entries) == 1:
        _upload_one(where, *entries[0])
        return
    with ThreadPoolExecutor(
        max_workers=min(UPLOADS_IN_FLIGHT, len(entries)), thread_name_prefix="evstore-upload"
    ) as pool:
        futures = [pool.submit(_upload_one, where, *e) for e in entries]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        failed = [f for f in futures if f in done and f.exception() is not None]
        if failed:
            for f in futures:
                f.cancel()  # those not started; the pool's exit waits for the running ones
    if failed:
        raise failed[0].exception()  # type: ignore[misc]


def _upload_one(
    where: Target, dg: Digest, path: str | FileSource | None, data: bytes | None
) -> None:
    """Upload one object (whatever is there already) and check its size after."""
    key = blob_key(dg.blake3)
    # Always uploaded: an object already there may be damaged, or be an orphan a collector
    # is about to delete; a fresh upload also makes it young again.
    if isinstance(path, FileSource):
        where.backend.put_chunks(key, path.pieces())
    elif path is not None:
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


def iter_external(
    spec: str, address: str, conn: Connection | None = None, *, size: int = CHUNK
) -> Iterator[bytes]:
    """The stored bytes of ``address`` in the backend ``spec``, streamed, not verified.

    Chunks are of about ``size`` bytes.

    ``conn``: the reading transaction, whose ``blobs.timeout_seconds`` applies (None: the
    setting's default).

    Raises:
        CorruptionError: ``corruption.blob-missing``. StoreStateError: ``blobs.*``.
    """
    timeout = None
    if conn is not None:
        timeout = float(setting(load_settings(conn), "blobs.timeout_seconds"))
    return open_backend(spec, timeout=timeout).iter_chunks(blob_key(address), size)


def queue_deletions(conn: Connection, doomed: list[tuple[str, str]]) -> None:
    """Queue the bytes of deleted rows ``[(address, spec)]`` for deletion after the delay.

    Runs in the transaction that deletes the rows; a key already queued keeps its time.
    One lookup of the keys already queued and one insert per :data:`_IN` keys of a spec.
    """
    if not doomed:
        return
    delay = int(setting(load_settings(conn), "blobs.deletion_delay_seconds"))
    when = _dt.datetime.now(_dt.UTC) + _dt.timedelta(seconds=min(max(delay, 0), _MAX_SECONDS))
    by_spec: dict[str, list[str]] = {}
    for a, spec in doomed:
        by_spec.setdefault(spec, []).append(blob_key(a))
    for spec, all_keys in by_spec.items():
        keys = sorted(set(all_keys))
        for i in range(0, len(keys), _IN):
            part = keys[i : i + _IN]
            queued = {
                r[0]
                for r in conn.execute(
                    sa.select(blob_deletions.c.key).where(
                        blob_deletions.c.backend == spec, blob_deletions.c.key.in_(part)
                    )
                )
            }
            rows = [
                {"backend": spec, "key": k, "not_before": when} for k in part if k not in queued
            ]
            # Through SQLAlchemy's executemany (not rows.insert_ignore, whose driver-level
            # path would write the time in the SQLite driver's spelling, not the column
            # type's); a key already queued keeps its time.
            if rows:
                conn.execute(sa.insert(blob_deletions), rows)


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


def _rows_places(conn: Connection, addresses: list[str]) -> dict[str, str | None]:
    """``stored_in`` of the blob rows among ``addresses`` (None: bytes in the database);
    an address with no row is absent. One statement per :data:`_IN` addresses.
    """  # noqa: D205
    found: dict[str, str | None] = {}
    for i in range(0, len(addresses), _IN):
        part = addresses[i : i + _IN]
        q = sa.select(blobs.c.address, blobs.c.stored_in).where(blobs.c.address.in_(part))
        found.update({r.address: r.stored_in for r in conn.execute(q)})
    return found


def _still_needed(spec: str, stored_in: str | None, *, row: bool) -> bool:
    """Whether the object of a key in ``spec`` may hold the bytes of its address's row
    (``row``: one exists; ``stored_in``: where it says its bytes are), so is kept.

    The row keeps it when it names a backend that may be the same place as ``spec``
    (:func:`~evstore.backends.spec.same_place`: two spellings of one directory or bucket
    never delete a live row's bytes). A row whose bytes are in the database, or in a
    backend that is certainly another place (``blobs move`` put them there), does not.
    """  # noqa: D205
    if not row or stored_in is None:
        return False
    return same_place(spec, stored_in) is not False


def cancel_deletions(conn: Connection, spec: str, key: str) -> None:
    """Cancel the queued deletions of ``key`` in any backend that may be the place ``spec``.

    On PostgreSQL this waits for a drain holding one of them; after it returns no drain
    can delete the object until this transaction ends, so a stat after it is the truth.
    """
    cancel_deletions_many(conn, spec, [key])


def cancel_deletions_many(conn: Connection, spec: str, keys: list[str]) -> None:
    """:func:`cancel_deletions` of many ``keys``: one lookup per :data:`_IN` keys, and one
    delete per queued place (none when nothing is queued, the common case).
    """  # noqa: D205
    ordered = sorted(set(keys))  # one lock order for every writer
    for i in range(0, len(ordered), _IN):
        part = ordered[i : i + _IN]
        queued = conn.execute(
            sa.select(blob_deletions.c.backend, blob_deletions.c.key).where(
                blob_deletions.c.key.in_(part)
            )
        ).all()
        by_place: dict[str, list[str]] = {}
        for place, key in queued:
            if same_place(place, spec) is not False:
                by_place.setdefault(place, []).append(key)
        for place, gone in sorted(by_place.items()):
            conn.execute(
                sa.delete(blob_deletions).where(
                    blob_deletions.c.backend == place, blob_deletions.c.key.in_(sorted(gone))
                )
            )


def drain_deletions(
    tx: Transactions, *, batch: int = DRAIN_BATCH, now: _dt.datetime | None = None
) -> tuple[int, int]:
    """Delete the due queued objects no row needs.

    One transaction per ``batch`` keys: the due rows are locked (PostgreSQL: ``FOR UPDATE
    SKIP LOCKED``, so several workers share the queue), the rows of their addresses are
    read in one statement inside that transaction (a put since the queueing keeps its
    object, :func:`_still_needed`), each backend is sent the keys no row needs there in one
    bulk delete (:meth:`~evstore.backends.base.BlobBackend.delete_many`), and the queue
    rows of the keys it deleted are removed. A row keeps its object only where it names
    that place: after ``blobs move`` the old copy goes.

    A backend that fails leaves its rows queued for the next run: a key the backend could
    not delete keeps its queue row, and so does every key of a backend that cannot be
    reached; the batch's other keys are settled and committed, then the first such error
    is raised (no further batch is taken).

    Returns:
        ``(queue rows settled, objects deleted from a backend)``; the difference is what a
        row still needed (kept).

    Raises:
        StoreStateError: ``blobs.unreachable`` / ``blobs.backend`` (InputError
            ``blobs.key`` for a malformed queued key) from a backend, after the keys the
            batch did settle were committed.
    """
    settled = deleted = 0

    def work(conn: Connection) -> tuple[int, int, int, EvstoreError | None]:
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
        if not due:
            return 0, 0, 0, None
        # The recheck, inside the transaction that holds the queue rows: which keys a row
        # still names, and where.
        places = _rows_places(conn, sorted({k.rsplit("/", 1)[-1] for _, k in due}))
        by_spec: dict[str, list[str]] = {}
        for spec, key in due:
            by_spec.setdefault(spec, []).append(key)
        done = gone = 0
        first: EvstoreError | None = None
        for spec, keys in sorted(by_spec.items()):
            doomed = []
            for key in keys:
                address = key.rsplit("/", 1)[-1]
                if not _still_needed(spec, places.get(address), row=address in places):
                    doomed.append(key)
            failed: dict[str, EvstoreError] = {}
            if doomed:
                try:
                    failed = open_backend(spec).delete_many(doomed)
                except EvstoreError as err:  # unreachable, or cannot be opened: all stay
                    first = first or err
                    continue
            if failed:
                first = first or next(iter(failed.values()))
            settle = [k for k in keys if k not in failed]
            for i in range(0, len(settle), _IN):
                conn.execute(
                    sa.delete(blob_deletions).where(
                        blob_deletions.c.backend == spec,
                        blob_deletions.c.key.in_(settle[i : i + _IN]),
                    )
                )
            done += len(settle)
            gone += len(doomed) - len(failed)
        return len(due), done, gone, first

    while True:
        n, done, gone, first = tx.run_transaction(work)
        settled += done
        deleted += gone
        if first is not None:
            raise first
        if n < batch:
            return settled, deleted
