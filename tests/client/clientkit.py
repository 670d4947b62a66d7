"""Helpers of the client's integration tests: a real ``evstore serve`` subprocess on
127.0.0.1 (a free port), with tokens made by ``evstore token create``.

A module of its own (not conftest.py): several test folders have a conftest.py, and
``from conftest import ...`` would import whichever was loaded first."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

EXE = shutil.which("evstore") or str(Path(sys.executable).parent / "evstore")
#: Seconds a server gets to start answering.
START_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ev(*args: str, token: str | None = None, input: bytes | None = None, cwd=None, timeout=120):
    """Run the real console script; ``token`` goes in EVSTORE_TOKEN (never an argument)."""
    env = {k: v for k, v in os.environ.items() if k not in ("EVSTORE_URL", "EVSTORE_TOKEN")}
    if token is not None:
        env["EVSTORE_TOKEN"] = token
    return subprocess.run(
        [EXE, *args], input=input, capture_output=True, cwd=cwd, env=env, timeout=timeout
    )


def make_token(url: str, scope: str) -> str:
    out = ev("--store", url, "token", "create", "--scope", scope)
    assert out.returncode == 0, out.stderr
    return out.stdout.decode().strip()


@dataclass
class Server:
    url: str  # http://127.0.0.1:PORT
    store_url: str
    read: str
    ingest: str
    proc: subprocess.Popen | None
    uv: object = None
    thread: threading.Thread | None = None

    def stop(self) -> None:
        if self.proc is not None:
            stop_server(self.proc)
        if self.uv is not None and self.thread is not None:
            self.uv.should_exit = True
            self.thread.join(timeout=60)


def start_thread(store_url: str) -> Server:
    """The same app on uvicorn in a thread of the test process (coverage sees the server)."""
    import uvicorn

    import evstore

    with evstore.open(store_url) as store:
        read = evstore.create_token(store, "read")["token"]
        ingest = evstore.create_token(store, "ingest")["token"]
    port = free_port()
    app = evstore.create_app({None: store_url})
    uv = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_S
    while not uv.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    return Server(f"http://127.0.0.1:{port}", store_url, read, ingest, None, uv, thread)


def _wait(url: str, token: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"evstore serve exited {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            r = httpx.get(url + "/v1", headers={"Authorization": f"Bearer {token}"}, timeout=2)
            if r.status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    pytest.fail(f"evstore serve did not answer in {START_S} s: {log.read_text()[-2000:]}")


def start_server(store_url: str, tmp: Path, *extra: str) -> Server:
    read, ingest = make_token(store_url, "read"), make_token(store_url, "ingest")
    port = free_port()
    log = tmp / f"serve-{port}.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            [EXE, "--store", store_url, "serve", "--host", "127.0.0.1", "--port", str(port)]
            + ["--no-access-log", *extra],
            stdout=fh,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(url, read, proc, log)
    except BaseException:
        stop_server(proc)
        raise
    return Server(url, store_url, read, ingest, proc)


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
