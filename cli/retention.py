"""Retention commands: retain, release, roots, gc, audit, audits; the --root option of writes."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any

import click

import evstore

from .common import Ctx, emit, open_store, pass_ctx, progress

__all__ = [
    "COMMANDS",
    "audit",
    "audits",
    "blobs",
    "gc",
    "register",
    "release",
    "retain",
    "root_option",
    "roots",
]

#: Who acts, in the history and audit rows, for every command run from this CLI.
ACTOR = "local"


def root_option(fn: Any) -> Any:
    """``--root NAME`` for a write command: what it stores is rooted under NAME."""

    @click.option(
        "--root",
        "root",
        default="default",
        show_default=True,
        metavar="NAME",
        help="Root what this command stores under NAME (kept until `evstore release --root"
        " NAME`; e.g. one root per run).",
    )
    @functools.wraps(fn)
    def wrapper(*args: Any, root: str, **kwargs: Any) -> Any:
        with evstore.rooting(root, ACTOR):
            return fn(*args, **kwargs)

    return wrapper


@click.command()
@click.argument("refs", nargs=-1, required=True)
@click.option("--root", "root", required=True, metavar="NAME", help="The root to hold them.")
@click.option(
    "--until",
    default=None,
    metavar="TIME",
    help="Hold them until TIME, later than now (ISO 8601, UTC unless an offset is given, or"
    " from now: 30d, 12h); default: until released.",
)
@pass_ctx
def retain(ctx: Ctx, refs: tuple[str, ...], root: str, until: str | None) -> None:
    """Hold the objects REFS name, and everything they need (their closures), under a root.

    Retaining again sets --until anew. Recorded in `evstore roots --history`.

    Exit codes: 0 retained; 1 root.name, ref.syntax, not-found.blob, input.invalid (nothing
    retained); 2 usage.
    """
    with open_store(ctx) as store:
        r = store.retention.retain(list(refs), root, until=until, actor=ACTOR)
    held = f" until {r['until']}" if r["until"] else ""
    emit(ctx, r, "\n".join(f"{a}  {root}{held}" for a in r["retained"]))


@click.command()
@click.argument("refs", nargs=-1)
@click.option("--root", "root", required=True, metavar="NAME", help="The root to release.")
@pass_ctx
def release(ctx: Ctx, refs: tuple[str, ...], root: str) -> None:
    """Release a root: every entry, or only those REFS name. Released objects that nothing
    else holds become collectable by `evstore gc` once their leases expire.

    Exit codes: 0 released; 1 root.name, not-found.root (the root holds nothing, or not
    one of REFS), ref.syntax (nothing released); 2 usage.
    """  # noqa: D205 - the help text
    with open_store(ctx) as store:
        r = store.retention.release(root, list(refs), actor=ACTOR)
    emit(ctx, r, f"released {len(r['released'])} object(s) from {root}")


@click.command()
@click.option("--history", is_flag=True, help="List retain, release and collection events.")
@click.option("--limit", type=int, default=1000, show_default=True, help="Events listed.")
@pass_ctx
def roots(ctx: Ctx, history: bool, limit: int) -> None:
    """List the roots (entries held, latest until), or with --history the retention events
    (who, what, when), newest first.

    Exit codes: 0 ok; 1 store errors.
    """  # noqa: D205 - the help text
    with open_store(ctx) as store:
        if history:
            events = store.retention.history(limit)
            emit(ctx, {"events": events}, lambda _: _print_events(events))
            return
        found = store.retention.roots()
    emit(ctx, {"roots": found}, lambda _: _print_roots(found))


def _print_roots(found: list[dict[str, Any]]) -> None:
    for r in found:
        until = r["until"] or "released"
        click.echo(f"{r['root']}  {r['held']}/{r['entries']} held  until {until}")


def _print_events(events: list[dict[str, Any]]) -> None:
    for e in events:
        what = e["address"] or ""
        click.echo(f"{e['at']}  {e['actor']}  {e['action']}  {e['root'] or '-'}  {what}")


@click.command()
@click.option("--dry-run", is_flag=True, help="List what would go and the bytes freed.")
@click.option("--vacuum", is_flag=True, help="SQLite: run VACUUM afterwards to shrink the file.")
@click.option("--batch", type=int, default=200, show_default=True, help="Objects per transaction.")
@pass_ctx
def gc(ctx: Ctx, dry_run: bool, vacuum: bool, batch: int) -> None:
    """Delete every object that no root reaches and whose lease has expired.

    Deletes in small transactions while ingests go on; each row is re-checked
    (unreferenced, unrooted, lease expired) inside its delete. Bindings are never deleted.
    --dry-run also lists what no root reaches but a lease still holds, and until when.
    Space: SQLite reuses freed pages (--vacuum gives them back to the file system);
    PostgreSQL's autovacuum reclaims them.

    Exit codes: 0 ok; 1 store errors.
    """
    with open_store(ctx) as store, progress(ctx, "gc") as bar:
        report = store.retention.gc(
            dry_run=dry_run, vacuum_after=vacuum, batch=batch, actor=ACTOR, progress=bar
        )

    def human(r: Any) -> None:
        verb = "would delete" if r.dry_run else "deleted"
        for o in r.objects:
            click.echo(f"{o['address']}  {o['size']}")
        click.echo(f"{verb} {r.count} object(s), {r.bytes} bytes")
        held = r.to_dict().get("leased") or []
        for o in held:
            click.echo(f"leased  {o['address']}  {o['size']}  until {o['until']}")
        if held:
            size = sum(int(o["size"]) for o in held)
            last = max(o["until"] for o in held)
            click.echo(
                f"held by leases: {len(held)} object(s), {size} bytes, until {last}"
                " (gc.lease-seconds; `evstore config gc.lease-seconds 0` ends them now)"
            )

    emit(ctx, report, human)


@click.command()
@click.option("--root", "root_names", multiple=True, metavar="NAME", help="Only this root.")
@click.option(
    "--sample",
    type=float,
    default=None,
    metavar="FRACTION",
    help="Audit only this fraction (0 < FRACTION <= 1) of the root entries (at least one"
    " entry of each root).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of --sample.")
@click.option(
    "--since",
    default=None,
    metavar="TIME",
    help="Skip objects verified at or after TIME (ISO 8601 or an age: 24h, 7d).",
)
@click.option(
    "--junit",
    "junit",
    default=None,
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Also write a JUnit XML report to FILE.",
)
@click.option("--history", is_flag=True, help="List the recorded audit runs instead.")
@click.option(
    "--no-record",
    "no_record",
    is_flag=True,
    help="Write nothing: neither the run (`evstore audits`) nor the objects verified.",
)
@pass_ctx
def audit(
    ctx: Ctx,
    root_names: tuple[str, ...],
    sample: float | None,
    seed: int,
    since: str | None,
    junit: str | None,
    history: bool,
    no_record: bool,
) -> None:
    """Prove that every retained artifact is intact: its closure complete, every byte
    verified (BLAKE3, SHA-256, size), its contract audit passing, its bindings intact.

    Reports per root and per artifact; every run is recorded (`evstore audits`) after its
    verdict, unless --no-record. A store that cannot be written (a full disk: store.full,
    or read-only) still gets the verdict, with a note that the run was not recorded
    (`not_recorded` with --json).

    Exit codes: 0 no fault; 1 any fault, root.name, not-found.root, input.invalid.
    """  # noqa: D205 - the help text
    if history:
        _audits(ctx, 50)
        return
    if junit is not None:  # before the audit runs (and is recorded), not after
        folder = Path(junit).parent
        if Path(junit).is_dir() or not folder.is_dir() or not os.access(folder, os.W_OK):
            raise evstore.error(
                "output.unwritable", f"cannot write {junit}: no writable folder", path=junit
            )
    with open_store(ctx) as store, progress(ctx, "audit") as bar:
        run = store.retention.audit(
            root_names,
            sample=sample,
            seed=seed,
            since=since,
            actor=ACTOR,
            progress=bar,
            record=not no_record,
        )
    if junit is not None:
        try:
            Path(junit).write_text(run.junit(), encoding="utf-8")
        except OSError as exc:
            raise evstore.error(
                "output.unwritable", f"cannot write {junit}: {exc.strerror}", path=junit
            ) from None
    emit(ctx, run, _print_audit)
    if run.not_recorded is not None and not ctx.json:
        click.echo(f"note: this audit run was not recorded: {run.not_recorded}", err=True)
    if run.verdict != "pass":
        sys.exit(1)


def _print_audit(run: Any) -> None:
    for r in run.roots:
        bad = [e for e in r["entries"] if e["verdict"] == "fail"]
        click.echo(f"{r['root']}: {r['verdict']} ({len(r['entries'])} entries, {len(bad)} failing)")
        for e in bad:
            for f in e["faults"]:
                click.echo(f"  {e['address']} {f['code']}: {f['message']}")
    name = "(not recorded)" if run.id is None else run.id
    click.echo(
        f"audit {name}: {run.verdict} ({run.objects} object(s) verified,"
        f" {run.skipped} skipped as verified since)"
    )


def _audits(ctx: Ctx, limit: int) -> None:
    with open_store(ctx) as store:
        runs = store.retention.audits(limit)

    def human(_: Any) -> None:
        for r in runs:
            roots = ", ".join(f"{x['root']}={x['verdict']}" for x in r["roots"]) or "-"
            click.echo(f"{r['id']}  {r['finished_at']}  {r['verdict']}  {roots}")

    emit(ctx, {"audits": runs}, human)


@click.command()
@click.option("--limit", type=int, default=50, show_default=True, help="Runs listed.")
@pass_ctx
def audits(ctx: Ctx, limit: int) -> None:
    """List the recorded audit runs, newest first: time, scope, verdict per root, faults.

    Exit codes: 0 ok; 1 store errors.
    """
    _audits(ctx, limit)


@click.group()
def blobs() -> None:
    """Where blob bytes live: the database (inline) or a blob backend."""


@blobs.command("move")
@click.option(
    "--to",
    "to",
    required=True,
    metavar="BACKEND",
    help="inline, file:DIR or s3://BUCKET/PREFIX[?endpoint=URL&region=R]; becomes blobs.backend.",
)
@click.option("--batch", type=int, default=50, show_default=True, help="Blobs per transaction.")
@pass_ctx
def blobs_move(ctx: Ctx, to: str, batch: int) -> None:
    """Move the bytes of every stored blob to BACKEND, in batches, while the store is in use.

    Each batch's bytes are copied, checked, then its rows repointed in one transaction; old
    copies in a backend are deleted by `evstore gc` after blobs.deletion_delay_seconds.
    Interrupted at any point, nothing is lost: run it again to go on. Damaged or missing
    bytes are left where they are and reported (`evstore check` reports them too).

    Exit codes: 0 every blob is in BACKEND; 1 blobs.spec, blobs.unreachable (retryable:
    run it again), blobs.backend, or blobs left behind (faults, remaining).
    """
    with open_store(ctx) as store, progress(ctx, "move", unit="blobs") as bar:
        report = store.retention.move_blobs(to, batch=batch, progress=bar)

    def human(r: Any) -> None:
        for f in r.faults:
            click.echo(f"left  {f['address']}  {f['code']}: {f['message']}")
        click.echo(
            f"moved {r.moved} blob(s), {r.bytes} bytes to {r.to} in {r.batches} batch(es);"
            f" {r.queued} old copies queued for deletion; {r.remaining} remaining"
        )

    emit(ctx, report, human)
    if report.remaining:
        sys.exit(1)


#: The commands of this area, as registered on the ``evstore`` group.
COMMANDS = (retain, release, roots, gc, audit, audits, blobs)


def register(cli: click.Group) -> None:
    """Add the retention commands to the ``evstore`` group."""
    for command in COMMANDS:
        cli.add_command(command)
