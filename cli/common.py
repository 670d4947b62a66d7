"""Shared CLI plumbing: the invocation context, shared options, input and output rendering.

Only cli/ reads the environment (EVSTORE_URL), touches stdin/stdout and picks exit codes.
The CLI imports only the public surface (``evstore``, its ``__all__``) and ``evstore.cli.*``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

import evstore

__all__ = [
    "DEFAULT_URL",
    "Ctx",
    "digest_lines",
    "digests_option",
    "emit",
    "env_url",
    "fail",
    "ingest_options",
    "open_store",
    "output_option",
    "pass_ctx",
    "read_input",
    "write_output",
]

#: The default store: a SQLite file in the current directory.
DEFAULT_URL = "sqlite:///evstore.db"


class Ctx:
    """Per-invocation state: the store URL and whether output is JSON."""

    def __init__(self, url: str, as_json: bool) -> None:
        self.url = url
        self.json = as_json


pass_ctx = click.make_pass_decorator(Ctx)

#: ``-o/--output FILE`` for commands that print exact bytes (written by :func:`write_output`).
output_option = click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write to this file instead of stdout.",
)


#: ``--digests`` for commands that print an address: also print SHA-256 in hex and base64url.
digests_option = click.option(
    "--digests", is_flag=True, help="Also print SHA-256 in hex and base64url."
)


def ingest_options(fn: Any) -> Any:
    """The options and FILES argument shared by ``ingest`` and ``validate``."""
    opts = [
        click.option(
            "--kind",
            "kind",
            default=None,
            metavar="KIND",
            help="Kind of every FILE (docs/kinds.md); detected when omitted.",
        ),
        click.option(
            "--content",
            "contents",
            multiple=True,
            type=click.Path(dir_okay=False),
            help="Bytes a document refers to by SHA-256 (e.g. a manifest's rendered content). "
            "Repeatable.",
        ),
        click.option(
            "--source",
            "sources",
            multiple=True,
            nargs=3,
            metavar="DOCUMENT_ID FRAGMENT_ID FILE",
            help="Source bytes of fragments in a templiqx eval output. Repeatable.",
        ),
        click.option(
            "--host-id",
            default=None,
            help="Scope host_id binding every fragment (with the other two).",
        ),
        click.option("--tenant-id", default=None, help="Scope tenant_id (all three or none)."),
        click.option(
            "--authorization-scope-id",
            default=None,
            help="Scope authorization_scope_id (all three or none).",
        ),
        click.option(
            "--source-document",
            default=None,
            metavar="REF",
            help="Stored source document an evidence context is checked against.",
        ),
        digests_option,
        click.argument("files", nargs=-1, required=False),  # checked by the command
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


def at_pointer(pointer: str) -> str:
    """Where a fault is, for people: ``"at /a/0"``; the root ``""`` is ``"at the document root"``.

    RFC 6901 reads ``"/"`` as the member named ``""``, so the root is never written that way
    (the same phrase as :class:`evstore.EvstoreError`'s ``str``).
    """
    return f"at {pointer}" if pointer else "at the document root"


def digest_lines(d: dict[str, Any], with_digests: bool) -> str:
    """The address of a digest-forms dict, then (``with_digests``) its two SHA-256 forms."""
    lines = [str(d["address"])]
    if with_digests:
        lines += [str(d["sha256"]), str(d["sha256_b64u"])]
    return "\n".join(lines)


def open_store(ctx: Ctx, *, create: bool = False) -> evstore.Store:
    """Open the invocation's store (only init, put and the ingest commands pass create=True)."""
    return evstore.open(ctx.url, create=create)


def _to_jsonable(obj: Any) -> Any:
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    return obj


def emit(ctx: Ctx, obj: Any, human: Callable[[Any], None] | str | None = None) -> None:
    """Print a result: exactly one JSON object with --json, else the human rendering.

    Args:
        ctx: the invocation (``ctx.json`` picks the form).
        obj: a dict or an object with ``to_dict()``.
        human: a callable that prints the human form, or a str to print, or None (JSON
            pretty-printed).
    """
    data = _to_jsonable(obj)
    if ctx.json:
        click.echo(json.dumps(data, ensure_ascii=False, sort_keys=True))
        return
    if human is None:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True))
    elif isinstance(human, str):
        click.echo(human)
    else:
        human(obj)


def fail(ctx: Ctx, obj: dict[str, Any], message: str, code: int = 1) -> NoReturn:
    """Print a non-error failure result (e.g. `has` with missing refs) and exit ``code``."""
    if ctx.json:
        click.echo(json.dumps(obj, ensure_ascii=False, sort_keys=True))
    else:
        click.echo(message)
    sys.exit(code)


def read_input(path: str) -> bytes:
    """The raw bytes of a file, or of stdin for ``-`` (no decoding, nothing stripped).

    Raises:
        InputError: ``input.unreadable`` when the file cannot be read.
    """
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise evstore.error(
            "input.unreadable", f"cannot read {path}: {exc.strerror}", path=path
        ) from None


def write_output(
    ctx: Ctx, path: str, data: bytes | Any, extra: dict[str, Any] | None = None
) -> None:
    """Write bytes (or an iterable of byte chunks) to ``path``; with --json print one summary.

    Raises:
        InputError: ``output.unwritable`` when the file cannot be written (nothing printed).
    """
    size = 0
    try:
        with Path(path).open("wb") as fh:
            for chunk in [data] if isinstance(data, (bytes, bytearray)) else data:
                fh.write(chunk)
                size += len(chunk)
    except OSError as exc:
        raise evstore.error(
            "output.unwritable", f"cannot write {path}: {exc.strerror}", path=path
        ) from None
    if ctx.json:
        emit(ctx, {"ok": True, "output": path, "size": size, **(extra or {})})


def env_url() -> str:
    """EVSTORE_URL, else the default SQLite file."""
    return os.environ.get("EVSTORE_URL") or DEFAULT_URL
