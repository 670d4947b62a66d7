"""Fixtures of the client's integration tests (helpers in clientkit.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from clientkit import start_server, stop_server


@pytest.fixture
def server(store_url: str, tmp_path: Path):
    """``evstore serve`` of the test's fresh store (both backends), with read/ingest tokens."""
    s = start_server(store_url, tmp_path)
    yield s
    stop_server(s.proc)
