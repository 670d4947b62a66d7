"""The object server stopped and restarted under load (issue 25).

The store reaches SeaweedFS through a TCP relay of this test's own; the relay is stopped
(listener closed, every connection cut: to the store the object server is gone) and
started again on the same port while writer threads put blobs over
``blobs.inline_max``: while it is down every large put and every read of a blob in the
bucket fails with the typed, retryable ``blobs.unreachable`` (503 over HTTP) and writes
nothing, small blobs (in the database) are still stored and read; after the restart the
service is whole again, every acknowledged blob reads back and ``check`` is clean.
Both databases.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa

import evstore
from evstore.db.tables import blobs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from serverkit import make_tokens, start_thread

INLINE_MAX = 1024
WRITERS = 4


class Relay:
    """A TCP relay from a free port of 127.0.0.1 to ``target`` that can be cut and resumed."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.listener: socket.socket | None = None
        self.lock = threading.Lock()

    def start(self) -> None:
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", self.port))
        ls.listen(64)
        self.listener = ls
        threading.Thread(target=self._accept, args=(ls,), daemon=True).start()

    def _accept(self, ls: socket.socket) -> None:
        while True:
            try:
                a, _ = ls.accept()
            except OSError:
                return
            try:
                b = socket.create_connection(self.target, timeout=5)
            except OSError:
                a.close()
                continue
            with self.lock:
                self.conns += [a, b]
            for x, y in ((a, b), (b, a)):
                threading.Thread(target=self._pump, args=(x, y), daemon=True).start()

    @staticmethod
    def _pump(x: socket.socket, y: socket.socket) -> None:
        try:
            while data := x.recv(65536):
                y.sendall(data)
        except OSError:
            pass
        finally:
            for s in (x, y):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop(self) -> None:
        assert self.listener is not None
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
        except OSError:
            pass
        self.listener.close()
        with self.lock:
            for c in self.conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                c.close()
            self.conns = []


@pytest.fixture
def relay(s3_server):
    parts = urlsplit(s3_server.endpoint)
    r = Relay((parts.hostname, parts.port))
    r.start()
    yield r
    r.stop()


def _external_rows(st) -> int:
    with st.db.engine.connect() as conn:
        q = sa.select(sa.func.count()).where(blobs.c.stored_in.is_not(None))
        return int(conn.execute(q).scalar_one())


class Writer(threading.Thread):
    def __init__(self, url: str, index: int) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.index = index
        self.stop = threading.Event()
        self.acked: dict[str, bytes] = {}
        self.codes: dict[str, int] = {}
        self.failures: list[str] = []

    def run(self) -> None:
        with evstore.open(self.url) as st:
            n = 0
            while not self.stop.is_set() and n < 10_000:
                n += 1
                data = os.urandom(INLINE_MAX * (2 + n % 7))
                try:
                    self.acked[st.put(data).digest.address] = data
                except evstore.EvstoreError as err:
                    self.codes[err.code] = self.codes.get(err.code, 0) + 1
                    if err.code != "blobs.unreachable":
                        self.failures.append(f"{err.code}: {err}")
                time.sleep(0.01)


def test_the_object_server_down_and_back(store_url, s3_server, relay):
    prefix = f"o{os.getpid()}-{time.monotonic_ns()}"
    spec = f"s3://{s3_server.bucket}/{prefix}?endpoint=http://127.0.0.1:{relay.port}"
    with evstore.open(store_url) as st:
        st.set_config("blobs.backend", spec)
        st.set_config("blobs.inline_max", INLINE_MAX)
        before = os.urandom(4 * INLINE_MAX)
        kept = st.put(before).digest.address
    tokens = make_tokens(store_url)
    server = start_thread({None: store_url})
    writers = [Writer(store_url, i) for i in range(WRITERS)]
    for w in writers:
        w.start()
    try:
        time.sleep(1)
        relay.stop()
        time.sleep(0.5)  # puts under way when it stopped end
        with evstore.open(store_url) as st:
            counted = _external_rows(st)
            with pytest.raises(evstore.StoreStateError) as info:
                st.put(os.urandom(3 * INLINE_MAX))
            assert info.value.code == "blobs.unreachable"
            with pytest.raises(evstore.StoreStateError) as info:
                st.get(kept)
            assert info.value.code == "blobs.unreachable"
            assert st.put(b"small bytes stay in the database").new in (True, False)
            time.sleep(1)
            assert _external_rows(st) == counted  # no row in the bucket while it is down
        server.tokens = tokens
        with server.client() as http:
            r = http.get(f"/v1/objects/{kept}")
            assert r.status_code == 503
            assert r.headers["content-type"].startswith("application/problem+json")
            assert r.json()["code"] == "blobs.unreachable"
        time.sleep(1)
        relay.start()
        time.sleep(1)
    finally:
        for w in writers:
            w.stop.set()
        for w in writers:
            w.join(120)
        server.stop()
    assert [f for w in writers for f in w.failures] == []
    assert sum(w.codes.get("blobs.unreachable", 0) for w in writers) > 0
    with evstore.open(store_url) as st:
        assert st.get(kept) == before
        for w in writers:
            for address, data in w.acked.items():
                assert st.get(address) == data
        after = st.put(os.urandom(5 * INLINE_MAX))
        assert after.new
        assert list(st.check()) == []
