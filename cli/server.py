"""The HTTP server and its tokens: ``serve``, ``token create``, ``token ls``, ``token revoke``."""

from __future__ import annotations

import math
import re
from typing import Any

import click

import evstore

from .common import Ctx, emit, is_http_url, open_store, pass_ctx, refused_remotely

__all__ = ["register", "serve", "token"]


class Seconds(click.FloatRange):
    """A finite number of seconds > 0: ``nan`` and ``inf`` are usage errors (exit 2).

    click's FloatRange lets both through (``nan > 0`` is never checked false); found by the
    attack: ``serve --header-timeout nan`` crashed, ``--upload-expiry nan`` never expired.
    """

    name = "seconds"

    def __init__(self) -> None:
        super().__init__(min=0, min_open=True)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """``value`` as a float, or fail naming the option if it is not finite and > 0."""
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number of seconds > 0.", param, ctx)
        return number


_NAMED = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.-]{0,62})=(.+)", re.S)


def parse_stores(args: tuple[str, ...], default: str) -> dict[str | None, str]:
    """``URL`` or ``NAME=URL ...`` as the stores mapping of :func:`evstore.serve`.

    A ``NAME=`` prefix counts only when the text before ``=`` is a store name (no ``:`` or
    ``/``), so a URL with a query (``...?sslmode=require``) stays a URL.
    """
    if not args:
        return {None: default}
    out: dict[str | None, str] = {}
    for a in args:
        m = _NAMED.fullmatch(a)
        name, url = (m.group(1), m.group(2)) if m else (None, a)
        if name in out:
            raise click.UsageError(f"store {name or '(unnamed)'} given twice")
        out[name] = url
    if None in out and len(out) > 1:
        raise click.UsageError("give one unnamed URL, or NAME=URL for every store")
    return out


@click.command()
@click.argument("stores", nargs=-1, metavar="[URL | NAME=URL ...]")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True)
@click.option(
    "--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Processes."
)
@click.option(
    "--public-read", is_flag=True, help="Reads need no token (writes and admin still do)."
)
@click.option("--access-log/--no-access-log", default=True, help="One log line per request.")
@click.option(
    "--max-object-bytes",
    type=click.IntRange(min=1),
    default=None,
    help="Largest PUT body (default 1 GiB).",
)
@click.option(
    "--max-json-bytes", type=click.IntRange(min=1), default=None, help="Largest JSON body."
)
@click.option(
    "--max-bundle-bytes", type=click.IntRange(min=1), default=None, help="Largest bundle tar."
)
@click.option(
    "--max-validate-bytes",
    type=click.IntRange(min=1),
    default=None,
    help="Largest validate body (default 1 MiB; a read token may send it).",
)
@click.option(
    "--validate-seconds",
    type=Seconds(),
    default=None,
    help="A validate running longer is stopped: 413 http.validate-cost (default 30).",
)
@click.option(
    "--header-timeout",
    type=Seconds(),
    default=None,
    help="Seconds to send a request's line and headers, then 408 and closed (default 10).",
)
@click.option(
    "--body-timeout",
    type=Seconds(),
    default=None,
    help="Seconds a body may take before it must arrive at 1 KiB/s, then 408 (default 15).",
)
@click.option(
    "--upload-expiry",
    type=Seconds(),
    default=None,
    help="Seconds an unfinished OCI blob upload, or one no manifest names yet, is kept "
    "(default 3600).",
)
@click.option(
    "--max-connections",
    type=click.IntRange(min=1),
    default=None,
    help="Open connections per process; more are answered 503 and closed (default 1000).",
)
@click.option(
    "--max-in-flight",
    type=click.IntRange(min=1),
    default=None,
    help="Requests handled at once per process; more get 503 http.busy (default 256).",
)
@click.option(
    "--redirect-large",
    type=click.IntRange(min=1),
    default=None,
    metavar="BYTES",
    help="A whole GET of a blob over BYTES whose bytes are in an S3 backend answers 307 to a "
    "presigned URL of the bucket, for clients sending Evstore-Redirect: allow (the evstore "
    "client; it verifies the bytes). Default: never.",
)
@click.option(
    "--redirect-seconds",
    type=click.IntRange(min=1, max=7 * 86400),
    default=None,
    help="How long a redirect's presigned URL is valid (default 300).",
)
@click.option(
    "--log-key",
    type=str,  # read by the server before it listens: log.key-file, not a usage error
    envvar="EVSTORE_LOG_KEY",
    default=None,
    help="Sign each store's log checkpoint on a schedule with this private key file "
    "(evstore log init-key; default $EVSTORE_LOG_KEY; none: never sign).",
)
@click.option(
    "--checkpoint-every",
    type=Seconds(),
    default=60.0,
    show_default=True,
    help="Seconds between two signing rounds (with --log-key); each also asks the "
    "log.witness_policy witnesses to cosign.",
)
@click.option(
    "--witness-key",
    type=str,  # read before listening: witness.key, not a usage error
    default=None,
    help="Act as a witness (C2SP tlog-witness) with this key file (evstore witness "
    "init-key): POST P/add-checkpoint cosigns the logs of each store's witness.logs.",
)
@pass_ctx
def serve(
    ctx: Ctx,
    /,
    stores: tuple[str, ...],
    host: str,
    port: int,
    workers: int,
    public_read: bool,
    access_log: bool,
    log_key: str | None,
    checkpoint_every: float,
    witness_key: str | None,
    **limits: Any,
) -> None:
    """Serve stores over HTTP (API v1, docs/http.md) until SIGTERM or Ctrl-C.

    With no URL, the store of --store / EVSTORE_URL is served at the root. NAME=URL serves
    each store under /NAME; each is its own database and nothing crosses between them.
    Reads need a read token unless --public-read; writes an ingest token (evstore token
    create). Shutdown is clean: requests in flight finish, nothing is half-written. With
    --log-key, a checkpoint of each store's log is signed every --checkpoint-every seconds
    (after checking it is consistent with the previous one; nothing when the log has not
    grown), then the witnesses of the log.witness_policy setting are asked to cosign it.
    With --witness-key, each store is also a witness for the logs its witness.logs setting
    names (POST P/add-checkpoint, docs/log.md#witnesses).

    Nothing is printed before the stores are open, the --log-key read and the port bound.

    Exit codes: 0 stopped by a signal; 1 a store cannot be served, the --log-key cannot be
    read (log.key-file, checkpoint.key), the --witness-key cannot be read or is malformed
    (witness.key) or the address cannot be listened on (http.listen, e.g. the port is in
    use); 2 usage (a seconds option that is not a finite number > 0 too).
    """
    mapping = parse_stores(stores, ctx.url)
    if any(is_http_url(url) for url in mapping.values()):  # serve opens the database itself
        raise refused_remotely("serve")
    kw = {k.removeprefix("max_"): v for k, v in limits.items() if v is not None}
    run, server_limits = evstore.serve, evstore.ServerLimits  # install.extra-missing first
    reads = "public reads" if public_read else "tokens for reads"
    paths = ", ".join("/" + n if n else "/" for n in mapping)

    def announce(address: str) -> None:
        ctx.note(f"serving {paths} on {address} ({reads})")

    run(
        mapping,
        host=host,
        port=port,
        workers=workers,
        public_read=public_read,
        limits=server_limits(**kw),
        access_log=access_log,
        log_key=log_key,
        checkpoint_every=checkpoint_every,
        announce=announce,
        witness_key=witness_key,
    )


@click.group()
def token() -> None:
    """Bearer tokens of the HTTP server, kept in the store's own database (hashed)."""


@token.command("create")
@click.option(
    "--scope", type=click.Choice(["read", "ingest", "admin"]), required=True, help="What it may do."
)
@click.option("--name", default="", metavar="LABEL", help="A label for people.")
@pass_ctx
def token_create(ctx: Ctx, scope: str, name: str) -> None:
    """Make a token; its text is printed this once (only its SHA-256 is stored).

    Exit codes: 0 made; 1 store error; 2 usage.
    """
    with open_store(ctx) as store:
        made = evstore.create_token(store, scope, name)
    emit(ctx, made, made["token"])
    ctx.note(f"token {made['id']} ({scope}); keep it: it is not shown again")


@token.command("ls")
@pass_ctx
def token_ls(ctx: Ctx) -> None:
    """List the tokens (id, scope, label, made, revoked); never their text.

    Exit codes: 0 ok; 1 store error.
    """
    with open_store(ctx) as store:
        rows = evstore.list_tokens(store)

    def human(x: dict[str, Any]) -> None:
        for r in x["tokens"]:
            state = "live" if r["revoked_at"] is None else f"revoked {r['revoked_at']}"
            click.echo(f"{r['id']}  {r['scope']:<6}  {r['created_at']}  {state}  {r['name']}")

    emit(ctx, {"tokens": rows}, human)


@token.command("revoke")
@click.argument("token_id", metavar="ID")
@pass_ctx
def token_revoke(ctx: Ctx, token_id: str) -> None:
    """Revoke the token ID: from the next request on it authenticates nothing.

    Exit codes: 0 revoked (or already); 1 not-found.token or store error.
    """
    with open_store(ctx) as store:
        out = evstore.revoke_token(store, token_id)
    emit(ctx, out, f"revoked {out['id']}")


def register(cli: click.Group) -> None:
    """Add ``serve`` and ``token`` to the ``evstore`` group."""
    cli.add_command(serve)
    cli.add_command(token)
