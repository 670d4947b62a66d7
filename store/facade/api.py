"""The public entry object: :class:`Store`, returned by :func:`open`, and the schema commands.

A Store owns one database (SQLite file or PostgreSQL URL) and the transaction boundary: one
call that writes is one transaction, so ``ingest([a, b, c])`` stores all or nothing and a
rejected call leaves the store exactly as it was (rows and bytes).

This module is a facade: each method is one call into the module that does the work
(ingest.py, check.py, blobs.py, settings.py). Namespaced accessors hang off it (``store.
fragments``, ``.manifests``, ``.packages``, ``.contexts``, ``.runs``: their contract's store
module; ``.retention``: retention.py; ``.log``: the tamper-evident log, log.py). Opening a
store reads its schema revision (one SQL statement; Alembic only for init and migrate).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple, overload

import sqlalchemy as sa

from ..check.checker import CheckOptions, CheckRun, Progress, check_store
from ..core.canonical import loads
from ..core.digests import Digest
from ..core.digests import digest_bytes as digest_from
from ..core.errors import error
from ..core.refs import parse_ref, parse_refs
from ..core.times import utc_text
from ..db.engine import Database, database_errors
from ..db.settings import load_settings
from ..db.transactions import LiveTransactions, Transactions
from ..objects import blobs as _blobs
from ..objects.artifacts import (
    ArtifactInfo,
    IngestReport,
    all_warnings,
    artifact_kinds,
    find_artifacts,
    list_artifacts,
    warnings_of,
)
from ..objects.blob_batches import put_expecting, rereadable
from ..objects.blob_reads import BlobRead, has_verified, read_batches, resolve
from ..objects.external import EXTERNAL, make_backend_dir
from ..objects.kinds import check_kind, lookup_value
from ..objects.listing import iter_artifacts, iter_blobs
from ..objects.markers import claim_backend
from ..objects.staged import Staged
from ..objects.txn import Txn
from .admin import TokenOps, read_config, write_config
from .ingest import (
    as_documents,
    ingest_documents,
    validate_documents,
)
from .puts import put_many as put_many_in

if TYPE_CHECKING:  # the namespaces' types; each is imported on first use (start-up cost)
    from ..contracts.contexts.store import ContextOps
    from ..contracts.fragments.store import FragmentOps
    from ..contracts.manifests.store import ManifestOps
    from ..contracts.packages.store import PackageOps
    from ..contracts.runs.store import RunOps
    from ..log.ops import LogOps
    from ..retention.ops import RetentionOps

__all__ = ["Store", "init", "migrate", "open"]


class _RawRow(NamedTuple):  # a tuple: built on every point read (bench/core.py part d)
    address: str
    sha256: str
    size: Any
    chunk_set: Any


_POINT_SQL = "SELECT address, sha256, size, chunk_set, data FROM blobs WHERE address = "
_POINT = {"sqlite": _POINT_SQL + "?", "postgresql": _POINT_SQL + "%s"}


def open(url: str, *, create: bool = False) -> Store:
    """Open the store at ``url``.

    Args:
        url: a SQLAlchemy URL (``sqlite:///evstore.db``, ``postgresql://postgres@127.0.0.1/test``)
            or a plain path to a SQLite file.
        create: create and migrate the store when it does not exist yet (``init``, ``put`` and
            the ingest commands do this; nothing else creates a store).

    Raises:
        StoreStateError: ``store.missing`` (no store and ``create`` is False),
            ``store.schema-behind`` (run ``evstore migrate``), ``store.schema-ahead``,
            ``store.url``, ``store.unreachable``.
    """
    return Store(url, create=create)


def init(url: str, *, blobs: str | None = None) -> dict[str, Any]:
    """Create the store at ``url`` if missing, at the latest schema (``evstore init``).

    Args:
        url: a SQLAlchemy URL or a SQLite path.
        blobs: a blob backend spec for ``blobs.backend`` (``inline``, ``file:DIR``,
            ``s3://BUCKET/PREFIX``), checked (and its backend asked for a stat) before
            anything is created.

    Returns:
        ``{"url": display URL, "created": bool, "schema": revision}``, and ``"blobs"`` (the
        spec's normal form) when ``blobs`` was given.

    Raises:
        StoreStateError: ``store.schema-behind`` (run :func:`migrate`), ``store.schema-ahead``,
            ``store.url``, ``store.unreachable``, ``blobs.unreachable``.
        InputError: ``blobs.spec``.
    """
    made = make_backend_dir(blobs) if blobs is not None else []
    try:
        db = Database(url)
        try:
            existed = db.schema_state().initialised
            spec = None if blobs is None else claim_backend(db if existed else None, blobs)
        finally:
            db.dispose()
        with Store(url, create=True) as store:
            out = {"url": store.url, "created": not existed}
            out["schema"] = store.db.schema_state().current
            if spec is not None:
                out["blobs"] = store.set_config("blobs.backend", spec)
            return out
    except BaseException:
        for folder in reversed(made):  # a refused init leaves no folder it made
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def migrate(url: str) -> dict[str, Any]:
    """Upgrade an existing store's schema to this evstore's (``evstore migrate``).

    Returns:
        ``{"url": display URL, "from": revision before, "to": revision after}``.

    Raises:
        StoreStateError: ``store.missing``, ``store.schema-ahead``, ``store.unreachable``.
    """
    db = Database(url)
    try:
        if not db.schema_state().initialised:
            raise error(
                "store.missing",
                f"no evstore store at {db.display_url}; create one with `evstore init`",
            )
        before, after = db.migrate()
    finally:
        db.dispose()
    return {"url": db.display_url, "from": before, "to": after}


class Store:
    """A content-addressed evidence store. Use as a context manager, or call :meth:`close`.

    Every method raises RuntimeError once the store is closed.
    """

    def __init__(self, url: str, *, create: bool = False, check_schema: bool = True) -> None:
        self.db = Database(url)
        #: True when this call created the store (``create=True`` on a missing store).
        self.created = False
        try:
            if create and not self.db.schema_state().initialised:
                self.db.migrate()
                self.created = True
            if check_schema:
                self.db.require_current()
        except BaseException:
            self.db.dispose()
            raise
        self._closed = False

    # -- lifecycle ------------------------------------------------------------------------
    def close(self) -> None:
        """Release the database connections (the store refuses every call afterwards)."""
        self.db.dispose()
        self._closed = True

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        """The store URL with any password hidden."""
        return self.db.display_url

    @property
    def path(self) -> Path | None:
        """The SQLite store file, or None on PostgreSQL."""
        return self.db.sqlite_path

    def _live(self) -> None:
        if self._closed:
            raise RuntimeError("this Store is closed")

    @property
    def transactions(self) -> Transactions:
        """The narrow database interface services take (store/db/transactions.py).

        Raises:
            RuntimeError: on a closed store (as every method; each call checks again).
        """
        self._live()
        return LiveTransactions(self.db, self._live)

    def transaction(self, work: Callable[[Txn], Any], *, mode: str = "ingest", **kw: Any) -> Any:
        """Run ``work(txn)`` in one write transaction (contract modules' entry point).

        Args:
            work: called with a :class:`~evstore.objects.txn.Txn`; may be called again on
            contention.
            mode: ``"ingest"`` commits; ``"validate"`` reads one snapshot and writes
                nothing, returns ``(result, faults)``.
            kw: ``options``, ``supplied`` (and ``poll``) for the Txn.

        A validate takes no write lock (issue 23): a read snapshot plus a
        :class:`~evstore.objects.staged.Staged` overlay of what its documents would add.
        """
        self._live()
        if mode == "validate":
            with self.db.read() as conn:
                txn = Txn(conn, load_settings(conn), "validate", staged=Staged(), **kw)
                return work(txn), txn.faults

        def run(conn: sa.Connection) -> Any:
            txn = Txn(conn, load_settings(conn), mode, **kw)  # type: ignore[arg-type]
            return work(txn)

        # An ingest writes rows statement by statement in document order: on PostgreSQL
        # concurrent ingests of overlapping documents would deadlock, so they queue.
        return self.db.run_transaction(run, serialize=True)

    @contextlib.contextmanager
    def reading(self) -> Iterator[Txn]:
        """A read-only (audit mode) :class:`Txn` over one consistent snapshot."""
        self._live()
        with self.db.read() as conn:
            yield Txn(conn, load_settings(conn), "audit")

    # -- blobs ----------------------------------------------------------------------------
    def put(self, data: bytes | BinaryIO, *, expect: str | None = None) -> _blobs.PutResult:
        """Store bytes (``bytes``) or a binary stream (read in 1 MiB chunks, any size).

        A transaction retried on contention reads a seekable stream again from where it
        stood at the call; a stream that cannot seek is read once, and contention then
        ends in ``store.busy`` with nothing written (never the rest of the stream).

        Args:
            data: the bytes, or a binary stream read to its end.
            expect: a content ref (any accepted form) the bytes must hash to; checked
                inside the transaction against what is about to commit.

        Returns:
            :class:`~evstore.objects.blobs.PutResult`: the :class:`~evstore.core.digests.Digest` and
            whether the bytes were new.

        Raises:
            InputError: ``put.digest-mismatch`` (``expect`` not met; nothing stored),
                ``ref.syntax``, ``input.invalid`` (``data`` neither bytes nor a stream).
                StoreStateError: ``store.busy`` as above; store errors.
        """
        self._live()
        wanted = parse_ref(expect) if expect is not None else None
        if not isinstance(data, (bytes, bytearray, memoryview)) and not hasattr(data, "read"):
            raise error(
                "input.invalid", f"put takes bytes or a binary stream, not a {type(data).__name__}"
            )

        if isinstance(data, (bytes, bytearray, memoryview)):
            raw = bytes(data)
            return put_expecting(
                self.transactions, lambda c: _blobs.put_bytes(c, raw), wanted, expect
            )
        stream = rereadable(data)
        put = lambda c: _blobs.put_stream(c, stream())  # noqa: E731
        return put_expecting(self.transactions, put, wanted, expect)

    @overload
    def put_many(
        self,
        items: Iterable[bytes | os.PathLike[str] | BinaryIO],
        *,
        batch: int | None = None,
        on_batch: Callable[[int, int], None] | None = None,
        progress: Callable[[int], None] | None = None,
        results: None = None,
    ) -> list[_blobs.PutResult]: ...

    @overload
    def put_many(
        self,
        items: Iterable[bytes | os.PathLike[str] | BinaryIO],
        *,
        batch: int | None = None,
        on_batch: Callable[[int, int], None] | None = None,
        progress: Callable[[int], None] | None = None,
        results: Callable[[_blobs.PutResult], object],
    ) -> int: ...

    def put_many(
        self,
        items: Iterable[bytes | os.PathLike[str] | BinaryIO],
        *,
        batch: int | None = None,
        on_batch: Callable[[int, int], None] | None = None,
        progress: Callable[[int], None] | None = None,
        results: Callable[[_blobs.PutResult], object] | None = None,
    ) -> list[_blobs.PutResult] | int:
        """Store many blobs: one transaction (all or nothing), or all-or-nothing batches.

        Args:
            items: any iterable (a generator works), read lazily: byte strings, paths
                (``pathlib.Path``: a file read when its turn comes; files over 8 MiB are
                streamed in 1 MiB chunks) or binary streams (streamed). Memory holds one
                chunk of :data:`PUT_CHUNK` items (or 64 MiB), not all.
            batch: None: one transaction. N: one transaction per N items; a failing batch
                leaves the earlier ones committed and the error says so.
            on_batch: called as ``on_batch(batches committed, items committed)``.
            progress: called as ``progress(items done)`` after each chunk written (counting
                committed batches; for a progress display).
            results: a sink: called as ``results(put_result)`` for each item, in order,
                after the transaction that stored it committed (with ``batch``: after each
                batch, before ``on_batch``), instead of returning a list. The results wait
                for the commit in a temporary file (73 bytes an item), so memory does not
                grow with the number of items (issue 28). What the sink raises propagates;
                the items it was not called for are stored all the same.

        Returns:
            One :class:`~evstore.objects.blobs.PutResult` per item, in order; with
            ``results``, the number of items stored.

        Raises:
            InputError: ``input.unreadable`` (a path that cannot be read), ``input.invalid``
                (an item of another type, or ``batch`` < 1); store errors. With ``batch``,
                ``details.committed_batches`` / ``details.committed_items`` say what stayed.
        """
        self._live()
        return put_many_in(self.db, items, batch, on_batch, progress, results)

    def _resolve(self, conn: sa.Connection, ref: str) -> _blobs.BlobRow:
        return resolve(conn, ref)

    def get(self, ref: str) -> bytes:
        """The exact stored bytes a content ref names, verified before they are returned.

        Args:
            ref: a content ref in one of the four accepted forms (evstore.core.refs).

        Raises:
            RefSyntaxError: ``ref.syntax``. NotFound: ``not-found.blob``.
            CorruptionError: size or BLAKE3 mismatch; no bytes are returned.
        """
        self._live()
        parsed = parse_ref(ref)
        if parsed.algorithm == "blake3":
            data = self._get_inline(parsed.hex)
            if data is not None:
                return data
        with self.db.read() as conn:
            return _blobs.read_verified(conn, self._resolve(conn, ref))

    def _get_inline(self, address: str) -> bytes | None:
        """Point lookup of an inline blob by address, verified exactly as every read is.

        One statement outside any explicit transaction (:meth:`Database.point_row`: this
        thread's own connection on SQLite, a pooled one on PostgreSQL). None sends the
        caller to the general path (chunked blob, missing blob).

        Database errors (those :func:`evstore.db.engine.classify` understands) also answer None:
        the general path meets them again inside the error boundary, which maps them to
        their ``store.*`` code. The connection involved is closed, never reused.
        """
        self.db.check_identity()
        try:
            r = self.db.point_row(_POINT[self.db.backend], (address,))
        except database_errors():
            return None  # the general path reports the error
        if r is None or r[3] is not None:
            return None
        row = _blobs.row_from(_RawRow(r[0], r[1], r[2], r[3]))
        data = b"" if r[4] is None else _blobs.as_bytes(r[4], address)
        # Size, BLAKE3 and the recorded SHA-256, as every read path checks them (a tampered
        # SHA-256 column is refused here as by `get` on the general path and by the CLI).
        err = _blobs.compare_digest(row, digest_from(data))
        if err is not None:
            raise err
        return data

    @contextlib.contextmanager
    def open_blob(
        self, ref: str, *, verify_first: bool = True
    ) -> Iterator[tuple[Digest, Iterator[bytes]]]:
        """Stream a blob: ``with store.open_blob(ref) as (digest, chunks): ...``.

        ``verify_first`` True (default): the whole blob is verified before the first chunk
        (two reads). False: one read, chunks as read; CorruptionError after the last chunk on
        a mismatch, so the caller MUST discard what it got (``get -o`` renames a temporary
        file only once the iterator ends). Memory: one chunk (1 MiB). Raises as :meth:`get`.
        """
        self._live()
        with self.db.read() as conn:
            row = self._resolve(conn, ref)
            if verify_first:
                yield row.digest, _blobs.iter_verified(conn, row)
            else:
                yield row.digest, _blobs.iter_checked(conn, row)

    def stat(self, ref: str, *, verify: bool = False) -> dict[str, Any]:
        """Facts about a stored blob: its digest forms, size in bytes, the kinds it is stored as.

        ``verify`` re-hashes the bytes first (``stat --verify``: a tampered index row is
        reported); by default the recorded size and digests are read without touching the
        bytes (``"verified": false``). Raises as :meth:`get` (CorruptionError only with verify).
        """
        self._live()
        with self.db.read() as conn:
            row = self._resolve(conn, ref)
            if verify:
                err = _blobs.verify_stored(conn, row)
                if err is not None:
                    raise err
            out: dict[str, Any] = row.digest.forms()
            out["verified"] = verify
            out["stored"] = (
                "inline"
                if row.chunk_set is None
                else "backend"
                if row.chunk_set == EXTERNAL
                else "chunked"
            )
            out["artifacts"] = [
                {"kind": k, "contract_version": v, "accepted_at": utc_text(t)}
                for k, v, t in artifact_kinds(conn, row.digest.blake3)
            ]
            warns = warnings_of(conn, row.digest.blake3)
            if warns:
                out["warnings"] = [w.to_dict() for w in warns]
            return out

    def has(self, refs: Iterable[str]) -> list[str]:
        """The refs (as given) that name no stored blob.

        ``has`` verifies: a ref counts as present only when stored bytes hash to it, whatever
        its form (``blake3:``, ``sha256:`` hex or base64url, ``object-store:``). The stored
        bytes are re-read and re-hashed (size, BLAKE3, SHA-256), so after one stored byte of
        a blob changes, every ref of that blob answers missing, and a tampered SHA-256 column
        never makes other bytes answer for a digest. ``get``/``stat``/``check`` say why.

        Raises:
            RefSyntaxError: ``ref.syntax`` on a malformed ref (nothing is looked up).
            InputError: ``input.invalid`` for a bare ``str`` (pass ``[ref]``).
        """
        self._live()
        return has_verified(self.transactions, parse_refs(refs))

    def read_blobs(self, refs: Sequence[str]) -> Iterator[BlobRead]:
        """Verified reads of many refs: one :class:`BlobRead` per ref, in order (issue 29).

        One statement looks up each batch of refs (store/objects/blob_reads.py); each
        ``BlobRead`` holds the blob's digest and verified chunks, or the error a single
        :meth:`open_blob` meets (``ref.syntax``, ``not-found.blob``, ``corruption.*``,
        ``store.*``). Consume an item's chunks before taking the next item.
        """
        self._live()
        return read_batches(self.transactions, refs)

    # -- artifacts ------------------------------------------------------------------------
    def ingest(
        self,
        docs: Any,
        *,
        options: dict[str, Any] | None = None,
        supplied: Sequence[bytes] = (),
        batch: int | None = None,
        on_batch: Callable[[int, int], None] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> IngestReport:
        """Validate and store JSON documents, all in one transaction (all or nothing).

        Each document goes through: JSON form (strict reader), its kind's check (schema,
        contract rules, self-address), then write-time bindings; the first fault is raised and
        nothing is written. An identical artifact again is accepted with ``new`` False.
        (store/facade/ingest.py does the work.)

        Args:
            docs: one document — a :class:`Document`, a parsed JSON value (a ``dict``, or a
                ``list`` as one array document), JSON text as ``bytes``, a ``pathlib.Path`` —
                or many: a list of Documents, or any iterable (a generator works) of
                Documents, bytes or paths, streamed (see
                :func:`evstore.facade.ingest.as_documents`).
            options: kind-specific options (e.g. ``scope`` for fragments).
            supplied: bytes the documents may refer to by SHA-256 (rendered content, fragment
                sources); stored only when used.
            batch: None: one transaction. N: one all-or-nothing transaction per N documents
                (rules that span a call then hold per batch); a failing batch leaves the earlier
                ones committed and the error says so (``details.committed_batches``).
            on_batch: called as ``on_batch(batches committed, documents committed)``.
            progress: called as ``progress(documents done)`` after each chunk of 500.

        Raises:
            InputError: ``input.invalid`` (a value of no accepted type, e.g. a ``str``; a
                parsed value with a member name that is not a ``str``, at its pointer);
            JSONFormError (``json.*``: a parsed value is held to ``evstore.dumps``'s domain,
                so a lone surrogate is ``json.surrogate``), ContractError, BindingConflict
                (InputError family); StoreStateError (``store.kind-unavailable`` included).
        """
        self._live()
        return ingest_documents(
            self.transaction,
            as_documents(docs),
            options=options,
            supplied=supplied,
            batch=batch,
            on_batch=on_batch,
            progress=progress,
        )

    def validate(
        self,
        docs: Any,
        *,
        options: dict[str, Any] | None = None,
        supplied: Sequence[bytes] = (),
        poll: Callable[[], None] | None = None,
    ) -> IngestReport:
        """Run every check of :meth:`ingest`, listing all faults; writes nothing.

        Bindings are checked against one read snapshot (no write lock, issue 23) and earlier
        documents of the same call. JSON-form faults are listed per document. ``docs`` as
        :meth:`ingest` (held in memory). ``poll()`` runs before each document; what it raises
        stops the call. Raises an InputError only for ``docs`` of no accepted type.
        """
        self._live()
        docs = list(as_documents(docs))
        return validate_documents(
            self.transaction, docs, options=options, supplied=supplied, poll=poll
        )

    def find(self, name: str, value: str, kind: str | None = None) -> list[ArtifactInfo]:
        """Artifacts whose lookup attribute ``name`` equals ``value`` (docs/kinds.md lists them).

        Example: ``find("manifest_ref", "corpus-evidence-manifest:sha256:...")``. A digest
        attribute takes any unambiguous spelling (:func:`evstore.objects.kinds.lookup_value`);
        values
        are compared whole, whatever their length.

        Raises:
            InputError: ``kind.unknown``; a digest attribute's format code
                (``fragment.digest-format``, ``ref.syntax``); ``input.invalid`` for U+0000.
            StoreStateError: ``store.kind-unavailable``.
        """
        self._live()
        if kind is not None:
            check_kind(kind)
        value = lookup_value(name, value)  # a digest's one stored spelling, or its format code
        with self.db.read() as conn:
            return find_artifacts(conn, name, value, kind)

    def ls(
        self, kind: str | None = None, *, attr: tuple[str, str] | None = None
    ) -> list[ArtifactInfo]:
        """Stored artifacts, oldest first, optionally of one ``kind`` and with one attribute.

        Raises:
            InputError: ``kind.unknown``. StoreStateError: ``store.kind-unavailable``.
        """
        self._live()
        if kind is not None:
            check_kind(kind)
        with self.db.read() as conn:
            return list_artifacts(conn, kind, attr)

    def iter_artifacts(
        self,
        kind: str | None = None,
        *,
        attr: tuple[str, str] | None = None,
        after: str | None = None,
        limit: int | None = None,
    ) -> Iterator[ArtifactInfo]:
        """Stream artifacts in key order (address, then kind), a page of 1000 per query.

        Args:
            kind: only artifacts of this kind.
            attr: ``(name, value)``: only artifacts with this lookup attribute.
            after: a cursor (``blake3:<hex>/<kind>``,
            :func:`evstore.objects.listing.artifact_cursor`
                of the last item seen): only artifacts after it.
            limit: at most this many.

        Raises:
            InputError: ``kind.unknown``, ``input.invalid`` (a malformed cursor).
        """
        self._live()
        if kind is not None:
            check_kind(kind)
        return iter_artifacts(self.db.read, kind, attr, after, limit)

    def iter_blobs(
        self, *, after: str | None = None, limit: int | None = None
    ) -> Iterator[dict[str, Any]]:
        """Stream every blob by address: ``{"address", "sha256", "size"}`` (size in bytes).

        Args:
            after: a cursor (the last blob's ``blake3:<hex>``): only blobs after it.
            limit: at most this many.

        Raises:
            InputError: ``input.invalid`` (a malformed cursor).
        """
        self._live()
        return iter_blobs(self.db.read, after, limit)

    def warnings(self, ref: str) -> list[dict[str, str]]:
        """Warnings recorded with the artifact at ``ref``."""
        self._live()
        parsed = parse_ref(ref)
        with self.db.read() as conn:
            # By address the warnings are found even when the blob row is missing (a damaged
            # entry that ls and find list); a sha256 ref needs the blob row to name it.
            address = parsed.hex if parsed.algorithm == "blake3" else ""
            if not address:
                address = self._resolve(conn, ref).digest.blake3
            return [w.to_dict() for w in warnings_of(conn, address)]

    def load(self, ref: str) -> Any:
        """The parsed JSON value of a stored artifact (bytes verified first)."""
        self._live()
        return loads(self.get(ref))

    # -- check ----------------------------------------------------------------------------
    def check(
        self,
        progress: Progress | None = None,
        *,
        sample: float | None = None,
        seed: int = 0,
        kinds: Sequence[str] = (),
        since: Any = None,
        jobs: int = 1,
        record: bool = True,
        warnings: list[dict[str, str]] | None = None,
    ) -> CheckRun:
        """Re-verify the store (all of it by default, the log too), yielding every fault.

        Re-hashes every blob (size and BLAKE3, SHA-256 index), then re-reads every artifact:
        canonical form (stored bytes == canonical(parse(stored bytes))) and its kind's audit
        (contract rules and bindings), reading in batches. store/check/checker.py does the work.

        Args:
            progress: called as ``progress(done, total)`` after each object.
            sample: check only this fraction (0 < sample <= 1) of the addresses, the same ones
                for the same ``seed`` and store.
            seed: the sample's seed (an integer).
            kinds: only artifacts of these kinds and their blobs; ``"blob"`` selects every
                blob. Empty: everything.
            since: skip objects a check verified at or after this time: an aware datetime,
                ISO 8601 text (UTC when no offset) or an age such as ``"24h"``, ``"7d"``.
            jobs: threads hashing blobs (1: the calling thread).
            record: record each object found without fault as verified now (on a store that
                cannot be written nothing is recorded; the run's ``not_recorded`` says so).
            warnings: when given, the kinds' audit warnings (not faults) are appended to it,
                as dicts like :meth:`recorded_warnings` (docs/kinds.md#a-forced-json-kind).

        Returns:
            A :class:`~evstore.check.checker.CheckRun`, an iterator of the faults: CorruptionError
            (``corruption.*``, ``check.*``), ``store.kind-unavailable`` and the kinds' own
            errors, each with ``details["address"]``; ``checked``/``recorded`` count as it
            runs.

        Raises:
            InputError: ``input.invalid`` (a bad option value), ``kind.unknown``, before
                anything is read.
        """
        self._live()
        options = CheckOptions(
            sample=sample,
            seed=seed,
            kinds=(kinds,) if isinstance(kinds, str) else tuple(kinds),
            since=since,
            jobs=jobs,
            record=record,
        )
        return check_store(self.transactions, progress, options, warnings)

    def recorded_warnings(self) -> list[dict[str, str]]:
        """Every warning recorded with an accepted artifact (not faults: shown by ``check``).

        Returns:
            Dicts with ``address`` (``blake3:...``), ``code``, ``message`` and ``pointer``.
        """
        self._live()
        with self.db.read() as conn:
            return all_warnings(conn)

    # -- settings -------------------------------------------------------------------------
    def config(self, name: str | None = None) -> dict[str, Any]:
        """Every setting's current value, or only setting ``name``'s (docs/settings.md).

        Raises:
            InputError: ``config.unknown`` for a ``name`` that is no setting.
            CorruptionError: ``corruption.setting`` for a stored value of the wrong type.
        """
        return read_config(self.transactions, name)

    def set_config(self, name: str, value: str | Any) -> Any:
        """Set a setting; returns the stored value.

        A str is parsed for the setting's type (as ``evstore config NAME VALUE`` does); any
        other value must already have the declared type (``True`` is no int, ``1`` no bool).
        Nothing is stored when the value is refused.

        ``blobs.backend`` is stored in its normal form, after the backend answered a stat.
        ``gc.lease-seconds`` also shortens the leases already taken to end at most that many
        seconds from now, in the same transaction (0: everything only a lease holds is
        collectable at once; :func:`evstore.objects.leases.cap_leases`).

        Raises:
            InputError: ``config.unknown`` / ``config.value``; ``blobs.spec``.
            StoreStateError: ``blobs.unreachable`` (a backend that does not answer).
        """
        return write_config(self.transactions, name, value)

    @property
    def tokens(self) -> TokenOps:
        """The server's bearer tokens: ``create``, ``list``, ``revoke`` (store/facade/admin.py)."""
        return TokenOps(self.transactions)

    # -- contract namespaces --------------------------------------------------------------
    @property
    def fragments(self) -> FragmentOps:
        """Templiqx v1alpha1 operations (store/contracts/fragments/store.py ``FragmentOps``)."""
        self._live()
        from ..contracts.fragments.store import FragmentOps

        return FragmentOps(self)

    @property
    def manifests(self) -> ManifestOps:
        """Orbidocs v1 operations (store/contracts/manifests/store.py ``ManifestOps``)."""
        self._live()
        from ..contracts.manifests.store import ManifestOps

        return ManifestOps(self)

    @property
    def packages(self) -> PackageOps:
        """Insonic 1.3.0 operations (store/contracts/packages/store.py ``PackageOps``)."""
        self._live()
        from ..contracts.packages.store import PackageOps

        return PackageOps(self)

    @property
    def contexts(self) -> ContextOps:
        """Notarius v1 operations (store/contracts/contexts/store.py ``ContextOps``)."""
        self._live()
        from ..contracts.contexts.store import ContextOps

        return ContextOps(self)

    @property
    def log(self) -> LogOps:
        """The tamper-evident log (store/log/ops.py ``LogOps``; docs/log.md)."""
        from ..log.ops import LogOps

        return LogOps(self)

    @property
    def runs(self) -> RunOps:
        """Run records and lineage (store/contracts/runs/store.py ``RunOps``)."""
        self._live()
        from ..contracts.runs.store import RunOps

        return RunOps(self)

    @property
    def retention(self) -> RetentionOps:
        """Roots, upload leases, gc and audits (store/retention/ops.py ``RetentionOps``)."""
        self._live()
        from ..retention.ops import RetentionOps

        return RetentionOps(self)
