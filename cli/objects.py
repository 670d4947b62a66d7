"""Object commands: put, get, stat, has, find, ls (one Store call each, plus rendering)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, cast

import click

import evstore

from .batch import (
    FsPath,
    bulk_options,
    check_args,
    expand_paths,
    interrupted_note,
    listed,
    stdin_lines,
)
from .batch import register as register_batch
from .common import (
    Ctx,
    at_pointer,
    counting_reader,
    digest_lines,
    digests_option,
    emit,
    fail,
    json_text,
    open_store,
    output_option,
    pass_ctx,
    progress,
)
from .retention import root_option

__all__ = ["COMMANDS", "find", "get", "has", "ls", "put", "register", "stat"]


def _put_one(ctx: Ctx, file: str, digests: bool) -> None:
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
                size = os.fstat(fh.fileno()).st_size
                with progress(ctx, f"put {Path(file).name}", unit="bytes") as bar:
                    # counting_reader has read() only: put reads it once, as a stream
                    src = (
                        cast(BinaryIO, counting_reader(fh, size, bar))
                        if size >= PROGRESS_MIN
                        else fh
                    )
                    try:
                        res = store.put(src)
                    except OSError as exc:  # reading the file failed midway: nothing stored
                        raise evstore.error(
                            "input.unreadable", f"cannot read {file}: {exc.strerror}", path=file
                        ) from None
    d = res.digest.forms()
    d["new"] = res.new
    emit(ctx, d, digest_lines(d, digests))
    if not res.new:
        ctx.note("already stored (not new)")


#: Blobs at least this large (bytes) get a progress bar on a terminal.
PROGRESS_MIN = 8 << 20


def _write_verified(ctx: Ctx, path: str, digest: Any, chunks: Any) -> None:
    """Write a blob to ``path`` in one read: into a temporary file beside it, renamed only
    once the bytes are verified (a corrupt blob leaves no file and no partial output).

    Raises:
        InputError: ``output.unwritable``. CorruptionError: the bytes do not match.
    """  # noqa: D205
    target = Path(path)
    tmp: Path | None = None
    size = 0
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
        tmp = Path(name)
        with progress(ctx, f"get {target.name}", unit="bytes") as bar, os.fdopen(fd, "wb") as fh:
            show = bar if digest.size >= PROGRESS_MIN else None
            for chunk in chunks:  # raises CorruptionError after the last chunk on a mismatch
                fh.write(chunk)
                size += len(chunk)
                if show is not None:
                    show(size, digest.size)
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise evstore.error(
            "output.unwritable", f"cannot write {path}: {exc.strerror}", path=path
        ) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
    if ctx.json:
        emit(ctx, {"ok": True, "output": path, "size": size, "address": digest.address})


def _put_many_human(ctx: Ctx, digests: bool) -> Any:
    def human(x: dict[str, Any]) -> None:
        lines = [f"{r['address']}  {r['path']}" for r in x["results"]]
        if digests:
            lines = [
                f"{line}\n  {r['sha256']}\n  {r['sha256_b64u']}"
                for line, r in zip(lines, x["results"], strict=True)
            ]
        if lines:  # one write for every line (issue 29: 10k echo calls cost 15 us a file)
            click.echo("\n".join(lines))
        ctx.note(f"stored {x['files']} file(s), {x['new']} new")  # not with -q

    return human


@click.command()
@click.argument("files", nargs=-1, type=click.Path(allow_dash=True))
@bulk_options
@digests_option
@pass_ctx
@root_option
def put(
    ctx: Ctx,
    files: tuple[str, ...],
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    stdin_paths: bool,
    nul: bool,
    batch: int | None,
    digests: bool,
) -> None:
    """Store the exact bytes of FILES (or stdin for -), streamed; print the addresses.

    One FILE prints its address (as always). Many FILES, directories (walked recursively,
    filtered by --include/--exclude) and --stdin-paths print "<address>  <path>" per file;
    all are stored in one transaction (all or nothing) unless --batch N commits every N
    files. Creates the store when missing. Exit codes: 0 stored (or already stored); 1 error
    (with --batch: the batches before the failing one stay committed, and the error says
    so); 2 usage.
    """
    check_args(files, stdin_paths)
    if len(files) == 1 and not stdin_paths and (files[0] == "-" or not os.path.isdir(files[0])):
        _put_one(ctx, files[0], digests)
        return
    if "-" in files:
        raise click.UsageError("- (stdin) is for one input; use --stdin-paths for a list")
    bar = progress(ctx, "put", unit="files")
    paths, total = listed(
        expand_paths(files, include=include, exclude=exclude, stdin_paths=stdin_paths, nul=nul),
        bar,
    )
    names: list[str] = []

    def items() -> Iterator[FsPath]:
        for p in paths:
            names.append(p)
            yield FsPath(p)

    done = [0, 0]
    with open_store(ctx, create=True) as store, bar:
        try:
            results = store.put_many(
                items(),
                batch=batch,
                on_batch=_recorder(done),
                progress=lambda n: bar(n, total),
            )
        except KeyboardInterrupt:
            if batch is not None:
                interrupted_note(ctx, done, "files")()
            raise
    if ctx.json or digests:
        rows = [
            {"path": n, **r.digest.forms(), "new": r.new}
            for n, r in zip(names, results, strict=True)
        ]
    else:  # the lines name the address only: no other digest form is encoded (issue 29)
        rows = [
            {"path": n, "address": r.digest.address, "new": r.new}
            for n, r in zip(names, results, strict=True)
        ]
    out = {"ok": True, "files": len(rows), "new": sum(r.new for r in results), "results": rows}
    emit(ctx, out, _put_many_human(ctx, digests))


def _recorder(done: list[int]) -> Any:
    def record(batches: int, items: int) -> None:
        done[:] = [batches, items]

    return record


@click.command()
@click.argument("ref")
@output_option
@pass_ctx
def get(ctx: Ctx, ref: str, output: str | None) -> None:
    """Print the exact stored bytes of REF (nothing appended), verified first.

    REF: blake3:<hex>, sha256:<hex>, sha256:<base64url> or object-store:sha256:<base64url>.
    To stdout the whole blob is verified before the first byte is printed. With -o the
    bytes are read once, verified while they are written to a temporary file in FILE's
    folder, and renamed to FILE only when verified (a corrupt blob leaves no file).

    Exit codes: 0 ok; 1 ref.syntax, not-found.blob, corruption.*, output.unwritable.
    """
    with open_store(ctx) as store:
        if output:
            with store.open_blob(ref, verify_first=False) as (digest, chunks):
                _write_verified(ctx, output, digest, chunks)
            return
        with store.open_blob(ref) as (digest, chunks):
            first = next(chunks, b"")  # verification happens before the first chunk
            out = sys.stdout.buffer
            out.write(first)
            for c in chunks:
                out.write(c)
            out.flush()


def _stat_human(digests: bool) -> Any:
    def human(x: dict[str, Any]) -> None:
        click.echo(digest_lines(x, digests))
        verified = "verified" if x["verified"] else "recorded"
        click.echo(f"size: {x['size']} bytes ({x['stored']}, {verified})")
        for a in x["artifacts"]:
            click.echo(f"artifact: {a['kind']} {a['contract_version']} accepted {a['accepted_at']}")
        for w in x.get("warnings", []):
            click.echo(f"warning: {w['code']} {at_pointer(w['pointer'])}: {w['message']}")

    return human


@click.command()
@click.argument("ref")
@digests_option
@click.option(
    "--verify",
    is_flag=True,
    help="Re-hash the stored bytes first (reads the whole blob); default: the recorded "
    "size and digests.",
)
@pass_ctx
def stat(ctx: Ctx, ref: str, digests: bool, verify: bool) -> None:
    """Show a blob's size, digests and the kinds it is stored as.

    Reads the recorded size and digests without re-hashing the bytes (fast for any size);
    --verify re-hashes them first ("verified" in the output says which).

    Exit codes: 0 ok; 1 ref.syntax, not-found.blob, corruption.* (with --verify).
    """
    with open_store(ctx) as store:
        d = store.stat(ref, verify=verify)
    emit(ctx, d, _stat_human(digests))


@click.command()
@click.argument("refs", nargs=-1, required=True)
@pass_ctx
def has(ctx: Ctx, refs: tuple[str, ...]) -> None:
    """Print the REFS that name no stored blob; - reads refs from stdin, one per line.

    Exit codes: 0 all present; 1 some missing (or ref.syntax).
    """
    if refs.count("-") > 1:
        raise click.UsageError("stdin (-) can be read once")
    wanted: list[str] = []
    for r in refs:
        if r == "-":
            wanted.extend(line.strip() for line in stdin_lines() if line.strip())
        else:
            wanted.append(r)
    with open_store(ctx) as store:
        missing = store.has(wanted)
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
        damage = f"  DAMAGED:{r['damage']}" if r.get("damage") else ""
        click.echo(f"{r['address']}  {r['kind']}  {r['accepted_at']}{damage}")
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
    with open_store(ctx) as store:
        rows = evstore.find_with_warnings(store, name, value, kind=kind)
    emit(ctx, {"artifacts": rows}, _find_human)


@click.command()
@click.option("--kind", default=None, help="Only artifacts of this kind.")
@click.option("--workspace", default=None, help="Only packages of this workspace_id.")
@click.option("--blobs", is_flag=True, help="List every stored blob instead of artifacts.")
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, metavar="N", help="At most N items."
)
@click.option(
    "--after",
    default=None,
    metavar="CURSOR",
    help="Only items after this cursor (the next_cursor of the previous page).",
)
@click.option("--jsonl", is_flag=True, help="Stream one JSON object per line (JSON Lines).")
@pass_ctx
def ls(
    ctx: Ctx,
    kind: str | None,
    workspace: str | None,
    blobs: bool,
    limit: int | None,
    after: str | None,
    jsonl: bool,
) -> None:
    """List stored artifacts (the default, oldest first) or, with --blobs, every blob.

    With --limit, --after or --jsonl the listing is in key order (address, then kind), in
    stable pages: --json then adds "next_cursor" (null on the last page), the human form
    prints "next: CURSOR" on stderr, and --jsonl prints one item per line and, when more
    remain, a last line {"next_cursor": CURSOR}. --json prints one object
    ({"artifacts": [...]} or {"blobs": [...]}).

    Exit codes: 0 ok; 1 store error; 2 usage.
    """
    if blobs and (kind is not None or workspace is not None):
        raise click.UsageError("--blobs lists every blob: --kind and --workspace do not apply")
    if jsonl and ctx.json:
        raise click.UsageError("--json prints one JSON object, --jsonl one per line: give one")
    if kind is not None:
        evstore.check_kind(kind)  # kind.unknown / store.kind-unavailable before the store
    attr = ("workspace_id", evstore.normalize_uuid(workspace)) if workspace is not None else None
    paged = limit is not None or after is not None or jsonl
    with open_store(ctx) as store:
        if not paged:
            if blobs:
                emit(ctx, {"blobs": list(store.iter_blobs())}, _blobs_human)
                return
            rows = store.ls(kind, attr=attr)
            emit(ctx, {"artifacts": [r.to_dict() for r in rows]}, _ls_human)
            return
        _ls_paged(ctx, store, blobs, (kind, attr), limit, after, jsonl)


def _ls_paged(
    ctx: Ctx,
    store: evstore.Store,
    blobs: bool,
    where: tuple[str | None, tuple[str, str] | None],
    limit: int | None,
    after: str | None,
    jsonl: bool,
) -> None:
    """Key-ordered listing, one page of evstore.list_page (streamed with --jsonl)."""
    if blobs:
        page = evstore.list_page(store, blobs=True, after=after, limit=limit)
    else:
        page = evstore.list_page(store, kind=where[0], attr=where[1], after=after, limit=limit)
    key = "blobs" if blobs else "artifacts"
    rows: list[dict[str, Any]] = []
    for item in page:
        if jsonl:
            click.echo(json_text(item, sort_keys=True))
        else:
            rows.append(item)
    nxt = page.next
    if jsonl:
        if nxt is not None:
            click.echo(json.dumps({"next_cursor": nxt}))
        return
    if ctx.json:
        emit(ctx, {key: rows, "next_cursor": nxt})
        return
    (_blobs_human if blobs else _ls_human)({key: rows})
    if nxt is not None:
        click.echo(f"next: {nxt}", err=True)


def _blobs_human(x: dict[str, Any]) -> None:
    for r in x["blobs"]:
        click.echo(f"{r['address']}  {r['size']}")


def _ls_human(x: dict[str, Any]) -> None:
    for r in x["artifacts"]:
        size = r["size"] if r.get("damage") is None else f"DAMAGED:{r['damage']}"
        click.echo(f"{r['address']}  {r['kind']}  {size}  {r['accepted_at']}")


#: The commands of this area, as registered on the ``evstore`` group.
COMMANDS = (put, get, stat, has, find, ls)


def register(cli: click.Group) -> None:
    """Add the object commands to the ``evstore`` group."""
    for command in COMMANDS:
        cli.add_command(command)
    register_batch(cli)  # cat-batch, verify-list (cli/batch.py)
