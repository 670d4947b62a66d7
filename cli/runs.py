"""Run bundles and lineage: ``ingest-bundle``, ``runs``, ``refs``, ``closure``."""

from __future__ import annotations

import sys
from typing import Any

import click

from .common import Ctx, emit, open_store, pass_ctx, progress
from .retention import root_option

__all__ = ["closure", "ingest_bundle", "refs", "register", "runs"]


@click.command("ingest-bundle")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option(
    "--source-document",
    default=None,
    metavar="REF",
    help="Check the evidence context against this stored source document "
    "(instead of the bundle's own).",
)
@pass_ctx
@root_option
def ingest_bundle(ctx: Ctx, directory: str, source_document: str | None) -> None:
    """Store the run bundle DIRECTORY (index.json and every file it names) as a run record.

    Files of a known artifact_kind are validated by their kind; other files are stored as
    blobs and listed. The whole bundle is one transaction: one bad file writes nothing.
    The same bundle again gives the same record (new: false). Layout: docs/bundle.md.
    Creates the store when missing.

    Exit codes: 0 stored; 1 rejected (bundle.*, context.*, json.*, any kind's codes;
    nothing written) or store error; 2 usage.
    """
    with open_store(ctx, create=True) as store, progress(ctx, "ingest-bundle") as bar:
        report = store.runs.ingest_bundle(directory, source_document=source_document, progress=bar)

    def human(r: Any) -> None:
        flag = "new" if r.record.new else "not new"
        click.echo(f"{r.record.digest.address}  run  ({flag})")
        for name, f in sorted(r.files.items()):
            art = f.get("artifact")
            what = f"{art['kind']} {art['address']}" if art else "blob"
            click.echo(f"  {name}: {f['raw']} ({f['size']} bytes) {what}")
        ec = r.tree.get("evidence_context")
        if ec is None:
            click.echo("  evidence context: not published")
        else:
            against = f" against {ec['source_document']}" if "source_document" in ec else ""
            click.echo(f"  evidence context: {ec['source_check']}{against}")

    emit(ctx, report, human)


@click.command()
@pass_ctx
def runs(ctx: Ctx) -> None:
    """List the run records, oldest first.

    Exit codes: 0 ok; 1 store error.
    """
    with open_store(ctx) as store:
        rows = store.runs.runs()

    def human(x: dict[str, Any]) -> None:
        for r in x["runs"]:
            click.echo(
                f"{r['address']}  {r['accepted_at']}  {r['files']} files, "
                f"{r['artifacts']} artifacts, evidence context "
                f"{r['evidence_context']}"
            )

    emit(ctx, {"runs": rows}, human)


@click.command()
@click.argument("ref")
@click.option(
    "--all",
    "transitive",
    is_flag=True,
    help="Also list referrers of referrers (e.g. source <- fragment <- run).",
)
@pass_ctx
def refs(ctx: Ctx, ref: str, transitive: bool) -> None:
    """List the stored artifacts that refer to REF, from the edges written at ingest.

    Referrers are run records, packages, envelopes, manifests, fragments and evidence
    contexts; REF is a blob or an artifact in any content-ref form.

    Exit codes: 0 ok (an empty list included); 1 ref.syntax, not-found.blob, store error.
    """
    with open_store(ctx) as store:
        rows = store.runs.refs(ref, transitive=transitive)

    def human(x: dict[str, Any]) -> None:
        for r in x["refs"]:
            kinds = ",".join(r["kinds"])
            click.echo(f"{r['address']}  {kinds}  {r['role']} -> {r['refers_to']}")

    emit(ctx, {"ref": ref, "refs": rows}, human)


@click.command()
@click.argument("ref")
@pass_ctx
def closure(ctx: Ctx, ref: str) -> None:
    """List everything REF needs (following its edges), verifying each object's bytes.

    Exit codes: 0 every object present and intact; 1 a missing or corrupt object (all are
    listed), ref.syntax, not-found.blob, store error.
    """
    with open_store(ctx) as store:
        result = store.runs.closure(ref)

    def human(c: Any) -> None:
        for item in c.items:
            state = "ok" if item["ok"] else f"FAILED {item['error']['code']}"
            kinds = ",".join(item.get("kinds", [])) or "blob"
            via = f"  ({item['via']['role']})" if "via" in item else ""
            click.echo(f"{item['address']}  {kinds}  {state}{via}")

    emit(ctx, result, human)
    if not result.ok:
        sys.exit(1)


def register(cli: click.Group) -> None:
    """Add the run-record and lineage commands to the ``evstore`` group."""
    for command in (ingest_bundle, runs, refs, closure):
        cli.add_command(command)
