"""Fixtures of the behaviour suite: one StoreProtocol per implementation, once per module.

``any_store`` is a local Store on SQLite and on PostgreSQL, then a RemoteStore talking to a
real ``evstore serve`` subprocess on 127.0.0.1 (a free port; tests/server/serverkit.py) in
front of a SQLite and a PostgreSQL store, with an admin token. Each is built once per test
module and shared by its tests, so every test writes data of its own (:func:`unique`) and
asserts about that data only. ``reference`` is a local SQLite store of the module, for
answers compared whole (errors with their messages, reports).
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import evstore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from serverkit import make_tokens, start_process

#: Every implementation of evstore.StoreProtocol the suite runs against.
IMPLEMENTATIONS = ("local-sqlite", "local-postgresql", "remote-sqlite", "remote-postgresql")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def any_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, fresh_store_url
) -> Iterator[evstore.StoreProtocol]:
    """A fresh store of one implementation, shared by the tests of one module."""
    where, backend = request.param.split("-")
    tmp = tmp_path_factory.mktemp(request.param)
    url = fresh_store_url(backend, request, tmp)
    if where == "local":
        with evstore.open(url) as store:
            yield store
        return
    tokens = make_tokens(url)
    server = start_process(["--store", url, "serve", "--no-access-log"], tmp)
    try:
        with evstore.open(server.base, token=tokens["admin"]) as store:
            yield store
    finally:
        server.stop()


@pytest.fixture(scope="module")
def reference(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, fresh_store_url
) -> Iterator[evstore.Store]:
    """A local SQLite store of the module: the answer an implementation must equal."""
    url = fresh_store_url("sqlite", request, tmp_path_factory.mktemp("reference"))
    with evstore.open(url) as store:
        yield store


@pytest.fixture
def unique() -> str:
    """A fresh token for this test's data (the module's store is shared)."""
    return uuid.uuid4().hex
