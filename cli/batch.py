r"""Bulk inputs and batch reads: path expansion for put/ingest, ``cat-batch``, ``verify-list``.

``cat-batch`` framing (one record per ref read on stdin, in order, like ``git cat-file
--batch``)::

    <ref> <size>\n<size bytes>\n      a stored blob, verified before its first byte is written
    <ref> missing\n                   no blob with that digest
    <ref> error <code>\n              a malformed ref (ref.syntax) or a blob found corrupt

``<ref>`` is the line as read (surrounding whitespace removed); ``<size>`` is in bytes.
"""

from __future__ import annotations

import fnmatch
import io
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import click

import evstore

from .common import Ctx, emit, open_store, pass_ctx

__all__ = [
    "COMMANDS",
    "FsPath",
    "blob_reads",
    "bulk_options",
    "cat_batch",
    "expand_paths",
    "listed",
    "parse_checksum_line",
    "register",
    "stdin_batches",
    "stdin_lines",
    "verify_list",
]


class FsPath:
    """A path string as an ``os.PathLike`` item of ``Store.put_many``, without ``pathlib``.

    ``pathlib.Path`` parses every path it is given (about 3 us a file, a tenth of a bulk
    re-put's cost per file against ``git hash-object --stdin-paths``, issue 29); put_many
    only needs ``os.fspath`` of an item.
    """

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path

    def __fspath__(self) -> str:
        """The path string as given."""
        return self.path


def bulk_options(fn: Any) -> Any:
    """The bulk options of ``put`` and ``ingest``: globs, --stdin-paths, -z, --batch."""
    opts = [
        click.option(
            "--include",
            multiple=True,
            metavar="GLOB",
            help="Files found in a directory must match one of these globs (the file name or "
            "its path below the directory). Repeatable.",
        ),
        click.option(
            "--exclude",
            multiple=True,
            metavar="GLOB",
            help="Skip files found in a directory that match this glob. Repeatable.",
        ),
        click.option(
            "--stdin-paths",
            is_flag=True,
            help="Also read paths from stdin, one per line (NUL-separated with -z).",
        ),
        click.option(
            "-z", "nul", is_flag=True, help="With --stdin-paths: paths are NUL-separated."
        ),
        click.option(
            "--batch",
            type=click.IntRange(min=1, max=sys.maxsize),
            default=None,
            metavar="N",
            help="Commit every N items as one all-or-nothing transaction (default: one "
            "transaction for the whole command).",
        ),
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


def _walk(root: str, include: tuple[str, ...], exclude: tuple[str, ...]) -> Iterator[str]:
    """Regular files below ``root``, sorted by path, filtered by the globs."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)

            def hit(pats: tuple[str, ...], name: str = name, rel: str = rel) -> bool:
                return any(
                    fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(rel, p) for p in pats
                )

            if include and not hit(include):
                continue
            if exclude and hit(exclude):
                continue
            if os.path.isfile(path):
                yield path


def stdin_lines(nul: bool = False) -> Iterator[str]:
    """Stdin split into lines (or NUL-separated items), empty ones skipped, read lazily."""
    stream = sys.stdin.buffer
    if nul:
        buf = b""
        while chunk := stream.read(1 << 16):
            buf += chunk
            *items, buf = buf.split(b"\0")
            for item in items:
                if item:
                    yield os.fsdecode(item)
        if buf:
            yield os.fsdecode(buf)
        return
    for raw in stream:
        line = raw.rstrip(b"\r\n")
        if line:
            yield os.fsdecode(line)


def expand_paths(
    args: Iterable[str],
    *,
    include: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    stdin_paths: bool = False,
    nul: bool = False,
) -> Iterator[str]:
    """Every input path: each argument (a directory walked recursively), then stdin's paths.

    Explicit file arguments and paths read from stdin are taken as given; the globs filter
    files found by walking a directory. Paths are produced lazily (100k paths cost no memory).
    """
    for arg in args:
        if arg != "-" and os.path.isdir(arg):
            yield from _walk(arg, include, exclude)
        else:
            yield arg
    if stdin_paths:
        for path in stdin_lines(nul):
            if os.path.isdir(path):
                yield from _walk(path, include, exclude)
            else:
                yield path


def listed(paths: Iterable[str], bar: Any) -> tuple[Iterable[str], int | None]:
    """``(paths, total)``: on a drawn progress bar, every path listed first, for a total and an ETA.

    A bar needs the total to show how much is left, so when ``bar.enabled`` (a terminal, no
    ``--json``, no ``-q``) the paths are walked (and stdin's read) before the first file is
    opened; the list holds the path strings only, as the command's result rows do anyway.
    Otherwise the paths stay a lazy stream and the total is None.
    """
    if not getattr(bar, "enabled", False):
        return paths, None
    every = list(paths)
    return every, len(every)


def check_args(args: tuple[str, ...], stdin_paths: bool) -> None:
    """Refuse a missing argument or file before the store is opened (nothing created).

    Raises:
        click.UsageError: no FILES and no --stdin-paths, or ``-`` with --stdin-paths.
        InputError: ``input.unreadable`` for an argument that does not exist.
    """
    if not args and not stdin_paths:
        raise click.UsageError("Missing argument 'FILES...' (or give --stdin-paths).")
    if stdin_paths and "-" in args:
        raise click.UsageError("- (stdin) and --stdin-paths both read stdin; give one")
    for a in args:
        if a != "-" and not os.path.exists(a):
            raise evstore.error("input.unreadable", f"cannot read {a}: no such file", path=a)


def interrupted_note(ctx: Ctx, done: list[int], unit: str) -> Callable[[], None]:
    """A function that says (on stderr) what an interrupted batched command committed."""

    def say() -> None:
        batches, items = done
        click.echo(
            f"interrupted: {batches} batch(es) committed ({items} {unit}); "
            "the batch in progress was rolled back",
            err=True,
        )

    return say


def stdin_batches(limit: int = 500) -> Iterator[list[str]]:
    """Stdin's lines (as :func:`stdin_lines` splits them) in lists of what one read brought.

    Each list holds the complete lines that had arrived (at most ``limit``), so a batch
    reader answers a coprocess writing one line at a time without waiting for more, and a
    pipe of 10k refs in a few large batches.
    """
    stream = sys.stdin.buffer
    read = getattr(stream, "read1", stream.read)
    buf = b""
    while True:
        chunk = read(1 << 16)
        if not chunk:
            break
        *lines, buf = (buf + chunk).split(b"\n")
        items = [os.fsdecode(x) for raw in lines if (x := raw.rstrip(b"\r\n"))]
        for start in range(0, len(items), limit):
            yield items[start : start + limit]
    last = buf.rstrip(b"\r\n")
    if last:
        yield [os.fsdecode(last)]


class _Read(NamedTuple):
    """One ref's answer, in the shape of the library's ``BlobRead``."""

    ref: str
    digest: Any
    chunks: Iterator[bytes]
    error: evstore.EvstoreError | None


def blob_reads(store: Any, refs: list[str]) -> Iterator[Any]:
    """The verified reads of ``refs`` in order: ``Store.read_blobs`` (a batch a statement) on
    a local store, one ``open_blob`` a ref on a served one (the HTTP API reads one blob a
    request). Each item's chunks are consumed before the next item is taken.
    """  # noqa: D205
    if isinstance(store, evstore.Store):
        yield from store.read_blobs(refs)
        return
    for ref in refs:
        try:
            with store.open_blob(ref) as (digest, chunks):
                yield _Read(ref, digest, chunks, None)
        except evstore.EvstoreError as err:
            yield _Read(ref, None, iter(()), err)


def _frame(item: Any, out: Any) -> str | None:
    """Write the cat-batch record of one ``BlobRead``; its fault code, if any."""
    ref = item.ref
    try:
        if item.error is not None:
            raise item.error
        first = next(item.chunks, b"")  # the whole blob is verified before this returns
        out.write(f"{ref} {item.digest.size}\n".encode())
        out.write(first)
        for c in item.chunks:
            out.write(c)
        out.write(b"\n")
        return None
    except evstore.EvstoreError as err:
        # A ref read from stdin may hold bytes that are not UTF-8 (kept as surrogate escapes):
        # echo them back as they came.
        shown = ref.encode("utf-8", "surrogateescape")
        if err.code == "not-found.blob":
            out.write(shown + b" missing\n")
        else:
            out.write(shown + f" error {err.code}\n".encode())
        return err.code


def _drain(pending: io.BytesIO, out: Any) -> None:
    out.write(pending.getbuffer())
    pending.seek(0)
    pending.truncate()


@click.command("cat-batch")
@pass_ctx
def cat_batch(ctx: Ctx) -> None:
    r"""Read refs on stdin (one per line); write each blob framed, like git cat-file --batch.

    Per ref: "<ref> <size>\n<bytes>\n" (verified before the first byte is written),
    "<ref> missing\n" for an unknown blob, "<ref> error <code>\n" for a malformed ref or a
    corrupt blob. Output is flushed after each batch of refs that arrived together.
    --json does not apply (the output is bytes).

    Exit codes: 0 every ref found; 1 some missing or in error; 2 usage.
    """
    out = sys.stdout.buffer
    pending = io.BytesIO()  # a batch's records, written out in pieces of about 1 MiB
    bad = 0
    with open_store(ctx) as store:
        for lines in stdin_batches():
            refs = [r for line in lines if (r := line.strip())]
            for item in blob_reads(store, refs):
                if _frame(item, pending) is not None:
                    bad += 1
                if pending.tell() >= 1 << 20:
                    _drain(pending, out)
            _drain(pending, out)
            out.flush()
    if bad:
        sys.exit(1)


#: Manifest lines verified together (one lookup statement per batch).
VERIFY_BATCH = 500

_PLAIN = re.compile(r"^([0-9a-fA-F]{64}) ([ *])(.+)$")
_TAGGED = re.compile(r"^(SHA256|BLAKE3) \((.+)\) = ([0-9a-fA-F]{64})$")


def _unescape(path: str) -> str:
    return path.replace("\\\\", "\0").replace("\\n", "\n").replace("\\r", "\r").replace("\0", "\\")


def parse_checksum_line(line: str, algorithm: str | None) -> tuple[str, str] | None:
    r"""``(ref, path)`` of one ``sha256sum``/``b3sum`` line, or None when it is malformed.

    Accepts ``<hex>  <path>``, ``<hex> *<path>`` (binary marker), a leading ``\`` (escaped
    path) and the BSD tag form ``SHA256 (<path>) = <hex>`` / ``BLAKE3 (<path>) = <hex>``.
    ``algorithm`` (``sha256``/``blake3``) names the digest of untagged lines.
    """
    escaped = line.startswith("\\")
    body = line[1:] if escaped else line
    tagged = _TAGGED.match(body)
    if tagged:
        algo, path, hexd = tagged.group(1).lower(), tagged.group(2), tagged.group(3)
    else:
        plain = _PLAIN.match(body)
        if plain is None or algorithm is None:
            return None
        algo, hexd, path = algorithm, plain.group(1), plain.group(3)
    return f"{algo}:{hexd.lower()}", _unescape(path) if escaped else path


@click.command("verify-list")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "-a",
    "--algorithm",
    type=click.Choice(["sha256", "blake3"]),
    default=None,
    help="Digest of untagged lines: sha256 (sha256sum) or blake3 (b3sum). Tagged lines "
    "(SHA256 (path) = hex) name their own.",
)
@pass_ctx
def verify_list(ctx: Ctx, file: str, algorithm: str | None) -> None:
    """Check a sha256sum or b3sum manifest against the store: every digest stored and intact.

    FILE (or - for stdin) holds lines "<hex>  <path>" or "<hex> *<path>" (give -a), or
    "SHA256 (<path>) = <hex>" / "BLAKE3 (<path>) = <hex>". Each digest must name a stored
    blob whose bytes verify; the paths are only reported. Prints one line per fault.

    Exit codes: 0 every digest present and verified; 1 faults (or a store error); 2 usage.
    """
    lines = _read_lines(file)
    faults: list[dict[str, Any]] = []
    checked = 0
    with open_store(ctx) as store:
        todo: list[tuple[int, str, str]] = []  # (line, ref, path) of the pending batch

        def verify_pending() -> None:
            places = iter(todo)
            for item in blob_reads(store, [ref for _, ref, _ in todo]):
                n, ref, path = next(places)
                err = item.error
                if err is None:
                    try:  # the whole blob is verified before its first chunk comes
                        next(item.chunks, b"")
                    except evstore.EvstoreError as exc:
                        err = exc
                if err is not None:
                    faults.append(
                        {
                            "line": n,
                            "path": path,
                            "ref": ref,
                            "code": err.code,
                            "message": err.message,
                        }
                    )
            todo.clear()

        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            parsed = parse_checksum_line(line, algorithm)
            if parsed is None:
                why = (
                    "untagged line: give -a sha256 or -a blake3"
                    if algorithm is None and _PLAIN.match(line.lstrip("\\"))
                    else "not a sha256sum/b3sum line"
                )
                verify_pending()  # the faults stay in line order
                faults.append({"line": n, "code": "input.invalid", "message": why})
                continue
            ref, path = parsed
            checked += 1
            todo.append((n, ref, path))
            if len(todo) >= VERIFY_BATCH:
                verify_pending()
        verify_pending()
    result = {"ok": not faults, "checked": checked, "faults": faults}
    emit(ctx, result, _verify_human)
    if faults:
        sys.exit(1)


def _read_lines(file: str) -> list[str]:
    try:
        raw = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    except OSError as exc:
        raise evstore.error(
            "input.unreadable", f"cannot read {file}: {exc.strerror}", path=file
        ) from None
    return raw.decode("utf-8", "surrogateescape").splitlines()


def _verify_human(x: dict[str, Any]) -> None:
    for f in x["faults"]:
        where = f"{f['path']}: " if "path" in f else ""
        ref = f" {f['ref']}" if "ref" in f else ""
        click.echo(f"line {f['line']}: {where}{f['code']}{ref}: {f['message']}")
    if x["ok"]:
        click.echo(f"verified: {x['checked']} digest(s)")


#: The commands of this area, as registered on the ``evstore`` group.
COMMANDS = (cat_batch, verify_list)


def register(cli: click.Group) -> None:
    """Add the batch read commands to the ``evstore`` group."""
    for command in COMMANDS:
        cli.add_command(command)
