"""Shared CLI plumbing: the invocation context, shared options, input and output rendering.

Only cli/ reads the environment (EVSTORE_URL), touches stdin/stdout and picks exit codes.
The CLI imports only the public surface (``evstore``, its ``__all__``) and ``evstore.cli.*``.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import json
import os
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

import evstore

__all__ = [
    "DATABASE_ONLY",
    "DEFAULT_URL",
    "Ctx",
    "Progress",
    "counting_reader",
    "digest_lines",
    "digests_option",
    "discard_created",
    "emit",
    "env_url",
    "escape_unencodable_output",
    "fail",
    "ingest_options",
    "is_http_url",
    "open_store",
    "nonempty_path",
    "output_option",
    "pass_ctx",
    "progress",
    "read_input",
    "refused_remotely",
    "write_output",
]

#: Commands that need the database itself, and why: over HTTP they fail with
#: remote.unsupported naming the reason (docs/http.md#the-client). ``init`` and ``migrate``
#: are refused by evstore.init / evstore.migrate themselves.
DATABASE_ONLY: dict[str, str] = {
    "serve": "it opens the database itself to serve it",
}

#: The default store: a SQLite file in the current directory.
DEFAULT_URL = "sqlite:///evstore.db"


class Ctx:
    """Per-invocation state: the store URL, whether output is JSON, and the verbosity.

    ``verbosity``: -1 quiet (``-q``: no progress, no notes on stderr), 0 default, 1 or more
    verbose (``-v``). ``created`` is the SQLite file this invocation created (removed again
    when the command fails, so no failed command leaves a new store behind).
    """

    def __init__(self, url: str, as_json: bool, verbosity: int = 0) -> None:
        self.url = url
        self.json = as_json
        self.verbosity = verbosity
        self.created: Path | None = None

    def note(self, message: str) -> None:
        """A human note on stderr (not with --json, not with -q)."""
        if not self.json and self.verbosity >= 0:
            click.echo(message, err=True)


class Progress:
    """Progress on the terminal: a rich bar with rate and ETA on stderr, or nothing.

    Call it as ``(done, total)`` (the callback shape of ``Store.check`` and the byte
    counters); ``echo(line)`` prints a line (a fault) above the bar, never glued to it.
    Nothing is drawn when stderr is not a terminal, under ``--json`` or with ``-q``; lines
    given to ``echo`` then go to stdout as usual.
    """

    def __init__(self, ctx: Ctx, label: str, *, unit: str = "items") -> None:
        self._ctx = ctx
        self._label = label
        self._bytes = unit == "bytes"
        self._bar: Any = None
        self._task: Any = None
        self.enabled = not ctx.json and ctx.verbosity >= 0 and sys.stderr.isatty()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def _start(self, total: int | None) -> None:
        # rich is imported only when a bar is drawn: everyday commands never pay for it.
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            TaskProgressColumn,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )
        from rich.progress import Progress as Bar

        count = DownloadColumn() if self._bytes else MofNCompleteColumn()
        rate = TransferSpeedColumn() if self._bytes else TextColumn("{task.fields[rate]}")
        self._bar = Bar(
            TextColumn("{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            count,
            rate,
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._bar.start()
        self._task = self._bar.add_task(self._label, total=total, rate="")

    def __call__(self, done: int, total: int | None) -> None:
        """Report ``done`` of ``total`` (items, or bytes for a byte bar)."""
        if not self.enabled:
            return
        if self._bar is None:
            self._start(total)
        rate = ""
        if not self._bytes:
            task = self._bar.tasks[0]
            speed = task.speed
            rate = f"{speed:,.0f}/s" if speed else ""
        self._bar.update(self._task, completed=done, total=total, rate=rate)

    def echo(self, line: str) -> None:
        """Print one line (a fault, a result) on stdout, on its own line (above the bar)."""
        if self._bar is not None and sys.stdout.isatty():
            # stdout is the bar's terminal too: rich prints the line above the bar.
            self._bar.print(line, markup=False, highlight=False, soft_wrap=True)
        else:
            click.echo(line)


def progress(ctx: Ctx, label: str, *, unit: str = "items") -> Progress:
    """Make the :class:`Progress` of a command that can run long (``with ... as bar:``)."""
    return Progress(ctx, label, unit=unit)


class counting_reader:  # lower case: used like a function
    """Wrap a binary file: every ``read`` reports the bytes read so far to ``callback``."""

    def __init__(self, fh: Any, total: int | None, callback: Callable[[int, int | None], None]):
        self._fh = fh
        self._total = total
        self._callback = callback
        self._done = 0

    def read(self, size: int = -1) -> bytes:
        """Read like the wrapped file, then report progress."""
        data = self._fh.read(size)
        self._done += len(data)
        self._callback(self._done, self._total)
        return bytes(data)


pass_ctx = click.make_pass_decorator(Ctx)


def nonempty_path(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse ``-o ''`` (a usage error, exit 2): an empty name is not "stdout"."""
    if value is not None and value == "":
        raise click.BadParameter("the file name is empty: give a path")
    return value


#: ``-o/--output FILE`` for commands that print exact bytes (written by :func:`write_output`).
output_option = click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    callback=nonempty_path,
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
    """Open the invocation's store (only init, put and the ingest commands pass create=True).

    An ``http(s)://`` URL opens the store a server serves, with the token in EVSTORE_TOKEN
    (the one place that reads it).

    A SQLite store created here is remembered in ``ctx.created``: the error handler removes it
    again when the command fails, so a failed command leaves no new store behind.
    """
    if is_http_url(ctx.url):  # a store served by `evstore serve`: nothing to create here
        path = click.get_current_context().command_path.split()
        command = path[1] if len(path) > 1 else ""
        if command in DATABASE_ONLY:
            raise refused_remotely(command)
        store = evstore.open(ctx.url, token=os.environ.get("EVSTORE_TOKEN") or None)
    else:
        store = evstore.open(ctx.url, create=create)
    if store.created and store.path is not None:
        ctx.created = store.path
    if ctx.verbosity > 0 and not ctx.json:
        click.echo(f"store: {store.url}{' (created)' if store.created else ''}", err=True)
    return store


def refused_remotely(command: str) -> evstore.EvstoreError:
    """The ``remote.unsupported`` error of a command of :data:`DATABASE_ONLY`, naming why."""
    return evstore.error(
        "remote.unsupported",
        f"`evstore {command}` works only beside the database ({DATABASE_ONLY[command]}): run "
        "it with a database URL (sqlite:///..., postgresql://...) on the server's machine",
        command=command,
    )


def is_http_url(url: str) -> bool:
    """True for a store served over HTTP (``http://`` or ``https://``)."""
    return url[:8].lower().startswith(("http://", "https://"))


def discard_created(ctx: Ctx) -> None:
    """Remove the SQLite store this failed invocation created (and its -wal/-shm files).

    A store that holds any blob is kept: a batched command (``--batch N``) that failed or was
    interrupted after committing batches leaves them, as its message says.
    """
    path, ctx.created = ctx.created, None
    if path is None:
        return
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            if conn.execute("SELECT EXISTS (SELECT 1 FROM blobs)").fetchone()[0]:
                return
    except sqlite3.Error:
        pass  # unreadable or half-made: nothing committed worth keeping
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(OSError):
            Path(str(path) + suffix).unlink()


def _to_jsonable(obj: Any) -> Any:
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    return obj


def json_text(obj: Any, **kw: Any) -> str:
    """``json.dumps(obj, ensure_ascii=False, **kw)``, unless stdout cannot write that text.

    A name read from the file system with bytes that are not UTF-8 (an archive member, a
    path) reaches us with lone surrogates; written as they are they would make the output
    invalid UTF-8. A stdout that is not UTF-8 (``PYTHONIOENCODING=cp1252``, a redirected
    Windows console) cannot write every character either. Such a text is written with JSON's
    ASCII escapes instead: valid JSON in any ASCII-compatible encoding, the same value.
    """
    text = json.dumps(obj, ensure_ascii=False, **kw)
    if text.isascii():
        return text
    try:
        text.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return json.dumps(obj, ensure_ascii=True, **kw)
    return text


#: The error handler of a stdout that wrote undecodable file names back as their bytes
#: (``surrogateescape``, Python's choice in a C or POSIX locale): it still does, and escapes
#: every other character the encoding lacks (``\U0001f600``) instead of failing.
RAW_NAMES_ESCAPE = "evstore.surrogateescape-backslashreplace"


def _surrogateescape_backslashreplace(exc: UnicodeError) -> tuple[str | bytes, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    part = exc.object[exc.start : exc.end]
    if all("\udc80" <= ch <= "\udcff" for ch in part):
        return codecs.lookup_error("surrogateescape")(exc)
    return codecs.backslashreplace_errors(exc)


codecs.register_error(RAW_NAMES_ESCAPE, _surrogateescape_backslashreplace)


def escape_unencodable_output() -> None:
    """Make stdout and stderr escape what their encoding cannot write, never fail on it.

    Output is written after the data is stored: a path or value holding a character the
    stream's encoding lacks (an emoji on a cp1252 console) must not end the command with a
    UnicodeEncodeError and a traceback. A strict stream escapes it (``backslashreplace``:
    ``\U0001f600``); a ``surrogateescape`` stream keeps writing undecodable names back as
    their bytes and escapes the rest. JSON output never needs this (:func:`json_text`).
    """
    for stream in (sys.stdout, sys.stderr):
        if not isinstance(stream, io.TextIOWrapper):
            continue
        if stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")
        elif stream.errors == "surrogateescape":
            stream.reconfigure(errors=RAW_NAMES_ESCAPE)


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
        click.echo(json_text(data, sort_keys=True))
        return
    if human is None:
        click.echo(json_text(data, indent=2, sort_keys=True))
    elif isinstance(human, str):
        click.echo(human)
    else:
        human(obj)


def fail(ctx: Ctx, obj: dict[str, Any], message: str, code: int = 1) -> NoReturn:
    """Print a non-error failure result (e.g. `has` with missing refs) and exit ``code``."""
    if ctx.json:
        click.echo(json_text(obj, sort_keys=True))
    else:
        click.echo(message)
    sys.exit(code)


def read_input(path: str, limit: int | None = None) -> bytes:
    """The raw bytes of a file, or of stdin for ``-`` (no decoding, nothing stripped).

    ``limit``: the most bytes a well-formed input of this kind holds; a longer one (or an
    endless one such as /dev/zero) is refused after ``limit + 1`` bytes are read.

    Raises:
        InputError: ``input.unreadable`` when the file cannot be read; ``input.invalid``
            when it is longer than ``limit`` bytes.
    """
    try:
        if path == "-":
            data = sys.stdin.buffer.read(-1 if limit is None else limit + 1)
        elif limit is None:
            return Path(path).read_bytes()
        else:
            with open(path, "rb") as fh:
                data = fh.read(limit + 1)
    except OSError as exc:
        raise evstore.error(
            "input.unreadable", f"cannot read {path}: {exc.strerror}", path=path
        ) from None
    if limit is not None and len(data) > limit:
        raise evstore.error(
            "input.invalid", f"{path} is longer than {limit} bytes: not this kind of file"
        )
    return data


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
