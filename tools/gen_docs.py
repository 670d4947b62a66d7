"""Generate docs/errors.md, docs/settings.md and docs/cli.md from the code.

Run: python tools/gen_docs.py.

tests/test_docs.py fails when the committed files differ from what this prints.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: A code: dotted lowercase words (``fragment.range``, ``not-found.blob``).
CODE_RE = re.compile(r"[a-z0-9-]+(?:\.[a-z0-9-]+)+")
#: Callables whose first argument is a code, whatever their parameters are named.
RAISERS = {"error": 0, "add": 0, "warn": 0}


class _Module:
    """One parsed module: its constants (name -> the code-like strings of its literal value)."""

    def __init__(self, rel: str, tree: ast.Module) -> None:
        self.rel = rel
        self.tree = tree
        self.constants: dict[str, set[str]] = {}
        scopes: list[list[ast.stmt]] = [tree.body]
        scopes += [n.body for n in tree.body if isinstance(n, ast.ClassDef)]
        for body in scopes:
            for node in body:
                if isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    targets, value = [node.target], node.value
                else:
                    continue
                if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "Table":
                    continue  # a schema table: "blobs.address" names a column, not a code
                # A table may name other constants: {"rule-1": (RULE_1, "message")}.
                codes = _code_strings(value)
                for n in ast.walk(value):
                    if isinstance(n, ast.Name) and n.id in self.constants:
                        codes |= self.constants[n.id]
                for target in targets:
                    if isinstance(target, ast.Name):
                        self.constants[target.id] = codes


def _code_strings(node: ast.AST) -> set[str]:
    """Every string constant inside ``node`` that has the form of a code."""
    return {
        n.value
        for n in ast.walk(node)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and CODE_RE.fullmatch(n.value)
    }


def _sources() -> dict[str, _Module]:
    out = {}
    for folder in ("store", "cli"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            out[rel] = _Module(rel, ast.parse(path.read_text(), rel))
    return out


def _builders(modules: dict[str, _Module]) -> dict[str, int]:
    """Callable name -> position of its ``code`` parameter, for every function that takes one.

    Covers the one builder (``error``), ``Faults.add``/``warn`` and any helper that passes a
    ``code`` parameter on (self and cls not counted).
    """
    out = dict(RAISERS)
    for mod in modules.values():
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
                if names and names[0] in ("self", "cls"):
                    names = names[1:]
                if "code" in names:
                    out.setdefault(node.name, names.index("code"))
            elif isinstance(node, ast.ClassDef):  # a NamedTuple or dataclass with a code field
                fields = [
                    n.target.id
                    for n in node.body
                    if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
                ]
                if "code" in fields:
                    out.setdefault(node.name, fields.index("code"))
    return out


def _callee(call: ast.Call) -> str:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return ""


def _code_args(tree: ast.AST, builders: dict[str, int]) -> list[ast.expr]:
    """Every expression in a code position: ``code=...`` or a builder's code argument."""
    out: list[ast.expr] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        out += [k.value for k in node.keywords if k.arg == "code"]
        at = builders.get(_callee(node))
        if at is not None and len(node.args) > at and not isinstance(node.args[at], ast.Starred):
            out.append(node.args[at])
    return out


def _resolve(
    expr: ast.expr,
    func: ast.AST | None,
    mod: _Module,
    everywhere: dict[str, set[str]],
    depth: int = 0,
) -> set[str]:
    """The codes a code expression can hold: literals, constants, local assignments, branches."""
    if depth > 4:
        return set()
    if isinstance(expr, ast.Constant):
        return {expr.value} if isinstance(expr.value, str) else set()
    if isinstance(expr, ast.IfExp):
        return _resolve(expr.body, func, mod, everywhere, depth + 1) | _resolve(
            expr.orelse, func, mod, everywhere, depth + 1
        )
    if isinstance(expr, ast.Tuple | ast.List):
        return set().union(*(_resolve(e, func, mod, everywhere, depth + 1) for e in expr.elts))
    if isinstance(expr, ast.Subscript):
        return _resolve(expr.value, func, mod, everywhere, depth + 1)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        return _resolve(expr.func.value, func, mod, everywhere, depth + 1)  # MAP.get(key)
    if isinstance(expr, ast.Attribute):
        return everywhere.get(expr.attr, set())  # other_module.CODE_X
    if not isinstance(expr, ast.Name):
        return set()
    found: set[str] = set()
    if func is not None:  # a local variable: what the function assigns or loops it over
        for node in ast.walk(func):
            if isinstance(node, ast.Assign | ast.For | ast.comprehension):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                value = node.value if isinstance(node, ast.Assign) else node.iter
                if any(
                    isinstance(n, ast.Name) and n.id == expr.id
                    for t in targets
                    for n in ast.walk(t)
                ):
                    found |= _code_strings(value) | _resolve(
                        value, func, mod, everywhere, depth + 1
                    )
    if expr.id in mod.constants:
        found |= mod.constants[expr.id]
    elif not found:
        found |= everywhere.get(expr.id, set())  # imported constant
    return found


def raise_sites() -> dict[str, list[tuple[str, int]]]:
    """Code -> every (module ``store/x.py``, line) that raises or records it.

    A code is raised where it stands in a code position: the ``code=`` keyword of any call,
    or the code argument of :func:`evstore.core.errors.error`, ``Faults.add``/``warn`` or a helper
    with a ``code`` parameter. The expression there is a literal, a module constant (a
    string, or a table such as a JSON Schema ``rule-*`` -> code map), or a local variable
    assigned from one. Strings that merely look like codes (binding namespaces such as
    ``fragment.scope``, kind names, messages) are not counted. store/core/errors.py (the table
    itself) is left out.
    """
    modules = _sources()
    builders = _builders(modules)
    everywhere: dict[str, set[str]] = {}
    for mod in modules.values():
        for name, codes in mod.constants.items():
            everywhere.setdefault(name, set()).update(codes)
    out: dict[str, set[tuple[str, int]]] = {}
    for rel, mod in modules.items():
        if rel == "store/core/errors.py":
            continue
        funcs = [
            n for n in ast.walk(mod.tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        ]
        for expr in _code_args(mod.tree, builders):
            func = next(
                (
                    f
                    for f in funcs
                    if f.lineno <= expr.lineno <= (f.end_lineno or f.lineno)
                    and not any(
                        g is not f and f.lineno < g.lineno <= expr.lineno <= (g.end_lineno or 0)
                        for g in funcs
                    )
                ),
                None,
            )
            for code in _resolve(expr, func, mod, everywhere):
                if CODE_RE.fullmatch(code):
                    out.setdefault(code, set()).add((rel, expr.lineno))
    return {code: sorted(sites) for code, sites in sorted(out.items())}


def raised_codes() -> dict[str, list[str]]:
    """Code -> the modules (``store/x.py``, ``cli/y.py``) that raise it (see raise_sites)."""
    return {code: sorted({m for m, _ in sites}) for code, sites in raise_sites().items()}


def all_codes() -> dict[str, tuple[str, str]]:
    """Code -> (family, meaning), from the one table in store/core/errors.py."""
    from evstore.core.errors import CODES

    return {c.code: (c.family, c.meaning) for c in CODES.values()}


def errors_md() -> str:
    """docs/errors.md: the code table, with the modules that raise each code."""
    from evstore.core.errors import CODES
    from evstore.core.json_schema import MAX_SCHEMA_FAULTS, MAX_SCHEMA_MESSAGE

    where = raised_codes()
    lines = [
        "# Error codes",
        "",
        "Generated by `python tools/gen_docs.py` from the code table in store/core/; do not",
        "edit. Every evstore error carries one of these stable codes, its family (the error",
        "class), a message, the contract rule and a JSON Pointer (RFC 6901). The CLI exits 1 on",
        'any of them (2 is usage only). "Raised in" names the modules whose code names it.',
        "",
        f"A document's schema faults are at most {MAX_SCHEMA_FAULTS} (every contract with a JSON",
        "Schema: manifests, packages, requests and envelopes, evidence contexts and source",
        "documents, descriptors, a bundle's index.json; store/core/json_schema.py). A longer",
        "list is cut, and one more fault of the contract's shape code says so, with",
        f'`details` `{{"truncated": true, "limit": {MAX_SCHEMA_FAULTS}}}`. A schema fault\'s',
        f"message is at most {MAX_SCHEMA_MESSAGE} characters (then `...`).",
        "",
        "| code | family | rule | raised in | meaning |",
        "|---|---|---|---|---|",
    ]
    for code, c in sorted(CODES.items()):
        mods = ", ".join(m.removesuffix(".py") for m in where.get(code, [])) or "-"
        rule = f"`{c.rule}`" if c.rule else "-"
        lines.append(f"| `{code}` | {c.family} | {rule} | {mods} | {c.meaning} |")
    return "\n".join(lines) + "\n"


def settings_md() -> str:
    """docs/settings.md: every store setting with its type and default."""
    from evstore.core.settings import SETTINGS

    lines = [
        "# Store settings",
        "",
        "Generated by `python tools/gen_docs.py` from store/core/settings.py; do not edit.",
        "Show with `evstore config`, change with `evstore config NAME VALUE`. Settings live in",
        "the store (a migrated table) and are read inside each ingest transaction.",
        "",
        "| name | type | default | meaning |",
        "|---|---|---|---|",
    ]
    for s in SETTINGS.values():
        lines.append(f"| `{s.name}` | {s.type.__name__} | `{s.default!r}` | {s.help} |")
    return "\n".join(lines) + "\n"


def cli_md() -> str:
    """docs/cli.md: the help of every command."""
    import click

    from evstore.cli.main import cli

    lines = [
        "# Command reference",
        "",
        "Generated by `python tools/gen_docs.py` from each command's `--help`; do not edit.",
        "",
    ]
    ctx = click.Context(cli, info_name="evstore", **cli.context_settings)
    lines += ["## evstore", "", "```", cli.get_help(ctx), "```", ""]

    def walk(group: click.Group, parent: click.Context, path: str) -> None:
        for name in sorted(group.commands):
            cmd = group.commands[name]
            sub = click.Context(cmd, info_name=name, parent=parent)
            lines.extend([f"## {path} {name}", "", "```", cmd.get_help(sub), "```", ""])
            if isinstance(cmd, click.Group):
                walk(cmd, sub, f"{path} {name}")

    walk(cli, ctx, "evstore")
    return "\n".join(lines)


GENERATED = {"errors.md": errors_md, "settings.md": settings_md, "cli.md": cli_md}


def main() -> int:
    """Write every generated page into docs/."""
    for name, fn in GENERATED.items():
        (DOCS / name).write_text(fn())
    return 0


if __name__ == "__main__":
    sys.exit(main())
