"""The ingest and validate pipeline: :class:`Document` in, :class:`IngestReport` out.

Every JSON document goes through the same steps (docs/design.md, "Ingest"): the strict
reader (JSON form and canonical bytes), its kind (given or detected, docs/kinds.md), the
kind's ``check`` (shape, contract rules, self-address: a :class:`~evstore.errors.Faults`),
then its ``write`` (write-time bindings, then the rows). ``ingest`` raises the first fault and
writes nothing; ``validate`` lists every fault and always rolls back.

This module knows no contract and no database: it runs inside a transaction the facade
(:class:`evstore.Store`) opens, through the ``transaction`` callable it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .artifacts import ArtifactResult, Document, IngestReport
from .canonical import loads, loads_canonical
from .errors import EvstoreError, Faults, InputError, error
from .kinds import detect_kind, get_handler
from .txn import Txn

__all__ = [
    "Document",
    "IngestReport",
    "Parsed",
    "Transact",
    "ingest_documents",
    "parse_documents",
    "validate_documents",
]

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
            if getattr(get_handler(kind), "number_tokens", False):
                # The kind's rules need to see 10.0 as written (canonical bytes unchanged).
                value = loads(d.data, number_tokens=True)
        except EvstoreError as err:
            err.path = d.name
            raise
        out.append(Parsed(d, value, canonical, kind))
    return out


def check_errors(handler: Any, value: Any, canonical: bytes, txn: Txn) -> list[EvstoreError]:
    """A handler's check errors (``Faults.errors``).

    The canonical bytes are passed when the handler accepts them (``accepts_canonical``).
    """
    if getattr(handler, "accepts_canonical", False):
        return Faults.of(handler.check(value, txn, canonical=canonical)).errors
    return Faults.of(handler.check(value, txn)).errors


def _unused_error(unused: list[str]) -> EvstoreError:
    # The caller meant those bytes for a document (--content, --source); silently ignoring
    # them would hide a wrong file or a wrong document.
    return error(
        "input.unused-content",
        f"{len(unused)} supplied byte string(s) are used by no document "
        f"(sha256:{unused[0]}{', ...' if len(unused) > 1 else ''})",
        sha256=unused,
    )


def _write_batch(handler: Any, run: list[Parsed], txn: Txn) -> list[ArtifactResult]:
    """Write a run of documents of one batchable kind.

    Each is checked, then staged (its bindings, in order: first fault wins), then all are
    written with one statement per table.
    """
    batch: dict[str, Any] = {}
    specs = []
    for p in run:
        try:
            faults = check_errors(handler, p.value, p.canonical, txn)
            if faults:
                raise faults[0]
            specs.append(handler.stage(p.value, p.canonical, txn, batch))
        except EvstoreError as err:
            err.path = err.path or p.doc.name
            raise
    return list(handler.flush(specs, txn))


def _ingest_work(parsed: list[Parsed], txn: Txn) -> IngestReport:
    report = IngestReport(documents=len(parsed))
    i = 0
    while i < len(parsed):
        p = parsed[i]
        handler = get_handler(p.kind)
        if hasattr(handler, "stage"):
            j = i
            while j < len(parsed) and parsed[j].kind == p.kind:
                j += 1
            report.results.extend(_write_batch(handler, parsed[i:j], txn))
            i = j
            continue
        try:
            faults = check_errors(handler, p.value, p.canonical, txn)
            if faults:
                raise faults[0]
            report.results.append(handler.write(p.value, p.canonical, txn))
        except EvstoreError as err:
            err.path = err.path or p.doc.name
            raise
        i += 1
    unused = txn.unused_supplied()
    if unused:
        raise _unused_error(unused)
    return report


def ingest_documents(
    transaction: Transact,
    docs: Sequence[Document],
    *,
    options: dict[str, Any] | None = None,
    supplied: Sequence[bytes] = (),
) -> IngestReport:
    """Validate and store JSON documents in one transaction (all or nothing).

    Args:
        transaction: :meth:`evstore.Store.transaction` of the store written to.
        docs: the documents, in order.
        options: kind-specific options (e.g. ``scope`` for fragments).
        supplied: bytes the documents may refer to by SHA-256; stored only when used.

    Returns:
        The report (``faults`` empty).

    Raises:
        The first fault, in the order: JSON form, kind, schema, contract rules,
        self-address, bindings; then ``input.unused-content``. Nothing is written.
    """
    parsed = parse_documents(docs)
    return transaction(  # type: ignore[no-any-return]
        lambda txn: _ingest_work(parsed, txn), options=options, supplied=supplied
    )


def _validate_work(parsed: list[Parsed], report: IngestReport, txn: Txn) -> None:
    for p in parsed:
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
) -> IngestReport:
    """Run every check of :func:`ingest_documents`, listing all faults; writes nothing.

    Bindings are checked against the store as it is (and against earlier documents of the
    same call). JSON-form and kind faults are listed per document; ``input.unused-content``
    only when no document has a fault (a failing document never reads its bytes). Never raises an
    InputError; ``store.kind-unavailable`` and other store errors are raised.
    """
    report = IngestReport(documents=len(docs))
    parsed: list[Parsed] = []
    for d in docs:
        try:
            parsed.extend(parse_documents([d]))
        except InputError as err:
            report.faults.append(err)
    _, faults = transaction(
        lambda txn: _validate_work(parsed, report, txn),
        mode="validate",
        options=options,
        supplied=supplied,
    )
    report.faults.extend(faults)
    return report
