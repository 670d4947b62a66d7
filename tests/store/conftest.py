"""Fixtures of the archive tests (tests/store/test_archive*.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from archive_helpers import fresh_url, pg_database, populate

import evstore


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def source(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """``(backend, url, roots)``: store A, holding every kind; roots: every artifact address."""
    backend = request.param
    if backend == "sqlite":
        path = tmp_path_factory.mktemp("archive-a") / "a.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        url = f"sqlite:///{path}"
    else:
        url = pg_database(request, request.getfixturevalue("pg_template"))
    shared = request.getfixturevalue("shared_dir")
    with evstore.open(url) as store:
        populate(store, shared)
        roots = sorted({a.address for a in store.ls()})
    return backend, url, roots


@pytest.fixture
def fresh(source, request: pytest.FixtureRequest, tmp_path: Path):
    """``fresh()`` -> an open, empty store on store A's backend (closed at the end)."""
    opened: list[evstore.Store] = []

    def make() -> evstore.Store:
        s = evstore.open(fresh_url(source[0], request, tmp_path))
        opened.append(s)
        return s

    yield make
    for s in opened:
        s.close()
