"""One protocol for every store: :class:`StoreProtocol` (``evstore.StoreProtocol``).

A local :class:`~evstore.Store` (a database URL) and a :class:`~evstore.RemoteStore` (a store
served by ``evstore serve``, over HTTP) both implement it: the same methods, arguments, result
types (store/core/results.py: :class:`~evstore.PutResult`, :class:`~evstore.IngestReport`,
...) and typed errors (code, rule, pointer), so a program written against
``StoreProtocol`` runs on either. ``evstore.open(url)`` returns one or the other::

    def archive_run(store: evstore.StoreProtocol, path: pathlib.Path) -> str:
        return store.ingest(path).results[0].digest.address

The protocol lists what both do today, the log, the settings, ``check`` and the audits
included (issue 28); what needs the database itself (``transaction``) is on
:class:`~evstore.Store` only, and a remote store raises ``remote.unsupported`` for it.
Tokens are ``store.tokens`` (``evstore.create_token(store, ...)``, ``list_tokens`` and
``revoke_token`` call it, for either store). The namespaces
(``fragments``, ``manifests``, ``packages``, ``contexts``, ``runs``, ``retention``) are
protocols of their own below, each listing the methods both namespaces have.

mypy checks that both classes satisfy it (the functions under ``TYPE_CHECKING`` at the end
of this module and of store/client/remote.py); tests/behaviour/ runs one behaviour suite
against both, through a real server on 127.0.0.1. docs/design.md ("One protocol for every
store") gives the reasons.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, Self, overload, runtime_checkable

from .core.digests import Digest
from .core.errors import EvstoreError
from .core.results import (
    ArtifactInfo,
    ArtifactResult,
    Closure,
    Excerpt,
    GcReport,
    IngestReport,
    PutResult,
    RunReport,
)

if TYPE_CHECKING:
    from .retention.audit import AuditRun

__all__ = [
    "CheckRunProtocol",
    "ContextsProtocol",
    "FragmentsProtocol",
    "LogProtocol",
    "ManifestsProtocol",
    "PackagesProtocol",
    "RetentionProtocol",
    "RunsProtocol",
    "StoreProtocol",
    "TokensProtocol",
]


class FragmentsProtocol(Protocol):
    """``store.fragments`` (templiqx v1alpha1; docs/fragments.md)."""

    def ingest_source(
        self,
        data: bytes,
        document_id: str,
        fragment_id: str,
        revision_checksum: str | None = None,
        *,
        name: str = "-",
    ) -> ArtifactResult:
        """Store ``data`` as a content version of the pair (a ``fragment-source`` record)."""
        ...

    def quote(self, ref: str) -> bytes:
        """The exact quoted bytes of the stored fragment ``ref``, verified."""
        ...

    def by_document(self, document_id: str) -> list[ArtifactInfo]:
        """Stored fragments of one document_id, oldest first."""
        ...

    def sources(self, document_id: str, fragment_id: str) -> list[ArtifactInfo]:
        """The ``fragment-source`` records of a pair, oldest first."""
        ...

    def find(self, quote_sha256: str) -> list[ArtifactInfo]:
        """Stored fragments whose quote_sha256 is ``quote_sha256``, oldest first."""
        ...


class ManifestsProtocol(Protocol):
    """``store.manifests`` (orbidocs v1; docs/manifests.md)."""

    def find(self, manifest_ref: str) -> list[ArtifactInfo]:
        """Stored manifests with this ``manifest/ref``, oldest first."""
        ...

    def load(self, manifest_ref: str) -> dict[str, Any]:
        """The stored manifest with this ``manifest/ref``, parsed (``not-found.artifact``)."""
        ...

    def content(self, manifest_ref: str) -> bytes:
        """The manifest's rendered content, fetched by its content/ref and verified."""
        ...


class PackagesProtocol(Protocol):
    """``store.packages`` (insonic 1.3.0; docs/packages.md)."""

    def export(self, ref: str) -> bytes:
        """RFC 8785 bytes of the package (content ref or id) with its observations."""
        ...


class ContextsProtocol(Protocol):
    """``store.contexts`` (notarius v1; docs/bundle.md)."""

    def excerpt(
        self, source_ref: str, ranges: Sequence[tuple[int, int]], window: int
    ) -> list[dict[str, Any]]:
        """The units selected from a stored source document (notarius v1 selection rule)."""
        ...

    def excerpt_bytes(
        self, source_ref: str, ranges: Sequence[tuple[int, int]], window: int
    ) -> Excerpt:
        """:meth:`excerpt` with its canonical bytes and their digest."""
        ...


class RunsProtocol(Protocol):
    """``store.runs``: run records and lineage (docs/bundle.md)."""

    def ingest_bundle(
        self,
        directory: str | os.PathLike[str],
        *,
        source_document: str | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> RunReport:
        """Store a run bundle directory as one run record (one transaction)."""
        ...

    def runs(self) -> list[dict[str, Any]]:
        """Every run record, oldest first, with a summary of its files."""
        ...

    def refs(self, ref: str, *, transitive: bool = False) -> list[dict[str, Any]]:
        """The stored artifacts that refer to ``ref`` (with ``transitive``: all the way up)."""
        ...

    def closure(self, ref: str) -> Closure:
        """Everything ``ref`` needs, each object verified."""
        ...


class CheckRunProtocol(Protocol):
    """What ``store.check()`` returns, local or remote: the run's faults, as an iterator.

    Each fault is an :class:`~evstore.EvstoreError` with ``details["address"]``; the
    counters are the run's so far (a remote run's are known at its end). ``close()`` stops
    the run (a remote one: the server's run stops at its next object).
    """

    checked: int
    recorded: int
    not_recorded: str | None

    def __iter__(self) -> Iterator[EvstoreError]:
        """The run itself."""
        ...

    def __next__(self) -> EvstoreError:
        """The next fault (StopIteration at the end of the run)."""
        ...

    def close(self) -> None:
        """Stop the run; objects verified so far stay recorded."""
        ...


class RetentionProtocol(Protocol):
    """``store.retention``: roots, leases, gc and audits (docs/http.md#retention)."""

    def rooting(self, root: str = "default", actor: str = "local") -> AbstractContextManager[Any]:
        """A context in which writes root what they store under ``root``."""
        ...

    def retain(
        self, refs: Sequence[str], root: str, *, until: Any = None, actor: str = "local"
    ) -> dict[str, Any]:
        """Hold ``refs`` (and their closures) under ``root``: ``{"root", "until", "retained"}``."""
        ...

    def release(
        self, root: str, refs: Sequence[str] = (), *, actor: str = "local"
    ) -> dict[str, Any]:
        """Release ``refs`` from ``root`` (all of it without refs): ``{"root", "released"}``."""
        ...

    def roots(self) -> list[dict[str, Any]]:
        """Every root: ``[{"root", "entries", "held", "until"}]``."""
        ...

    def history(self, limit: int = 1000) -> list[dict[str, Any]]:
        """The retention events, newest first."""
        ...

    def missing(self, refs: Iterable[str], *, actor: str = "local") -> list[str]:
        """The refs (as given) not stored; those present get a lease."""
        ...

    def gc(
        self,
        *,
        dry_run: bool = False,
        vacuum_after: bool = False,
        batch: int = 200,
        actor: str = "local",
        progress: Callable[[int, int], None] | None = None,
    ) -> GcReport:
        """Collect every object no root reaches and whose lease expired."""
        ...

    def audit(
        self,
        roots: Sequence[str] = (),
        *,
        sample: float | None = None,
        seed: int = 0,
        since: Any = None,
        actor: str = "local",
        progress: Callable[[int, int], None] | None = None,
        record: bool = True,
    ) -> AuditRun:
        """Audit the retained artifacts (remote: run and recorded by the server, admin)."""
        ...

    def audits(self, limit: int = 50) -> list[dict[str, Any]]:
        """The recorded audit runs, newest first."""
        ...


class LogProtocol(Protocol):
    """``store.log``: the tamper-evident log (docs/log.md); remote since issue 28."""

    def status(self) -> dict[str, Any]:
        """``{"size", "root", "vkey", "checkpoint", "pending"}`` (``pending``: queued)."""
        ...

    def key(self) -> str:
        """The verifier key (``log.no-key`` without one)."""
        ...

    def latest(self) -> dict[str, Any] | None:
        """The latest signed checkpoint, or None."""
        ...

    def entries(self, start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
        """Entries ``start .. end - 1``."""
        ...

    def prove(self, ref: str | None = None, *, index: int | None = None) -> dict[str, Any]:
        """An inclusion proof at the latest checkpoint (``text``: the tlog-proof file)."""
        ...

    def prove_consistency(self, old_size: int, new_size: int | None = None) -> dict[str, Any]:
        """A consistency proof to a signed checkpoint (``text``: the proof file)."""
        ...

    def checkpoint(self, key_path: str | os.PathLike[str] | None) -> dict[str, Any]:
        """Sign a checkpoint now (remote: the server's key; ``key_path`` must be None)."""
        ...

    def integrate(self, key_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """Add queued entries to the tree (``{"integrated", "size", "pending",
        "checkpoint"}``), then sign given a key (remote: the server's key, if it has one;
        ``key_path`` must be None)."""  # noqa: D205, D209
        ...


class TokensProtocol(Protocol):
    """``store.tokens``: the bearer tokens of ``evstore serve`` (docs/http.md#auth).

    A local store writes its own table; a remote one asks its server (admin scope).
    ``evstore.create_token(store, ...)``, ``list_tokens`` and ``revoke_token`` call these.
    """

    def create(self, scope: str, name: str = "") -> dict[str, Any]:
        """``{"id", "token", "scope", "name", "created_at"}``; the only time ``token`` shows."""
        ...

    def list(self) -> list[dict[str, Any]]:
        """``[{"id", "scope", "name", "created_at", "revoked_at"}]``, oldest first."""
        ...

    def revoke(self, token_id: str) -> dict[str, Any]:
        """``{"id", "revoked": True, "revoked_at"}`` (``not-found.token``)."""
        ...


@runtime_checkable
class StoreProtocol(Protocol):
    """What every evstore store does, local or remote (``evstore.open`` returns one).

    Sizes are in bytes; a ref is a content ref in any accepted form (``blake3:``, ``sha256:``
    hex or base64url, ``object-store:sha256:``; evstore.core.refs). Each method raises the typed
    errors its :class:`~evstore.Store` counterpart documents, with the same code and
    pointer; a remote store adds the ``remote.*`` codes of docs/http.md#the-client. Every
    method raises RuntimeError once the store is closed.

    ``isinstance(x, StoreProtocol)`` checks only that the members exist; mypy checks their
    signatures.
    """

    # -- lifecycle ------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The store URL, with any password, user or token left out."""
        ...

    @property
    def path(self) -> Path | None:
        """The SQLite file of a local SQLite store, else None."""
        ...

    @property
    def created(self) -> bool:
        """True when opening this store created it (``create=True``; never for a remote)."""
        ...

    def close(self) -> None:
        """Release the connections; every later call raises RuntimeError."""
        ...

    def __enter__(self) -> Self:
        """The store itself (``with evstore.open(url) as store:``)."""
        ...

    def __exit__(self, *exc: object) -> None:
        """:meth:`close`."""
        ...

    # -- blobs ----------------------------------------------------------------------------
    def put(self, data: bytes | BinaryIO) -> PutResult:
        """Store bytes or a binary stream read to its end; its digest and whether it was new."""
        ...

    @overload
    def put_many(
        self,
        items: Iterable[bytes | os.PathLike[str] | BinaryIO],
        *,
        batch: int | None = None,
        on_batch: Callable[[int, int], None] | None = None,
        progress: Callable[[int], None] | None = None,
        results: None = None,
    ) -> list[PutResult]: ...

    @overload
    def put_many(
        self,
        items: Iterable[bytes | os.PathLike[str] | BinaryIO],
        *,
        batch: int | None = None,
        on_batch: Callable[[int, int], None] | None = None,
        progress: Callable[[int], None] | None = None,
        results: Callable[[PutResult], object],
    ) -> int: ...

    def put_many(
        self,
        items: Iterable[bytes | os.PathLike[str] | BinaryIO],
        *,
        batch: int | None = None,
        on_batch: Callable[[int, int], None] | None = None,
        progress: Callable[[int], None] | None = None,
        results: Callable[[PutResult], object] | None = None,
    ) -> list[PutResult] | int:
        """Store many blobs (bytes, paths or binary streams); one result per item, in order.

        With ``results`` (a sink), each result is handed to it in order once its
        transaction committed, and the number of items is returned instead of a list.
        """
        ...

    def get(self, ref: str) -> bytes:
        """The exact bytes ``ref`` names, verified against it (``not-found.blob``)."""
        ...

    def open_blob(
        self, ref: str, *, verify_first: bool = True
    ) -> AbstractContextManager[tuple[Digest, Iterator[bytes]]]:
        """Stream a blob: ``with store.open_blob(ref) as (digest, chunks): ...``.

        With ``verify_first`` False the chunks come as read and a mismatch is raised after
        the last one (the caller discards what it got); a remote store's digest then gives
        the announced ``size`` until the last chunk is verified.
        """
        ...

    def stat(self, ref: str, *, verify: bool = False) -> dict[str, Any]:
        """Facts about a stored blob: digest forms, size, how stored, the kinds it is."""
        ...

    def has(self, refs: Iterable[str]) -> list[str]:
        """The refs (as given) that name no stored blob (``input.invalid`` for a bare str)."""
        ...

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
        """Validate and store documents, all or nothing (or per ``batch``), or raise a fault."""
        ...

    def validate(
        self, docs: Any, *, options: dict[str, Any] | None = None, supplied: Sequence[bytes] = ()
    ) -> IngestReport:
        """Every check of :meth:`ingest`, every fault listed in the report; writes nothing."""
        ...

    def find(self, name: str, value: str, kind: str | None = None) -> list[ArtifactInfo]:
        """Artifacts whose lookup attribute ``name`` equals ``value``, oldest first."""
        ...

    def ls(
        self, kind: str | None = None, *, attr: tuple[str, str] | None = None
    ) -> list[ArtifactInfo]:
        """Stored artifacts, oldest first (of one ``kind``, with one attribute)."""
        ...

    def iter_artifacts(
        self,
        kind: str | None = None,
        *,
        attr: tuple[str, str] | None = None,
        after: str | None = None,
        limit: int | None = None,
    ) -> Iterator[ArtifactInfo]:
        """Artifacts in key order (address, then kind), after a cursor, at most ``limit``."""
        ...

    def iter_blobs(
        self, *, after: str | None = None, limit: int | None = None
    ) -> Iterator[dict[str, Any]]:
        """Every blob by address: ``{"address", "sha256", "size"}``."""
        ...

    def warnings(self, ref: str) -> list[dict[str, str]]:
        """Warnings recorded with the artifact at ``ref``: ``{"code", "message", "pointer"}``."""
        ...

    def load(self, ref: str) -> Any:
        """The parsed JSON value of a stored artifact (bytes verified first)."""
        ...

    # -- contract namespaces --------------------------------------------------------------
    @property
    def fragments(self) -> FragmentsProtocol:
        """Templiqx fragment operations."""
        ...

    @property
    def manifests(self) -> ManifestsProtocol:
        """Orbidocs manifest operations."""
        ...

    @property
    def packages(self) -> PackagesProtocol:
        """Insonic package operations."""
        ...

    @property
    def contexts(self) -> ContextsProtocol:
        """Notarius evidence-context operations."""
        ...

    @property
    def runs(self) -> RunsProtocol:
        """Run records and lineage."""
        ...

    @property
    def retention(self) -> RetentionProtocol:
        """Roots, leases and gc."""
        ...

    @property
    def log(self) -> LogProtocol:
        """The tamper-evident log."""
        ...

    @property
    def tokens(self) -> TokensProtocol:
        """The bearer tokens of the server."""
        ...

    def config(self, name: str | None = None) -> dict[str, Any]:
        """Every setting, or ``{name: value}``."""
        ...

    def check(
        self,
        progress: Callable[[int, int], None] | None = None,
        *,
        sample: float | None = None,
        seed: int = 0,
        kinds: Sequence[str] = (),
        since: Any = None,
        jobs: int = 1,
        record: bool = True,
        warnings: list[dict[str, str]] | None = None,
    ) -> CheckRunProtocol:
        """Re-verify the store, every fault yielded (remote: run by the server, admin)."""
        ...

    def recorded_warnings(self) -> list[dict[str, str]]:
        """The warnings recorded at ingest (remote: as the last :meth:`check` got them)."""
        ...

    def set_config(self, name: str, value: Any) -> Any:
        """Set a setting (a str is parsed as the CLI parses it); the stored value."""
        ...


if TYPE_CHECKING:
    # mypy proves here that the local store and each of its namespaces satisfy the protocol
    # (store/client/remote.py does the same for RemoteStore). Nothing runs.
    from .contracts.contexts.store import ContextOps
    from .contracts.fragments.store import FragmentOps
    from .contracts.manifests.store import ManifestOps
    from .contracts.packages.store import PackageOps
    from .contracts.runs.store import RunOps
    from .facade.admin import TokenOps
    from .facade.api import Store
    from .retention.ops import RetentionOps

    def _local(store: Store) -> StoreProtocol:
        return store

    def _local_namespaces(
        store: Store,
    ) -> tuple[
        FragmentsProtocol,
        ManifestsProtocol,
        PackagesProtocol,
        ContextsProtocol,
        RunsProtocol,
        RetentionProtocol,
        TokensProtocol,
    ]:
        return (
            FragmentOps(store),
            ManifestOps(store),
            PackageOps(store),
            ContextOps(store),
            RunOps(store),
            RetentionOps(store),
            TokenOps(store.transactions),
        )
