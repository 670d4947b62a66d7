"""The tamper-evident log's commands: log (status, entries, keys, checkpoint), prove, verify-proof.

docs/log.md describes the log. The private key file is named by ``--key``, else the
``EVSTORE_LOG_KEY`` environment variable, else the store's ``log.key_file`` setting (read
here, in the CLI layer; the library takes the path as an argument).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

import evstore

from .common import Ctx, emit, is_http_url, open_store, pass_ctx, read_input, write_output

__all__ = ["COMMANDS", "KEY_ENV", "log", "prove", "register", "verify_proof", "witness"]

#: The environment variable naming the log's private key file.
KEY_ENV = "EVSTORE_LOG_KEY"


def _key_path(store: evstore.Store, given: str | None) -> str | None:
    """``--key``, else $EVSTORE_LOG_KEY, else the ``log.key_file`` setting (None: none)."""
    if given:
        return given
    if os.environ.get(KEY_ENV):
        return os.environ[KEY_ENV]
    configured = store.config("log.key_file")["log.key_file"]
    return str(configured) if configured else None


def _print_status(r: dict[str, Any]) -> None:
    cp = r["checkpoint"]
    click.echo(f"entries: {r['size']}")
    if r.get("pending"):
        click.echo(f"queued (not in the tree yet): {r['pending']} (evstore log integrate)")
    click.echo(f"verifier key: {r['vkey'] or '(none: evstore log init-key)'}")
    if cp is None:
        click.echo("no signed checkpoint yet (evstore log checkpoint)")
        return
    click.echo(f"latest checkpoint: size {cp['size']}, signed {cp['signed_at']}")
    click.echo(cp["note"], nl=False)


@click.group(invoke_without_command=True)
@pass_ctx
@click.pass_context
def log(click_ctx: click.Context, ctx: Ctx) -> None:
    """The tamper-evident log: with no subcommand, its size and latest signed checkpoint.

    Every accepted put, ingest (and retain, release, deletion) appends one entry in the same
    transaction; checkpoints are C2SP signed notes (docs/log.md).

    Exit codes: 0 ok; 1 store errors.
    """
    if click_ctx.invoked_subcommand is not None:
        return
    with open_store(ctx) as store:
        r = store.log.status()
    emit(ctx, r, _print_status)


@log.command("entries")
@click.option("--from", "start", type=click.IntRange(min=0), default=0, help="First index.")
@click.option("--to", "end", type=click.IntRange(min=0), default=None, help="End (exclusive).")
@pass_ctx
def entries(ctx: Ctx, start: int, end: int | None) -> None:
    """Entries START..END-1 (default: all), one line each: index, then the entry's JSON.

    Exit codes: 0 ok; 1 log.range (--from after --to), store errors.
    """
    with open_store(ctx) as store:
        rows = store.log.entries(start, end)

    def human(_: Any) -> None:
        for r in rows:
            click.echo(f"{r['index']} {json.dumps(r['entry'], sort_keys=True)}")

    emit(ctx, {"entries": rows}, human)


@log.command("init-key")
@click.argument("path", required=False)
@click.option("--origin", default=None, help="The log's origin (key name); default random.")
@pass_ctx
def init_key(ctx: Ctx, path: str | None, origin: str | None) -> None:
    """Create the log's Ed25519 key: PATH (0600, never overwritten) and the stored verifier key.

    PATH defaults to $EVSTORE_LOG_KEY, else the log.key_file setting. When the setting is
    empty it is set to PATH, so `evstore log checkpoint` finds the key.

    Beside the database only: over HTTP it is remote.unsupported (the private key file is
    made on the machine that signs; start the server with --log-key PATH).

    Exit codes: 0 created; 1 log.key-exists, log.key-file, checkpoint.key, store errors.
    """
    with open_store(ctx) as store:
        if is_http_url(ctx.url):
            store.log.init_key(path or "")  # remote.unsupported, naming why
        chosen = _key_path(store, path)
        if chosen is None:
            raise evstore.error(
                "log.key-file", f"name the key file: PATH, ${KEY_ENV} or log.key_file"
            )
        r = store.log.init_key(chosen, origin)
        if not store.config("log.key_file")["log.key_file"]:
            store.set_config("log.key_file", str(Path(chosen).resolve()))
    emit(ctx, r, f"{r['vkey']}\nprivate key: {r['path']} (0600; keep it out of the database)")


@log.command("key")
@pass_ctx
def key(ctx: Ctx) -> None:
    """Print the log's verifier key (give it to auditors for verify-proof).

    Exit codes: 0 ok; 1 log.no-key, store errors.
    """
    with open_store(ctx) as store:
        vkey = store.log.key()
    emit(ctx, {"vkey": vkey}, vkey)


@log.command("checkpoint")
@click.option("--key", "key_file", default=None, help=f"Private key file (else ${KEY_ENV}).")
@pass_ctx
def checkpoint(ctx: Ctx, key_file: str | None) -> None:
    """Sign a checkpoint of the log now, after checking it extends the previous one.

    Over HTTP (an admin token) the server signs with the key it was started with (evstore
    serve --log-key); --key and $EVSTORE_LOG_KEY are not used, and a server without a key
    answers log.server-no-key.

    Exit codes: 0 signed (or unchanged); 1 log.inconsistent (nothing signed), log.no-key,
    log.key-mismatch, log.key-file, checkpoint.key, log.server-no-key, store errors.
    """
    with open_store(ctx) as store:
        if is_http_url(ctx.url):
            r = store.log.checkpoint(key_file)  # input.invalid when a key file is named
        else:
            r = store.log.checkpoint(_key_path(store, key_file))
    emit(ctx, r, lambda _: click.echo(r["note"], nl=False))


@log.command("integrate")
@click.option(
    "--key",
    "key_file",
    default=None,
    help=f"Then sign a checkpoint with this private key file (else ${KEY_ENV}, log.key_file).",
)
@click.option("--no-sign", is_flag=True, help="Only integrate, even when a key is configured.")
@pass_ctx
def integrate(ctx: Ctx, key_file: str | None, no_sign: bool) -> None:
    """Give queued log entries their indices and add them to the tree; then sign.

    Every accepted write queues its entries in its own transaction; this command (and
    `evstore serve` in the background, and `evstore log checkpoint`) adds them to the
    tree in batches, one integrator at a time (docs/log.md). With a key (--key,
    $EVSTORE_LOG_KEY or the log.key_file setting) a checkpoint is signed after. Over HTTP
    (an admin token) the server integrates, and signs when it was started with --log-key.

    Exit codes: 0 ok; 1 log.inconsistent, log.no-key, log.key-mismatch, log.key-file,
    checkpoint.key, corruption.log, store errors.
    """
    with open_store(ctx) as store:
        if is_http_url(ctx.url):  # the server signs with its own --log-key, if it has one
            r = store.log.integrate(key_file)  # input.invalid when a key file is named
        else:
            r = store.log.integrate(None if no_sign else _key_path(store, key_file))

    def human(_: Any) -> None:
        click.echo(f"integrated {r['integrated']}; tree size {r['size']}; queued {r['pending']}")
        if r["checkpoint"] is not None:
            click.echo(r["checkpoint"]["note"], nl=False)

    emit(ctx, r, human)


@log.command("cosign")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=5.0,
    show_default=True,
    help="Seconds each witness may take to answer.",
)
@pass_ctx
def cosign(ctx: Ctx, timeout: float) -> None:
    """Ask the log.witness_policy witnesses to cosign the latest checkpoint now.

    Each witness whose cosignature the checkpoint lacks gets a C2SP tlog-witness
    add-checkpoint with a consistency proof from the size it last cosigned (again from the
    size a 409 names). Verified cosignatures are kept with the checkpoint; a witness down or
    refusing is listed under failed (`evstore serve --log-key` asks again every round).

    Exit codes: 0 the checkpoint carries the policy's quorum of cosignatures (or no policy
    is set); 1 witness.quorum (fewer cosigned than the quorum: what was asked is printed
    first, and with --json is the error's details), witness.policy, witness.key, store
    errors.
    """
    with open_store(ctx) as store:
        r = store.log.ask_witnesses(timeout)
    have = len(r["present"]) + len(r["cosigned"])
    short = have < r["quorum"]

    def show(_: Any) -> None:
        click.echo(f"checkpoint size: {r['size']}")
        for name in r["present"] + r["cosigned"]:
            click.echo(f"cosigned: {name}")
        for name, why in sorted(r["failed"].items()):
            click.echo(f"failed: {name}: {why}")

    if not (short and ctx.json):  # with --json, one object: the error carries the result
        emit(ctx, r, show)
    if short:
        size = r["size"]
        what = "no signed checkpoint" if size is None else f"the checkpoint of size {size}"
        raise evstore.error(
            "witness.quorum",
            f"{have} of the policy's witnesses cosigned {what}; {r['quorum']} must",
            **r,
        )


@click.group()
def witness() -> None:
    """The store as a witness for other logs (C2SP tlog-witness, docs/log.md#witnesses).

    `evstore serve --witness-key PATH` answers POST P/add-checkpoint for the logs named by
    the witness.logs setting (their verifier keys).
    """


@witness.command("init-key")
@click.argument("path")
@click.option("--name", required=True, help="The witness's name (a schema-less URL).")
@pass_ctx
def witness_init_key(ctx: Ctx, path: str, name: str) -> None:
    """Create a witness key (Ed25519, C2SP tlog-cosignature): PATH (0600, never overwritten).

    Prints the witness's verifier key: a log names it in its log.witness_policy.

    Exit codes: 0 created; 1 witness.key (PATH exists or cannot be written, a bad name).
    """
    if any(c.isspace() or c == "+" for c in name) or not name:
        raise evstore.error("witness.key", "a witness name has no spaces or '+'")
    cosigner = evstore.Cosigner.generate(name)
    try:
        cosigner.write_private_key(path)
    except OSError as exc:
        raise evstore.error(
            "witness.key", f"cannot create {path}: {exc.strerror or exc}", path=path
        ) from None
    vkey = cosigner.key.vkey()
    emit(ctx, {"vkey": vkey, "path": path}, f"{vkey}\nprivate key: {path} (0600)")


@witness.command("status")
@pass_ctx
def witness_status(ctx: Ctx) -> None:
    """The logs this store witnessed: origin, the size last cosigned, when.

    Exit codes: 0 ok; 1 store errors.
    """
    with open_store(ctx) as store:
        rows = store.log.witnessed()

    def show(_: Any) -> None:
        for r in rows:
            click.echo(f"{r['origin']}\t{r['size']}\t{r['cosigned_at']}")

    emit(ctx, {"logs": rows}, show)


@log.group("tiles")
def tiles() -> None:
    """The log as C2SP tlog-tiles (docs/log.md#tiles)."""


@tiles.command("export")
@click.argument("directory")
@pass_ctx
def tiles_export(ctx: Ctx, directory: str) -> None:
    """Write checkpoint and tile/... at the latest signed checkpoint under DIRECTORY.

    Incremental: full tiles already written are kept; the checkpoint is replaced last. Serve
    DIRECTORY as static files (full tiles immutable, the rest short-lived).

    Exit codes: 0 ok; 1 log.no-checkpoint, corruption.log, store errors.
    """
    with open_store(ctx) as store:
        r = store.log.export_tiles(directory)
    emit(ctx, r, f"size {r['size']}: wrote {r['written']} files, kept {r['kept']} full tiles")


@click.command()
@click.argument("args", nargs=-1)
@click.option("--index", type=click.IntRange(min=0), default=None, help="Prove this entry.")
@click.option(
    "--consistency",
    "old",
    type=click.IntRange(min=0),
    default=None,
    metavar="OLD",
    help="A consistency proof from size OLD to NEW (default: the latest checkpoint).",
)
@click.option("-o", "--output", default=None, help="Write the proof file here (default stdout).")
@pass_ctx
def prove(
    ctx: Ctx, args: tuple[str, ...], index: int | None, old: int | None, output: str | None
) -> None:
    """Prove REF's latest entry (or entry --index N) is in the latest signed checkpoint, or
    (--consistency OLD [NEW]) that the tree of size OLD is a prefix of checkpoint NEW.

    Writes the proof file: C2SP tlog-proof text (inclusion) or JSON (consistency), each
    carrying the signed checkpoint it was computed at. `evstore verify-proof` checks it.

    Exit codes: 0 ok; 1 log.no-checkpoint, log.not-logged, log.not-integrated, log.range,
    ref.syntax; 2 usage.
    """  # noqa: D205 - the help text
    if len(args) > 1:
        raise click.UsageError("prove takes one REF (or NEW with --consistency)")
    with open_store(ctx) as store:
        if old is not None:
            if index is not None:
                raise click.UsageError("--index and --consistency exclude each other")
            try:
                new = int(args[0]) if args else None
            except ValueError:
                raise click.UsageError(f"NEW must be a tree size, not {args[0]!r}") from None
            r = store.log.prove_consistency(old, new)
        else:
            if not args and index is None:
                raise click.UsageError("prove takes a REF, --index N or --consistency OLD")
            r = store.log.prove(args[0] if args else None, index=index)
    text = r.pop("text")
    if output is not None:
        write_output(ctx, output, text.encode("utf-8"))
        if not ctx.json:
            ctx.note(f"wrote {output}")
        return
    emit(ctx, r, lambda _: click.echo(text, nl=False))


@click.command("verify-proof")
@click.argument("file", required=False)
@click.option("--key", "vkey", required=True, help="The log's verifier key, or a file holding it.")
@click.option("--content", default=None, help="The object's bytes: the entry must name them.")
@click.option(
    "--tiles",
    "tiles_from",
    default=None,
    metavar="URL|DIR",
    help="Instead of FILE: verify entry --index from a tlog-tiles URL prefix or directory.",
)
@click.option("--index", type=click.IntRange(min=0), default=None, help="The entry (--tiles).")
@click.option(
    "--policy",
    "policy_file",
    default=None,
    help="A witness policy file: the checkpoint must carry its quorum of cosignatures.",
)
@pass_ctx
def verify_proof(
    ctx: Ctx,
    file: str | None,
    vkey: str,
    content: str | None,
    tiles_from: str | None,
    index: int | None,
    policy_file: str | None,
) -> None:
    """Verify a proof file from `evstore prove`, with no store: signature, proof, content.

    With --tiles URL|DIR --index N instead of FILE: fetch the checkpoint and tiles, rebuild
    the signed root from them and verify entry N's inclusion (docs/log.md#tiles).

    With --policy FILE (witnesses and a quorum, docs/log.md#witnesses) the checkpoint (the
    proof file's, or with --tiles the one fetched from the tiles) must also carry
    cosignatures of at least the quorum of the policy's witnesses.

    Exit codes: 0 verified; 1 checkpoint.*, tlog-proof.*, log.consistency,
    log.content-mismatch, log.proof-malformed, tiles.malformed, tiles.missing,
    witness.policy, witness.key, witness.quorum, input.unreadable; 2 usage.
    """
    if "+" not in vkey and Path(vkey).is_file():
        vkey = read_input(vkey, limit=64 << 10).decode("utf-8", "replace").strip()
    body = read_input(content) if content is not None else None
    if (file is None) == (tiles_from is None) or (tiles_from is None) != (index is None):
        raise click.UsageError("verify-proof takes FILE, or --tiles URL|DIR with --index N")
    policy = None
    if policy_file is not None:
        policy = read_input(policy_file, limit=1 << 20).decode("utf-8", "replace")
    if tiles_from is not None:
        assert index is not None
        r = evstore.verify_log_tiles(tiles_from, vkey, index, body, policy=policy)
    else:
        assert file is not None
        r = evstore.verify_log_proof(read_input(file, limit=PROOF_MAX), vkey, body, policy=policy)
    if r["type"] == "inclusion":
        line = f"ok: entry {r['index']} is in {r['origin']} at size {r['size']}"
        if r["content"]:
            line += f"; the content is {r['entry']['address']}"
    else:
        signed = "signed" if r["old_root_signed"] else "as given in the file"
        line = (
            f"ok: size {r['old_size']} (root {r['old_root']}, {signed}) is a prefix of"
            f" {r['origin']} at size {r['new_size']}"
        )
    emit(ctx, {"ok": True, **r}, line)


#: The largest proof file read (bytes): a proof of a log of 2**63 entries is about 10 KiB.
PROOF_MAX = 16 << 20


#: The commands of this area, as registered on the ``evstore`` group.
COMMANDS = (log, prove, verify_proof, witness)


def register(cli: click.Group) -> None:
    """Add the log commands to the ``evstore`` group."""
    for command in COMMANDS:
        cli.add_command(command)
