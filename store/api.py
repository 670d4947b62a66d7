"""The public entry object: :class:`Store`, returned by :func:`open`.

A Store owns one database (SQLite file or PostgreSQL URL) and the transaction boundary: one
call that writes is one transaction, so ``ingest([a, b, c])`` stores all or nothing and a
rejected call leaves the store exactly as it was (rows and bytes).

Contract-specific operations hang off namespaced accessors (``store.fragments``,
``store.manifests``, ``store.packages``, ``store.contexts``, ``store.runs``), each defined in
its contract module.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import sqlalchemy as sa

from . import blobs as _blobs
from .artifacts import ArtifactInfo, ArtifactResult, artifact_kinds, iso_utc, warnings_of
from .canonical import dumps, loads, loads_canonical
from .db import Database
from .digests import Digest, blake3_hex
from .digests import digest_bytes as digest_from
from .errors import CorruptionError, EvstoreError, Faults, InputError, NotFound
from .kinds import detect_kind, get_handler
from .refs import parse_ref
from .settings import SETTINGS, load_settings, parse_setting_value, write_setting
from .tables import artifacts, attrs, blobs
from .txn import Txn

__all__ = ["Document", "IngestReport", "Store", "open"]


@dataclass(frozen=True)
class Document:
    """One JSON input: ``data`` (raw bytes, as read), its ``name`` (a path or "-") and ``kind``.

    ``kind`` None means detect it (docs/kinds.md).
    """

    data: bytes
    name: str = "-"
    kind: str | None = None


@dataclass
class IngestReport:
    """The result of :meth:`Store.ingest` / :meth:`Store.validate`.

    Attributes:
        results: one :class:`ArtifactResult` per stored artifact, in input order.
        faults: every fault found (validate only; ingest raises the first instead).
        documents: how many documents were read.
    """

    results: list[ArtifactResult] = field(default_factory=list)
    faults: list[EvstoreError] = field(default_factory=list)
    documents: int = 0

    @property
    def ok(self) -> bool:
        """True when no fault was found."""
        return not self.faults

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "ok": self.ok,
            "documents": self.documents,
            "artifacts": [r.to_dict() for r in self.results],
            "faults": [f.to_dict() for f in self.faults],
        }


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


class Store:
    """A content-addressed evidence store. Use as a context manager, or call :meth:`close`."""

    def __init__(self, url: str, *, create: bool = False, check_schema: bool = True) -> None:
        self.db = Database(url)
        try:
            if create and not self.db.exists():
                self.db.migrate()
            if check_schema:
                self.db.require_current()
        except BaseException:
            self.db.dispose()
            raise
        self._closed = False

    # -- lifecycle ------------------------------------------------------------------------
    def close(self) -> None:
        """Release the database connections."""
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
    def _parse(self, docs: Sequence[Document]) -> list[tuple[Document, Any, bytes, str]]:
        out = []
        for d in docs:
            try:
                value, canonical = loads_canonical(d.data)
                kind = d.kind or detect_kind(value)
                get_handler(kind)
            except EvstoreError as err:
                err.path = d.name
                raise
            out.append((d, value, canonical, kind))
        return out

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

        Args:
            docs: the documents.
            options: kind-specific options (e.g. ``scope`` for fragments).
            supplied: bytes the documents may refer to by SHA-256 (rendered content, fragment
                sources); stored only when used.

        Raises:
            JSONFormError, ContractError, BindingConflict (InputError family);
            StoreStateError.
        """
        parsed = self._parse(docs)

        def work(txn: Txn) -> IngestReport:
            report = IngestReport(documents=len(parsed))
            i = 0
            while i < len(parsed):
                d, value, canonical, kind = parsed[i]
                handler = get_handler(kind)
                if hasattr(handler, "stage"):
                    # A run of documents of one batchable kind: each checked, then staged
                    # (its bindings, in order: first fault wins), then all written with one
                    # statement per table.
                    j = i
                    while j < len(parsed) and parsed[j][3] == kind:
                        j += 1
                    run = parsed[i:j]
                    batch: dict[str, Any] = {}
                    specs = []
                    for rd, rvalue, rcanonical, _k in run:
                        try:
                            faults = _check(handler, rvalue, rcanonical, txn)
                            if faults:
                                raise faults[0]
                            specs.append(handler.stage(rvalue, rcanonical, txn, batch))
                        except EvstoreError as err:
                            err.path = err.path or rd.name
                            raise
                    report.results.extend(handler.flush(specs, txn))
                    i = j
                    continue
                try:
                    faults = _check(handler, value, canonical, txn)
                    if faults:
                        raise faults[0]
                    report.results.append(handler.write(value, canonical, txn))
                except EvstoreError as err:
                    err.path = err.path or d.name
                    raise
                i += 1
            unused = txn.unused_supplied()
            if unused:
                # The caller meant those bytes for a document (--content, --source); silently
                # ignoring them would hide a wrong file or a wrong document.
                raise InputError(
                    f"{len(unused)} supplied byte string(s) are used by no document "
                    f"(sha256:{unused[0]}{', ...' if len(unused) > 1 else ''})",
                    code="input.unused-content",
                    details={"sha256": unused},
                )
            return report

        return self.transaction(work, options=options, supplied=supplied)

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
        report = IngestReport(documents=len(docs))
        parsed = []
        for d in docs:
            try:
                parsed.extend(self._parse([d]))
            except InputError as err:
                report.faults.append(err)

        def work(txn: Txn) -> None:
            for d, value, canonical, kind in parsed:
                handler = get_handler(kind)
                before = len(txn.faults)
                faults = _check(handler, value, canonical, txn)
                for f in faults:
                    f.path = f.path or d.name
                txn.faults.extend(faults)
                if not faults:
                    try:
                        report.results.append(handler.write(value, canonical, txn))
                    except EvstoreError as err:  # a fault the handler could not defer
                        txn.faults.append(err)
                for f in txn.faults[before:]:
                    f.path = f.path or d.name

        def work_all(txn: Txn) -> None:
            work(txn)
            unused = txn.unused_supplied()
            if unused:
                txn.faults.append(
                    InputError(
                        f"{len(unused)} supplied byte string(s) are used by no document "
                        f"(sha256:{unused[0]}{', ...' if len(unused) > 1 else ''})",
                        code="input.unused-content",
                        details={"sha256": unused},
                    )
                )

        _, faults = self.transaction(work_all, mode="validate", options=options, supplied=supplied)
        report.faults.extend(faults)
        return report

    def find(self, name: str, value: str, kind: str | None = None) -> list[ArtifactInfo]:
        """Artifacts whose lookup attribute ``name`` equals ``value`` (docs/kinds.md lists them).

        Example: ``find("manifest_ref", "corpus-evidence-manifest:sha256:...")``.
        """
        self._live()
        q = (
            sa.select(
                artifacts.c.address,
                artifacts.c.kind,
                artifacts.c.contract_version,
                artifacts.c.accepted_at,
                blobs.c.size,
            )
            .join(
                attrs,
                sa.and_(attrs.c.address == artifacts.c.address, attrs.c.kind == artifacts.c.kind),
            )
            .join(blobs, blobs.c.address == artifacts.c.address)
            .where(attrs.c.name == name, attrs.c.value == value)
        )
        if kind is not None:
            q = q.where(artifacts.c.kind == kind)
        with self.db.read() as conn:
            return [
                _info(r)
                for r in conn.execute(q.order_by(artifacts.c.accepted_at, artifacts.c.address))
            ]

    def ls(
        self, kind: str | None = None, *, attr: tuple[str, str] | None = None
    ) -> list[ArtifactInfo]:
        """Stored artifacts, oldest first, optionally of one ``kind`` and with one attribute."""
        self._live()
        q = sa.select(
            artifacts.c.address,
            artifacts.c.kind,
            artifacts.c.contract_version,
            artifacts.c.accepted_at,
            blobs.c.size,
        ).join(blobs, blobs.c.address == artifacts.c.address)
        if kind is not None:
            q = q.where(artifacts.c.kind == kind)
        if attr is not None:
            q = q.join(
                attrs,
                sa.and_(attrs.c.address == artifacts.c.address, attrs.c.kind == artifacts.c.kind),
            ).where(attrs.c.name == attr[0], attrs.c.value == attr[1])
        with self.db.read() as conn:
            return [
                _info(r)
                for r in conn.execute(q.order_by(artifacts.c.accepted_at, artifacts.c.address))
            ]

    def warnings(self, ref: str) -> list[dict[str, str]]:
        """Warnings recorded with the artifact at ``ref``."""
        with self.db.read() as conn:
            row = self._resolve(conn, ref)
            return [w.to_dict() for w in warnings_of(conn, row.digest.blake3)]

    def load(self, ref: str) -> Any:
        """The parsed JSON value of a stored artifact (bytes verified first)."""
        return loads(self.get(ref))

    # -- check ----------------------------------------------------------------------------
    def check(self, progress: Callable[[int, int], None] | None = None) -> Iterator[EvstoreError]:
        """Re-verify the whole store, yielding every fault (never stopping at the first).

        Re-hashes every blob (size and BLAKE3, SHA-256 index), then re-reads every artifact:
        canonical form (stored bytes == canonical(parse(stored bytes))) and its kind's audit
        (contract rules and bindings).

        Args:
            progress: called as ``progress(done, total)`` after each object.

        Yields:
            CorruptionError (``corruption.*``) and the kinds' own errors, each with
            ``details["address"]``.
        """
        self._live()
        with self.db.read() as conn:
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
                sa.select(
                    blobs.c.address, blobs.c.sha256, blobs.c.size, blobs.c.chunk_set
                ).order_by(blobs.c.address)
            ).all()
            for r in rows:
                try:
                    err = _blobs.verify_stored(conn, _blobs._row(r))
                except EvstoreError as exc:  # a malformed row: report it and carry on
                    err = exc
                if err is not None:
                    yield err
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
                yield from self._audit_one(txn, a.address, a.kind)
                if progress:
                    progress(done, total)

    def _audit_one(self, txn: Txn, address: str, kind: str) -> Iterator[EvstoreError]:
        row = _blobs.lookup(txn.conn, parse_ref("blake3:" + address))
        if row is None:
            yield NotFound(
                f"artifact {kind} blake3:{address} has no blob",
                code="check.artifact-without-blob",
                details={"address": "blake3:" + address},
            )
            return
        try:
            data = _blobs.read_verified(txn.conn, row)
        except EvstoreError:
            return  # already reported by the blob pass
        try:
            value = loads(data)
        except EvstoreError as err:
            err.details["address"] = "blake3:" + address
            yield err
            return
        if dumps(value) != data:
            yield EvstoreError(
                f"{kind} blake3:{address} is not in canonical form",
                code="check.not-canonical",
                rule="RFC 8785",
                details={"address": "blake3:" + address},
            )
        try:
            handler = get_handler(kind)
        except InputError as err:
            err.details["address"] = "blake3:" + address
            yield err
            return
        txn.faults = []
        audit = getattr(handler, "audit", None)
        try:
            faults = Faults.of(audit(value, address, txn) if audit else handler.check(value, txn)).errors
        except EvstoreError as err:
            faults = [err]
        for f in [*faults, *txn.faults]:
            f.details.setdefault("address", "blake3:" + address)
            f.details.setdefault("kind", kind)
            yield f
        txn.faults = []

    def recorded_warnings(self) -> list[dict[str, str]]:
        """Every warning recorded with an accepted artifact (not faults: shown by ``check``).

        Returns:
            Dicts with ``address`` (``blake3:...``), ``code``, ``message`` and ``pointer``.
        """
        from .tables import warnings as warnings_table

        self._live()
        with self.db.read() as conn:
            rows = conn.execute(
                sa.select(warnings_table).order_by(warnings_table.c.address, warnings_table.c.code)
            ).all()
        return [
            {
                "address": "blake3:" + r.address,
                "code": r.code,
                "message": r.message,
                "pointer": r.pointer,
            }
            for r in rows
        ]

    # -- settings and schema --------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        """Every setting's current value."""
        with self.db.read() as conn:
            return load_settings(conn)

    def set_config(self, name: str, value: str | Any) -> Any:
        """Set a setting (a str is parsed for the setting's type). Returns the stored value.

        Raises:
            InputError: ``config.unknown`` / ``config.value``.
        """
        parsed = parse_setting_value(name, value) if isinstance(value, str) else value
        if name not in SETTINGS:
            parse_setting_value(name, "")
        self.db.run_transaction(lambda conn: write_setting(conn, name, parsed))
        return parsed

    # -- contract namespaces --------------------------------------------------------------
    @property
    def fragments(self) -> Any:
        """Templiqx v1alpha1 operations (store/fragments.py ``FragmentOps``)."""
        from .fragments import FragmentOps

        return FragmentOps(self)

    @property
    def manifests(self) -> Any:
        """Orbidocs v1 operations (store/manifests.py ``ManifestOps``)."""
        from .manifests import ManifestOps

        return ManifestOps(self)

    @property
    def packages(self) -> Any:
        """Insonic 1.3.0 operations (store/packages.py ``PackageOps``)."""
        from .packages import PackageOps

        return PackageOps(self)

    @property
    def contexts(self) -> Any:
        """Notarius v1 operations (store/contexts.py ``ContextOps``)."""
        from .contexts import ContextOps

        return ContextOps(self)

    @property
    def runs(self) -> Any:
        """Run records and lineage (store/runs.py ``RunOps``)."""
        from .runs import RunOps

        return RunOps(self)


def _check(handler: Any, value: Any, canonical: bytes, txn: Txn) -> list[EvstoreError]:
    """A handler's check errors (``Faults.errors``), given the canonical bytes when it can
    use them."""
    if getattr(handler, "accepts_canonical", False):
        return Faults.of(handler.check(value, txn, canonical=canonical)).errors
    return Faults.of(handler.check(value, txn)).errors


def _bad_artifact_row(a: Any) -> EvstoreError | None:
    """A malformed artifacts row (edited outside evstore), or None."""
    import datetime as _dt

    ok = isinstance(a.kind, str) and isinstance(a.contract_version, str)
    try:
        _dt.datetime.fromisoformat(str(a.accepted_text))
    except ValueError:
        ok = False
    if ok:
        return None
    return CorruptionError(
        f"the artifact row of {a.kind!r} blake3:{a.address} is malformed",
        code="corruption.row",
        details={"address": "blake3:" + str(a.address)},
    )


def _info(r: Any) -> ArtifactInfo:
    return ArtifactInfo(
        "blake3:" + r.address, r.kind, r.contract_version, iso_utc(r.accepted_at), int(r.size)
    )
