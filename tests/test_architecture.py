"""The architecture, derived from paths: every rule below follows from the folder a module lies in.

store/ is the ``evstore`` package. Its folders are ranked, lowest first (docs/design.md,
"The house"): a module imports its own folder and lower-ranked folders only. The package
root (``evstore/__init__``, ``__main__``, ``connect``) is the public surface; the folders
above it (client, pages, server) see evstore only through ``evstore.__all__``. Contracts
never import each other (runs may import the others' pure rules), and a contract's pure
modules (``rules.py``, ``rules_*.py``, ``schema.py``) import nothing that touches a database.
No module outside the facade reads ``Store.db`` or another module's private name. The
exceptions are the literal :data:`ALLOWED` list, each with its reason.

The rules are one pure function over parsed sources (:func:`violations`), so the breach
tests at the end inject one import at a time into a copy and see each one caught.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

import evstore

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "store"
CLI = ROOT / "cli"

#: store/'s folders, lowest rank first. "" is the package root: the public surface. Folders
#: of one rank do not import each other. A new folder fails the suite until it is ranked here.
RANKS: dict[str, int] = {
    "core": 0,
    "tlog": 1,
    "backends": 2,
    "db": 2,
    "objects": 3,
    "contracts": 4,
    "check": 5,
    "log": 6,
    "retention": 7,
    "facade": 8,
    "access": 9,
    "archive": 9,
    "read": 9,
    "": 10,
    "client": 11,
    "pages": 12,
    "server": 13,
}
#: The rank of the public surface; folders above it import evstore's public names only.
SURFACE = RANKS[""]
#: The facade: the only folder that holds a Store's database (``Store.db``).
FACADE = "facade"
#: Top-level names of database packages.
DB_TOP = {"sqlalchemy", "alembic", "psycopg", "sqlite3"}
#: Folders whose modules touch a database (a pure module imports none of them).
DB_FOLDERS = {"db", "objects"}
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 100

#: The exceptions: (importing module, imported module prefix, reason). Nothing else.
ALLOWED: tuple[tuple[str, str, str], ...] = (
    (
        "evstore.connect",
        "evstore.client",
        "evstore.open dispatches an http(s):// URL to the client, imported inside the "
        "function so that `import evstore` never loads it",
    ),
    (
        "evstore.__main__",
        "evstore.cli",
        "`python -m evstore` is the entry point that runs the CLI",
    ),
    (
        "evstore.client",
        "evstore.core",
        "the client builds the same values (digests, refs, canonical bytes) and raises the "
        "same errors as the library: the pure core, never the database",
    ),
)


@dataclass(frozen=True)
class Module:
    """One parsed module: its dotted name, path, folder (under store/) and tree."""

    name: str
    path: Path
    folder: str
    tree: ast.Module

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"

    @property
    def contract(self) -> str | None:
        """``fragments`` for evstore.contracts.fragments.*, else None."""
        parts = self.name.split(".")
        return parts[2] if len(parts) > 2 and parts[1] == "contracts" else None

    @property
    def pure(self) -> bool:
        """A contract's pure module: rules.py, rules_*.py or schema.py."""
        leaf = self.name.rsplit(".", 1)[-1]
        return self.contract is not None and (
            leaf in ("rules", "schema") or leaf.startswith("rules_")
        )


def _name(path: Path) -> str:
    if path.is_relative_to(CLI):
        parts = ["evstore", "cli", *path.relative_to(CLI).with_suffix("").parts]
    else:
        parts = ["evstore", *path.relative_to(STORE).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _folder(path: Path) -> str:
    """The ranked folder of a store/ module: its first folder under store/ ("" at the root)."""
    rel = path.relative_to(STORE).parts
    return rel[0] if len(rel) > 1 else ""


def parse(path: Path, text: str | None = None) -> Module:
    """A :class:`Module` for ``path`` (``text`` instead of the file's, for injected breaches)."""
    text = path.read_text() if text is None else text
    folder = "cli" if path.is_relative_to(CLI) else _folder(path)
    return Module(_name(path), path, folder, ast.parse(text, str(path)))


@cache
def sources() -> dict[str, Module]:
    """Every module of store/ and cli/, by dotted name."""
    out = {}
    for folder in (STORE, CLI):
        for path in sorted(folder.rglob("*.py")):
            m = parse(path)
            out[m.name] = m
    return out


def _resolve(m: Module, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = m.name.split(".") if m.is_package else m.name.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(m: Module, known: dict[str, Module]) -> list[tuple[str, str, int]]:
    """Every (module, name or "", line) ``m`` imports anywhere: module level, in functions,
    under ``if TYPE_CHECKING:``, and ``import_module("literal")``."""
    out: list[tuple[str, str, int]] = []
    for node in ast.walk(m.tree):
        if isinstance(node, ast.Import):
            out += [(a.name, "", node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(m, node)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.append(
                    (sub, "", node.lineno) if sub in known else (target, alias.name, node.lineno)
                )
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.append((node.args[0].value, "", node.lineno))
    return out


def _internal(target: str, known: dict[str, Module]) -> Module | None:
    parts = target.split(".")
    while parts:
        if ".".join(parts) in known:
            return known[".".join(parts)]
        parts.pop()
    return None


def _allowed(importer: str, target: str) -> bool:
    return any(
        (importer == a or importer.startswith(a + "."))
        and (target == b or target.startswith(b + "."))
        for a, b, _ in ALLOWED
    )


def _import_rule(m: Module, target: str, name: str, inner: Module | None) -> str:
    """Why ``m`` may not import ``target`` (``name`` from it), or "" when it may."""
    top = target.split(".")[0]
    if m.folder == "cli":
        if inner is None:
            if top == "evstore":
                return "unknown evstore module"
            ok = top in ("click", "rich") or top in sys.stdlib_module_names
            return "" if ok else "the CLI imports click, rich, the standard library and evstore"
        if inner.folder == "cli":
            return ""
        if inner.name == "evstore":
            return "" if not name or name in evstore.__all__ else f"{name} is not public"
        return "the CLI imports evstore's public names (evstore.__all__) only"
    if inner is None:
        if top == "evstore":
            return "unknown evstore module"
        if top in DB_TOP and (RANKS[m.folder] < RANKS["db"] or m.pure):
            return f"{m.folder or 'the root'} uses no database"
        if top in DB_TOP and RANKS[m.folder] > SURFACE and m.folder != "server":
            return "above the surface nothing touches a database"
        return ""
    if inner.folder == "cli":
        return "store/ never imports the CLI"
    if RANKS[m.folder] > SURFACE:
        if inner.name == "evstore":
            return (
                "" if not name or name in evstore.__all__ else f"{name} is not in evstore.__all__"
            )
        if (
            inner.folder == m.folder
            or RANKS[inner.folder] > SURFACE
            and RANKS[inner.folder] < RANKS[m.folder]
        ):
            return ""
        return "above the surface evstore is imported through evstore.__all__ only"
    if inner.folder != m.folder and RANKS[inner.folder] >= RANKS[m.folder]:
        here, there = m.folder or "the root", inner.folder or "the root"
        return f"{here} (rank {RANKS[m.folder]}) imports {there} (rank {RANKS[inner.folder]})"
    if m.contract is not None and inner.contract is not None and inner.contract != m.contract:
        if not (m.contract == "runs" and inner.pure):
            return f"contract {m.contract} imports contract {inner.contract}"
    if m.pure:
        if inner.folder in DB_FOLDERS:
            return "a pure rules module imports nothing that touches a database"
        if inner.contract is not None and not inner.pure:
            return "a pure rules module imports no contract store module"
    return ""


def _private_reads(m: Module, known: dict[str, Module]) -> list[tuple[int, str]]:
    """(line, what) for each read of ``.db`` on a store, or of another module's private name."""
    out: list[tuple[int, str]] = []
    aliases: set[str] = set()  # local names bound to evstore modules
    for node in ast.walk(m.tree):
        if isinstance(node, ast.ImportFrom):
            target = _resolve(m, node)
            for alias in node.names:
                full = f"{target}.{alias.name}"
                if full in known:
                    aliases.add(alias.asname or alias.name)
                elif _internal(target, known) is not None and alias.name.startswith("_"):
                    out.append((node.lineno, f"imports the private name {alias.name}"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("evstore"):
                    aliases.add((alias.asname or alias.name).split(".")[0])
    for node in ast.walk(m.tree):
        if not isinstance(node, ast.Attribute):
            continue
        base = node.value
        base_name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
        if node.attr == "db" and "store" in base_name.lower() and m.folder != FACADE:
            out.append((node.lineno, f"reads {base_name}.db (the facade's database)"))
        private = node.attr.startswith("_") and not node.attr.startswith("__")
        if private and isinstance(base, ast.Name) and base.id in aliases:
            out.append((node.lineno, f"reads {base.id}.{node.attr}, a private name"))
        elif private and "store" in base_name.lower() and m.folder != FACADE:
            out.append((node.lineno, f"reads {base_name}.{node.attr}, a private name"))
    return out


def violations(known: dict[str, Module], only: set[str] | None = None) -> list[str]:
    """Every breach of the path-derived rules in ``known`` (empty when the house is in order).

    ``only``: check these modules (by name) alone, resolving imports against all of ``known``.
    """
    bad: list[str] = []
    for m in known.values():
        if only is not None and m.name not in only:
            continue
        rel = m.path.relative_to(ROOT)
        if m.folder != "cli" and m.folder not in RANKS:
            bad.append(f"{rel}: folder store/{m.folder}/ has no rank (tests/test_architecture.py)")
            continue
        for target, name, line in imports(m, known):
            if _allowed(m.name, target):
                continue
            why = _import_rule(m, target, name, _internal(target, known))
            if why:
                bad.append(f"{rel}:{line}: imports {target}{'.' + name if name else ''}: {why}")
        if m.folder != "cli":
            bad += [f"{rel}:{line}: {what}" for line, what in _private_reads(m, known)]
    return sorted(dict.fromkeys(bad))


# ---------------------------------------------------------------------------------------
# The rules on the real tree
# ---------------------------------------------------------------------------------------
def test_every_store_folder_is_ranked_and_every_rank_is_a_folder():
    folders = {_folder(p) for p in STORE.rglob("*.py")}
    assert folders == set(RANKS), f"unranked: {folders - set(RANKS)}; empty: {set(RANKS) - folders}"


def test_the_house_keeps_its_rules():
    bad = violations(sources())
    assert not bad, "\n".join(bad)


def test_no_import_cycle():
    known = sources()
    deps = {
        n: sorted({i.name for t, _, _ in imports(m, known) if (i := _internal(t, known))} - {n})
        for n, m in known.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in deps[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(known):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles (function-level and TYPE_CHECKING included): {cycles}"


def test_every_contract_folder_has_the_same_shape():
    contracts = sorted(
        p.name for p in (STORE / "contracts").iterdir() if p.is_dir() and p.name != "__pycache__"
    )
    assert contracts == ["contexts", "fragments", "manifests", "packages", "runs"]
    for name in contracts:
        files = {p.name for p in (STORE / "contracts" / name).glob("*.py")}
        assert {"__init__.py", "rules.py", "store.py"} <= files, name


def test_every_package_defines_its_terms():
    for init in STORE.rglob("__init__.py"):
        tree = ast.parse(init.read_text())
        doc = ast.get_docstring(tree)
        assert doc and len(doc) > 80, f"{init.relative_to(ROOT)} needs a docstring of its terms"


def test_no_module_over_800_lines_no_function_over_100():
    bad = []
    for m in sources().values():
        rel = m.path.relative_to(ROOT)
        lines = len(m.path.read_text().splitlines())
        if lines > MAX_MODULE_LINES:
            bad.append(f"{rel}: {lines} lines (max {MAX_MODULE_LINES})")
        for node in ast.walk(m.tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    bad.append(
                        f"{rel}:{node.lineno}: {node.name}() {n} lines (max {MAX_FUNCTION_LINES})"
                    )
    assert not bad, "\n".join(bad)


def test_store_never_touches_the_terminal():
    for m in sources().values():
        if m.folder == "cli":
            continue
        for node in ast.walk(m.tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                assert (node.value.id, node.attr) not in {
                    ("os", "environ"),
                    ("sys", "exit"),
                    ("sys", "stdout"),
                    ("sys", "stdin"),
                    ("os", "getenv"),
                }, (m.path, node.attr)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in {"print", "exit", "input"}, (m.path, node.func.id)


def test_store_modules_have_sorted_all():
    for m in sources().values():
        if m.folder == "cli" or (m.is_package and m.name != "evstore"):
            continue
        names = None
        for node in m.tree.body:
            if isinstance(node, ast.Assign) and any(
                getattr(t, "id", "") == "__all__" for t in node.targets
            ):
                names = [e.value for e in node.value.elts]
        assert names is not None, f"{m.path} has no __all__"
        assert names == sorted(names), m.path


def test_public_surface_is_complete():
    assert evstore.__all__ == sorted(evstore.__all__)
    for name in evstore.__all__:
        assert hasattr(evstore, name)


def test_every_error_family_descends_from_the_root():
    from evstore.core import errors

    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type) and obj not in (errors.Code, errors.Faults):
            assert issubclass(obj, errors.EvstoreError)


# ---------------------------------------------------------------------------------------
# Breaches injected one at a time: each must be caught
# ---------------------------------------------------------------------------------------
#: (module path under store/, the line injected, what the breach is).
BREACHES = [
    (
        "core/digests.py",
        "from ..contracts.fragments import rules",
        "a core module imports a contract's rules",
    ),
    ("core/canonical.py", "from ..db import engine", "a core module imports the database"),
    ("tlog/merkle.py", "from ..db.engine import Database", "the Merkle math imports the database"),
    ("tlog/checkpoint.py", "import sqlalchemy", "the log's pure formats import SQLAlchemy"),
    (
        "db/tables.py",
        "from ..objects import blobs",
        "the database boundary imports a layer above it",
    ),
    ("objects/blobs.py", "from ..contracts.manifests import rules", "objects import a contract"),
    ("objects/kinds.py", "from ..facade.api import Store", "objects import the facade"),
    (
        "contracts/fragments/store.py",
        "from ..packages import rules",
        "one contract imports another",
    ),
    (
        "contracts/manifests/rules.py",
        "from ..contexts.rules import detect",
        "one contract's rules import another's",
    ),
    ("contracts/packages/rules.py", "from ...pages import render", "rules import the pages helper"),
    ("contracts/contexts/rules.py", "from ...objects import blobs", "pure rules touch a database"),
    ("contracts/fragments/rules.py", "from . import store", "pure rules import their store module"),
    ("contracts/packages/schema.py", "import sqlite3", "a schema module uses a database driver"),
    (
        "contracts/runs/store.py",
        "from ..fragments import store",
        "runs import another contract's store",
    ),
    ("check/checker.py", "from ..retention import gc", "a service imports a higher service"),
    ("retention/gc.py", "from ..facade import api", "retention imports the facade"),
    ("archive/ops.py", "from ..read import describe", "two folders of one rank import each other"),
    ("facade/api.py", "from ..server import app", "the facade imports the server"),
    ("server/app.py", "from ..objects import blobs", "the server imports past the public surface"),
    ("pages/render.py", "from .. import db", "the pages import past the public surface"),
    ("client/remote.py", "from ..db import engine", "the client imports the database"),
    ("log/ops.py", "x = store.db", "a service reads Store.db"),
    ("read/describe.py", "store._live()", "a service calls the facade's private method"),
    (
        "archive/verify.py",
        "from ..objects.blobs import _existing",
        "a module imports another's private name",
    ),
]


@pytest.mark.parametrize("path,line,what", BREACHES, ids=[b[2] for b in BREACHES])
def test_an_injected_breach_is_caught(path, line, what):
    known = dict(sources())
    target = STORE / path
    name = _name(target)
    text = target.read_text()
    # After the docstring and `from __future__` line, where an import may stand.
    tree = ast.parse(text)
    after = max(n.end_lineno for n in tree.body if isinstance(n, ast.ImportFrom | ast.Import))
    lines = text.splitlines()
    lines.insert(after, line)
    known[name] = parse(target, "\n".join(lines) + "\n")
    assert not violations(sources(), {name}), "the module must be clean before the breach"
    found = violations(known, {name})
    assert found, f"not caught: {what} ({path}: {line})"


def test_a_new_unranked_folder_is_caught():
    known = dict(sources())
    fake = STORE / "newroom" / "thing.py"
    known["evstore.newroom.thing"] = Module(
        "evstore.newroom.thing", fake, "newroom", ast.parse("x = 1\n")
    )
    assert any("has no rank" in v for v in violations(known))
