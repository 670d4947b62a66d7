"""kill -9 of the collector between the row delete and the backend delete (issue 25).

A collector process (``gc`` through the library) is killed with SIGKILL while it drains the
deletion queue: once just before it deletes an object from the backend, once just after
(before the queue row's transaction commits). Each time: nothing rooted is lost, the queue
still holds the key, the next ``gc`` drains it, and ``check`` is clean. Both databases,
a directory and a SeaweedFS bucket; a bounded number of kills per test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

import evstore
from evstore.backends.base import blob_key
from evstore.backends.spec import open_backend
from evstore.db.tables import blob_deletions

INLINE_MAX = 1024

_COLLECTOR = """
import os, sys, time, evstore
# The library reads no environment: a program hands it the S3 credentials.
evstore.configure_s3(evstore.S3Credentials.from_variables(os.environ))
from evstore.backends import file, s3
when = sys.argv[2]
for cls in (file.FileBackend, s3.S3Backend):
    real = cls.delete_many  # the drain's bulk delete
    def delete_many(self, keys, real=real):
        if when == "before":
            print("deleting", flush=True); time.sleep(60)
        failed = real(self, keys)
        print("deleted", flush=True); time.sleep(60)
        return failed
    cls.delete_many = delete_many
with evstore.open(sys.argv[1]) as store:
    store.retention.gc()
"""


@pytest.fixture(params=["file", "s3"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "file":
        (tmp_path / "blobs").mkdir()
        return f"file:{tmp_path / 'blobs'}"
    sw = request.getfixturevalue("s3_server")
    return f"s3://{sw.bucket}/k{uuid.uuid4().hex[:12]}?endpoint={sw.endpoint}"


def _queued(url: str) -> list[str]:
    with evstore.open(url) as st, st.db.engine.connect() as conn:
        return sorted(r[0] for r in conn.execute(sa.select(blob_deletions.c.key)))


def test_kill_9_of_the_collector_between_row_and_bytes(store_url, spec):
    with evstore.open(store_url) as st:
        st.set_config("blobs.backend", spec)
        st.set_config("blobs.inline_max", INLINE_MAX)
        st.set_config("gc.lease-seconds", 0)
        st.set_config("blobs.deletion_delay_seconds", 0)
        kept = {}
        for _ in range(3):
            d = os.urandom(3 * INLINE_MAX)
            kept[st.put(d).digest.address] = d
    backend = open_backend(spec)
    for when in ("before", "after"):  # bounded: one kill each
        with evstore.open(store_url) as st:
            with st.retention.rooting("tmp"):
                doomed = st.put(os.urandom(5 * INLINE_MAX)).digest
            st.retention.release("tmp")
        key = blob_key(doomed.blake3)
        p = subprocess.Popen(
            [sys.executable, "-c", _COLLECTOR, store_url, when],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 60
            line = b""
            while time.monotonic() < deadline and p.poll() is None:
                line = p.stdout.readline()
                if line:
                    break
            if line.strip() not in (b"deleting", b"deleted"):
                p.kill()
                raise AssertionError(p.communicate(timeout=30)[1].decode())
            p.send_signal(signal.SIGKILL)
        finally:
            if p.poll() is None:
                p.kill()
            p.communicate(timeout=30)
        assert _queued(store_url) == [key]  # the drain's transaction did not commit
        assert (backend.stat(key) is None) == (when == "after")
        with evstore.open(store_url) as st:
            assert st.has([doomed.address]) == [doomed.address]  # its row went first
            for address, data in kept.items():
                assert st.get(address) == data
            assert list(st.check()) == []
            st.retention.gc()  # the next run drains what the killed one left
        assert _queued(store_url) == []
        assert backend.stat(key) is None
    with evstore.open(store_url) as st:
        assert list(st.check()) == []
