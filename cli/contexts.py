"""``evstore excerpt``: build a notarius v1 evidence context from a stored source document.

Ingesting evidence contexts and source documents is the core ``evstore ingest --kind
evidence-context|source-document FILE [--source-document REF]``; bundles are
``evstore ingest-bundle`` (cli/runs.py).
"""

from __future__ import annotations

import re
import sys

import click

from .common import Ctx, emit, open_store, output_option, pass_ctx, write_output

__all__ = ["excerpt", "register"]

_RANGE = re.compile(r"(-?[0-9]+):(-?[0-9]+)")


def _parse_range(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> list:
    out = []
    for text in values:
        m = _RANGE.fullmatch(text)
        if m is None:
            raise click.BadParameter(f"{text!r} is not START:END (two unit ids, inclusive)")
        out.append((int(m.group(1)), int(m.group(2))))
    return out


@click.command()
@click.argument("source_ref")
@click.option(
    "--ref",
    "ranges",
    multiple=True,
    metavar="START:END",
    callback=_parse_range,
    help="A cited range of unit ids, inclusive (repeatable; none gives []).",
)
@click.option(
    "--window",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="N",
    help="Units of context added on each side, in source positions.",
)
@output_option
@pass_ctx
def excerpt(
    ctx: Ctx, source_ref: str, ranges: list[tuple[int, int]], window: int, output: str | None
) -> None:
    """Print the evidence context selected from the stored source document SOURCE_REF.

    The notarius v1 selection rule: each --ref range is widened by N positions on each
    side, clamped at the document boundaries, and the union is printed in source position
    order, each unit once, in canonical form (RFC 8785, nothing appended), so a host can
    recompute an excerpt and compare bytes. With --json: one object with the excerpt, its
    address and unit count.

    Exit codes: 0 ok; 1 ref.syntax, not-found.source-document, context.range-unknown,
    context.range-order, corruption.*; 2 usage (bad START:END or N).
    """
    with open_store(ctx) as store:
        got = store.contexts.excerpt_bytes(source_ref, ranges, window)
    if output:
        write_output(
            ctx, output, got.data, {"units": len(got.units), "address": got.digest.address}
        )
    elif ctx.json:
        emit(
            ctx,
            {
                "ok": True,
                "source": source_ref,
                "window": window,
                "units": len(got.units),
                "address": got.digest.address,
                "excerpt": got.units,
            },
        )
    else:
        sys.stdout.buffer.write(got.data)
        sys.stdout.buffer.flush()


def register(cli: click.Group) -> None:
    """Add ``excerpt`` to the ``evstore`` group."""
    cli.add_command(excerpt)
