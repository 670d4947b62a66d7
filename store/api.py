"""The public entry object: :class:`Store`, returned by :func:`open`, and the schema commands.

A Store owns one database (SQLite file or PostgreSQL URL) and the transaction boundary: one
call that writes is one transaction, so ``ingest([a, b, c])`` stores all or nothing and a
rejected call leaves the store exactly as it was (rows and bytes).

This module is a facade: each method is one call into the module that does the work
(store/ingest.py for ingest and validate, store/check.py for the whole-store check,
store/blobs.py for bytes, store/settings.py for settings). Contract-specific operations hang
off namespaced accessors (``store.fragments``, ``store.manifests``, ``store.packages``,
``store.contexts``, ``store.runs``), each defined in its contract's store module.

Opening a store reads its schema revision with one SQL statement and compares it with the
revisions shipped in migrations/versions (read as text): Alembic is imported only by
:func:`init`, :func:`migrate` and ``open(..., create=True)`` on a store that does not exist.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

import sqlalchemy as sa

from . import blobs as _blobs
from .artifacts import (
    ArtifactInfo,
    Document,
    IngestReport,
    all_warnings,
    artifact_kinds,
    find_artifacts,
    iso_utc,
    list_artifacts,
    warnings_of,
)
from .canonical import loads
from .check import CheckOptions, CheckRun, Progress, check_store
from .db import Database
from .digests import Digest, blake3_hex
from .digests import digest_bytes as digest_from
from .errors import NotFound, error
from .ingest import ingest_documents, validate_documents
from .kinds import check_kind
from .refs import parse_ref
from .settings import (
    check_setting_value,
    load_settings,
    parse_setting_value,
    write_setting,
)
from .txn import Txn

__all__ = ["Store", "init", "migrate", "open"]


@dataclass(frozen=True)
class _RawRow:
    address: str
    sha256: str
    size: Any
    chunk_set: Any


class _Rollback(Exception):
    def __init__(self, payload: Any) -> None:
        self.payload = payload


def open(url: str, *, create: bool = False) -> Store:  # noqa: A001 - the documented API name
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


def init(url: str) -> dict[str, Any]:
    """Create the store at ``url`` if missing, at the latest schema (``evstore init``).

    Returns:
        ``{"url": display URL, "created": bool, "schema": revision}``.

    Raises:
        StoreStateError: ``store.schema-behind`` (run :func:`migrate`), ``store.schema-ahead``,
            ``store.url``, ``store.unreachable``.
    """
    db = Database(url)
    try:
        existed = db.schema_state().initialised
    finally:
        db.dispose()
    with Store(url, create=True) as store:
        return {"url": store.url, "created": not existed, "schema": store.db.schema_state().current}


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
        try:
            if create and not self.db.schema_state().initialised:
                self.db.migrate()
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

    def _live(self) -> None:
        if self._closed:
            raise RuntimeError("this Store is closed")

    def transaction(self, work: Callable[[Txn], Any], *, mode: str = "ingest", **kw: Any) -> Any:
        """Run ``work(txn)`` in one write transaction (contract modules' entry point).

        Args:
            work: called with a :class:`~evstore.txn.Txn`; may be called again on contention.
            mode: ``"ingest"`` commits; ``"validate"`` always rolls back and returns
                ``(result, faults)``.
            kw: ``options`` and ``supplied`` for the Txn.
        """
        self._live()

        def run(conn: sa.Connection) -> Any:
            txn = Txn(conn, load_settings(conn), mode, **kw)  # type: ignore[arg-type]
            result = work(txn)
            if mode == "validate":
                raise _Rollback((result, txn.faults))
            return result

        try:
            return self.db.run_transaction(run)
        except _Rollback as rb:
            return rb.payload

    @contextlib.contextmanager
    def reading(self) -> Iterator[Txn]:
        """A read-only (audit mode) :class:`Txn` over one consistent snapshot."""
        self._live()
        with self.db.read() as conn:
            yield Txn(conn, load_settings(conn), "audit")

    # -- blobs ----------------------------------------------------------------------------
    def put(self, data: bytes | BinaryIO) -> _blobs.PutResult:
        """Store bytes (``bytes``) or a binary stream (read in 1 MiB chunks, any size).

        Returns:
            :class:`~evstore.blobs.PutResult`: the :class:`~evstore.digests.Digest` and
            whether the bytes were new.
        """
        self._live()
        if isinstance(data, (bytes, bytearray, memoryview)):
            raw = bytes(data)
            return self.db.run_transaction(lambda conn: _blobs.put_bytes(conn, raw))
        # A stream can be read only once, so no retry: one attempt, contention surfaces.
        return self.db.run_transaction(lambda conn: _blobs.put_stream(conn, data))

    def put_many(self, items: Sequence[bytes]) -> list[_blobs.PutResult]:
        """Store many byte strings in one transaction; one result per item, in order."""
        self._live()
        return self.db.run_transaction(lambda conn: _blobs.put_many(conn, items))

    def _resolve(self, conn: sa.Connection, ref: str) -> _blobs.BlobRow:
        row = _blobs.lookup(conn, parse_ref(ref))
        if row is None:
            raise NotFound(f"no blob for {ref}", code="not-found.blob", details={"ref": ref})
        return row

    def get(self, ref: str) -> bytes:
        """The exact stored bytes a content ref names, verified before they are returned.

        Args:
            ref: a content ref in one of the four accepted forms (evstore.refs).

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

        One statement on a pooled driver connection (one SELECT needs no explicit
        transaction). None sends the caller to the general path (chunked blob, missing blob).

        Database errors (those :func:`evstore.db.classify` understands) also answer None:
        the general path meets them again inside the error boundary, which maps them to
        their ``store.*`` code. The raw connection is then invalidated, so a broken driver
        connection never goes back to the pool.
        """
        from .db import database_errors

        mark = "?" if self.db.backend == "sqlite" else "%s"
        db_errors = database_errors()
        try:
            raw = self.db.engine.raw_connection()
        except db_errors:
            return None  # the general path reports the error
        try:
            driver = raw.driver_connection
            pg = self.db.backend == "postgresql"
            if pg:
                driver.autocommit = True  # type: ignore[union-attr]
            try:
                cur = raw.cursor()
                cur.execute(
                    "SELECT address, sha256, size, chunk_set, data FROM blobs"
                    f" WHERE address = {mark}",
                    (address,),
                )
                r = cur.fetchone()
                cur.close()
            finally:
                if pg:
                    driver.autocommit = False  # type: ignore[union-attr]
        except db_errors:
            raw.invalidate()  # the general path reports the error
            return None
        finally:
            raw.close()
        if r is None or r[3] is not None:
            return None
        row = _blobs._row(_RawRow(*r[:4]))
        data = b"" if r[4] is None else _blobs._as_bytes(r[4], address)
        # Looked up by its address: size and BLAKE3 prove these are the bytes asked for.
        # (Reads by a sha256: ref take the general path, which checks the SHA-256 too.)
        if len(data) != row.digest.size or blake3_hex(data) != address:
            err = _blobs._compare(row, digest_from(data))
            raise err if err is not None else AssertionError("unreachable")
        return data

    @contextlib.contextmanager
    def open_blob(self, ref: str) -> Iterator[tuple[Digest, Iterator[bytes]]]:
        """Stream a blob: ``with store.open_blob(ref) as (digest, chunks): ...``.

        The whole blob is verified before the first chunk is yielded; memory stays at one
        chunk (1 MiB). Raises as :meth:`get`.
        """
        self._live()
        with self.db.read() as conn:
            row = self._resolve(conn, ref)
            yield row.digest, _blobs.iter_verified(conn, row)

    def stat(self, ref: str) -> dict[str, Any]:
        """Facts about a stored blob: every digest form, size in bytes, the kinds it is stored as.

        The bytes are re-hashed first, so the digests printed are the bytes' own (a tampered
        index row is reported, never repeated). Raises as :meth:`get`.
        """
        self._live()
        with self.db.read() as conn:
            row = self._resolve(conn, ref)
            err = _blobs.verify_stored(conn, row)
            if err is not None:
                raise err
            out: dict[str, Any] = row.digest.forms()
            out["stored"] = "chunked" if row.chunk_set is not None else "inline"
            out["artifacts"] = [
                {"kind": k, "contract_version": v, "accepted_at": iso_utc(t)}
                for k, v, t in artifact_kinds(conn, row.digest.blake3)
            ]
            warns = warnings_of(conn, row.digest.blake3)
            if warns:
                out["warnings"] = [w.to_dict() for w in warns]
            return out

    def has(self, refs: Iterable[str]) -> list[str]:
        """The refs (as given) that name no stored blob. Raises RefSyntaxError on a bad ref."""
        self._live()
        parsed = [parse_ref(r) for r in refs]
        missing = []
        with self.db.read() as conn:
            for p in parsed:
                if p.algorithm == "blake3":
                    present = _blobs.lookup(conn, p) is not None
                else:  # the SHA-256 column is an index: only bytes that hash to it count
                    present = any(
                        _blobs.verify_stored(conn, row) is None
                        for row in _blobs.lookup_sha256_all(conn, p.hex)
                    )
                if not present:
                    missing.append(p.text)
        return missing

    # -- artifacts ------------------------------------------------------------------------
    def ingest(
        self,
        docs: Sequence[Document],
        *,
        options: dict[str, Any] | None = None,
        supplied: Sequence[bytes] = (),
    ) -> IngestReport:
        """Validate and store JSON documents, all in one transaction (all or nothing).

        Each document goes through: JSON form (strict reader), its kind's check (schema,
        contract rules, self-address), then write-time bindings; the first fault is raised and
        nothing is written. An identical artifact again is accepted with ``new`` False.
        (store/ingest.py does the work.)

        Args:
            docs: the documents.
            options: kind-specific options (e.g. ``scope`` for fragments).
            supplied: bytes the documents may refer to by SHA-256 (rendered content, fragment
                sources); stored only when used.

        Raises:
            JSONFormError, ContractError, BindingConflict (InputError family);
            StoreStateError (``store.kind-unavailable`` included).
        """
        self._live()
        return ingest_documents(self.transaction, docs, options=options, supplied=supplied)

    def validate(
        self,
        docs: Sequence[Document],
        *,
        options: dict[str, Any] | None = None,
        supplied: Sequence[bytes] = (),
    ) -> IngestReport:
        """Run every check of :meth:`ingest`, listing all faults; writes nothing.

        Bindings are checked against the store as it is (and against earlier documents of the
        same call). JSON-form faults are listed per document. Never raises an InputError.
        """
        self._live()
        return validate_documents(self.transaction, docs, options=options, supplied=supplied)

    def find(self, name: str, value: str, kind: str | None = None) -> list[ArtifactInfo]:
        """Artifacts whose lookup attribute ``name`` equals ``value`` (docs/kinds.md lists them).

        Example: ``find("manifest_ref", "corpus-evidence-manifest:sha256:...")``.

        Raises:
            InputError: ``kind.unknown``. StoreStateError: ``store.kind-unavailable``.
        """
        self._live()
        if kind is not None:
            check_kind(kind)
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

    def warnings(self, ref: str) -> list[dict[str, str]]:
        """Warnings recorded with the artifact at ``ref``."""
        self._live()
        with self.db.read() as conn:
            row = self._resolve(conn, ref)
            return [w.to_dict() for w in warnings_of(conn, row.digest.blake3)]

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
    ) -> CheckRun:
        """Re-verify the store (all of it by default), yielding every fault (never stopping
        at the first).

        Re-hashes every blob (size and BLAKE3, SHA-256 index), then re-reads every artifact:
        canonical form (stored bytes == canonical(parse(stored bytes))) and its kind's audit
        (contract rules and bindings), reading in batches. store/check.py does the work.

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

        Returns:
            A :class:`~evstore.check.CheckRun`, an iterator of the faults: CorruptionError
            (``corruption.*``, ``check.*``), ``store.kind-unavailable`` and the kinds' own
            errors, each with ``details["address"]``; ``checked``/``recorded`` count as it
            runs.

        Raises:
            InputError: ``input.invalid`` (a bad option value), ``kind.unknown``, before
                anything is read.
        """  # noqa: D205 - the summary needs two lines
        self._live()
        options = CheckOptions(
            sample=sample,
            seed=seed,
            kinds=(kinds,) if isinstance(kinds, str) else tuple(kinds),
            since=since,
            jobs=jobs,
            record=record,
        )
        return check_store(self.db, progress, options)

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
        self._live()
        with self.db.read() as conn:
            values = load_settings(conn)
        if name is None:
            return values
        if name not in values:
            parse_setting_value(name, "")  # config.unknown
        return {name: values[name]}

    def set_config(self, name: str, value: str | Any) -> Any:
        """Set a setting; returns the stored value.

        A str is parsed for the setting's type (as ``evstore config NAME VALUE`` does); any
        other value must already have the declared type (``True`` is no int, ``1`` no bool).
        Nothing is stored when the value is refused.

        Raises:
            InputError: ``config.unknown`` / ``config.value``.
        """
        self._live()
        if isinstance(value, str):
            parsed = parse_setting_value(name, value)
        else:
            parsed = check_setting_value(name, value)
        self.db.run_transaction(lambda conn: write_setting(conn, name, parsed))
        return parsed

    # -- contract namespaces --------------------------------------------------------------
    @property
    def fragments(self) -> Any:
        """Templiqx v1alpha1 operations (store/fragments.py ``FragmentOps``)."""
        self._live()
        from .fragments import FragmentOps

        return FragmentOps(self)

    @property
    def manifests(self) -> Any:
        """Orbidocs v1 operations (store/manifests.py ``ManifestOps``)."""
        self._live()
        from .manifests import ManifestOps

        return ManifestOps(self)

    @property
    def packages(self) -> Any:
        """Insonic 1.3.0 operations (store/packages.py ``PackageOps``)."""
        self._live()
        from .packages import PackageOps

        return PackageOps(self)

    @property
    def contexts(self) -> Any:
        """Notarius v1 operations (store/contexts.py ``ContextOps``)."""
        self._live()
        from .contexts import ContextOps

        return ContextOps(self)

    @property
    def runs(self) -> Any:
        """Run records and lineage (store/runs.py ``RunOps``)."""
        self._live()
        from .runs import RunOps

        return RunOps(self)
