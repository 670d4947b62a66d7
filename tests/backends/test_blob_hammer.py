"""Reliability (issue 25): two ``evstore serve`` processes and a collector process on one
PostgreSQL database and one SeaweedFS bucket, hammered by 16 client threads.

Each client thread loops over: put a blob over ``blobs.inline_max`` under a root of its own
(acknowledged once the put returns), ingest a manifest naming a fresh content under a
root, read back one of its still-rooted objects, release one of its roots; the collector
runs ``gc`` (rows deleted, bytes queued, the queue drained after a 1 s delay) every
100 ms. ``gc.lease-seconds`` is 1 so released objects really go during the run.

Pass: zero failed reads of an acknowledged object still rooted; every request either
succeeded or failed with a typed, retryable error; ``check`` and ``audit`` clean at the
end; the log dense (entries 0..n-1); the collector collected and drained something.

Duration: ``EVSTORE_BLOB_HAMMER_SECONDS`` (default 15 s; CI 60 s through .ci/run).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

import evstore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "store"))
from retention_helpers import make_manifest
from serverkit import make_tokens, start_process

SECONDS = float(os.environ.get("EVSTORE_BLOB_HAMMER_SECONDS", "15"))
CLIENTS = 16
SERVERS = 2
INLINE_MAX = 1024
#: Typed errors a client may get under load and retry: nothing about the data.
RETRYABLE = {"store.busy", "store.unreachable", "blobs.unreachable", "http.unavailable"}

_COLLECTOR = """
import os, sys, time, evstore
# The library reads no environment: a program hands it the S3 credentials.
evstore.configure_s3(evstore.S3Credentials.from_variables(os.environ))
url, seconds = sys.argv[1], float(sys.argv[2])
deleted = drained = runs = 0
deadline = time.monotonic() + seconds
with evstore.open(url) as store:
    while time.monotonic() < deadline and runs < 100000:
        try:
            r = store.retention.gc()
            deleted += r.count
            runs += 1
        except evstore.EvstoreError as err:
            if err.code not in ("store.busy", "store.unreachable", "blobs.unreachable"):
                raise
        time.sleep(0.1)
print(deleted, runs)
"""


class Client(threading.Thread):
    def __init__(self, index: int, base: str, token: str, seconds: float) -> None:
        super().__init__(daemon=True)
        self.index = index
        self.base = base
        self.token = token
        self.deadline = time.monotonic() + seconds
        self.rng = random.Random(index)
        self.held: dict[str, tuple[str, bytes]] = {}  # address -> (root, bytes)
        self.failures: list[str] = []
        self.typed: dict[str, int] = {}
        self.ops = 0

    def _typed(self, err: evstore.EvstoreError, what: str) -> None:
        if err.code in RETRYABLE:
            self.typed[err.code] = self.typed.get(err.code, 0) + 1
        else:
            self.failures.append(f"{what}: {err.code}: {err}")

    def run(self) -> None:
        try:
            with evstore.open(self.base, token=self.token) as store:
                while time.monotonic() < self.deadline and self.ops < 100_000:
                    self.ops += 1
                    self.step(store)
        except Exception as exc:  # a crash of the thread is a failure, never swallowed
            self.failures.append(f"thread: {type(exc).__name__}: {exc}")

    def step(self, store) -> None:
        pick = self.rng.random()
        root = f"c{self.index}-{self.ops}"
        if pick < 0.35:
            data = os.urandom(self.rng.randrange(2, 64) * INLINE_MAX)
            try:
                with evstore.rooting(root):
                    res = store.put(data)
            except evstore.EvstoreError as err:
                self._typed(err, "put")
                return
            self.held[res.digest.address] = (root, data)
        elif pick < 0.5:
            content = os.urandom(self.rng.randrange(INLINE_MAX + 1, 4096))  # bytes/max 4096
            doc = make_manifest(content, f"q{self.index}-{self.ops}")
            try:
                with evstore.rooting(root):
                    report = store.ingest([evstore.Document(doc)], supplied=[content])
            except evstore.EvstoreError as err:
                self._typed(err, "ingest")
                return
            address = report.results[0].digest.address
            self.held[address] = (root, store.get(address))
            self.held[evstore.digest_bytes(content).address] = (root, content)
        elif pick < 0.85 and self.held:
            address = self.rng.choice(sorted(self.held))
            root_, data = self.held[address]
            try:
                got = store.get(address)
            except evstore.EvstoreError as err:
                self.failures.append(f"read of a rooted {address}: {err.code}: {err}")
                return
            if got != data:
                self.failures.append(f"read of a rooted {address}: other bytes")
        elif self.held:
            address = self.rng.choice(sorted(self.held))
            root_, _ = self.held[address]
            gone = [a for a, (r, _) in self.held.items() if r == root_]
            for a in gone:
                del self.held[a]  # not read again: it may be collected from now on
            try:
                store.retention.release(root_)
            except evstore.EvstoreError as err:
                self._typed(err, "release")


@pytest.mark.parametrize("backend", ["postgresql"])
def test_two_servers_a_collector_and_sixteen_clients(store_url, s3_server, tmp_path):
    spec = f"s3://{s3_server.bucket}/h{uuid.uuid4().hex[:12]}?endpoint={s3_server.endpoint}"
    with evstore.open(store_url) as st:
        st.set_config("blobs.backend", spec)
        st.set_config("blobs.inline_max", INLINE_MAX)
        st.set_config("gc.lease-seconds", 1)
        st.set_config("blobs.deletion_delay_seconds", 1)
    tokens = make_tokens(store_url)
    servers = [
        start_process(["--store", store_url, "serve", "--no-access-log"], tmp_path)
        for _ in range(SERVERS)
    ]
    collector = subprocess.Popen(
        [sys.executable, "-c", _COLLECTOR, store_url, str(SECONDS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        clients = [
            Client(i, servers[i % SERVERS].base, tokens["admin"], SECONDS) for i in range(CLIENTS)
        ]
        for c in clients:
            c.start()
        for c in clients:
            c.join(SECONDS + 120)
            assert not c.is_alive(), f"client {c.index} did not finish"
        out, err = collector.communicate(timeout=SECONDS + 120)
        assert collector.returncode == 0, err.decode()
    finally:
        if collector.poll() is None:
            collector.kill()
            collector.wait(10)
        for s in servers:
            s.stop()
    failures = [f for c in clients for f in c.failures]
    assert failures == [], failures[:10]
    deleted, runs = (int(x) for x in out.split())
    assert runs > 0 and deleted > 0, "the collector collected nothing"
    assert sum(c.ops for c in clients) > CLIENTS
    with evstore.open(store_url) as st:
        st.set_config("blobs.deletion_delay_seconds", 0)
        time.sleep(1.1)
        st.retention.gc()
        assert list(st.check()) == []
        assert st.retention.audit(record=False).verdict == "pass"
        for c in clients:  # what is still rooted reads back, from the database's side too
            for address, (_, data) in list(c.held.items())[:20]:
                assert st.get(address) == data
        st.log.integrate()  # the servers have no log key: nothing integrated the queue yet
        with st.db.engine.connect() as conn:
            n, top = conn.execute(sa.text("SELECT count(*), max(idx) FROM log_entries")).one()
            assert n > 0 and top == n - 1  # dense
            queued = conn.execute(sa.text("SELECT count(*) FROM blob_deletions")).scalar()
            assert queued == 0
