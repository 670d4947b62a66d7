"""The ``evstore`` command: global options, the one error handler, and the core commands.

Exit codes (every command): 0 ok; 1 any evstore error (input rejected, not found, corruption,
binding conflict, store state: the printed code tells them apart) or a failed check/has;
2 command-line usage.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

import click

from evstore.errors import EvstoreError, InputError

from .common import Ctx, env_url

__all__ = ["cli", "main"]


def _usage_json(message: str, code: int) -> None:
    click.echo(
        json.dumps(
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
            ensure_ascii=False,
            sort_keys=True,
        )
    )
    sys.exit(code)


class EvstoreGroup(click.Group):
    """A click group whose one handler turns every EvstoreError into output and exit code 1.

    Usage errors exit 2; with --json they too print exactly one JSON object on stdout.
    """

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        argv = list(sys.argv[1:] if args is None else args)
        as_json = "--json" in argv
        try:
            rv = super().main(argv, prog_name, complete_var, False, **extra)
        except click.ClickException as exc:
            if as_json:
                _usage_json(exc.format_message(), exc.exit_code)
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except EvstoreError as err:
            obj = ctx.find_object(Ctx)
            as_json = obj.json if obj is not None else "--json" in sys.argv
            if as_json:
                click.echo(
                    json.dumps(
                        {"ok": False, "error": err.to_dict()}, ensure_ascii=False, sort_keys=True
                    )
                )
            else:
                click.echo(f"error: {err}", err=True)
                if err.rule:
                    click.echo(f"  rule: {err.rule}", err=True)
            ctx.exit(1)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_paragraph()
        formatter.write_text(
            "Exit codes: 0 ok; 1 evstore error (the printed code says which) or failed "
            "check; 2 usage."
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
@click.version_option(package_name="evidence-store", prog_name="evstore")
@click.pass_context
def cli(ctx: click.Context, url: str | None, as_json: bool) -> None:
    """evstore: a content-addressed store for evidence artifacts."""
    ctx.obj = Ctx(env_url() if url is None else url, as_json)
    for arg in sys.argv[1:]:
        # Undecodable bytes arrive as lone surrogates (PEP 383); they are no evstore input.
        if any("\udc80" <= ch <= "\udcff" for ch in arg):
            raise InputError(
                f"a command-line argument is not valid UTF-8: {arg.encode('utf-8', 'replace')!r}",
                code="input.argument-encoding",
            )


def _register_areas() -> None:
    from . import objects

    objects.register(cli)
    for area in ("fragments", "manifests", "packages", "contexts", "runs"):
        try:
            module = importlib.import_module(f"evstore.cli.{area}")
        except ModuleNotFoundError as exc:
            if exc.name != f"evstore.cli.{area}":
                raise
            continue
        module.register(cli)


_register_areas()


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="evstore")
