"""32 concurrent clients for a bounded time, clean shutdown on SIGTERM, several workers."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time

import httpx
from serverkit import EVSTORE, make_tokens, start_process

import evstore

CLIENTS = 32
SECONDS = 10.0
MAX_REQUESTS = 400  # per client: a bound on count as well as on time


def test_32_clients_mixed_reads_and_ingests(served, store_url):
    with served.client("ingest") as c:
        seed = [c.put("/v1/objects", content=b"seed %d" % i).json()["address"] for i in range(8)]
    acked: list[str] = []
    statuses: dict[int, int] = {}
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + SECONDS

    def worker(n: int) -> None:
        with served.client("ingest") as c:
            for i in range(MAX_REQUESTS):
                if time.monotonic() > deadline:
                    return
                try:
                    if i % 3 == 0:
                        doc = {"client": n, "i": i, "pad": "x" * 200}
                        r = c.post("/v1/ingest", json={"documents": [{"document": doc}]})
                        if r.status_code == 200:
                            with lock:
                                acked.append(r.json()["artifacts"][0]["address"])
                    elif i % 3 == 1:
                        r = c.get(f"/v1/objects/{seed[i % len(seed)]}")
                    else:
                        r = c.post("/v1/missing", json={"refs": seed})
                except httpx.HTTPError as exc:
                    with lock:
                        errors.append(repr(exc))
                    continue
                with lock:
                    statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
                    if r.status_code == 503:
                        assert r.headers["retry-after"]

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=SECONDS + 120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors[:3]
    assert all(s in (200, 503) for s in statuses), statuses
    assert acked, statuses
    with served.client("read") as c:
        missing = c.post("/v1/missing", json={"refs": acked}).json()["missing"]
    assert missing == []
    assert served.stop() == 0
    check = subprocess.run(
        [EVSTORE, "--store", store_url, "--json", "check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert json.loads(check.stdout)["ok"] is True


def test_sigterm_lets_requests_in_flight_finish(store_url, tmp_path):
    tokens = make_tokens(store_url)
    data = bytes(range(256)) * (48 * 1024)  # 12 MiB, streamed
    with evstore.open(store_url) as store:
        address = store.put(data).digest.address
    server = start_process(["--store", store_url, "serve", "--no-access-log"], tmp_path)
    server.tokens = tokens
    got = bytearray()
    with server.client("read") as c, c.stream("GET", f"/v1/objects/{address}") as r:
        it = r.iter_raw(64 * 1024)
        got += next(it)  # the response has started: the request is in flight
        server.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        for chunk in it:
            got += chunk
    assert bytes(got) == data
    assert server.proc.wait(timeout=60) == 0
    assert "Shutting down" in server.log.read_text() or server.log.read_text() == ""


def test_sigint_stops_cleanly_and_workers_serve(store_url, tmp_path):
    tokens = make_tokens(store_url)
    server = start_process(
        ["--store", store_url, "serve", "--workers", "2", "--no-access-log"], tmp_path
    )
    server.tokens = tokens
    try:
        with server.client("ingest") as c:
            for i in range(10):
                r = c.put("/v1/objects", content=b"w%d" % i)
                assert r.status_code == 201
                assert c.get(f"/v1/objects/{r.json()['address']}").content == b"w%d" % i
    finally:
        server.proc.send_signal(signal.SIGINT)
        assert server.proc.wait(timeout=60) == 0
