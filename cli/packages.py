"""``evstore export`` and ``evstore package ...``: insonic answer evidence packages (1.3.0).

Ingest, validate and find are core commands (``evstore ingest P.json``, ``evstore validate``,
``evstore find --package-id U`` / ``--key K``, ``evstore ls --kind package --workspace W``);
this module adds the export of a stored package with its current observations, and a helper
that computes a context's own byte size.
"""

from __future__ import annotations

import sys
from typing import Any

import click

import evstore

from .common import Ctx, emit, fail, nonempty_path, open_store, pass_ctx, read_input, write_output

__all__ = ["context_size", "export", "package", "register"]


@click.command()
@click.argument("ref")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    callback=nonempty_path,
    help="Write to this file instead of stdout (exact bytes, no newline added).",
)
@pass_ctx
def export(ctx: Ctx, ref: str, output: str | None) -> None:
    """Print a stored insonic package unchanged, wrapped with current observations.

    REF is the package's content ref (blake3:..., sha256:...) or its id (a UUID). The
    output is one canonical JSON object (also with --json): "package" holds the stored
    bytes verbatim; "observations" holds what is true now, outside the immutable package:
    accepted_at (when the store first accepted it), freshness (for each cited recording
    revision, whether it is still the newest the store knows), envelopes citing it, and
    the warnings recorded at ingest.

    Exit codes: 0 ok; 1 not-found.artifact, ref.syntax, corruption.*, store errors.
    """
    with open_store(ctx) as store:
        data = store.packages.export(ref)
    if output:
        write_output(ctx, output, data)
        return
    sys.stdout.buffer.write(data + b"\n")
    sys.stdout.buffer.flush()


@click.group()
def package() -> None:
    """Insonic answer evidence packages (1.3.0)."""


@package.command("context-size")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@pass_ctx
def context_size(ctx: Ctx, file: str) -> None:
    """Compute context.bytes for the package in FILE (or stdin for -).

    context.bytes is the UTF-8 length of the compact JSON (no spaces, non-ASCII
    unescaped) of the context object itself, holding its own final value; tokens equals
    bytes under utf8-byte-upper-bound. Prints the measured size with the claimed values,
    and the value that would make them right (fixed_point).

    Exit codes: 0 bytes and tokens are right; 1 they are not, or FILE is not a JSON
    object with a context object (json.*, input.*).
    """
    out: dict[str, Any] = evstore.package_context_size(read_input(file), file).to_dict()
    human = (
        f"measured {out['measured']} bytes; claimed bytes {out['claimed_bytes']}, "
        f"tokens {out['claimed_tokens']}; right value {out['fixed_point']}"
    )
    if not out["ok"]:
        fail(ctx, out, human)
    emit(ctx, out, human)


def register(cli: click.Group) -> None:
    """Add ``export`` and the ``package`` group to the ``evstore`` group."""
    cli.add_command(export)
    cli.add_command(package)
