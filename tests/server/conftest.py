"""Fixtures of the HTTP tests: a real server (``evstore serve`` on 127.0.0.1) per test.

See serverkit.py for the helpers; every wait is bounded.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from serverkit import make_tokens, start_process, start_thread


@pytest.fixture
def served(store_url: str, tmp_path: Path):
    """``evstore serve`` of the test's store (a subprocess), with a token of each scope."""
    tokens = make_tokens(store_url)
    server = start_process(["--store", store_url, "serve", "--no-access-log"], tmp_path)
    server.tokens = tokens
    yield server
    server.stop()


@pytest.fixture(params=["process", "thread"])
def served_any(request: pytest.FixtureRequest, store_url: str, tmp_path: Path):
    """The server as a subprocess, then as uvicorn in a thread (same assertions)."""
    tokens = make_tokens(store_url)
    if request.param == "process":
        server = start_process(["--store", store_url, "serve", "--no-access-log"], tmp_path)
    else:
        server = start_thread({None: store_url})
    server.tokens = tokens
    yield server
    server.stop()
