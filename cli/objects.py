"""Core commands: init, migrate, config, put, ingest, validate, get, stat, has, find, ls, check."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import click

import evstore
from evstore import Document
from evstore.db import Database
from evstore.errors import InputError
from evstore.kinds import get_handler

from .common import (
    Ctx,
    emit,
    fail,
    open_store,
    output_option,
    pass_ctx,
    read_input,
    write_output,
)

__all__ = ["register"]


def _digest_lines(d: dict[str, Any], with_digests: bool) -> str:
    lines = [str(d["address"])]
    if with_digests:
        lines += [str(d["sha256"]), str(d["sha256_b64u"])]
    return "\n".join(lines)


def _ingest_options(fn: Any) -> Any:
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
            help="Bytes a document refers to by SHA-256 (e.g. a manifest's rendered content). Repeatable.",
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
        click.option("--digests", is_flag=True, help="Also print SHA-256 in hex and base64url."),
        click.argument("files", nargs=-1, required=True),
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


def _collect(
    files: tuple[str, ...],
    kind: str | None,
    contents: tuple[str, ...],
    sources: tuple[Any, ...],
    host_id: str | None,
    tenant_id: str | None,
    auth: str | None,
    source_document: str | None,
) -> tuple[list[Document], dict[str, Any], list[bytes]]:
    if sum(1 for x in (files,) for f in x if f == "-") > 1:
        raise click.UsageError("stdin (-) can be read once")
    if kind is not None and not kind:
        raise InputError("--kind is empty; give a kind name (docs/kinds.md)", code="kind.unknown")
    docs = [Document(read_input(f), name=f, kind=kind) for f in files]
    supplied = [read_input(c) for c in contents]
    options: dict[str, Any] = {}
    scope = (host_id, tenant_id, auth)
    if any(v is not None for v in scope):
        if not all(v is not None for v in scope):
            raise InputError(
                "--host-id, --tenant-id and --authorization-scope-id go together: all or none",
                code="fragment.scope-incomplete",
                rule="templiqx-evidence-fragment-v1alpha1#host-scope-metadata",
            )
        options["scope"] = {
            "host_id": host_id,
            "tenant_id": tenant_id,
            "authorization_scope_id": auth,
        }
    if sources:
        options["sources"] = [(d, f, read_input(p)) for d, f, p in sources]
        supplied += [b for _, _, b in options["sources"]]
    if source_document:
        options["source_document"] = source_document
    return docs, options, supplied


def register(cli: click.Group) -> None:
    """Add the core commands to the ``evstore`` group."""

    @cli.command()
    @pass_ctx
    def init(ctx: Ctx) -> None:
        """Create the store (if missing) at the latest schema.

        Exit codes: 0 created or already current; 1 store error (e.g. store.schema-behind:
        run `evstore migrate`).
        """
        db = Database(ctx.url)
        existed = db.exists()
        db.dispose()
        with open_store(ctx, create=True) as store:
            state = store.db.schema_state()
            emit(
                ctx,
                {"url": store.url, "created": not existed, "schema": state.current},
                f"{'created' if not existed else 'already initialised'}: {store.url} (schema {state.current})",
            )

    @cli.command()
    @pass_ctx
    def migrate(ctx: Ctx) -> None:
        """Upgrade an existing store's schema to this evstore's (never done silently).

        Exit codes: 0 migrated or already current; 1 store.missing, store.schema-ahead.
        """
        db = Database(ctx.url)
        try:
            if not db.exists():
                raise evstore.StoreStateError(
                    f"no evstore store at {db.display_url}; create one with `evstore init`",
                    code="store.missing",
                )
            before, after = db.migrate()
        finally:
            db.dispose()
        emit(
            ctx,
            {"url": db.display_url, "from": before, "to": after},
            f"{db.display_url}: schema {before} -> {after}"
            if before != after
            else f"{db.display_url}: schema {after} is current",
        )

    @cli.command()
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
            values = store.config()
            if name is not None:
                if name not in values:
                    from evstore.settings import parse_setting_value

                    parse_setting_value(name, "")
                values = {name: values[name]}
            emit(
                ctx, values, lambda v: [click.echo(f"{k} = {json.dumps(v[k])}") for k in sorted(v)]
            )

    @cli.command()
    @click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
    @click.option("--digests", is_flag=True, help="Also print SHA-256 in hex and base64url.")
    @pass_ctx
    def put(ctx: Ctx, file: str, digests: bool) -> None:
        """Store the exact bytes of FILE (or stdin for -), streamed; print the address.

        Creates the store when missing. Exit codes: 0 stored (or already stored); 1 error.
        """
        with open_store(ctx, create=True) as store:
            if file == "-":
                res = store.put(sys.stdin.buffer)
            else:
                try:
                    fh = Path(file).open("rb")
                except OSError as exc:
                    raise InputError(
                        f"cannot read {file}: {exc.strerror}", code="input.unreadable", path=file
                    ) from None
                with fh:
                    res = store.put(fh)
            d = res.digest.forms()
            d["new"] = res.new
            emit(ctx, d, _digest_lines(d, digests))
            if not res.new and not ctx.json:
                click.echo("already stored (not new)", err=True)

    @cli.command()
    @_ingest_options
    @pass_ctx
    def ingest(
        ctx: Ctx,
        files: tuple[str, ...],
        kind: str | None,
        contents: tuple[str, ...],
        sources: tuple[Any, ...],
        host_id: str | None,
        tenant_id: str | None,
        authorization_scope_id: str | None,
        source_document: str | None,
        digests: bool,
    ) -> None:
        """Validate and store JSON documents, all in one transaction (all or nothing).

        Reports the first fault in the order: JSON form, schema, contract rules, self-address,
        bindings. Ingesting an identical artifact again succeeds (new: false). Creates the
        store when missing.

        Exit codes: 0 stored; 1 rejected (nothing written) or store error; 2 usage.
        """
        docs, options, supplied = _collect(
            files,
            kind,
            contents,
            sources,
            host_id,
            tenant_id,
            authorization_scope_id,
            source_document,
        )
        with open_store(ctx, create=True) as store:
            report = store.ingest(docs, options=options, supplied=supplied)

        def human(r: Any) -> None:
            for res in r.results:
                flag = "new" if res.new else "not new"
                click.echo(f"{res.digest.address}  {res.kind}  ({flag})")
                if digests:
                    click.echo(f"  sha256:{res.digest.sha256}\n  sha256:{res.digest.sha256_b64u}")
                for w in res.warnings:
                    click.echo(f"  warning: {w.code} at {w.pointer or '/'}: {w.message}")

        emit(ctx, report, human)

    @cli.command()
    @_ingest_options
    @pass_ctx
    def validate(
        ctx: Ctx,
        files: tuple[str, ...],
        kind: str | None,
        contents: tuple[str, ...],
        sources: tuple[Any, ...],
        host_id: str | None,
        tenant_id: str | None,
        authorization_scope_id: str | None,
        source_document: str | None,
        digests: bool,
    ) -> None:
        """Run every check of ingest on FILES, list all faults, write nothing.

        Exit codes: 0 valid; 1 faults found or store error; 2 usage.
        """
        docs, options, supplied = _collect(
            files,
            kind,
            contents,
            sources,
            host_id,
            tenant_id,
            authorization_scope_id,
            source_document,
        )
        with open_store(ctx) as store:
            report = store.validate(docs, options=options, supplied=supplied)

        def human(r: Any) -> None:
            for f in r.faults:
                click.echo(f"{f.path or '-'}: {f.code} at {f.pointer or '/'}: {f.message}")
                if f.rule:
                    click.echo(f"  rule: {f.rule}")
            for res in r.results:
                for w in res.warnings:
                    click.echo(f"warning: {res.kind} {w.code} at {w.pointer or '/'}: {w.message}")
            if r.ok:
                click.echo(f"valid: {r.documents} document(s)")

        emit(ctx, report, human)
        if not report.ok:
            sys.exit(1)

    @cli.command()
    @click.argument("ref")
    @output_option
    @pass_ctx
    def get(ctx: Ctx, ref: str, output: str | None) -> None:
        """Print the exact stored bytes of REF (nothing appended), verified first.

        REF: blake3:<hex>, sha256:<hex>, sha256:<base64url> or object-store:sha256:<base64url>.
        Exit codes: 0 ok; 1 ref.syntax, not-found.blob, corruption.*.
        """
        with open_store(ctx) as store, store.open_blob(ref) as (digest, chunks):
            first = next(chunks, b"")  # verification happens before the first chunk
            if output:
                write_output(
                    ctx, output, itertools.chain([first], chunks), {"address": digest.address}
                )
            else:
                out = sys.stdout.buffer
                out.write(first)
                for c in chunks:
                    out.write(c)
                out.flush()

    @cli.command()
    @click.argument("ref")
    @click.option("--digests", is_flag=True, help="Also print SHA-256 in hex and base64url.")
    @pass_ctx
    def stat(ctx: Ctx, ref: str, digests: bool) -> None:
        """Show a blob's size, digests and the kinds it is stored as.

        Exit codes: 0 ok; 1 ref.syntax, not-found.blob.
        """
        with open_store(ctx) as store:
            d = store.stat(ref)

        def human(x: dict[str, Any]) -> None:
            click.echo(_digest_lines(x, digests))
            click.echo(f"size: {x['size']} bytes ({x['stored']})")
            for a in x["artifacts"]:
                click.echo(
                    f"artifact: {a['kind']} {a['contract_version']} accepted {a['accepted_at']}"
                )
            for w in x.get("warnings", []):
                click.echo(f"warning: {w['code']} at {w['pointer'] or '/'}: {w['message']}")

        emit(ctx, d, human)

    @cli.command()
    @click.argument("refs", nargs=-1, required=True)
    @pass_ctx
    def has(ctx: Ctx, refs: tuple[str, ...]) -> None:
        """Print the REFS that name no stored blob.

        Exit codes: 0 all present; 1 some missing (or ref.syntax).
        """
        with open_store(ctx) as store:
            missing = store.has(refs)
        if missing:
            fail(ctx, {"ok": False, "missing": missing}, "\n".join(missing))
        emit(ctx, {"ok": True, "missing": []}, "")

    @cli.command()
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
        crit = [
            (n, v)
            for n, v in (
                ("manifest_ref", manifest_ref),
                ("package_id", package_id),
                ("quote_sha256", quote_sha256),
                ("key", key),
            )
            if v is not None
        ]
        if attr is not None:
            name, sep, value = attr.partition("=")
            if not sep or not name:
                raise click.UsageError("--attr takes NAME=VALUE")
            crit.append((name, value))
        if len(crit) != 1:
            raise click.UsageError("give exactly one criterion")
        name, value = crit[0]
        if kind is not None:
            get_handler(kind)  # kind.unknown for a name not in the registry
        if name == "package_id":
            value = value.lower()  # UUIDs compare case-insensitively (docs/packages.md)
        with open_store(ctx) as store:
            found = store.find(name, value, kind=kind)
            rows = []
            for a in found:
                d = a.to_dict()
                w = store.warnings(a.address)
                if w:
                    d["warnings"] = w
                rows.append(d)
        if not rows:
            raise evstore.NotFound(
                f"no artifact with {name} = {value!r}", code="not-found.artifact"
            )

        def human(x: dict[str, Any]) -> None:
            for r in x["artifacts"]:
                click.echo(f"{r['address']}  {r['kind']}  {r['accepted_at']}")
                for w in r.get("warnings", []):
                    click.echo(f"  warning: {w['code']} at {w['pointer'] or '/'}: {w['message']}")

        emit(ctx, {"artifacts": rows}, human)

    @cli.command()
    @click.option("--kind", default=None, help="Only artifacts of this kind.")
    @click.option("--workspace", default=None, help="Only packages of this workspace_id.")
    @pass_ctx
    def ls(ctx: Ctx, kind: str | None, workspace: str | None) -> None:
        """List stored artifacts, oldest first.

        Exit codes: 0 ok; 1 store error.
        """
        if kind is not None:
            get_handler(kind)  # kind.unknown for a name not in the registry
        with open_store(ctx) as store:
            rows = store.ls(
                kind, attr=("workspace_id", workspace.lower()) if workspace is not None else None
            )
        emit(
            ctx,
            {"artifacts": [r.to_dict() for r in rows]},
            lambda x: [
                click.echo(f"{r['address']}  {r['kind']}  {r['size']}  {r['accepted_at']}")
                for r in x["artifacts"]
            ],
        )

    @cli.command()
    @pass_ctx
    def check(ctx: Ctx) -> None:
        """Re-verify the whole store: re-hash every blob, re-canonicalise and re-validate every
        artifact by its kind (contract rules and bindings). Lists every fault, then the
        warnings recorded at ingest (warnings do not fail the check).

        Exit codes: 0 no fault; 1 any fault or store error.
        """
        tty = sys.stderr.isatty() and not ctx.json

        def progress(done: int, total: int) -> None:
            if tty:
                click.echo(f"\rchecked {done}/{total}", err=True, nl=done == total)

        faults = []
        with open_store(ctx) as store:
            for f in store.check(progress=progress):
                faults.append(f)
                if not ctx.json:
                    addr = f.details.get("address", "")
                    click.echo(f"{addr} {f.code} at {f.pointer or '/'}: {f.message}")
            warns = store.recorded_warnings()
        if ctx.json:
            click.echo(
                json.dumps(
                    {"ok": not faults, "faults": [f.to_dict() for f in faults], "warnings": warns},
                    ensure_ascii=False,
                    sort_keys=True,
                )
            )
        else:
            for w in warns:
                message = w["message"].replace("\n", "\\n").replace("\r", "\\r")
                click.echo(
                    f"{w['address']} warning {w['code']} at {w['pointer'] or '/'}: {message}"
                )
            if not faults:
                click.echo(
                    f"ok: no faults ({len(warns)} recorded warning(s))"
                    if warns
                    else "ok: no faults"
                )
        if faults:
            sys.exit(1)
