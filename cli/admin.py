"""Store administration commands: init, migrate, config, check."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

import evstore

from .common import Ctx, at_pointer, emit, json_text, open_store, pass_ctx, progress

__all__ = ["COMMANDS", "check", "config", "init", "migrate", "register"]


@click.command()
@click.option(
    "--blobs",
    "blobs",
    metavar="BACKEND",
    default=None,
    help="Where large blobs' bytes go: inline (the database; the default), file:DIR or "
    "s3://BUCKET/PREFIX[?endpoint=URL&region=R] (credentials from AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY; the endpoint also from AWS_ENDPOINT_URL). Sets blobs.backend.",
)
@pass_ctx
def init(ctx: Ctx, blobs: str | None) -> None:
    """Create the store (if missing) at the latest schema.

    Exit codes: 0 created or already current; 1 store error (e.g. store.schema-behind:
    run `evstore migrate`; blobs.spec, blobs.unreachable, blobs.credentials for --blobs,
    blobs.shared when its marker names another store: a directory or prefix has one store).
    """
    r = evstore.init(ctx.url, blobs=blobs)
    state = "created" if r["created"] else "already initialised"
    where = f", blobs in {r['blobs']}" if blobs is not None else ""
    emit(ctx, r, f"{state}: {r['url']} (schema {r['schema']}{where})")


@click.command()
@pass_ctx
def migrate(ctx: Ctx) -> None:
    """Upgrade an existing store's schema to this evstore's (never done silently).

    Exit codes: 0 migrated or already current; 1 store.missing, store.schema-ahead.
    """
    r = evstore.migrate(ctx.url)
    url, before, after = r["url"], r["from"], r["to"]
    emit(
        ctx,
        r,
        f"{url}: schema {before} -> {after}"
        if before != after
        else f"{url}: schema {after} is current",
    )


@click.command()
@click.argument("name", required=False)
@click.argument("value", required=False)
@pass_ctx
def config(ctx: Ctx, name: str | None, value: str | None) -> None:
    """Show settings, show one (NAME), or set one (NAME VALUE). docs/settings.md lists them.

    Values print as JSON. Booleans take true/false; lists take a JSON array of strings
    or a comma-separated list (a.rev,b.rev).

    Exit codes: 0 ok; 1 config.unknown, config.value, store errors.
    """
    with open_store(ctx) as store:
        if name is not None and value is not None:
            stored = store.set_config(name, value)
            emit(ctx, {name: stored}, f"{name} = {json.dumps(stored)}")
            return
        values = store.config(name)
    emit(ctx, values, _print_settings)


def _print_settings(values: dict[str, Any]) -> None:
    for k in sorted(values):
        click.echo(f"{k} = {json.dumps(values[k])}")


def _fault_line(f: evstore.EvstoreError) -> str:
    addr = f.details.get("address", "")
    return f"{addr} {f.code} {at_pointer(f.pointer)}: {f.message}"


def _print_warnings(warns: list[dict[str, Any]], faults: int) -> None:
    for w in warns:
        message = w["message"].replace("\n", "\\n").replace("\r", "\\r")
        click.echo(f"{w['address']} warning {w['code']} {at_pointer(w['pointer'])}: {message}")
    if not faults:
        click.echo(
            f"ok: no faults ({len(warns)} recorded warning(s))" if warns else "ok: no faults"
        )


@click.command()
@click.option(
    "--sample",
    type=float,
    default=None,
    metavar="FRACTION",
    help="Check only this fraction (0 < FRACTION <= 1) of the objects, chosen by --seed.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of --sample (same seed, same sample).",
)
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    metavar="KIND",
    help="Only artifacts of KIND and their blobs (repeatable); 'blob' checks every blob.",
)
@click.option(
    "--since",
    default=None,
    metavar="TIME",
    help="Skip objects verified at or after TIME (ISO 8601, UTC unless an offset is given,"
    " or an age: 30m, 24h, 7d).",
)
@click.option("--jobs", type=int, default=1, show_default=True, help="Threads hashing blobs.")
@click.option(
    "--no-record",
    is_flag=True,
    help="Do not record verified objects (a read-only store is never written anyway).",
)
@pass_ctx
def check(
    ctx: Ctx,
    sample: float | None,
    seed: int,
    kinds: tuple[str, ...],
    since: str | None,
    jobs: int,
    no_record: bool,
) -> None:
    """Re-verify the whole store: re-hash every blob, re-canonicalise and re-validate every
    artifact by its kind (contract rules and bindings). Lists every fault, then the
    warnings recorded at ingest (warnings do not fail the check).

    Each object found without fault is recorded as verified (when the store can be written),
    so `--since 24h` checks only what no check verified in the last 24 hours, and a nightly
    `check --since` resumes where an interrupted one stopped. On a store that cannot be
    written (a full disk, read-only) the check still reaches its verdict and notes that it
    recorded nothing more (`not_recorded` with --json).

    Exit codes: 0 no fault; 1 any fault or store error.
    """  # noqa: D205 - the help text
    narrowed = sample is not None or bool(kinds) or since is not None
    faults = []
    audit_warnings: list[dict[str, str]] = []
    with open_store(ctx) as store, progress(ctx, "check") as bar:
        run = store.check(
            progress=bar,
            sample=sample,
            seed=seed,
            kinds=kinds,
            since=since,
            jobs=jobs,
            record=not no_record,
            warnings=audit_warnings,
        )
        for f in run:
            faults.append(f)
            if not ctx.json:
                bar.echo(_fault_line(f))  # on its own line, above the bar
        warns = store.recorded_warnings() + audit_warnings
    if run.not_recorded and not no_record:
        ctx.note(f"note: verified objects not recorded: {run.not_recorded}")
    if ctx.json:
        out: dict[str, Any] = {
            "ok": not faults,
            "faults": [f.to_dict() for f in faults],
            "warnings": warns,
        }
        if narrowed:
            out.update(checked=run.checked, recorded=run.recorded)
        if run.not_recorded and not no_record:
            out["not_recorded"] = run.not_recorded
        click.echo(json_text(out, sort_keys=True))
    else:
        if narrowed:
            ctx.note(f"checked {run.checked} object(s)")  # a note: not with -q
        _print_warnings(warns, len(faults))
    if faults:
        sys.exit(1)


#: The commands of this area, as registered on the ``evstore`` group.
COMMANDS = (init, migrate, config, check)


def register(cli: click.Group) -> None:
    """Add the administration commands to the ``evstore`` group."""
    for command in COMMANDS:
        cli.add_command(command)
