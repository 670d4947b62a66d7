"""Fragment commands (templiqx v1alpha1): ingest-source, quote, fragments, fragment-sources.

Ingesting fragments and eval outputs is the core ``evstore ingest`` (with ``--source`` and the
scope options); ``evstore find --quote-sha256`` is core too. See docs/fragments.md.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from .common import Ctx, emit, open_store, pass_ctx, read_input

__all__ = ["fragment_sources", "fragments", "ingest_source", "quote", "register"]


@click.command("ingest-source")
@click.option("--document-id", required=True, help="The fragments' document_id.")
@click.option("--fragment-id", required=True, help="The fragments' fragment_id.")
@click.option(
    "--revision-checksum",
    default=None,
    metavar="HEX",
    help="Bind this revision checksum (64 lowercase hex) to the document and these bytes.",
)
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@pass_ctx
def ingest_source(
    ctx: Ctx, document_id: str, fragment_id: str, revision_checksum: str | None, file: str
) -> None:
    """Register FILE (or stdin for -) as a content version of DOCUMENT_ID/FRAGMENT_ID.

    The exact bytes are stored (no decoding, no newline, BOM or Unicode normalisation) and
    must be well-formed UTF-8. A pair may gain further versions; fragments pick one by
    content_sha256 or a revision extension. Creates the store when missing.

    Fragment offsets into these bytes are UTF-8 byte offsets, never character counts; the end
    is exclusive: a fragment quotes bytes [start_offset, end_offset).

    Exit codes: 0 registered (or already registered); 1 rejected (fragment.shape,
    fragment.revision-format, fragment.source-encoding, fragment.revision-mismatch) or
    store error; 2 usage.
    """
    data = read_input(file)
    with open_store(ctx, create=True) as store:
        res = store.fragments.ingest_source(
            data, document_id, fragment_id, revision_checksum, name=file
        )
    out = res.to_dict()
    emit(
        ctx,
        out,
        f"{out['address']}  fragment-source  ({'new' if res.new else 'not new'})\n"
        f"  content sha256:{out['content_sha256']}  {out['size']} bytes",
    )


@click.command()
@click.argument("ref")
@pass_ctx
def quote(ctx: Ctx, ref: str) -> None:
    """Print the exact quoted bytes of the stored fragment REF (nothing appended).

    The bytes come from the source version the fragment was verified against and are
    re-verified first. With --json: one object with the quote as text and its offsets.

    Exit codes: 0 ok; 1 ref.syntax, not-found.blob, not-found.fragment,
    fragment.unknown-content, corruption.*.
    """
    with open_store(ctx) as store:
        data = store.fragments.quote(ref)
    if ctx.json:
        emit(ctx, {"ref": ref, "quote": data.decode("utf-8"), "size": len(data)})
        return
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


@click.command()
@click.option("--document-id", required=True, help="List the fragments of this document_id.")
@pass_ctx
def fragments(ctx: Ctx, document_id: str) -> None:
    """List stored fragments of a document, oldest first.

    Exit codes: 0 ok (an empty list included); 1 store error.
    """
    with open_store(ctx) as store:
        rows = [a.to_dict() for a in store.fragments.by_document(document_id)]

    def human(x: dict[str, Any]) -> None:
        for r in x["fragments"]:
            click.echo(f"{r['address']}  {r['accepted_at']}")

    emit(ctx, {"fragments": rows}, human)


@click.command("fragment-sources")
@click.option("--document-id", required=True, help="The document_id.")
@click.option("--fragment-id", required=True, help="The fragment_id.")
@pass_ctx
def fragment_sources(ctx: Ctx, document_id: str, fragment_id: str) -> None:
    """List the content versions registered for DOCUMENT_ID/FRAGMENT_ID, oldest first.

    Exit codes: 0 ok (an empty list included); 1 store error.
    """
    with open_store(ctx) as store:
        rows = []
        for a in store.fragments.sources(document_id, fragment_id):
            d = a.to_dict()
            d["record"] = store.load(a.address)
            rows.append(d)

    def human(x: dict[str, Any]) -> None:
        for r in x["sources"]:
            rev = r["record"].get("revision_checksum")
            extra = f"  revision {rev}" if rev else ""
            click.echo(f"sha256:{r['record']['content_sha256']}  {r['accepted_at']}{extra}")

    emit(ctx, {"sources": rows}, human)


def register(cli: click.Group) -> None:
    """Add the fragment commands to the ``evstore`` group."""
    for command in (ingest_source, quote, fragments, fragment_sources):
        cli.add_command(command)
