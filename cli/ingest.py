"""Ingest commands: ingest and validate (one Store call each, plus rendering)."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterable, Iterator
from typing import Any

import click

import evstore

from .batch import bulk_options, check_args, expand_paths, interrupted_note, listed
from .common import (
    Ctx,
    at_pointer,
    emit,
    ingest_options,
    is_http_url,
    open_store,
    pass_ctx,
    progress,
    read_input,
)
from .retention import root_option

#: Files a directory contributes to ingest/validate unless --include says otherwise.
DEFAULT_INCLUDE = ("*.json",)

__all__ = ["COMMANDS", "collect", "ingest", "register", "validate"]


def _scope(host_id: str | None, tenant_id: str | None, auth: str | None) -> dict[str, str] | None:
    """The fragment scope of the three scope options: all three or none (contract rule)."""
    return evstore.fragment_scope(
        host_id, tenant_id, auth, names=("--host-id", "--tenant-id", "--authorization-scope-id")
    )


def collect(
    files: tuple[str, ...],
    kind: str | None,
    contents: tuple[str, ...],
    sources: tuple[Any, ...],
    host_id: str | None,
    tenant_id: str | None,
    auth: str | None,
    source_document: str | None,
    bulk: dict[str, Any] | None = None,
) -> tuple[Iterator[evstore.Document], dict[str, Any], list[bytes]]:
    """Read the command's inputs: ``(documents, options, supplied bytes)`` for the Store call.

    The documents are read lazily, one file at a time, from FILES (a directory walked for
    ``*.json`` unless --include is given) and, with ``bulk["stdin_paths"]``, stdin's paths.
    With ``bulk["bar"]`` (a :class:`Progress`) drawn, the paths are listed first and their
    count is set as ``bulk["total"]``.

    Raises:
        click.UsageError: stdin given twice, or no input. InputError: ``kind.unknown`` (empty
            --kind), ``input.unreadable``. ContractError: ``fragment.scope-incomplete``.
    """
    bulk = bulk or {}
    if sum(1 for f in files if f == "-") > 1:
        raise click.UsageError("stdin (-) can be read once")
    check_args(files, bool(bulk.get("stdin_paths")))
    if kind is not None and not kind:
        raise evstore.error("kind.unknown", "--kind is empty; give a kind name (docs/kinds.md)")
    paths: Iterable[str] = expand_paths(
        files,
        include=bulk.get("include") or DEFAULT_INCLUDE,
        exclude=bulk.get("exclude") or (),
        stdin_paths=bool(bulk.get("stdin_paths")),
        nul=bool(bulk.get("nul")),
    )
    if "bar" in bulk:  # a drawn bar lists the paths first, for its total and ETA
        paths, bulk["total"] = listed(paths, bulk["bar"])
    docs = (evstore.Document(read_input(f), name=f, kind=kind) for f in paths)
    supplied = [read_input(c) for c in contents]
    options: dict[str, Any] = {}
    scope = _scope(host_id, tenant_id, auth)
    if scope is not None:
        options["scope"] = scope
    if sources:
        options["sources"] = [(d, f, read_input(p)) for d, f, p in sources]
        supplied += [b for _, _, b in options["sources"]]
    if source_document:
        options["source_document"] = source_document
    return docs, options, supplied


def _ingest_human(digests: bool) -> Any:
    def human(r: Any) -> None:
        for res in r.results:
            flag = "new" if res.new else "not new"
            click.echo(f"{res.digest.address}  {res.kind}  ({flag})")
            if digests:
                click.echo(f"  sha256:{res.digest.sha256}\n  sha256:{res.digest.sha256_b64u}")
            for w in res.warnings:
                click.echo(f"  warning: {w.code} {at_pointer(w.pointer)}: {w.message}")

    return human


@click.command()
@ingest_options
@bulk_options
@pass_ctx
@root_option
def ingest(
    ctx: Ctx,
    files: tuple[str, ...],
    kind: str | None,
    contents: tuple[str, ...],
    sources: tuple[Any, ...],
    host_id: str | None,
    tenant_id: str | None,
    authorization_scope_id: str | None,
    source_document: str | None,
    digests: bool,
    **bulk: Any,
) -> None:
    """Validate and store JSON documents, all in one transaction (all or nothing).

    FILES may be files, - (stdin) and directories (walked recursively for *.json, or what
    --include/--exclude say); --stdin-paths reads more paths from stdin (-z: NUL-separated).
    Reports the first fault in the order: JSON form, schema, contract rules, self-address,
    bindings. Ingesting an identical artifact again succeeds (new: false). Creates the
    store when missing. With --batch N every N documents are one transaction: rules that
    span the command (every --content used, an envelope's package stored or in the same
    call) hold per batch, and a failing batch leaves the earlier ones committed and says so.

    Fragment offsets (start_offset, end_offset) are UTF-8 byte offsets into the source bytes
    (--source, or ingest-source), never character counts; the end is exclusive: the quote is
    bytes [start_offset, end_offset).

    Exit codes: 0 stored; 1 rejected (nothing written; with --batch: nothing of the failing
    batch or after) or store error; 2 usage.
    """
    bar = progress(ctx, "ingest", unit="documents")
    listing = {**bulk, "bar": bar}
    docs, options, supplied = collect(
        files,
        kind,
        contents,
        sources,
        host_id,
        tenant_id,
        authorization_scope_id,
        source_document,
        listing,
    )
    total = listing.get("total")
    batch = bulk.get("batch")
    done = [0, 0]

    def record(batches: int, items: int) -> None:
        done[:] = [batches, items]

    with open_store(ctx, create=True) as store, bar:
        try:
            report = store.ingest(
                docs,
                options=options,
                supplied=supplied,
                batch=batch,
                on_batch=record,
                progress=lambda n: bar(n, total),
            )
        except KeyboardInterrupt:
            if batch is not None:
                interrupted_note(ctx, done, "documents")()
            raise
    emit(ctx, report, _ingest_human(digests))


def _validate_human(r: Any) -> None:
    for f in r.faults:
        click.echo(f"{f.path or '-'}: {f.code} {at_pointer(f.pointer)}: {f.message}")
        if f.rule:
            click.echo(f"  rule: {f.rule}")
    for res in r.results:
        for w in res.warnings:
            click.echo(f"warning: {res.kind} {w.code} {at_pointer(w.pointer)}: {w.message}")
    if r.ok:
        click.echo(f"valid: {r.documents} document(s)")


@click.command()
@ingest_options
@pass_ctx
def validate(
    ctx: Ctx,
    files: tuple[str, ...],
    kind: str | None,
    contents: tuple[str, ...],
    sources: tuple[Any, ...],
    host_id: str | None,
    tenant_id: str | None,
    authorization_scope_id: str | None,
    source_document: str | None,
    digests: bool,
) -> None:
    """Run every check of ingest on FILES, list all faults, write nothing.

    With no store at the URL (or no server reachable at an http(s) URL), only the contract
    rules are checked (against an empty scratch store; no store is created): a note on stderr
    says that bindings were not checked (``"bindings_checked": false`` and ``"new": null``
    with --json).

    Exit codes: 0 valid; 1 faults found or store error; 2 usage.
    """
    found, options, supplied = collect(
        files,
        kind,
        contents,
        sources,
        host_id,
        tenant_id,
        authorization_scope_id,
        source_document,
    )
    # read again locally when the server cannot be reached
    docs: Any = list(found) if is_http_url(ctx.url) else found
    bindings = True
    try:
        store = open_store(ctx)
    except evstore.StoreStateError as err:
        if err.code != "store.missing":
            raise
        bindings = False  # no store: contract rules only, against an empty scratch store
        store = None
    report = None
    if store is not None:
        with store:
            try:
                report = store.validate(docs, options=options, supplied=supplied)
            except evstore.EvstoreError as err:
                if err.code != "remote.unreachable":
                    raise
                bindings = False  # no server behind the URL: as with no store
    if report is None:
        with tempfile.TemporaryDirectory(prefix="evstore-validate-") as scratch:
            with evstore.open(f"sqlite:///{scratch}/scratch.db", create=True) as local:
                report = local.validate(docs, options=options, supplied=supplied)
    out = report.to_dict()
    out["bindings_checked"] = bindings
    if not bindings:  # no store to compare with: whether each would be new is unknown
        for row in out.get("artifacts", []):
            row["new"] = None
        where = "no server reachable" if is_http_url(ctx.url) else "no store"
        ctx.note(f"note: {where} at {ctx.url}: contract rules only, bindings were not checked")
    emit(ctx, out, lambda _: _validate_human(report))
    if not report.ok:
        sys.exit(1)


#: The commands of this area, as registered on the ``evstore`` group.
COMMANDS = (ingest, validate)


def register(cli: click.Group) -> None:
    """Add the ingest commands to the ``evstore`` group."""
    for command in COMMANDS:
        cli.add_command(command)
