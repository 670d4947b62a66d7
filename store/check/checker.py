"""The whole-store check (``evstore check``): every fault, one by one, over a full run.

Two passes over one consistent snapshot:

1. every blob is re-hashed (size and BLAKE3, then the SHA-256 index);
2. every artifact is re-read: its blob exists, its bytes parse and are canonical
   (stored bytes == canonical(parse(stored bytes)), RFC 8785), and its kind's ``audit``
   (default: ``check``) finds no contract or binding fault.

Both passes read in keyset-paged batches (:data:`BATCH` rows per page, ordered by address):
one query per page of index rows and one for the page's inline bytes; a chunked blob's chunks
come in one streamed query. No query runs per small object (the kinds' own audits may read
what their rules need).

Options (:class:`CheckOptions`) narrow a run: a seeded sample of addresses, artifact kinds,
and ``since`` (skip objects verified at or after a time). Every object a run finds without
fault is recorded in the ``verified`` table (revision 0004) after each page, in its own short
transaction, so an interrupted run keeps what it verified and ``since`` resumes it. On a store
that cannot be written (read-only, or its disk full: ``store.full``) the check still runs to
its verdict and records nothing more (:attr:`CheckRun.not_recorded` says why).

Faults are yielded as found (never stopping at the first); each carries
``details["address"]``. Progress goes through a callback, so callers choose how to show it.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import sqlalchemy as sa
from blake3 import blake3 as _blake3

from ..core.canonical import dumps, loads
from ..core.digests import digest_bytes
from ..core.errors import CorruptionError, EvstoreError, Faults, StoreStateError, error
from ..core.settings import SETTINGS
from ..db.settings import load_settings
from ..db.tables import artifacts, blobs, verified
from ..db.transactions import Transactions
from ..objects import blobs as _blobs
from ..objects.kinds import check_kind, get_handler
from ..objects.leases import sql_time
from ..objects.txn import Txn
from .backends import orphan_faults
from .log_queue import check_log_queue
from .log_tree import check_log
from .reading import SQLITE_IN, chunks, fetch, inline_bytes, range_bytes, stream_digest

__all__ = [
    "BATCH",
    "BLOB_KIND",
    "CheckOptions",
    "CheckRun",
    "Progress",
    "UNWRITABLE",
    "audit_bytes",
    "check_store",
    "write_verified",
]

#: ``progress(done, total)``: objects (blobs plus artifacts) checked so far, and in all.
Progress = Callable[[int, int], None]

#: Rows per page of each pass.
BATCH = 2000
#: The ``kinds`` value that selects the blob pass (every blob re-hashed, no artifact pass).
BLOB_KIND = "blob"
_GROUP_BYTES = 32 << 20  # inline bytes held at once
_PARALLEL_MIN = 64 << 10  # smaller inputs hash faster in one thread than through a pool
_SINCE_REL = re.compile(r"^(\d+)\s*([smhdw])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


@dataclass(frozen=True)
class CheckOptions:
    """What a check covers and how it runs (the defaults check everything, as before).

    Attributes:
        sample: check only this fraction (0 < sample <= 1) of the addresses, chosen by a
            hash of (seed, address): the same seed and store give the same sample, and a blob
            and its artifacts are sampled together.
        seed: the sample's seed (an integer).
        kinds: only artifacts of these kinds (and the blobs holding them); :data:`BLOB_KIND`
            selects every blob. Empty: everything.
        since: an aware datetime, ``"24h"``-style age (s, m, h, d, w), or ISO 8601 text (UTC
            when no offset): skip objects a check verified at or after that time.
        jobs: threads hashing a page's inline blobs (BLAKE3 and SHA-256 release the GIL on
            large inputs); 1 hashes in the calling thread.
        record: record verified objects (``verified`` table); False checks without writing.
        batch: rows per page.
    """

    sample: float | None = None
    seed: int = 0
    kinds: tuple[str, ...] = ()
    since: _dt.datetime | str | None = None
    jobs: int = 1
    record: bool = True
    batch: int = BATCH


@dataclass
class _Plan:
    """Validated options: what each pass reads."""

    sample: float | None
    seed: bytes
    blob_pass: bool
    blob_kinds: tuple[str, ...]  # blob pass limited to the blobs of these kinds (empty: all)
    art_pass: bool
    art_kinds: tuple[str, ...]
    since: _dt.datetime | None
    jobs: int
    batch: int
    faulted: set[str] = field(default_factory=set)  # blob addresses found faulty this run
    #: the kinds' audit warnings (not faults), as dicts like ``Store.recorded_warnings``
    warnings: list[dict[str, str]] = field(default_factory=list)


def parse_since(value: _dt.datetime | str) -> _dt.datetime:
    """``since`` as an aware UTC datetime.

    Args:
        value: an aware datetime; ``"<n>s|m|h|d|w"`` (that long ago); or ISO 8601 text
            (``2026-12-01``, ``2026-12-01T02:00:00+01:00``; UTC when no offset is given).

    Raises:
        InputError: ``input.invalid`` for anything else.
    """
    try:
        if isinstance(value, _dt.datetime):
            when = value
        elif isinstance(value, str) and (m := _SINCE_REL.match(value.strip())):
            age = _dt.timedelta(seconds=int(m.group(1)) * _UNIT_S[m.group(2)])
            return _dt.datetime.now(_dt.UTC) - age
        else:
            when = _dt.datetime.fromisoformat(str(value).strip())
        if when.tzinfo is None:
            when = when.replace(tzinfo=_dt.UTC)
        return when.astimezone(_dt.UTC)
    except (ValueError, OverflowError):  # not a time, or beyond the calendar (year 1..9999)
        raise error(
            "input.invalid",
            f"since {value!r} is not a time: use ISO 8601 (2026-12-01T02:00:00Z) or an age"
            " such as 24h, 7d (within years 1 to 9999)",
            option="since",
        ) from None


def _plan(options: CheckOptions) -> _Plan:
    """Validate ``options`` (``input.invalid``, ``kind.unknown``) into a :class:`_Plan`."""
    o = options
    if o.sample is not None and (
        isinstance(o.sample, bool)
        or not isinstance(o.sample, (int, float))
        or not 0 < o.sample <= 1
    ):
        raise error("input.invalid", f"sample {o.sample!r} is not in (0, 1]", option="sample")
    for name, value in (("seed", o.seed), ("jobs", o.jobs), ("batch", o.batch)):
        if isinstance(value, bool) or not isinstance(value, int) or (name != "seed" and value < 1):
            raise error("input.invalid", f"{name} {value!r} is not a valid count", option=name)
    kinds = tuple(dict.fromkeys(o.kinds))
    for k in kinds:
        if k != BLOB_KIND:
            check_kind(k)
    art_kinds = tuple(k for k in kinds if k != BLOB_KIND)
    return _Plan(
        sample=None if o.sample is None or o.sample >= 1 else float(o.sample),
        seed=str(o.seed).encode(),
        blob_pass=True,
        blob_kinds=() if not kinds or BLOB_KIND in kinds else art_kinds,
        art_pass=not kinds or bool(art_kinds),
        art_kinds=art_kinds,
        since=None if o.since is None else parse_since(o.since),
        jobs=o.jobs,
        batch=o.batch,
    )


def _sampled(plan: _Plan, address: Any) -> bool:
    if plan.sample is None:
        return True
    h = hashlib.blake2b(plan.seed + b"\0" + str(address).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") < plan.sample * 2.0**64


class CheckRun(Iterator[EvstoreError]):
    """The faults of one check, as an iterator; counters fill in as it runs.

    Attributes:
        checked: objects (blobs plus artifacts) read and verified.
        recorded: objects recorded as verified.
        not_recorded: why nothing more is recorded (read-only, disk full, record=False) or None.
        warnings: the kinds' audit warnings found so far (not faults), dicts with
            ``address``, ``code``, ``message``, ``pointer``.
    """

    def __init__(self, db: Transactions, progress: Progress | None, options: CheckOptions) -> None:
        self.checked = 0
        self.recorded = 0
        self.not_recorded: str | None = None if options.record else "record=False"
        self._db = db
        self._progress = progress
        self._plan = _plan(options)
        self.warnings = self._plan.warnings
        self._done = 0
        self._total = 0
        self._gen = self._run()

    def __iter__(self) -> CheckRun:
        return self

    def __next__(self) -> EvstoreError:
        return next(self._gen)

    def close(self) -> None:
        """Stop the run early; objects verified so far stay recorded."""
        self._gen.close()

    # -- the run --------------------------------------------------------------------------
    def _run(self) -> Generator[EvstoreError, None, None]:
        plan = self._plan
        with self._db.read() as conn:
            try:
                settings = load_settings(conn)
            except CorruptionError as err:  # report it, check the rest with the defaults
                yield err
                settings = {name: st.default for name, st in SETTINGS.items()}
            txn = Txn(conn, settings, "audit")
            self._total = _count(conn, _blob_query(plan, sa.func.count()))
            if plan.art_pass:
                self._total += _count(conn, _art_query(plan, sa.func.count()))
            pool = ThreadPoolExecutor(plan.jobs) if plan.jobs > 1 else None
            try:
                yield from self._pages(conn, txn, pool)
            finally:
                if pool is not None:
                    pool.shutdown(cancel_futures=True)
            if plan.sample is None and plan.since is None and plan.art_pass and not plan.art_kinds:
                yield from check_log(conn)  # the whole log, in the same snapshot
                yield from check_log_queue(conn)  # and the entries not in the tree yet
                yield from orphan_faults(conn)  # objects in a blob backend no row names

    def _pages(self, conn: sa.Connection, txn: Txn, pool: ThreadPoolExecutor | None) -> Any:
        plan = self._plan
        last: tuple[str, ...] = ("",)
        whole = plan.sample is None and plan.since is None and not plan.blob_kinds
        page: Sequence[Any]
        picked: Sequence[Any]
        while True:
            if whole and pool is None:  # every blob, one thread: rows and small bytes at once
                page, results = _whole_page(conn, plan, last[0])
                picked = page
            else:
                page = conn.execute(_blob_query(plan).where(blobs.c.address > last[0])).all()
                picked = page if plan.sample is None else [r for r in page if _sampled(plan, r[0])]
                results = _blob_results(conn, picked, pool, whole) if page else []
            if not page:
                break
            last = (page[-1][0],)
            plan.faulted.update(str(r[0]) for r, f in zip(picked, results, strict=True) if f)
            yield from self._report(page, picked, results, "")
        last = ("", "")
        while plan.art_pass:
            cond = sa.tuple_(artifacts.c.address, artifacts.c.kind) > sa.tuple_(*last)
            page = conn.execute(_art_query(plan).where(cond)).all()
            if not page:
                break
            last = (page[-1].address, page[-1].kind)
            picked = [a for a in page if _sampled(plan, a.address)]
            results = _art_results(txn, picked, plan)
            yield from self._report(page, picked, results, None)

    def _report(
        self, page: Sequence[Any], picked: Sequence[Any], results: Any, kind: str | None
    ) -> Iterator[EvstoreError]:
        """Yield a page's faults object by object; record the clean ones (also when stopped)."""
        clean: list[tuple[str, str]] = []
        progress, done = self._progress, self._done
        try:
            if not any(results):  # the common page: every object verified, nothing to yield
                clean = [(r[0], r[1] if kind is None else kind) for r in picked]
                self.checked += len(picked)
                self._done += len(picked)
                for n in range(done + 1, done + len(picked) + 1) if progress else ():
                    progress(n, self._total)  # type: ignore[misc]
            else:
                for row, faults in zip(picked, results, strict=True):
                    if faults:
                        yield from faults
                    else:
                        clean.append((row[0], row[1] if kind is None else kind))
                    self.checked += 1
                    self._done += 1
                    if progress:
                        progress(self._done, self._total)
        finally:
            self._record(clean)
        if len(page) > len(picked):
            self._done += len(page) - len(picked)
            if progress:
                progress(self._done, self._total)

    def _record(self, clean: list[tuple[str, str]]) -> None:
        if not clean or self.not_recorded is not None:
            return
        if self._db.read_only:  # opened read-only (?mode=ro, ?immutable=1, an unwritable file)
            self.not_recorded = "the store is opened read-only"
            return
        now = _dt.datetime.now(_dt.UTC)
        try:
            self._db.run_transaction(lambda c: write_verified(c, sorted(clean), now))
        except StoreStateError as err:
            why = UNWRITABLE.get(err.code)
            if why is None:
                raise
            self.not_recorded = f"{why} ({err.message})"  # the run goes on to its verdict
            return
        self.recorded += len(clean)


#: Codes of a store that cannot record a run, and what ``not_recorded`` says then (check
#: and audit).
UNWRITABLE = {"store.read-only": "the store is read-only", "store.full": "the store is full"}


def check_store(
    db: Transactions,
    progress: Progress | None = None,
    options: CheckOptions | None = None,
    warnings: list[dict[str, str]] | None = None,
) -> CheckRun:
    """Re-verify the store at ``db`` (all of it by default), yielding every fault.

    Args:
        db: the store's database.
        progress: called as ``progress(done, total)`` after each object (objects left out by
            ``sample`` count as done, a page at a time).
        options: what to check and how (:class:`CheckOptions`); None checks everything.
        warnings: when given, the kinds' audit warnings (not faults) are appended to it as the
            run goes (dicts with ``address``, ``code``, ``message``, ``pointer``); the run's
            ``warnings`` attribute is that list.

    Returns:
        A :class:`CheckRun`: iterate it for the faults. It yields CorruptionError
        (``corruption.*``, ``check.*``), NotFound (``check.artifact-without-blob``),
        StoreStateError (``store.kind-unavailable``: an artifact whose kind handler cannot be
        loaded) and the kinds' own errors, each with ``details["address"]`` (and
        ``details["kind"]`` for a kind's fault).

    Raises:
        InputError: ``input.invalid`` (a bad option value), ``kind.unknown``; raised here,
            before anything is read.
        StoreStateError: the database cannot be read (``store.*``), while iterating.
    """
    run = CheckRun(db, progress, options or CheckOptions())
    if warnings is not None:
        run.warnings = run._plan.warnings = warnings
    return run


# -- queries -------------------------------------------------------------------------------
def _count(conn: sa.Connection, query: sa.Select[Any]) -> int:
    return int(conn.execute(sa.select(sa.func.count()).select_from(query.subquery())).scalar_one())


def _blob_query(plan: _Plan, count: Any = None) -> sa.Select[Any]:
    """One page of blob index rows (or, with ``count``, the rows the pass covers)."""
    cols = (blobs.c.address, blobs.c.sha256, blobs.c.size, blobs.c.chunk_set)
    q = sa.select(blobs.c.address) if count is not None else sa.select(*cols)
    if plan.blob_kinds:
        q = q.where(
            blobs.c.address.in_(
                sa.select(artifacts.c.address).where(artifacts.c.kind.in_(plan.blob_kinds))
            )
        )
    if plan.since is not None:
        v = verified.alias("v")
        q = q.outerjoin(v, sa.and_(v.c.address == blobs.c.address, v.c.kind == "")).where(
            sa.or_(v.c.verified_at.is_(None), v.c.verified_at < _since_param(plan.since))
        )
    if count is not None:
        return q
    return q.order_by(blobs.c.address).limit(plan.batch)


def _art_query(plan: _Plan, count: Any = None) -> sa.Select[Any]:
    """One page of artifact rows (or, with ``count``, the rows the pass covers)."""
    cols = (
        artifacts.c.address,
        artifacts.c.kind,
        artifacts.c.contract_version,
        sa.cast(artifacts.c.accepted_at, sa.String).label("accepted_text"),
    )
    q = sa.select(artifacts.c.address) if count is not None else sa.select(*cols)
    if plan.art_kinds:
        q = q.where(artifacts.c.kind.in_(plan.art_kinds))
    if plan.since is not None:
        v = verified.alias("v")
        q = q.outerjoin(
            v, sa.and_(v.c.address == artifacts.c.address, v.c.kind == artifacts.c.kind)
        ).where(sa.or_(v.c.verified_at.is_(None), v.c.verified_at < _since_param(plan.since)))
    if count is not None:
        return q
    return q.order_by(artifacts.c.address, artifacts.c.kind).limit(plan.batch)


def _since_param(since: _dt.datetime) -> Any:
    # SQLite keeps DateTime as naive text (UTC here); PostgreSQL compares timestamptz.
    return sa.bindparam("since", since, type_=verified.c.verified_at.type)


def write_verified(conn: sa.Connection, rows: list[tuple[str, str]], now: _dt.datetime) -> None:
    """Upsert ``(address, kind)`` rows with ``verified_at = now`` (one statement per page)."""
    upsert = " ON CONFLICT (address, kind) DO UPDATE SET verified_at = excluded.verified_at"
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(
            "INSERT INTO verified (address, kind, verified_at) SELECT a, k, %s"
            " FROM unnest(%b::text[], %b::text[]) AS t(a, k)" + upsert,
            (now, [r[0] for r in rows], [r[1] for r in rows]),
        )
        return
    stamp = sql_time(conn, now)  # SQLite's stored spelling, as every other write keeps it
    conn.exec_driver_sql(
        "INSERT INTO verified (address, kind, verified_at) VALUES (?, ?, ?)" + upsert,
        [(a, k, stamp) for a, k in rows],
    )


def _blob_results(
    conn: sa.Connection, picked: Sequence[Any], pool: ThreadPoolExecutor | None, whole: bool
) -> list[list[EvstoreError]]:
    """The faults of each picked blob row (re-hashed), in order ([] for a clean blob).

    Inline bytes are fetched in groups of at most :data:`_GROUP_BYTES` (so memory stays
    bounded whatever the page holds); chunked blobs are streamed one at a time. ``whole``:
    the page is every blob of its address range, so a group is read as one range scan.
    """
    out: list[list[EvstoreError]] = [[] for _ in picked]
    inline: list[int] = []
    for i, r in enumerate(picked):
        if r[3] is None and type(r[2]) is int:  # the common row: inline, well-formed size
            inline.append(i)
            continue
        err: EvstoreError | None
        try:
            row = _blobs.row_from(r)
            if row.chunk_set is None:
                inline.append(i)
                continue
            err = _blobs.compare_digest(row, stream_digest(conn, row))
        except EvstoreError as exc:  # a malformed row: report it and carry on
            err = exc
        if err is not None:
            out[i].append(err)
    limit = 5000 if whole or conn.dialect.name != "sqlite" else SQLITE_IN
    group: list[int] = []
    size = 0
    for n, i in enumerate(inline):
        group.append(i)
        size += max(int(picked[i][2]), 0)
        if len(group) >= limit or size >= _GROUP_BYTES or n == len(inline) - 1:
            _hash_group(conn, picked, group, out, pool, whole)
            group, size = [], 0
    return out


class _IndexRow(NamedTuple):
    """A blob's index row as read by :func:`_whole_page` (the columns ``_blobs.row_from`` reads)."""

    address: Any
    sha256: Any
    size: Any
    chunk_set: Any


def _whole_page(conn: sa.Connection, plan: _Plan, after: str) -> tuple[list[Any], list[Any]]:
    """The next page of every blob's index row and its faults: ``(rows, faults per row)``.

    A row is ``(address, sha256, size, chunk_set, data or None)``; its faults are a
    sequence, empty when the blob verified.

    One query reads the rows with the bytes of their small inline blobs (at most
    ``_GROUP_BYTES / batch`` bytes each, judged by the stored length, not the size column a
    tamperer could change), so a page holds at most ``_GROUP_BYTES`` of data; those blobs are
    re-hashed right here. Larger, chunked or malformed rows take :func:`_blob_results`.
    """
    small = max(_GROUP_BYTES // plan.batch, 1)
    if conn.dialect.name == "postgresql":
        mark, length = "%s", "octet_length(data)"
    else:
        mark, length = "?", "length(data)"
    sql = (
        "SELECT address, sha256, size, chunk_set,"
        f" CASE WHEN chunk_set IS NULL AND {length} <= {small} THEN data END"
        f" FROM blobs WHERE address > {mark} ORDER BY address LIMIT {mark}"
    )
    fetched = fetch(conn, sql, (after, plan.batch))
    out: list[Any] = [()] * len(fetched)  # () for a clean row: no list per blob
    rest: list[int] = []
    b3, sha256 = _blake3, hashlib.sha256
    for i, r in enumerate(fetched):
        data = r[4]
        if type(data) is bytes and type(r[2]) is int:
            if (
                len(data) == r[2]
                and b3(data).hexdigest() == r[0]
                and sha256(data).hexdigest() == r[1]
            ):
                continue  # the common row, verified
            try:
                err = _verify_inline((i, _IndexRow(*r[:4]), data))[1]
            except EvstoreError as exc:  # a malformed row: report it and carry on
                err = exc
            out[i] = [] if err is None else [err]
        else:
            rest.append(i)
    if rest:
        slow = _blob_results(conn, [_IndexRow(*fetched[i][:4]) for i in rest], None, False)
        for i, faults in zip(rest, slow, strict=True):
            out[i] = faults
    return fetched, out


def _hash_group(
    conn: sa.Connection,
    picked: Sequence[Any],
    group: list[int],
    out: list[list[EvstoreError]],
    pool: ThreadPoolExecutor | None,
    whole: bool,
) -> None:
    """Fetch one group's inline bytes (one query) and re-hash them into ``out``."""
    if whole:
        stored = range_bytes(conn, picked[group[0]][0], picked[group[-1]][0])
    else:
        stored = inline_bytes(conn, [picked[i][0] for i in group])
    work = []
    for i in group:
        r = picked[i]
        value = stored.get(r[0])
        if type(value) is not bytes:
            try:
                value = b"" if value is None else _blobs.as_bytes(value, r[0])
            except EvstoreError as exc:
                out[i].append(exc)
                continue
        work.append((i, r, value))
    big = pool is not None and any(len(w[2]) >= _PARALLEL_MIN for w in work)
    results = pool.map(_verify_inline, work) if big and pool else map(_verify_inline, work)
    for i, err in results:
        if err is not None:
            out[i].append(err)


def _verify_inline(item: tuple[int, Any, bytes]) -> tuple[int, EvstoreError | None]:
    """Size, BLAKE3 and SHA-256 of one inline blob against its row: (index, fault or None)."""
    i, r, data = item
    if (
        len(data) == r[2]
        and len(data) <= (1 << 20)
        and _blake3(data).hexdigest() == r[0]
        and hashlib.sha256(data).hexdigest() == r[1]
    ):
        return i, None
    return i, _blobs.compare_digest(_blobs.row_from(r), digest_bytes(data))


def _art_results(txn: Txn, picked: Sequence[Any], plan: _Plan) -> list[list[EvstoreError]]:
    """The faults of each picked artifact row, in order.

    The page's inline bytes are read in groups of at most :data:`_GROUP_BYTES` (one query
    each), so memory stays bounded however large the documents are.
    """
    conn = txn.conn
    index = _blob_index(conn, sorted({str(a.address) for a in picked}), plan)
    out: list[list[EvstoreError]] = []
    start = 0
    while start < len(picked):
        end, size, want = start, 0, []
        while end < len(picked) and (end == start or size < _GROUP_BYTES):
            row = index.get(str(picked[end].address), (None, False))[0]
            if row is not None and row.chunk_set is None:
                want.append(row.digest.blake3)
                size += max(row.digest.size, 0)
            end += 1
        stored = inline_bytes(conn, sorted(set(want)))
        for a in picked[start:end]:
            found: list[EvstoreError] = []
            bad = _bad_artifact_row(a)
            if bad is not None:
                found.append(bad)
            data = _artifact_bytes(conn, str(a.address), a.kind, index, stored, plan, found)
            if data is not None:
                found.extend(audit_bytes(txn, str(a.address), a.kind, data, plan.warnings))
            out.append(found)
        start = end
    return out


def _blob_index(
    conn: sa.Connection, addresses: Sequence[str], plan: _Plan
) -> dict[str, tuple[_blobs.BlobRow | None, bool]]:
    """``address -> (blob row or None when malformed, checked by this run's blob pass)``."""
    cols = [blobs.c.address, blobs.c.sha256, blobs.c.size, blobs.c.chunk_set]
    if plan.since is not None:
        v = verified.alias("v")
        q = sa.select(
            *cols,
            sa.case(
                (sa.or_(v.c.verified_at.is_(None), v.c.verified_at < _since_param(plan.since)), 1),
                else_=0,
            ).label("due"),
        ).outerjoin(v, sa.and_(v.c.address == blobs.c.address, v.c.kind == ""))
    else:
        q = sa.select(*cols, sa.literal(1).label("due"))
    index: dict[str, tuple[_blobs.BlobRow | None, bool]] = {}
    step = SQLITE_IN if conn.dialect.name == "sqlite" else max(len(addresses), 1)
    for i in range(0, len(addresses), step):
        for r in conn.execute(q.where(blobs.c.address.in_(addresses[i : i + step]))):
            try:
                row: _blobs.BlobRow | None = _blobs.row_from(r)
            except EvstoreError:
                row = None  # reported by the blob pass
            index[r.address] = (row, bool(r.due))
    return index


def _artifact_bytes(
    conn: sa.Connection,
    address: str,
    kind: str,
    index: dict[str, tuple[_blobs.BlobRow | None, bool]],
    stored: dict[str, Any],
    plan: _Plan,
    found: list[EvstoreError],
) -> bytes | None:
    """The artifact's verified bytes, or None (a fault appended, or already reported)."""
    where = "blake3:" + address
    if address not in index:
        found.append(
            error(
                "check.artifact-without-blob",
                f"artifact {kind} {where} has no blob",
                address=where,
            )
        )
        return None
    row, due = index[address]
    if row is None or address in plan.faulted:
        return None  # reported by the blob pass
    err: EvstoreError | None
    try:
        if row.chunk_set is not None:
            data = b"".join(chunks(conn, row))
        else:
            value = stored.get(address)
            data = b"" if value is None else _blobs.as_bytes(value, address)
        # The blob pass re-hashed these bytes in this snapshot when it covered them.
        err = None if due else _blobs.compare_digest(row, digest_bytes(data))
    except EvstoreError as exc:
        err = exc
    if err is None:
        return data
    plan.faulted.add(address)
    if not due:  # the blob pass skipped it (verified since): report it here
        found.append(err)
    return None


def audit_bytes(
    txn: Txn, address: str, kind: str, data: bytes, warnings: list[dict[str, str]]
) -> Iterator[EvstoreError]:
    """Every fault of the artifact ``kind`` at ``address`` given its verified bytes.

    The audit's warnings (e.g. a stored ``json`` document a contract kind now claims,
    docs/kinds.md#a-forced-json-kind) are appended to ``warnings``.
    """
    where = "blake3:" + address
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
    try:
        faults = Faults.of(handler.audit(value, address, txn))
        found = faults.errors
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
