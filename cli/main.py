"""The ``evstore`` command: global options, the one error handler, and command loading.

Commands live in modules grouped by area: cli/objects.py, cli/ingest.py, cli/admin.py and one
module per contract (cli/fragments.py, cli/manifests.py, cli/packages.py, cli/contexts.py,
cli/runs.py). A contract module is imported only when one of its commands runs (or help
lists every command), so an everyday command does not pay for the contracts.

Exit codes (every command): 0 ok; 1 any evstore error (input rejected, not found, corruption,
binding conflict, store state: the printed code tells them apart) or a failed check/has;
2 command-line usage; 130 interrupted (Ctrl-C: the open transaction is rolled back).

The global options ``--store``, ``--json``, ``-v`` and ``-q`` may also follow the command
(``evstore ls --json``): :func:`hoist_global_options` moves them in front of it, unless the
command has an option of that name itself.
"""

from __future__ import annotations

import errno
import importlib
import io
import json
import os
import sys
from typing import Any

import click

import evstore

from . import admin, objects, retention, server
from . import ingest as ingest_commands
from .common import Ctx, discard_created, env_url, escape_unencodable_output, json_text

__all__ = [
    "AREAS",
    "AREA_COMMANDS",
    "EXIT_INTERRUPTED",
    "GLOBAL_FLAGS",
    "GLOBAL_VALUED",
    "EvstoreGroup",
    "cli",
    "hoist_global_options",
    "main",
]

#: Exit status of an interrupted command (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130

#: Global flags accepted after the command too.
GLOBAL_FLAGS = ("--json", "-v", "--verbose", "-q", "--quiet")
#: Global options with a value accepted after the command too (``--store URL``).
GLOBAL_VALUED = ("--store",)


def _usage_json(message: str, code: int) -> None:
    click.echo(
        json_text(
            {
                "ok": False,
                "error": {
                    "family": "usage",
                    "code": "usage",
                    "message": message,
                    "rule": "",
                    "pointer": "",
                },
            },
            sort_keys=True,
        )
    )
    sys.exit(code)


def _own_options(cmd: click.Command) -> tuple[set[str], set[str]]:
    """``(every option name of cmd, the names that take a value)``."""
    names: set[str] = set()
    valued: set[str] = set()
    for p in cmd.params:
        if isinstance(p, click.Option):
            opts = set(p.opts) | set(p.secondary_opts)
            names |= opts
            if not p.is_flag and not p.count:
                valued |= opts
    return names, valued


def hoist_global_options(group: click.Group, argv: list[str]) -> list[str]:
    """Move global options written after the command name in front of it.

    ``evstore ls --json --store URL`` becomes ``evstore --json --store URL ls``. An option
    the command defines itself (with that exact name) stays the command's; anything after
    ``--`` and the values of the command's own options are left alone.
    """
    i = 0
    while i < len(argv):  # skip the global options before the command
        a = argv[i]
        if a in GLOBAL_VALUED:
            i += 2
        elif a.startswith("-"):
            i += 1
        else:
            break
    if i >= len(argv):
        return argv
    ctx = click.Context(group, resilient_parsing=True)
    cmd = group.get_command(ctx, argv[i])
    if cmd is None:
        return argv
    own, own_valued = _own_options(cmd)
    if isinstance(cmd, click.Group):  # `evstore log entries --json`: the subcommand's own too
        sub = next((a for a in argv[i + 1 :] if not a.startswith("-")), None)
        sub_cmd = cmd.get_command(ctx, sub) if sub is not None else None
        if sub_cmd is not None:
            more, more_valued = _own_options(sub_cmd)
            own, own_valued = own | more, own_valued | more_valued
    head, tail = argv[: i + 1], argv[i + 1 :]
    moved: list[str] = []
    kept: list[str] = []
    j = 0
    while j < len(tail):
        a = tail[j]
        name = a.split("=", 1)[0] if a.startswith("--") else a
        if a == "--":
            kept += tail[j:]
            break
        if name in own:
            kept.append(a)
            if name in own_valued and "=" not in a and j + 1 < len(tail):
                kept.append(tail[j + 1])
                j += 1
        elif a in GLOBAL_FLAGS:
            moved.append(a)
        elif name in GLOBAL_VALUED:
            moved.append(a)
            if "=" not in a and j + 1 < len(tail):
                moved.append(tail[j + 1])
                j += 1
        else:
            kept.append(a)
        j += 1
    return argv[:i] + moved + head[i:] + kept


def _interrupted(ctx_obj: Ctx | None, as_json: bool) -> None:
    """Report an interrupt (exit 130): one JSON error with --json, a line on stderr else."""
    if ctx_obj is not None:
        discard_created(ctx_obj)
    err = evstore.error(
        "interrupted.signal",
        "interrupted (Ctrl-C); the open transaction was rolled back (with --batch, the "
        "batches committed before it stay)",
    )
    if as_json:
        click.echo(json.dumps({"ok": False, "error": err.to_dict()}, sort_keys=True))
    else:
        click.echo(f"error: {err}", err=True)
    sys.exit(EXIT_INTERRUPTED)


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``--version``: "evstore VERSION (schema REVISION)", the release and the schema it writes.

    The version is the installed distribution's (``evidence-store``, CHANGELOG.md); the
    schema revision is :func:`evstore.head_revision` (a store at another revision is
    migrated or refused). Reads no store.
    """
    if not value or ctx.resilient_parsing:
        return
    try:
        from importlib import metadata  # 20-25 ms of start-up: only for --version

        version = metadata.version("evidence-store")
    except metadata.PackageNotFoundError:  # run from a tree that was never installed
        version = "unknown"
    click.echo(f"evstore {version} (schema {evstore.head_revision()})")
    ctx.exit()


#: Command name -> the contract CLI module (under evstore.cli) that defines it.
AREA_COMMANDS: dict[str, str] = {
    "archive": "archive",
    "closure": "runs",
    "excerpt": "contexts",
    "export": "packages",
    "fragment-sources": "fragments",
    "fragments": "fragments",
    "ingest-bundle": "runs",
    "ingest-source": "fragments",
    "log": "log",
    "manifest": "manifests",
    "package": "packages",
    "prove": "log",
    "quote": "fragments",
    "refs": "runs",
    "runs": "runs",
    "verify-proof": "log",
    "witness": "log",
}

#: The contract CLI modules, in registration order.
AREAS = ("fragments", "manifests", "packages", "contexts", "runs", "log", "archive")


def _unavailable(name: str, area: str, exc: ImportError) -> click.Command:
    """A stand-in for a command whose module cannot be imported: it fails closed, typed."""

    def callback() -> None:
        raise evstore.error(
            "store.kind-unavailable",
            f"the {area} commands are not available in this installation ({exc}); "
            "reinstall evstore with its dependencies",
            area=area,
        )

    return click.Command(
        name,
        callback=callback,
        help=f"Not available in this installation ({exc}).",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


class EvstoreGroup(click.Group):
    """A click group whose one handler turns every EvstoreError into output and exit code 1.

    Usage errors exit 2; with --json they too print exactly one JSON object on stdout.
    Contract command modules are loaded on first use (``commands`` loads them all).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._loaded: set[str] = set()
        self._own: dict[str, click.Command] = {}
        super().__init__(*args, **kwargs)

    @property  # type: ignore[override]
    def commands(self) -> dict[str, click.Command]:
        """Every command (loads every contract module)."""
        for area in AREAS:
            self._load(area)
        return self._own

    @commands.setter
    def commands(self, value: dict[str, click.Command]) -> None:
        """Replace the registered commands (click sets them at construction)."""
        self._own = dict(value)

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        """Register ``cmd`` without loading the contract modules."""
        name = name or cmd.name
        if name is None:
            raise TypeError("Command has no name.")
        self._own[name] = cmd

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name``, loading only the contract module that defines it."""
        if cmd_name not in self._own:
            area = AREA_COMMANDS.get(cmd_name)
            for a in [area] if area is not None else AREAS:
                self._load(a)
        return self._own.get(cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name, sorted (loads every contract module)."""
        return sorted(self.commands)

    def _load(self, area: str) -> None:
        """Import the contract CLI module ``area`` once and register its commands."""
        if area in self._loaded:
            return
        self._loaded.add(area)
        try:
            module = importlib.import_module(f"evstore.cli.{area}")
        except ModuleNotFoundError as exc:
            if exc.name == f"evstore.cli.{area}":
                return  # no such area in this tree
            self._stand_in(area, exc)
            return
        except ImportError as exc:
            self._stand_in(area, exc)
            return
        module.register(self)

    def _stand_in(self, area: str, exc: ImportError) -> None:
        for name, owner in AREA_COMMANDS.items():
            if owner == area and name not in self._own:
                self._own[name] = _unavailable(name, area, exc)

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the CLI; usage errors exit 2 (one JSON object with --json)."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        escape_unencodable_output()  # output comes after the writes: it never fails on a char
        argv = list(sys.argv[1:] if args is None else args)
        if not any(k.endswith("_COMPLETE") for k in os.environ):
            argv = hoist_global_options(self, argv)
        as_json = "--json" in argv
        self._ctx_obj: Ctx | None = None
        try:
            rv = super().main(argv, prog_name, complete_var, False, **extra)
        except click.ClickException as exc:
            if as_json:
                _usage_json(exc.format_message(), exc.exit_code)
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort as exc:
            if isinstance(exc.__cause__, KeyboardInterrupt):
                _interrupted(self._ctx_obj, as_json)
            click.echo("Aborted!", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            _interrupted(self._ctx_obj, as_json)
        try:
            sys.stdout.flush()  # a result still buffered must reach its reader, or fail here
        except (OSError, evstore.EvstoreError) as exc:
            _drop_output()
            if isinstance(exc, OSError) and exc.errno == errno.EPIPE:
                sys.exit(1)  # the reader left (`| head`): nothing to say, as git and cat do
            err = evstore.error(
                "output.unwritable",
                "cannot write the output: "
                + (str(exc.strerror) if isinstance(exc, OSError) else exc.message),
            )
            if as_json:
                click.echo(json.dumps({"ok": False, "error": err.to_dict()}), err=True)
            else:
                click.echo(f"error: {err}", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; an EvstoreError becomes its output and exit code 1.

        An ImportError met while a command runs (a dependency missing from this
        installation) fails closed as ``store.kind-unavailable``.
        """
        try:
            try:
                rv = super().invoke(ctx)
                return rv
            except SystemExit as exc:
                if exc.code not in (0, None):
                    discard_created(ctx.find_object(Ctx) or Ctx("", False))
                raise
            except (KeyboardInterrupt, click.Abort):
                self._ctx_obj = ctx.find_object(Ctx)
                raise
            except OSError as exc:
                if exc.errno not in _OUTPUT_ERRNOS:
                    raise
                # Writing the result failed (a full disk, a closed or broken stdout): typed.
                _drop_output()
                if exc.errno == errno.EPIPE:
                    ctx.exit(1)  # the reader left (`| head`): nothing to say, as git and cat do
                raise evstore.error(
                    "output.unwritable",
                    f"cannot write the output: {exc.strerror or exc}",
                    errno=errno.errorcode.get(exc.errno or 0, ""),
                    stream="stdout",
                ) from exc
            except ImportError as exc:
                raise evstore.error(
                    "store.kind-unavailable",
                    f"this command needs a module missing from this installation ({exc}); "
                    "reinstall evstore with its dependencies",
                    module=exc.name,
                ) from exc
        except evstore.EvstoreError as err:
            obj = ctx.find_object(Ctx)
            if obj is not None:
                discard_created(obj)
            as_json = obj.json if obj is not None else "--json" in sys.argv
            if as_json:
                line = json_text({"ok": False, "error": err.to_dict()})
                try:
                    if err.details.get("stream") == "stdout":  # stdout is what failed
                        raise err
                    click.echo(line)
                except (OSError, evstore.EvstoreError):  # stdout is what failed: use stderr
                    _drop_output()
                    click.echo(line, err=True)
            else:
                click.echo(f"error: {err}", err=True)
                if err.rule:
                    click.echo(f"  rule: {err.rule}", err=True)
            ctx.exit(1)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The exit codes, after the command list."""
        formatter.write_paragraph()
        formatter.write_text(
            "Exit codes: 0 ok; 1 evstore error (the printed code says which) or failed "
            "check; 2 usage; 130 interrupted (store unchanged). Global options may also "
            "follow the command. Shell completion: README.md."
        )


@click.group(cls=EvstoreGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--store",
    "url",
    metavar="URL",
    default=None,
    help="Store URL (SQLAlchemy form: sqlite:///PATH or postgresql://USER@HOST/DB). "
    "Default: $EVSTORE_URL, else sqlite:///evstore.db in the current directory.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print exactly one JSON object, errors included."
)
@click.option("-v", "--verbose", count=True, help="More on stderr (the store opened). Repeatable.")
@click.option(
    "-q", "--quiet", is_flag=True, help="No progress bars and no notes on stderr (errors stay)."
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and the schema revision it writes, and exit.",
)
@click.pass_context
def cli(ctx: click.Context, url: str | None, as_json: bool, verbose: int, quiet: bool) -> None:
    """evstore: a content-addressed store for evidence artifacts."""
    ctx.obj = Ctx(env_url() if url is None else url, as_json, -1 if quiet else verbose)
    # S3 credentials from the standard variables only: the library never reads the
    # environment and never lets its S3 client search further (instance metadata).
    evstore.configure_s3(evstore.S3Credentials.from_variables(os.environ))
    for arg in sys.argv[1:]:
        # Undecodable bytes arrive as lone surrogates (PEP 383); they are no evstore input.
        if any("\udc80" <= ch <= "\udcff" for ch in arg):
            raise evstore.error(
                "input.argument-encoding",
                f"a command-line argument is not valid UTF-8: {arg.encode('utf-8', 'replace')!r}",
            )


for _area in (admin, ingest_commands, objects, retention, server):
    _area.register(cli)


#: errno values of a failed write to the output: full disk or quota, closed or broken stream.
_OUTPUT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EBADF, errno.EPIPE, errno.EIO}


class _ClosedRaw(io.RawIOBase):
    """The binary side of a standard stream the process was started without.

    (``<&-``, ``>&-``): every read or write fails with a typed error; nothing is buffered.
    """

    def __init__(self, name: str, code: str) -> None:
        super().__init__()
        self.name_, self.code = name, code

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def fail(self) -> Any:
        """Raise ``input.unreadable`` or ``output.unwritable``: the stream is closed."""
        stream = "stdin" if self.code == "input.unreadable" else "stdout"
        raise evstore.error(self.code, f"standard {self.name_} is closed", stream=stream)

    def readinto(self, b: Any) -> int:
        return int(self.fail())

    def write(self, b: Any) -> int:
        return int(self.fail())


class _ClosedText(io.TextIOBase):
    """The text side of a closed standard stream.

    Python leaves ``sys.stdin``/``sys.stdout`` None then; a command that uses the stand-in
    gets a typed error, never an AttributeError.
    """

    def __init__(self, raw: _ClosedRaw) -> None:
        super().__init__()
        self.buffer = raw

    def read(self, size: int | None = -1) -> str:
        return str(self.buffer.fail())

    # typeshed's io.TextIOBase has IOBase.readline (bytes) beside _TextIOBase's (str).
    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        return str(self.buffer.fail())

    def write(self, s: str) -> int:
        return int(self.buffer.fail())


def _standard_streams() -> None:
    """Give a closed stdin/stdout a stand-in that fails with a typed error when used."""
    if sys.stdin is None:
        sys.stdin = _ClosedText(_ClosedRaw("input", "input.unreadable"))
    if sys.stdout is None:
        sys.stdout = _ClosedText(_ClosedRaw("output", "output.unwritable"))


def _drop_output() -> None:
    """After a failed write to stdout, point fd 1 at the null device.

    The interpreter's last flush of what is still buffered then cannot fail again (exit
    code 120 and a traceback).
    """
    fd = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(fd, 1)
    finally:
        os.close(fd)


def main() -> None:
    """Console-script entry point."""
    _standard_streams()
    cli(prog_name="evstore")
