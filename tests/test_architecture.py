"""Layering rules: click only under cli/, no environment/printing/exiting in store/, __all__."""

import ast
from pathlib import Path

import evstore

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "store"
CLI = ROOT / "cli"


def _modules(folder: Path):
    return sorted(p for p in folder.rglob("*.py"))


def _imports(tree: ast.AST) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


def test_store_never_imports_click_nor_touches_the_terminal():
    for path in _modules(STORE):
        tree = ast.parse(path.read_text())
        assert "click" not in _imports(tree), path
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                assert (node.value.id, node.attr) not in {
                    ("os", "environ"),
                    ("sys", "exit"),
                    ("sys", "stdout"),
                    ("sys", "stdin"),
                    ("os", "getenv"),
                }, (path, node.attr)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in {"print", "exit", "input"}, (path, node.func.id)


def test_store_modules_have_sorted_all():
    for path in _modules(STORE):
        if path.name == "__init__.py" and path.parent != STORE:
            continue
        tree = ast.parse(path.read_text())
        names = None
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                getattr(t, "id", "") == "__all__" for t in node.targets
            ):
                names = [e.value for e in node.value.elts]
        assert names is not None, f"{path} has no __all__"
        assert names == sorted(names), path


def test_public_surface_is_complete():
    assert evstore.__all__ == sorted(evstore.__all__)
    for name in evstore.__all__:
        assert hasattr(evstore, name)
    assert callable(evstore.open)


def test_every_error_family_descends_from_the_root():
    from evstore import errors

    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type) and obj not in (errors.Code, errors.Faults):
            assert issubclass(obj, errors.EvstoreError)


def test_base_layer_knows_no_contract():
    contract = {
        "fragments",
        "manifests",
        "packages",
        "package_rules",
        "contexts",
        "runs",
        "lineage",
    }
    base = [
        "errors",
        "error_codes",
        "digests",
        "refs",
        "canonical",
        "db",
        "db_faults",
        "tables",
        "blobs",
        "artifacts",
        "bindings",
        "settings",
        "txn",
    ]
    for name in base:
        tree = ast.parse((STORE / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level >= 1 and node.module:
                assert node.module.split(".")[0] not in contract, (name, node.module)


# ---------------------------------------------------------------------------------------
# The whole import graph of store/ and cli/: module-level, function-level and
# `if TYPE_CHECKING:` imports alike, relative imports resolved, importlib.import_module with a
# literal name included. Edges between evstore modules only (plus the top-level names of
# everything else, for the "no sqlalchemy" and "CLI imports" rules).
# ---------------------------------------------------------------------------------------
import sys  # noqa: E402
from functools import cache  # noqa: E402

#: The base layer: knows no contract, no core, no facade.
BASE = {
    "errors",
    "error_codes",
    "digests",
    "refs",
    "canonical",
    "db",
    "db_faults",
    "tables",
    "settings",
}
#: Contract store modules (handlers, bindings, Ops namespaces).
CONTRACT_STORE = {"fragments", "manifests", "packages", "contexts", "runs", "lineage"}
#: Module name prefixes of a contract's helper modules (store/fragment_bindings.py, ...).
CONTRACT_PREFIXES = ("fragment_", "manifest_", "package_", "context_", "run_", "lineage_")
#: The pure rules modules (no database): one per contract, plus the shared bundle layout.
RULES_MODULES = {
    "fragment_rules",
    "manifest_rules",
    "package_rules",
    "context_rules",
    "run_rules",
    "bundle_layout",
}
#: What a pure contract rules module may not import (besides the contract store modules).
RULES_FORBIDDEN = {
    "api",
    "ingest",
    "check",
    "kinds",
    "db",
    "db_faults",
    "txn",
    "blobs",
    "tables",
    "artifacts",
    "bindings",
}
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 100


def _module_name(path: Path) -> str:
    """store/x.py -> evstore.x, store/__init__.py -> evstore, cli/y.py -> evstore.cli.y."""
    if path.is_relative_to(CLI):
        parts = ["evstore", "cli", *path.relative_to(CLI).with_suffix("").parts]
    else:
        parts = ["evstore", *path.relative_to(STORE).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _sources() -> dict[str, tuple[Path, ast.Module]]:
    """Every module of store/ and cli/: name -> (path, parsed tree)."""
    out = {}
    for folder in (STORE, CLI):
        for path in _modules(folder):
            out[_module_name(path)] = (path, ast.parse(path.read_text(), str(path)))
    return out


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module name an ImportFrom names (relative levels resolved)."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


@cache
def _graph() -> dict[str, list[tuple[str, str, int]]]:
    """module -> every (imported module, imported name or "", line) it imports, anywhere.

    ``import a.b`` gives ("a.b", "", line); ``from a import b`` gives ("a.b", "", line) when
    a.b is an evstore module, else ("a", "b", line).
    """
    sources = _sources()
    out: dict[str, list[tuple[str, str, int]]] = {}
    for name, (path, tree) in sources.items():
        is_package = path.name == "__init__.py"
        edges: list[tuple[str, str, int]] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                edges += [(a.name, "", node.lineno) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(name, is_package, node)
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in sources:
                        edges.append((sub, "", node.lineno))
                    else:
                        edges.append((target, alias.name, node.lineno))
            elif (
                isinstance(node, ast.Call)
                and (
                    (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                    or (isinstance(node.func, ast.Name) and node.func.id == "import_module")
                )
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                edges.append((node.args[0].value, "", node.lineno))
        out[name] = edges
    return out


def _internal(target: str) -> str | None:
    """The evstore module an import target lands in (the longest known prefix), or None."""
    sources = _sources()
    parts = target.split(".")
    while parts:
        if ".".join(parts) in sources:
            return ".".join(parts)
        parts.pop()
    return None


def _short(module: str) -> str:
    return module.removeprefix("evstore.")


DB_TOP = {"sqlalchemy", "alembic", "psycopg", "sqlite3"}


def _touches_the_database(short: str) -> bool:
    """True when the module itself imports a database, transaction or facade module."""
    for target, _, _ in _graph()[f"evstore.{short}"]:
        inner = _internal(target)
        if target.split(".")[0] in DB_TOP:
            return True
        if inner is not None and (inner == "evstore" or _short(inner) in RULES_FORBIDDEN):
            return True
    return False


def _is_rules(short: str) -> bool:
    """A pure contract module: rules, JSON Schema glue, the shared bundle layout, and any
    contract helper (fragment_bytes, package_context, ...) that uses no database itself."""
    if short.endswith(("_rules", "_schema")) or short == "bundle_layout":
        return True
    return short.startswith(CONTRACT_PREFIXES) and not _touches_the_database(short)


def _is_contract_store(short: str) -> bool:
    """A contract module that may use the database: the store modules and their helpers."""
    if short in CONTRACT_STORE:
        return True
    return short.startswith(CONTRACT_PREFIXES) and not _is_rules(short)


def test_the_import_graph_sees_function_level_and_type_checking_imports():
    # The graph must be the whole graph: a sample of what the module-level view misses.
    graph = _graph()
    assert any(t == "evstore.tables" for t, _, _ in graph["evstore.settings"])  # in a function
    assert all(_internal(t) is not None for t, _, _ in graph["evstore"] if t.startswith("evst"))
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .api import Store\n"
        "def f():\n    from . import txn\n"
    )
    seen = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            seen.add(_resolve("evstore.fragments", False, node))
    assert seen == {"typing", "evstore.api", "evstore"}


def test_no_import_cycle_among_store_modules():
    graph = _graph()
    store = {m for m in graph if not (m == "evstore.cli" or m.startswith("evstore.cli."))}
    deps = {m: sorted({_internal(t) for t, _, _ in graph[m]} & store - {m, None}) for m in store}
    # Tarjan's strongly connected components: a component of two or more modules is a cycle.
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

    for v in sorted(store):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles (function-level and TYPE_CHECKING included): {cycles}"


def _violations(modules, allowed) -> list[str]:
    graph = _graph()
    bad = []
    for m in sorted(modules):
        for target, name, line in graph[m]:
            inner = _internal(target)
            why = allowed(m, target, name, inner)
            if why:
                bad.append(f"{_sources()[m][0].relative_to(ROOT)}:{line}: imports {target} ({why})")
    return list(dict.fromkeys(bad))


def test_base_layer_imports_only_the_base_layer():
    base = {f"evstore.{b}" for b in BASE}
    assert base <= set(_sources()), "a base module is missing"

    def allowed(m, target, name, inner):
        if inner is None and not target.startswith("evstore"):
            return ""  # stdlib or third-party
        if inner in base:
            return ""
        return "the base layer imports no contract, core or facade module"

    bad = _violations(base, allowed)
    assert not bad, "\n".join(bad)


def test_contract_rules_modules_are_pure():
    rules = {m for m in _sources() if _is_rules(_short(m))}
    # One pure rules module per contract, and the bundle layout that runs and contexts share.
    assert {f"evstore.{r}" for r in RULES_MODULES} <= rules

    def allowed(m, target, name, inner):
        top = target.split(".")[0]
        if top in {"sqlalchemy", "alembic", "psycopg", "sqlite3"}:
            return "a rules module uses no database"
        if inner is None:
            return "" if top != "evstore" else "unknown evstore module"
        short = _short(inner)
        if inner == "evstore" or short in RULES_FORBIDDEN or _is_contract_store(short):
            return "a rules module imports no store, transaction, facade or contract store module"
        if short == "cli" or short.startswith("cli."):
            return "store/ never imports the CLI"
        return ""

    bad = _violations(rules, allowed)
    assert not bad, "\n".join(bad)


def test_contract_store_modules_never_import_the_facade():
    stores = {m for m in _sources() if _is_contract_store(_short(m))}
    assert {f"evstore.{s}" for s in CONTRACT_STORE} <= stores

    def allowed(m, target, name, inner):
        if inner is None:
            return ""
        if inner == "evstore" or _short(inner) in {"api", "ingest", "check"}:
            return "contract modules never import the facade, ingest or check"
        if _short(inner) == "cli" or _short(inner).startswith("cli."):
            return "store/ never imports the CLI"
        return ""

    bad = _violations(stores, allowed)
    assert not bad, "\n".join(bad)


def test_store_never_imports_the_cli():
    # evstore.__main__ (`python -m evstore`) is the entry point that runs the CLI, not a layer.
    store = {
        m
        for m in _sources()
        if not (m == "evstore.cli" or m.startswith("evstore.cli.") or m == "evstore.__main__")
    }

    def allowed(m, target, name, inner):
        if inner is not None and (inner == "evstore.cli" or inner.startswith("evstore.cli.")):
            return "store/ never imports the CLI"
        return ""

    bad = _violations(store, allowed)
    assert not bad, "\n".join(bad)


def test_cli_imports_only_the_public_surface():
    cli = {m for m in _sources() if m == "evstore.cli" or m.startswith("evstore.cli.")}
    public = set(evstore.__all__)

    def allowed(m, target, name, inner):
        top = target.split(".")[0]
        if target == "evstore":
            if name and name not in public:
                return f"{name} is not in evstore.__all__"
            return ""
        if target == "evstore.cli" or target.startswith("evstore.cli."):
            return ""
        if top == "evstore":
            return "the CLI imports only evstore (its __all__) and evstore.cli.*"
        if top in ("click", "rich") or top in sys.stdlib_module_names:
            return ""  # rich: the progress bars (only cli/ draws them)
        return "the CLI imports click, rich, the standard library and evstore only"

    bad = _violations(cli, allowed)
    # `import evstore` then `evstore.db...`: an attribute past the public surface.
    for m in sorted(cli):
        path, tree = _sources()[m]
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "evstore"
                and node.attr not in public
            ):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: evstore.{node.attr}")
    assert not bad, "\n".join(bad)


def test_no_module_over_800_lines_no_function_over_100():
    bad = []
    for path, tree in _sources().values():
        rel = path.relative_to(ROOT)
        lines = len(path.read_text().splitlines())
        if lines > MAX_MODULE_LINES:
            bad.append(f"{rel}: {lines} lines (max {MAX_MODULE_LINES})")
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    bad.append(
                        f"{rel}:{node.lineno}: {node.name}() {n} lines (max {MAX_FUNCTION_LINES})"
                    )
    assert not bad, "\n".join(bad)


#: Retention (issue 12): leases is imported by blobs and artifacts, so it uses the base layer
#: only; gc, audit and the store.retention namespace sit below the facade (a Store is passed
#: in, never imported) and never import a contract module.
RETENTION = {"leases": BASE, "gc": BASE | {"leases"}}
RETENTION_NAMESPACE = {"audit", "retention"}


def test_retention_modules_sit_below_the_facade():
    def allowed_in(layer):
        def allowed(m, target, name, inner):
            if inner is None and not target.startswith("evstore"):
                return ""
            if inner is not None and _short(inner) in layer:
                return ""
            return f"{_short(m)} imports only {sorted(layer)}"

        return allowed

    bad = []
    for module, layer in RETENTION.items():
        bad += _violations({f"evstore.{module}"}, allowed_in(layer))

    def no_facade(m, target, name, inner):
        if inner is None:
            return ""
        short = _short(inner)
        if inner == "evstore" or short == "api" or short.startswith("cli"):
            return "retention modules never import the facade or the CLI"
        if _is_contract_store(short) or _is_rules(short):
            return "retention modules know no contract"
        return ""

    bad += _violations({f"evstore.{m}" for m in RETENTION_NAMESPACE}, no_facade)
    assert not bad, "\n".join(bad)


#: The pure base modules the HTTP client may use beside evstore's public names.
CLIENT_BASE = {"errors", "digests", "refs", "canonical"}


def test_the_client_uses_only_public_names_and_pure_base_modules():
    client = {m for m in _sources() if m == "evstore.client" or m.startswith("evstore.client.")}
    assert "evstore.client.remote" in client
    public = set(evstore.__all__)

    def allowed(m, target, name, inner):
        top = target.split(".")[0]
        if top in DB_TOP:
            return "the client never touches a database"
        if inner is None:
            return "" if top != "evstore" else "unknown evstore module"
        if inner == "evstore.client" or inner.startswith("evstore.client."):
            return ""
        if inner == "evstore":
            return "" if not name or name in public else f"{name} is not in evstore.__all__"
        if _short(inner) in CLIENT_BASE:
            return ""
        return "the client imports evstore's public names and the pure base modules only"

    bad = _violations(client, allowed)
    assert not bad, "\n".join(bad)


def test_only_the_entry_point_imports_the_client():
    # The client sits above the facade: store modules never import it; evstore.open
    # (store/connect.py) dispatches to it, and evstore's lazy names load it by name.
    below = {
        m
        for m in _sources()
        if not m.startswith(("evstore.client", "evstore.cli", "evstore.server"))
        and m not in {"evstore", "evstore.connect", "evstore.__main__"}
    }

    def allowed(m, target, name, inner):
        if inner is not None and inner.startswith("evstore.client"):
            return "only evstore.connect opens the client"
        return ""

    bad = _violations(below, allowed)
    assert not bad, "\n".join(bad)


def _is_server(m: str) -> bool:
    return m == "evstore.server" or m.startswith("evstore.server.")


def test_the_server_is_a_layer_above_the_public_surface():
    # store/server/ (evstore.server) imports evstore's public names and its own modules only;
    # nothing else in evstore imports it (its public names load lazily, by string).
    server = {m for m in _sources() if _is_server(m)}
    assert "evstore.server.app" in server
    public = set(evstore.__all__)

    def allowed(m, target, name, inner):
        if inner is None:
            return "" if not target.startswith("evstore") else "unknown evstore module"
        if inner == "evstore":
            return "" if not name or name in public else f"{name} is not in evstore.__all__"
        if _is_server(inner) or _is_pages(inner):
            return ""
        return "the server imports evstore's public surface only (evstore.__all__)"

    bad = _violations(server, allowed)
    others = {m for m in _sources() if not _is_server(m) and not _is_pages(m)}
    bad += _violations(
        others,
        lambda m, t, n, inner: (
            "only the lazy public names reach the server"
            if inner is not None and _is_server(inner)
            else ""
        ),
    )
    assert not bad, "\n".join(bad)


def _is_pages(m: str) -> bool:
    return m == "evstore.pages" or m.startswith("evstore.pages.")


def test_the_pages_are_a_layer_above_the_public_surface():
    # store/pages/ (evstore.pages, issue 15) imports evstore's public names, its own modules,
    # FastAPI/Starlette, Jinja2/MarkupSafe and the standard library; only the server imports
    # it, and it never imports the server (the server hands it the store and the token check).
    pages = {m for m in _sources() if _is_pages(m)}
    assert {"evstore.pages.router", "evstore.pages.views", "evstore.pages.render"} <= pages
    public = set(evstore.__all__)

    def allowed(m, target, name, inner):
        top = target.split(".")[0]
        if inner is None:
            if top == "evstore":
                return "unknown evstore module"
            ok = {"fastapi", "starlette", "jinja2", "markupsafe"}
            return (
                "" if top in ok or top in sys.stdlib_module_names else f"{top} is no page library"
            )
        if inner == "evstore":
            return "" if not name or name in public else f"{name} is not in evstore.__all__"
        if _is_pages(inner):
            return ""
        return "the pages import evstore's public surface only (evstore.__all__)"

    bad = _violations(pages, allowed)
    bad += _violations(
        {m for m in _sources() if not _is_pages(m) and not _is_server(m)},
        lambda m, t, n, inner: (
            "only the server includes the pages" if inner is not None and _is_pages(inner) else ""
        ),
    )
    assert not bad, "\n".join(bad)


#: The archive layer (issue 14): above the facade. The layout reader and the offline checks use
#: no database (an archive is verified with no store); only store/archive.py touches one.
ARCHIVE_OFFLINE = {"archive_layout", "archive_verify"}
ARCHIVE = ARCHIVE_OFFLINE | {"archive"}


def test_archive_layer_sits_above_the_facade_and_verifies_offline():
    assert {f"evstore.{m}" for m in ARCHIVE} <= set(_sources())

    def offline(m, target, name, inner):
        if target.split(".")[0] in DB_TOP:
            return "offline archive code uses no database"
        if inner is not None and _short(inner) in {"api", "db", "txn", "blobs", "tables", "ingest"}:
            return "offline archive code imports no store, transaction or facade module"
        return ""

    bad = _violations({f"evstore.{m}" for m in ARCHIVE_OFFLINE}, offline)

    def below(m, target, name, inner):
        if inner is not None and _short(inner) in ARCHIVE:
            return "only the package surface (evstore/__init__) and the CLI load the archive layer"
        return ""

    others = {
        m
        for m in _sources()
        if m != "evstore" and not m.startswith("evstore.cli") and _short(m) not in ARCHIVE
    }
    bad += _violations(others, below)
    assert not bad, "\n".join(bad)
