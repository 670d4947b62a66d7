"""S3 credentials come from the caller only: no instance-metadata lookup, ever (issue 25).

An S3 client that finds no credentials in the environment asks the instance-metadata
service (169.254.169.254; ``AWS_METADATA_ENDPOINT`` moves it): off that cloud the request
hangs until it times out. evstore opens an S3 backend only with configured credentials and
answers ``blobs.credentials`` otherwise, before any connection. The tests point the
metadata endpoint at a local listener and count the connections it receives.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import evstore
from evstore.backends.base import blob_key
from evstore.backends.spec import open_backend

SPEC = "s3://evstore-nocreds/p?endpoint=http://127.0.0.1:9&region=us-east-1"


@pytest.fixture
def metadata_listener() -> Iterator[tuple[str, list[bytes]]]:
    """A TCP listener standing in for the metadata service: its URL and what it received."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    got: list[bytes] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    got.append(conn.recv(512) or b"(connected)")
                except OSError:
                    got.append(b"(connected)")

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}", got
    finally:
        stop.set()
        t.join(5)
        srv.close()


def _env_without_keys(metadata: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    # Where obstore (and boto3) would look for instance credentials: the local listener.
    env["AWS_METADATA_ENDPOINT"] = metadata
    env["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = metadata
    return env


def test_no_credentials_is_a_typed_error_and_no_metadata_lookup(
    tmp_path: Path, metadata_listener: tuple[str, list[bytes]]
) -> None:
    """The CLI without AWS_ACCESS_KEY_ID: init --blobs s3://... fails with
    blobs.credentials, and nothing connected to the metadata endpoint (obstore's default
    chain sends ``PUT /latest/api/token`` there).
    """
    url, got = metadata_listener
    store = f"sqlite:///{tmp_path / 's.db'}"
    p = subprocess.run(
        [sys.executable, "-m", "evstore", "--json", "--store", store, "init", "--blobs", SPEC],
        env=_env_without_keys(url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 1, (p.stdout, p.stderr)
    out = json.loads(p.stdout)
    assert out["error"]["code"] == "blobs.credentials", out
    assert "Traceback" not in p.stderr
    assert got == []


def test_the_library_refuses_an_s3_backend_without_configured_credentials(
    metadata_listener: tuple[str, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Variables in the environment are not read by the library: only configure_s3 counts."""
    url, got = metadata_listener
    monkeypatch.setenv("AWS_METADATA_ENDPOINT", url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "from-env")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "from-env")
    before = evstore.configure_s3(None)
    try:
        with pytest.raises(evstore.StoreStateError) as info:
            open_backend(SPEC)
        assert info.value.code == "blobs.credentials"
    finally:
        evstore.configure_s3(before)
    assert got == []


def test_configured_credentials_go_to_the_server_not_to_metadata(
    metadata_listener: tuple[str, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With credentials configured, a request to a server that is down is
    blobs.unreachable and the metadata endpoint is never asked.
    """
    url, got = metadata_listener
    monkeypatch.setenv("AWS_METADATA_ENDPOINT", url)
    before = evstore.configure_s3(evstore.S3Credentials("k", "s"))
    try:
        b = open_backend(SPEC, timeout=0.5)
        with pytest.raises(evstore.StoreStateError) as info:
            b.stat(blob_key("0" * 64))
        assert info.value.code == "blobs.unreachable"
    finally:
        evstore.configure_s3(before)
    assert got == []


def test_credentials_from_the_standard_variables() -> None:
    read = evstore.S3Credentials.from_variables
    assert read({}) is None
    assert read({"AWS_ACCESS_KEY_ID": "k"}) is None  # half a key pair is none
    c = read(
        {
            "AWS_ACCESS_KEY_ID": "k",
            "AWS_SECRET_ACCESS_KEY": "secret-text",
            "AWS_SESSION_TOKEN": "t",
            "AWS_ENDPOINT_URL": "http://127.0.0.1:1",
            "AWS_DEFAULT_REGION": "eu-west-1",
        }
    )
    assert c == evstore.S3Credentials("k", "secret-text", "t", "http://127.0.0.1:1", "eu-west-1")
    assert "secret-text" not in repr(c)
