"""kill -9 of ``evstore serve`` in the middle of a large upload to an S3 blob backend
(issue 25), a bounded number of times, at different points of the body.

Each time: what was acknowledged before reads back, the interrupted blob has no row (its
bytes were still being received: the server spools a body before it uploads it), the
bucket holds no object of it, ``check`` is clean; a server started again stores the same
bytes whole. Both databases.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import uuid
from pathlib import Path

import httpx
import pytest

import evstore
from evstore.backends.base import blob_key
from evstore.backends.spec import open_backend

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from serverkit import make_tokens, start_process

INLINE_MAX = 1024
MIB = 1 << 20


def _slow_body(data: bytes, cut_after: int, sent: threading.Event, killed: threading.Event):
    for off in range(0, len(data), MIB):
        if off >= cut_after:
            sent.set()
            killed.wait(30)  # the server is killed meanwhile
        yield data[off : off + MIB]


@pytest.mark.parametrize("cut_mib", [1, 12])
def test_kill_9_of_a_server_mid_upload_loses_nothing(store_url, s3_server, tmp_path, cut_mib):
    spec = f"s3://{s3_server.bucket}/v{uuid.uuid4().hex[:12]}?endpoint={s3_server.endpoint}"
    with evstore.open(store_url) as st:
        st.set_config("blobs.backend", spec)
        st.set_config("blobs.inline_max", INLINE_MAX)
        before = os.urandom(3 * MIB)
        kept = st.put(before).digest.address
    tokens = make_tokens(store_url)
    big = os.urandom(16 * MIB)
    address = evstore.digest_bytes(big).address
    server = start_process(["--store", store_url, "serve", "--no-access-log"], tmp_path)
    sent, killed = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def upload() -> None:
        try:
            with httpx.Client(
                base_url=server.base,
                headers={"Authorization": f"Bearer {tokens['admin']}"},
                timeout=60,
            ) as http:
                http.put("/v1/objects", content=_slow_body(big, cut_mib * MIB, sent, killed))
        except BaseException as exc:  # the connection is cut by the kill: expected
            errors.append(exc)

    t = threading.Thread(target=upload, daemon=True)
    t.start()
    try:
        assert sent.wait(60), "the upload never got going"
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(30)
        killed.set()
        t.join(60)
    finally:
        server.stop()
    assert errors, "the upload was acknowledged although the server was killed"
    with evstore.open(store_url) as st:
        assert st.get(kept) == before
        assert st.has([address]) == [address]  # no row of the interrupted blob
        assert open_backend(spec).stat(blob_key(address[7:])) is None  # nothing half-written
        assert list(st.check()) == []
    again = start_process(["--store", store_url, "serve", "--no-access-log"], tmp_path)
    try:
        with httpx.Client(
            base_url=again.base, headers={"Authorization": f"Bearer {tokens['admin']}"}, timeout=120
        ) as http:
            r = http.put("/v1/objects", content=big)
            assert r.status_code in (200, 201), r.text
    finally:
        again.stop()
    with evstore.open(store_url) as st:
        assert st.get(address) == big
        assert list(st.check()) == []
