"""``evstore manifest ...``: orbidocs corpus passage evidence manifests (v1).

Ingest, validate and find are core commands (``evstore ingest M.json --content FILE``,
``evstore validate``, ``evstore find --manifest-ref R``); this group adds what is specific to
manifests. Each command is one library call plus rendering.
"""

from __future__ import annotations

import sys

import click

import evstore

from .common import Ctx, emit, fail, open_store, output_option, pass_ctx, read_input, write_output

__all__ = ["address", "content", "manifest", "register"]


@click.group()
def manifest() -> None:
    """Orbidocs corpus passage evidence manifests (v1)."""


@manifest.command()
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@pass_ctx
def address(ctx: Ctx, file: str) -> None:
    """Compute the manifest/ref of the manifest in FILE (or stdin for -).

    The address is the SHA-256 of the manifest's RFC 8785 form without its manifest/ref
    member; use it to build a manifest, or to see why one fails manifest.self-address.

    Exit codes: 0 the file's manifest/ref matches (or it has none); 1 it differs, or the
    file is not a JSON object (json.*, input.*).
    """
    out = evstore.manifest_address(read_input(file), path=file)
    if not out["matches"]:
        fail(ctx, out, f"{out['computed']}\nmanifest/ref differs: {out['claimed']}")
    emit(ctx, out, out["computed"])


@manifest.command()
@click.argument("manifest_ref")
@output_option
@pass_ctx
def content(ctx: Ctx, manifest_ref: str, output: str | None) -> None:
    """Print the exact rendered content of the stored manifest MANIFEST_REF.

    MANIFEST_REF is a manifest's manifest/ref (corpus-evidence-manifest:sha256:...). The
    bytes are verified before they are written; nothing is appended.

    Exit codes: 0 ok; 1 not-found.artifact, not-found.blob, corruption.*, store errors.
    """
    with open_store(ctx) as store:
        data = store.manifests.content(manifest_ref)
    if output:
        write_output(ctx, output, data)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def register(cli: click.Group) -> None:
    """Add the ``manifest`` group to the ``evstore`` group."""
    cli.add_command(manifest)
