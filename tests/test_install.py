"""The `evstore` under test was built from this tree: a stale install cannot pass the suite.

The tests import `evstore`, which is whatever pip installed: the tree itself with an editable
install (`pip install -e '.[test]'`), or a copy in site-packages with `pip install .` (what CI
does). A copy made before the last edit would test old code; these tests fail then, naming the
files to reinstall for.
"""

from __future__ import annotations

import importlib
import tomllib
from importlib import metadata
from pathlib import Path

import evstore

ROOT = Path(__file__).resolve().parents[1]
#: tree folder -> installed package (pyproject.toml [tool.setuptools] package-dir).
PACKAGES = {
    "store": "evstore",
    "cli": "evstore.cli",
    "migrations": "evstore.migrations",
}
#: Files the install must carry byte for byte (package data included).
PATTERNS = ("*.py", "schemas/*.json")


def _installed_dir(package: str) -> Path:
    return Path(importlib.import_module(package).__file__).resolve().parent


def _files(folder: Path, exclude: list[Path]) -> dict[str, bytes]:
    out = {}
    for pattern in PATTERNS:
        for path in folder.rglob(pattern):
            resolved = path.resolve()
            if "__pycache__" in path.parts or any(resolved.is_relative_to(e) for e in exclude):
                continue
            out[path.relative_to(folder).as_posix()] = path.read_bytes()
    return out


def test_the_package_dirs_match_pyproject():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package_dir = pyproject["tool"]["setuptools"]["package-dir"]
    for folder, package in PACKAGES.items():
        assert package_dir[package] == folder


def test_the_installed_evstore_has_the_tree_s_source_bytes():
    assert Path(evstore.__file__).resolve().parent == _installed_dir("evstore")
    installed_dirs = {folder: _installed_dir(pkg) for folder, pkg in PACKAGES.items()}
    stale = []
    for folder, installed in installed_dirs.items():
        # Subpackages installed inside this one (evstore/cli in site-packages) are compared
        # on their own.
        others = [
            d for d in installed_dirs.values() if d != installed and d.is_relative_to(installed)
        ]
        tree = _files(ROOT / folder, exclude=[])
        built = _files(installed, exclude=others)
        assert tree, f"no sources found under {folder}/"
        for rel in sorted(set(tree) | set(built)):
            if rel not in built:
                stale.append(f"{folder}/{rel}: missing from the install ({installed})")
            elif rel not in tree:
                stale.append(f"{installed / rel}: installed but gone from {folder}/")
            elif tree[rel] != built[rel]:
                stale.append(f"{folder}/{rel}: differs from {installed / rel}")
    assert not stale, (
        "the evstore under test was not built from this tree; reinstall "
        "(pip install '.[test]', or pip install -e '.[test]' to develop):\n" + "\n".join(stale)
    )


def test_the_installed_version_is_the_tree_s():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert metadata.version("evidence-store") == pyproject["project"]["version"]
