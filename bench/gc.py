"""Garbage collection and audit benchmark (issue 12).

Usage::

    python bench/gc.py --backend sqlite|postgresql [--objects 1000000] [--packages 10000]
    python bench/gc.py --backend sqlite --scale 100     # the same, every count / 100 (quick)

Parts (each on a fresh store; the machine may be shared, so each ratio is measured within
one run):

    a  gc over a store of OBJECTS small (64-byte) blobs of which 10 % are garbage (put under
       a root that is then released; ``gc.lease-seconds`` 0): objects freed per second.
    b  ingest throughput (small ``json`` documents, one 200-document ingest per transaction,
       for ``--seconds``) alone, then while a collector process runs ``gc`` in a loop over
       fresh garbage; ratio = with gc / alone. Target >= 0.7.
    c  ``audit`` of PACKAGES retained manifests (each with its rendered content, under one
       root) against ``check`` of the same store; ratio = check s / audit s. Target >= 0.8.

The script measures and prints; it never asserts. A JSON result goes to bench/results/.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "store"))

from _common import RESULTS_DIR, fresh_store, machine_info

import evstore


def _blobs(n: int, tag: str) -> list[bytes]:
    return [f"{tag}:{i:012d}:".encode().ljust(64, b".") for i in range(n)]


def part_a(backend: str, objects: int) -> dict[str, Any]:
    garbage = objects // 10
    with fresh_store(backend, "gc-a") as fs, evstore.open(fs.url) as store:
        store.set_config("gc.lease-seconds", 0)
        t0 = time.perf_counter()
        store.put_many(_blobs(objects - garbage, "live"), batch=10_000)
        with store.retention.rooting("tmp"):
            store.put_many(_blobs(garbage, "dead"), batch=10_000)
        fill = time.perf_counter() - t0
        store.retention.release("tmp")
        t0 = time.perf_counter()
        report = store.retention.gc(batch=1000)
        secs = time.perf_counter() - t0
    return {
        "objects": objects,
        "garbage": garbage,
        "freed": report.count,
        "fill_s": round(fill, 2),
        "gc_s": round(secs, 2),
        "freed_per_s": round(report.count / secs, 1) if secs else None,
    }


def _ingest_for(url: str, seconds: float, tag: str) -> float:
    n = 0
    deadline = time.perf_counter() + seconds
    start = time.perf_counter()
    with evstore.open(url) as store:
        while time.perf_counter() < deadline:
            docs = [{"bench": tag, "n": n + i} for i in range(200)]
            store.ingest([evstore.Document(json.dumps(d).encode()) for d in docs])
            n += 200
    return n / (time.perf_counter() - start)


def _collector(url: str, seconds: float, out: Any) -> None:
    freed = runs = 0
    deadline = time.perf_counter() + seconds
    with evstore.open(url) as store:
        while time.perf_counter() < deadline:
            freed += store.retention.gc(batch=200).count
            runs += 1
    out.put({"freed": freed, "runs": runs})


def part_b(backend: str, objects: int, seconds: float) -> dict[str, Any]:
    with fresh_store(backend, "gc-b") as fs:
        with evstore.open(fs.url) as store:
            store.set_config("gc.lease-seconds", 0)
            store.put_many(_blobs(objects, "live"), batch=10_000)
        alone = _ingest_for(fs.url, seconds, "alone")
        with evstore.open(fs.url) as store:
            with store.retention.rooting("tmp"):
                store.put_many(_blobs(objects, "dead"), batch=10_000)
            store.retention.release("tmp")
        ctx = multiprocessing.get_context("spawn")
        out = ctx.Queue()
        proc = ctx.Process(target=_collector, args=(fs.url, seconds, out))
        proc.start()
        with_gc = _ingest_for(fs.url, seconds, "with-gc")
        collected = out.get(timeout=seconds + 600)
        proc.join()
    return {
        "ingest_alone_docs_per_s": round(alone, 1),
        "ingest_with_gc_docs_per_s": round(with_gc, 1),
        "ratio": round(with_gc / alone, 2),
        "collector": collected,
        "target": 0.7,
    }


def part_c(backend: str, packages: int) -> dict[str, Any]:
    from retention_helpers import make_manifest

    with fresh_store(backend, "gc-c") as fs, evstore.open(fs.url) as store:
        with store.retention.rooting("published"):
            for start in range(0, packages, 500):
                docs, supplied = [], []
                for i in range(start, min(packages, start + 500)):
                    content = f"rendered evidence {i}\n".encode() * 8
                    docs.append(evstore.Document(make_manifest(content, f"p{i}")))
                    supplied.append(content)
                store.ingest(docs, supplied=supplied)
        t0 = time.perf_counter()
        faults = list(store.check(record=False))
        check_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        run = store.retention.audit(["published"])
        audit_s = time.perf_counter() - t0
    return {
        "packages": packages,
        "check_s": round(check_s, 2),
        "check_faults": len(faults),
        "audit_s": round(audit_s, 2),
        "audit_verdict": run.verdict,
        "ratio": round(check_s / audit_s, 2),
        "target": 0.8,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    ap.add_argument("--objects", type=int, default=1_000_000)
    ap.add_argument("--packages", type=int, default=10_000)
    ap.add_argument("--seconds", type=float, default=20.0, help="Part b: seconds per phase.")
    ap.add_argument("--scale", type=int, default=1, help="Divide every count by this.")
    ap.add_argument("--only", default="abc", help="Parts to run (a, b, c).")
    args = ap.parse_args()
    objects, packages = args.objects // args.scale, args.packages // args.scale
    result: dict[str, Any] = {
        "benchmark": "gc",
        "args": vars(args),
        "machine": machine_info(args.backend),
    }
    if "a" in args.only:
        result["a"] = part_a(args.backend, objects)
        print("a:", json.dumps(result["a"]), flush=True)
    if "b" in args.only:
        result["b"] = part_b(args.backend, objects // 10, args.seconds)
        print("b:", json.dumps(result["b"]), flush=True)
    if "c" in args.only:
        result["c"] = part_c(args.backend, packages)
        print("c:", json.dumps(result["c"]), flush=True)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = RESULTS_DIR / f"gc-{args.backend}-s{args.scale}-{stamp}.json"
    path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(f"result: {path}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
