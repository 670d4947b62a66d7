"""Object commands: put, get, stat, has, find, ls (one Store call each, plus rendering)."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

import click

import evstore

from .common import (
    Ctx,
    at_pointer,
    digest_lines,
    digests_option,
    emit,
    fail,
    open_store,
    output_option,
    pass_ctx,
    write_output,
)

__all__ = ["COMMANDS", "find", "get", "has", "ls", "put", "register", "stat"]


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@digests_option
@pass_ctx
def put(ctx: Ctx, file: str, digests: bool) -> None:
    """Store the exact bytes of FILE (or stdin for -), streamed; print the address.

    Creates the store when missing. Exit codes: 0 stored (or already stored); 1 error.
    """
    with open_store(ctx, create=True) as store:
        if file == "-":
            res = store.put(sys.stdin.buffer)
        else:
            try:
                fh = Path(file).open("rb")
            except OSError as exc:
                raise evstore.error(
                    "input.unreadable", f"cannot read {file}: {exc.strerror}", path=file
                ) from None
            with fh:
                res = store.put(fh)
    d = res.digest.forms()
    d["new"] = res.new
    emit(ctx, d, digest_lines(d, digests))
    if not res.new and not ctx.json:
        click.echo("already stored (not new)", err=True)


@click.command()
@click.argument("ref")
@output_option
@pass_ctx
def get(ctx: Ctx, ref: str, output: str | None) -> None:
    """Print the exact stored bytes of REF (nothing appended), verified first.

    REF: blake3:<hex>, sha256:<hex>, sha256:<base64url> or object-store:sha256:<base64url>.
    Exit codes: 0 ok; 1 ref.syntax, not-found.blob, corruption.*.
    """
    with open_store(ctx) as store, store.open_blob(ref) as (digest, chunks):
        first = next(chunks, b"")  # verification happens before the first chunk
        if output:
            write_output(ctx, output, itertools.chain([first], chunks), {"address": digest.address})
        else:
            out = sys.stdout.buffer
            out.write(first)
            for c in chunks:
                out.write(c)
            out.flush()


def _stat_human(digests: bool) -> Any:
    def human(x: dict[str, Any]) -> None:
        click.echo(digest_lines(x, digests))
        click.echo(f"size: {x['size']} bytes ({x['stored']})")
        for a in x["artifacts"]:
            click.echo(f"artifact: {a['kind']} {a['contract_version']} accepted {a['accepted_at']}")
        for w in x.get("warnings", []):
            click.echo(f"warning: {w['code']} {at_pointer(w['pointer'])}: {w['message']}")

    return human


@click.command()
@click.argument("ref")
@digests_option
@pass_ctx
def stat(ctx: Ctx, ref: str, digests: bool) -> None:
    """Show a blob's size, digests and the kinds it is stored as.

    Exit codes: 0 ok; 1 ref.syntax, not-found.blob.
    """
    with open_store(ctx) as store:
        d = store.stat(ref)
    emit(ctx, d, _stat_human(digests))


@click.command()
@click.argument("refs", nargs=-1, required=True)
@pass_ctx
def has(ctx: Ctx, refs: tuple[str, ...]) -> None:
    """Print the REFS that name no stored blob.

    Exit codes: 0 all present; 1 some missing (or ref.syntax).
    """
    with open_store(ctx) as store:
        missing = store.has(refs)
    if missing:
        fail(ctx, {"ok": False, "missing": missing}, "\n".join(missing))
    emit(ctx, {"ok": True, "missing": []}, "")


def _criterion(named: dict[str, str | None], attr: str | None) -> tuple[str, str]:
    """The one lookup criterion of ``find`` (click.UsageError unless exactly one)."""
    crit = [(n, v) for n, v in named.items() if v is not None]
    if attr is not None:
        name, sep, value = attr.partition("=")
        if not sep or not name:
            raise click.UsageError("--attr takes NAME=VALUE")
        crit.append((name, value))
    if len(crit) != 1:
        raise click.UsageError("give exactly one criterion")
    return crit[0]


def _find_human(x: dict[str, Any]) -> None:
    for r in x["artifacts"]:
        click.echo(f"{r['address']}  {r['kind']}  {r['accepted_at']}")
        for w in r.get("warnings", []):
            click.echo(f"  warning: {w['code']} {at_pointer(w['pointer'])}: {w['message']}")


@click.command()
@click.option("--manifest-ref", default=None, help="An orbidocs manifest's manifest/ref.")
@click.option(
    "--package-id", default=None, help="An insonic package id (uuid): packages and envelopes."
)
@click.option("--quote-sha256", default=None, help="A templiqx fragment's quote_sha256.")
@click.option("--key", default=None, help="An insonic package key.")
@click.option(
    "--attr", default=None, metavar="NAME=VALUE", help="Any lookup attribute (docs/kinds.md)."
)
@click.option("--kind", default=None, help="Only artifacts of this kind.")
@pass_ctx
def find(
    ctx: Ctx,
    manifest_ref: str | None,
    package_id: str | None,
    quote_sha256: str | None,
    key: str | None,
    attr: str | None,
    kind: str | None,
) -> None:
    """Find artifacts by contract identifiers that are not digests of stored bytes.

    Exactly one criterion. Exit codes: 0 found; 1 nothing found (not-found.artifact); 2 usage.
    """
    named = {
        "manifest_ref": manifest_ref,
        "package_id": package_id,
        "quote_sha256": quote_sha256,
        "key": key,
    }
    name, value = _criterion(named, attr)
    if kind is not None:
        evstore.check_kind(kind)  # kind.unknown / store.kind-unavailable before the store
    if name == "package_id":
        value = evstore.normalize_uuid(value)  # UUIDs compare case-insensitively
    with open_store(ctx) as store:
        rows = []
        for a in store.find(name, value, kind=kind):
            d = a.to_dict()
            w = store.warnings(a.address)
            if w:
                d["warnings"] = w
            rows.append(d)
    if not rows:
        raise evstore.error("not-found.artifact", f"no artifact with {name} = {value!r}")
    emit(ctx, {"artifacts": rows}, _find_human)


@click.command()
@click.option("--kind", default=None, help="Only artifacts of this kind.")
@click.option("--workspace", default=None, help="Only packages of this workspace_id.")
@pass_ctx
def ls(ctx: Ctx, kind: str | None, workspace: str | None) -> None:
    """List stored artifacts, oldest first.

    Exit codes: 0 ok; 1 store error.
    """
    if kind is not None:
        evstore.check_kind(kind)  # kind.unknown / store.kind-unavailable before the store
    with open_store(ctx) as store:
        rows = store.ls(
            kind,
            attr=("workspace_id", evstore.normalize_uuid(workspace))
            if workspace is not None
            else None,
        )
    emit(ctx, {"artifacts": [r.to_dict() for r in rows]}, _ls_human)


def _ls_human(x: dict[str, Any]) -> None:
    for r in x["artifacts"]:
        click.echo(f"{r['address']}  {r['kind']}  {r['size']}  {r['accepted_at']}")


#: The commands of this area, as registered on the ``evstore`` group.
COMMANDS = (put, get, stat, has, find, ls)


def register(cli: click.Group) -> None:
    """Add the object commands to the ``evstore`` group."""
    for command in COMMANDS:
        cli.add_command(command)
