"""Helpers of the HTTP tests: ``evstore serve`` in a subprocess on 127.0.0.1.

``served`` (conftest.py) starts the console script on a free loopback port for the test's
store (both backends) and stops it with SIGTERM. ``served_any`` runs the same tests a
second time against the same app on uvicorn in a thread of the test process, so that
coverage sees the server's lines too. Every wait is bounded.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import sqlalchemy as sa
import uvicorn

import evstore
from evstore.db.tables import blob_chunks, blobs

EVSTORE = str(Path(sys.executable).with_name("evstore"))
#: A bounded wait for a started server to listen: long, since a loaded machine (CI with two
#: workers, or engineers sharing the cores) can take tens of seconds to import the server;
#: a server process that exits ends the wait at once.
START_S = 90.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int, proc: subprocess.Popen | None, log: Path | None) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            text = log.read_text() if log else ""
            raise AssertionError(f"evstore serve exited {proc.returncode}: {text}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port} after {START_S} s")


@dataclass
class Server:
    """A running server: its base URL, tokens by scope, and how to stop it."""

    base: str
    tokens: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen | None = None
    log: Path | None = None
    uv: uvicorn.Server | None = None
    thread: threading.Thread | None = None
    clients: list[httpx.Client] = field(default_factory=list)

    def client(self, scope: str | None = "admin", **kw) -> httpx.Client:
        """An HTTP client with ``scope``'s token; closed by :meth:`stop` (no socket left
        open for the garbage collector to warn about in a later test)."""
        headers = {"Authorization": f"Bearer {self.tokens[scope]}"} if scope else {}
        c = httpx.Client(base_url=self.base, headers=headers, timeout=60, **kw)
        self.clients.append(c)
        return c

    def stop(self) -> int | None:
        for c in self.clients:
            c.close()
        self.clients.clear()
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
            return self.proc.returncode
        if self.uv is not None and self.thread is not None:
            self.uv.should_exit = True
            self.thread.join(timeout=60)
        return None


def start_process(
    args: list[str], tmp_path: Path, *, env: dict[str, str] | None = None, prefix: str = ""
) -> Server:
    """``evstore [global args] serve ARGS --port P`` in a subprocess, listening."""
    port = free_port()
    log = tmp_path / f"serve-{port}.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            [EVSTORE, *args, "--host", "127.0.0.1", "--port", str(port)],
            stdout=fh,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
    try:
        _wait_listening(port, proc, log)
    except BaseException:
        proc.kill()
        proc.wait(timeout=10)
        raise
    return Server(f"http://127.0.0.1:{port}{prefix}", proc=proc, log=log)


def start_thread(stores, *, prefix: str = "", **kw) -> Server:
    """The same app on uvicorn in a thread of this process (for coverage)."""
    port = free_port()
    app = evstore.create_app(stores, **kw)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_S
    while not uv.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    return Server(f"http://127.0.0.1:{port}{prefix}", uv=uv, thread=thread)


def make_tokens(url: str) -> dict[str, str]:
    with evstore.open(url) as store:
        return {s: evstore.create_token(store, s, f"test-{s}")["token"] for s in SCOPES}


SCOPES = ("read", "ingest", "admin")


def corrupt(url: str, address: str) -> None:
    """Change one stored byte of the blob ``address`` (inline data or its second chunk)."""
    with evstore.open(url) as store, store.db.engine.begin() as conn:
        hexa = address.removeprefix("blake3:")
        row = conn.execute(
            sa.select(blobs.c.data, blobs.c.chunk_set).where(blobs.c.address == hexa)
        ).one()
        if row.chunk_set is None:
            data = bytearray(row.data)
            data[0] ^= 1
            conn.execute(sa.update(blobs).where(blobs.c.address == hexa).values(data=bytes(data)))
            return
        chunk = conn.execute(
            sa.select(blob_chunks.c.data).where(
                blob_chunks.c.chunk_set == row.chunk_set, blob_chunks.c.seq == 1
            )
        ).scalar_one()
        data = bytearray(chunk)
        data[7] ^= 1
        conn.execute(
            sa.update(blob_chunks)
            .where(blob_chunks.c.chunk_set == row.chunk_set, blob_chunks.c.seq == 1)
            .values(data=bytes(data))
        )
