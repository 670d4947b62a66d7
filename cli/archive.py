"""Portable archives: ``archive export``, ``verify`` and ``import`` (docs/archive.md)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

import evstore

from .common import Ctx, emit, nonempty_path, open_store, pass_ctx

__all__ = ["archive", "register"]


def _limits(max_bytes: int | None) -> evstore.ArchiveLimits | None:
    return None if max_bytes is None else evstore.ArchiveLimits(max_bytes=max_bytes)


_MAX_BYTES = click.option(
    "--max-bytes",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Refuse an archive whose files declare more than N bytes in all "
    "(default 64 GiB; docs/archive.md#limits).",
)


@click.group()
def archive() -> None:
    """Export a closure as an OCI Image Layout, verify one offline, import one.

    Layout, one-liners for sha256sum/b3sum/jq and limits: docs/archive.md.
    """


@archive.command("export")
@click.argument("refs", nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    required=True,
    callback=nonempty_path,
    metavar="DIR|FILE.tar",
    help="A new (or empty) directory, or a path ending in .tar.",
)
@click.option(
    "--with-proofs",
    is_flag=True,
    help="Add each member's log entry and inclusion proof at the latest signed checkpoint, "
    "with the checkpoint and the verifier key (not byte-identical across exports).",
)
@pass_ctx
def export(ctx: Ctx, refs: tuple[str, ...], output: str, with_proofs: bool) -> None:
    """Write the closure of each REF (everything its edges reach) as an OCI Image Layout.

    Deterministic: the same closure gives byte-identical output from any store.

    Exit codes: 0 written; 1 ref.syntax, not-found.blob, corruption.*, output.unwritable,
    log.no-checkpoint, log.not-logged, store error (nothing is left at the output); 2 usage.
    """
    with open_store(ctx) as store:
        report = evstore.export_archive(store, list(refs), output, with_proofs=with_proofs)

    def human(r: Any) -> None:
        for root in r.roots:
            click.echo(f"{root['address']}  {root['kind']}  manifest {root['manifest']}")
        click.echo(f"{r.objects} objects, {r.bytes} bytes -> {r.output}")

    emit(ctx, report, human)


@archive.command("verify")
@click.argument("path", metavar="DIR|FILE.tar")
@click.option(
    "--key",
    metavar="VKEY",
    default=None,
    help="The log's verifier key, or a file holding it (`evstore log key`): every member's "
    "inclusion proof must verify under it (archives made with --with-proofs).",
)
@_MAX_BYTES
@pass_ctx
def verify(ctx: Ctx, path: str, key: str | None, max_bytes: int | None) -> None:
    """Check an archive without any store: digests, sizes, closures, edges, contract rules.

    The rules are judged with the default store settings (`archive import` judges them with
    the receiving store's).

    Exit codes: 0 every check passed; 1 faults (each names its file), input.unreadable;
    2 usage.
    """
    if key is not None and os.path.isfile(key):
        try:
            key = Path(key).read_text("utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise evstore.error("input.unreadable", f"cannot read {key}: {exc}", path=key) from None
    checked = evstore.verify_archive(path, limits=_limits(max_bytes), key=key)

    def human(c: Any) -> None:
        for f in c.faults:
            click.echo(f"FAILED {f}")
        for root in c.roots:
            click.echo(f"{root.address}  {root.kind}  {len(root.members)} objects")
        if c.proofs == "self-consistent":
            click.echo("proofs: consistent with the archive's own key (give --key to trust one)")
        elif c.proofs == "verified":
            click.echo("proofs: every member is in the checkpoint, signed by the key given")
        state = "ok" if c.ok else f"{len(c.faults)} fault(s)"
        click.echo(f"{path}: {state}")

    emit(ctx, checked, human)
    if not checked.ok:
        sys.exit(1)


@archive.command("import")
@click.argument("path", metavar="DIR|FILE.tar")
@_MAX_BYTES
@pass_ctx
def import_(ctx: Ctx, path: str, max_bytes: int | None) -> None:
    """Verify an archive, then store all of it in one transaction (or nothing).

    Every contract rule and binding is checked against this store, with its settings, as
    `ingest` checks it; every fault is reported (``details.faults`` with --json). Importing
    twice is a no-op. Creates the store when missing.

    Exit codes: 0 imported; 1 any fault (archive.*, the kinds' codes; nothing written),
    input.unreadable, store error; 2 usage.
    """
    with open_store(ctx, create=True) as store:
        try:
            report = evstore.import_archive(store, path, limits=_limits(max_bytes))
        except evstore.EvstoreError as err:
            if not ctx.json:
                for fault in err.details.get("faults", [])[1:]:
                    where = f"{fault['path']}: " if fault.get("path") else ""
                    at = f" at {fault['pointer']}" if fault.get("pointer") else ""
                    click.echo(f"fault: {where}{fault['code']}{at}: {fault['message']}", err=True)
            raise

    def human(r: Any) -> None:
        for root in r.roots:
            click.echo(f"{root['address']}  {root['kind']}")
        click.echo(f"{r.objects} objects: {r.new_blobs} new blobs, {r.new_artifacts} new artifacts")

    emit(ctx, report, human)


def register(cli: click.Group) -> None:
    """Add the ``archive`` group to the ``evstore`` group."""
    cli.add_command(archive)
