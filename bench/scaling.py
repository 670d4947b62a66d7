"""Scaling benchmark (issue 16): the per-object cost of put, ingest and get as the store grows.

Usage::

    python bench/scaling.py --backend sqlite                       # 10k and 1M objects
    python bench/scaling.py --backend postgresql                   # 10k and 100k objects
    python bench/scaling.py --backend sqlite --sizes 10000,100000  # a quicker run

For each size N: a fresh store is filled with N distinct random 1 KiB blobs (``put_many`` in
batches of 50,000; not timed), then, on that store, each operation is timed (wall and CPU,
PostgreSQL's server backend included, ``_common.Meter``), ``--repeats`` times, median:

put     ``store.put_many`` of 2,000 new distinct 1 KiB blobs (one call, one transaction)
ingest  ``store.ingest`` of 1,000 new small JSON documents (kind ``json``, one call)
get     2,000 ``store.get("blake3:...")`` of seeded random stored addresses (after 200
        warm-up gets)

The result is the cost per object at each size (microseconds) and the ratio of the largest
size's cost to the smallest's. Target (issue 16): <= 1.5 at 1M vs 10k on SQLite, 100k vs 10k
on PostgreSQL. The script measures and prints; it never asserts. A JSON result goes to
bench/results/ (gitignored).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    RESULTS_DIR,
    Meter,
    fresh_store,
    machine_info,
    median,
    store_backend_pid,
)

import evstore  # noqa: E402

__all__ = ["main"]

DEFAULT_SIZES = {"sqlite": [10_000, 1_000_000], "postgresql": [10_000, 100_000]}
FILL_BATCH = 50_000
PUT_N, INGEST_N, GET_N, WARM = 2_000, 1_000, 2_000, 200
TARGET = 1.5


def _blobs(rng: random.Random, n: int) -> list[bytes]:
    return [rng.randbytes(1024) for _ in range(n)]


def _docs(rng: random.Random, n: int) -> list[evstore.Document]:
    out = []
    for i in range(n):
        doc = {
            "id": f"doc-{rng.getrandbits(64):016x}-{i}",
            "title": "scaling benchmark",
            "values": [rng.random() for _ in range(4)],
            "tags": ["a", "b", str(i)],
        }
        out.append(evstore.Document(json.dumps(doc).encode(), kind="json"))
    return out


def measure_size(backend: str, n: int, repeats: int, seed: int) -> dict[str, Any]:
    """Fill a fresh store with ``n`` blobs and time put, ingest and get on it."""
    rng = random.Random(seed)
    with fresh_store(backend, f"scale{n}") as fs:
        store = evstore.open(fs.url)
        try:
            addresses: list[str] = []
            t0 = time.perf_counter()
            for start in range(0, n, FILL_BATCH):
                batch = _blobs(rng, min(FILL_BATCH, n - start))
                addresses += [r.digest.blake3 for r in store.put_many(batch)]
            fill_s = time.perf_counter() - t0
            pid = store_backend_pid(store)
            out: dict[str, Any] = {"n": n, "fill_s": fill_s}
            for op in ("put", "ingest", "get"):
                walls, cpus = [], []
                for _ in range(repeats):
                    if op == "put":
                        items: Any = _blobs(rng, PUT_N)
                        with Meter(pid) as m:
                            store.put_many(items)
                        count = PUT_N
                    elif op == "ingest":
                        items = _docs(rng, INGEST_N)
                        with Meter(pid) as m:
                            store.ingest(items)
                        count = INGEST_N
                    else:
                        refs = ["blake3:" + rng.choice(addresses) for _ in range(GET_N + WARM)]
                        for ref in refs[:WARM]:
                            store.get(ref)
                        with Meter(pid) as m:
                            for ref in refs[WARM:]:
                                store.get(ref)
                        count = GET_N
                    walls.append(m.wall / count * 1e6)
                    cpus.append(m.cpu / count * 1e6)
                out[f"{op}_us"] = walls
                out[f"{op}_cpu_us"] = cpus
                out[f"{op}_us_median"] = median(walls)
                out[f"{op}_cpu_us_median"] = median(cpus)
            return out
        finally:
            store.close()


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print (and save) the result."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=["sqlite", "postgresql"], required=True)
    ap.add_argument("--sizes", default="", help="comma-separated store sizes (objects)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",")] if args.sizes else DEFAULT_SIZES[args.backend]
    load_before = os.getloadavg()
    runs = [measure_size(args.backend, n, args.repeats, seed=1600 + i) for i, n in enumerate(sizes)]
    small, large = runs[0], runs[-1]
    result: dict[str, Any] = {
        "benchmark": "scaling",
        "backend": args.backend,
        "sizes": sizes,
        "repeats": args.repeats,
        "target": TARGET,
        "machine": machine_info(args.backend),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "runs": runs,
    }
    lines = [f"{args.backend}: per-object cost (us, median of {args.repeats}; CPU in brackets)"]
    lines.append("size        " + "".join(f"{op:>22s}" for op in ("put", "ingest", "get")))
    for r in runs:
        cells = "".join(
            f"{r[f'{op}_us_median']:>12.1f} [{r[f'{op}_cpu_us_median']:>7.1f}]"
            for op in ("put", "ingest", "get")
        )
        lines.append(f"{r['n']:>10,d}  {cells}")
    for op in ("put", "ingest", "get"):
        wall = large[f"{op}_us_median"] / small[f"{op}_us_median"]
        cpu = large[f"{op}_cpu_us_median"] / small[f"{op}_cpu_us_median"]
        result[f"{op}_ratio"], result[f"{op}_cpu_ratio"] = wall, cpu
        lines.append(
            f"{op:6s} {large['n']:,d} vs {small['n']:,d}: {wall:.2f}x (CPU {cpu:.2f}x)"
            f"{'' if cpu <= TARGET else '  (above target)'}"
        )
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = RESULTS_DIR / f"scaling-{args.backend}-{stamp}.json"
    path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print("\n".join(lines))
    print(f"result: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
