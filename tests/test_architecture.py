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
        "digests",
        "refs",
        "canonical",
        "db",
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
