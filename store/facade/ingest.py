"""The ingest and validate pipeline: :class:`Document` in, :class:`IngestReport` out.

Every JSON document goes through the same steps (docs/design.md, "Ingest"): the strict
reader (JSON form and canonical bytes), its kind (given or detected, docs/kinds.md), the
kind's ``check`` (shape, contract rules, self-address: a :class:`~evstore.core.errors.Faults`),
then its ``write`` (write-time bindings, then the rows). ``ingest`` raises the first fault and
writes nothing; ``validate`` lists every fault and always rolls back.

This module knows no contract and no database: it runs inside a transaction the facade
(:class:`evstore.Store`) opens, through the ``transaction`` callable it is given.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..core.canonical import loads, loads_canonical
from ..core.documents import as_documents
from ..core.errors import EvstoreError, Faults, InputError, error
from ..objects.artifacts import ArtifactResult, Document, IngestReport
from ..objects.kinds import KindHandler, detect_kind, get_handler, kind_record
from ..objects.txn import Txn

__all__ = [
    "Document",
    "IngestReport",
    "Parsed",
    "Progress",
    "STREAM_CHUNK",
    "Transact",
    "as_documents",
    "chunked",
    "ingest_documents",
    "offset_progress",
    "one_shot",
    "parse_documents",
    "run_batches",
    "validate_documents",
]

T = TypeVar("T")

#: Documents (or byte strings) read, parsed and written at a time inside one transaction: what
#: a streamed call holds in memory beyond its results.
STREAM_CHUNK = 500

#: ``transaction(work, mode=..., options=..., supplied=...)``: :meth:`evstore.Store.transaction`.
Transact = Callable[..., Any]


@dataclass(frozen=True)
class Parsed:
    """One document after the strict reader: its parsed ``value``, ``canonical`` bytes, ``kind``."""

    doc: Document
    value: Any
    canonical: bytes
    kind: str


def parse_documents(docs: Sequence[Document]) -> list[Parsed]:
    """Read each document strictly and settle its kind (the handler must load).

    Raises:
        JSONFormError: ``json.*``. InputError: ``kind.unknown``.
        StoreStateError: ``store.kind-unavailable`` (a handler that cannot be imported: the
            document is refused, never stored as ``json``). Each error carries the
            document's name as ``path``.
    """
    out = []
    for d in docs:
        try:
            value, canonical = loads_canonical(d.data)
            kind = d.kind or detect_kind(value)
            get_handler(kind)  # fails closed: a kind whose handler cannot load is refused
            if kind_record(kind).number_tokens:
                # The kind's rules need to see 10.0 as written (canonical bytes unchanged).
                value = loads(d.data, number_tokens=True)
        except EvstoreError as err:
            err.path = d.name
            raise
        out.append(Parsed(d, value, canonical, kind))
    return out


def check_errors(
    handler: KindHandler, value: Any, canonical: bytes, txn: Txn
) -> list[EvstoreError]:
    """A handler's check errors (``Faults.errors``), given the document's canonical bytes."""
    return Faults.of(handler.check(value, txn, canonical=canonical)).errors


def _unused_error(unused: list[str]) -> EvstoreError:
    # The caller meant those bytes for a document (--content, --source); silently ignoring
    # them would hide a wrong file or a wrong document.
    return error(
        "input.unused-content",
        f"{len(unused)} supplied byte string(s) are used by no document "
        f"(sha256:{unused[0]}{', ...' if len(unused) > 1 else ''})",
        sha256=unused,
    )


def _write_run(handler: KindHandler, run: list[Parsed], txn: Txn) -> list[ArtifactResult]:
    """Write a run of consecutive documents of one kind.

    The run's reads first (``prefetch``: one lookup for the whole run, e.g.
    store/contracts/manifests/store.py); each document is then checked and staged (its
    bindings, in order: first fault wins), then all are flushed with one statement per table.
    A kind that does not batch writes each document as it is staged (the declared defaults).
    """
    batch: dict[str, Any] = {}
    specs = []
    handler.prefetch([p.value for p in run], txn, batch)
    for p in run:
        try:
            faults = check_errors(handler, p.value, p.canonical, txn)
            if faults:
                raise faults[0]
            batch["name"] = p.doc.name
            specs.append(handler.stage(p.value, p.canonical, txn, batch))
        except EvstoreError as err:
            err.path = err.path or p.doc.name
            raise
    return list(handler.flush(specs, txn, batch))


def chunked(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of at most ``size`` (>= 1; the last may be shorter), read lazily.

    A ``size`` past ``sys.maxsize`` (``islice``'s bound) is one list of everything.
    """
    it = iter(items)
    size = min(size, sys.maxsize)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def one_shot(items: Iterable[T]) -> Callable[[], Iterable[T]]:
    """A getter of ``items`` for a transaction body that may be run again on contention.

    A sequence is returned again on every call; any other iterable (a generator, a file's
    lines) can be read once, so a second call raises ``store.busy`` instead of silently
    storing nothing.
    """
    used = [False]

    def take() -> Iterable[T]:
        if isinstance(items, Sequence):
            return items
        if used[0]:
            raise error(
                "store.busy",
                "the database was busy and the streamed input cannot be read again; "
                "nothing was written: run the command again",
            )
        used[0] = True
        return items

    return take


def _write_parsed(parsed: list[Parsed], txn: Txn, report: IngestReport) -> None:
    """Write each run of consecutive documents of one kind (:func:`_write_run`), in order."""
    i = 0
    while i < len(parsed):
        j = i + 1
        while j < len(parsed) and parsed[j].kind == parsed[i].kind:
            j += 1
        report.results.extend(_write_run(get_handler(parsed[i].kind), parsed[i:j], txn))
        i = j


#: ``progress(items done)``: called after each chunk of a streamed call (items so far).
Progress = Callable[[int], None]


def offset_progress(progress: Progress | None, base: int) -> Progress | None:
    """``progress`` counting from ``base`` (the items committed by earlier batches)."""
    if progress is None:
        return None
    return lambda n: progress(base + n)


def _ingest_work(
    docs: Iterable[Document], txn: Txn, progress: Progress | None = None
) -> IngestReport:
    """Ingest ``docs`` in this transaction, :data:`STREAM_CHUNK` documents at a time.

    Within a chunk every document is read (JSON form, kind) before the first is checked;
    memory holds one chunk's parsed values. ``progress(documents done)`` after each chunk.
    """
    report = IngestReport()
    for chunk in chunked(docs, STREAM_CHUNK):
        report.documents += len(chunk)
        _write_parsed(parse_documents(chunk), txn, report)
        if progress is not None:
            progress(report.documents)
    unused = txn.unused_supplied()
    if unused:
        raise _unused_error(unused)
    return report


def _batch_note(err: EvstoreError, done: int, stored: int) -> None:
    """Say in ``err`` which batches were committed before the failing one."""
    err.details["batch"] = done + 1
    err.details["committed_batches"] = done
    err.details["committed_items"] = stored
    if done:
        which = "batch 1 was" if done == 1 else f"batches 1-{done} were"
        err.message += (
            f" (batch {done + 1} was rolled back; {which} committed: {stored} item(s) stored)"
        )
    else:
        err.message += " (batch 1 was rolled back; nothing was stored)"


def run_batches(
    items: Iterable[T],
    batch: int,
    work: Callable[[list[T]], Any],
    on_batch: Callable[[int, int], None] | None = None,
) -> list[Any]:
    """Run ``work(chunk)`` (one transaction each) over ``items`` in chunks of ``batch``.

    Returns:
        Each chunk's result, in order.

    Raises:
        Whatever ``work`` raises, with ``details`` ``batch``, ``committed_batches`` and
        ``committed_items`` and a message saying which batches were committed.
    """
    if batch < 1:
        raise error("input.invalid", f"batch size must be at least 1, not {batch}")
    out: list[Any] = []
    stored = 0
    for chunk in chunked(items, batch):
        try:
            out.append(work(chunk))
        except EvstoreError as err:
            _batch_note(err, len(out), stored)
            raise
        stored += len(chunk)
        if on_batch is not None:
            on_batch(len(out), stored)
    return out


def _check_options(options: dict[str, Any] | None) -> None:
    """Refuse a ``source_document`` that is no content ref before anything is read.

    Raises:
        RefSyntaxError: ``ref.syntax`` (even when no document of the call would use it).
    """
    ref = (options or {}).get("source_document")
    if ref is not None:
        from ..core.refs import parse_ref

        parse_ref(ref)


def ingest_documents(
    transaction: Transact,
    docs: Iterable[Document],
    *,
    options: dict[str, Any] | None = None,
    supplied: Sequence[bytes] = (),
    batch: int | None = None,
    on_batch: Callable[[int, int], None] | None = None,
    progress: Progress | None = None,
) -> IngestReport:
    """Validate and store JSON documents: one transaction (all or nothing), or batches.

    Args:
        transaction: :meth:`evstore.Store.transaction` of the store written to.
        docs: the documents, in order: any iterable, read :data:`STREAM_CHUNK` at a time.
        options: kind-specific options (e.g. ``scope`` for fragments).
        supplied: bytes the documents may refer to by SHA-256; stored only when used.
        batch: None: one transaction for every document. N: one transaction per N documents;
            every rule that spans a call (supplied bytes must be used, an envelope's package
            must be stored or in the same call) holds per batch.
        on_batch: called as ``on_batch(batches committed, documents committed)`` after each
            committed batch.
        progress: called as ``progress(documents done)`` after each chunk of
            :data:`STREAM_CHUNK` (counting committed batches; for a progress display).

    Returns:
        The report (``faults`` empty).

    Raises:
        The first fault, in the order: JSON form, kind, schema, contract rules,
        self-address, bindings; then ``input.unused-content``. Nothing of the failing
        transaction is written; with ``batch`` the earlier batches stay committed and the
        error says so (``details.committed_batches``, ``details.committed_items``).
    """
    _check_options(options)
    if batch is None:
        take = one_shot(docs)
        return transaction(  # type: ignore[no-any-return]
            lambda txn: _ingest_work(take(), txn, progress), options=options, supplied=supplied
        )
    committed = [0]

    def one(chunk: list[Document]) -> IngestReport:
        tick = offset_progress(progress, committed[0])
        return transaction(  # type: ignore[no-any-return]
            lambda txn: _ingest_work(chunk, txn, tick), options=options, supplied=supplied
        )

    def after(batches: int, items: int) -> None:
        committed[0] = items
        if on_batch is not None:
            on_batch(batches, items)

    report = IngestReport()
    for r in run_batches(docs, batch, one, after):
        report.results.extend(r.results)
        report.documents += r.documents
    return report


def _validate_work(parsed: list[Parsed], report: IngestReport, txn: Txn) -> None:
    for p in parsed:
        if txn.poll is not None:
            txn.poll()
        handler = get_handler(p.kind)
        before = len(txn.faults)
        faults = check_errors(handler, p.value, p.canonical, txn)
        for f in faults:
            f.path = f.path or p.doc.name
        txn.faults.extend(faults)
        if not faults:
            try:
                report.results.append(handler.write(p.value, p.canonical, txn))
            except EvstoreError as err:  # a fault the handler could not defer
                txn.faults.append(err)
        for f in txn.faults[before:]:
            f.path = f.path or p.doc.name
    # Bytes a failing document would have used are never read (its checks stop at the first
    # failing stage), so unused bytes are a fault only when no document failed: otherwise it
    # would be reported although the caller supplied exactly the right bytes.
    unused = txn.unused_supplied()
    if unused and not txn.faults and not report.faults:
        txn.faults.append(_unused_error(unused))


def validate_documents(
    transaction: Transact,
    docs: Sequence[Document],
    *,
    options: dict[str, Any] | None = None,
    supplied: Sequence[bytes] = (),
    poll: Callable[[], None] | None = None,
) -> IngestReport:
    """Run every check of :func:`ingest_documents`, listing all faults; writes nothing.

    Bindings are checked against the store as it is (``transaction(..., mode="validate")``:
    a read snapshot with an in-memory overlay, no write lock) and against earlier documents
    of the same call. JSON-form and kind faults are listed per document;
    ``input.unused-content`` only when no document has a fault (a failing document never
    reads its bytes). ``poll()`` runs before each document is parsed and before each is
    checked; what it raises stops the call. Never raises an InputError;
    ``store.kind-unavailable`` and other store errors are raised.
    """
    report = IngestReport(documents=len(docs))
    try:
        _check_options(options)
    except InputError as err:
        report.faults.append(err)
        return report
    parsed: list[Parsed] = []
    for d in docs:
        if poll is not None:
            poll()
        try:
            parsed.extend(parse_documents([d]))
        except InputError as err:
            report.faults.append(err)
    _, faults = transaction(
        lambda txn: _validate_work(parsed, report, txn),
        mode="validate",
        options=options,
        supplied=supplied,
        poll=poll,
    )
    report.faults.extend(faults)
    return report
