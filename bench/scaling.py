"""Scaling benchmark (issue 16): the per-object cost of put, ingest and get as the store grows.

Usage::

    python bench/scaling.py --backend sqlite                       # 10k and 1M objects
    python bench/scaling.py --backend postgresql                   # 10k and 100k objects
    python bench/scaling.py --backend sqlite --sizes 10000,100000  # a quicker run

For each size N: a fresh store is filled with N distinct random 1 KiB blobs (``put_many`` in
batches of 50,000; not timed), and the N log entries the fill queued are integrated into the
log's tree (``store.log.integrate()``, timed separately as ``integrate_s``: in a deployment
the server's integrator drains the queue as writes come, so a store a user has holds its
entries in the tree, not 1M queued ones). Then, on that store, each operation is timed (wall
and CPU, PostgreSQL's server backend included, ``_common.Meter``), ``--repeats`` times,
median; after each repeat (ours and the ceiling) the queue is integrated again, untimed:

put     ``store.put_many`` of 2,000 new distinct 1 KiB blobs (one call, one transaction)
ingest  ``store.ingest`` of 1,000 new small JSON documents (kind ``json``, one call)
get     2,000 ``store.get("blake3:...")`` of seeded random stored addresses (after 200
        warm-up gets)

Each operation alternates with its raw ceiling on the same store (bench/core.py's, fair:
the same rows, bookkeeping included): ``put`` raw is hashing plus one ``executemany``/COPY of
the blob rows and their leases, roots and log rows; ``ingest`` raw adds ``json.loads``,
``rfc8785.dumps`` and the ``artifacts`` rows; ``get`` raw is the driver's point lookup plus
BLAKE3 of the bytes. The ceiling's own growth says how much of ours is the database's.

The result is the cost per object at each size (microseconds) and the ratio of the largest
size's cost to the smallest's, for ours and for the ceiling, and ours' growth over the
ceiling's (``<op>_growth_vs_raw``, wall and CPU). Target (issue 29): ours' growth <= 1.1x the
ceiling's, 1M vs 10k on SQLite, 100k vs 10k on PostgreSQL (issue 16's was ours <= 1.5). The
script measures and prints; it never asserts. A JSON result goes to bench/results/
(gitignored).
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

import blake3
import core as _core
from _common import (
    Meter,
    fresh_store,
    machine_info,
    median,
    raw_pg,
    raw_sqlite,
    save_result,
    store_backend_pid,
)

import evstore

__all__ = ["main"]

DEFAULT_SIZES = {"sqlite": [10_000, 1_000_000], "postgresql": [10_000, 100_000]}
FILL_BATCH = 50_000
PUT_N, INGEST_N, GET_N, WARM = 2_000, 1_000, 2_000, 200
TARGET = 1.5
#: Issue 29: ours' growth over the raw ceiling's growth (same stores, same run).
GROWTH_TARGET = 1.1


def _blobs(rng: random.Random, n: int) -> list[bytes]:
    return [rng.randbytes(1024) for _ in range(n)]


def _docs(rng: random.Random, n: int) -> list[bytes]:
    out = []
    for i in range(n):
        doc = {
            "id": f"doc-{rng.getrandbits(64):016x}-{i}",
            "title": "scaling benchmark",
            "values": [rng.random() for _ in range(4)],
            "tags": ["a", "b", str(i)],
        }
        out.append(json.dumps(doc).encode())
    return out


def _raw_get(fs: Any) -> tuple[Any, Any, int | None]:
    """``(get(address) -> bytes, close, server pid)``: the driver's point lookup plus BLAKE3
    (core (d)); the pid is PostgreSQL's backend of the connection (None on SQLite), metered
    with the ceiling as the store's is with ours.
    """
    pid = None
    if fs.backend == "sqlite":
        conn = raw_sqlite(fs.sqlite_path)
        sql, cur = "SELECT data FROM blobs WHERE address = ?", conn
    else:
        conn = raw_pg(fs.pg_conninfo, autocommit=True)
        sql, cur = "SELECT data FROM blobs WHERE address = %s", conn.cursor()
        pid = conn.info.backend_pid

    def get(address: str) -> bytes:
        # fetchall: the statement runs to its end, so no read snapshot stays open (one left
        # open would keep every checkpoint from resetting the WAL of the whole run).
        data = bytes(cur.execute(sql, (address,)).fetchall()[0][0])
        if blake3.blake3(data).hexdigest() != address:
            raise RuntimeError("raw read mismatch")
        return data

    return get, conn.close, pid


def _time(fn: Any, pid: int | None) -> tuple[float, float]:
    """``(wall s, CPU s)`` of ``fn()``; a ceiling that meters itself returns its own pair
    (bench/core.py's ``_raw_insert_blobs``, opening its connection outside the meter)."""
    with Meter(pid) as m:
        own = fn()
    return own if isinstance(own, tuple) else (m.wall, m.cpu)


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
            # The fill queued n log entries; in a deployment the integrator drains the queue
            # as writes come (serve runs it), so the store measured has them in the tree.
            t0 = time.perf_counter()
            integrated = int(store.log.integrate()["integrated"])
            integrate_s = time.perf_counter() - t0
            pid = store_backend_pid(store)
            out: dict[str, Any] = {
                "n": n,
                "fill_s": fill_s,
                "integrate_s": integrate_s,
                "integrated": integrated,
            }
            raw_get, raw_close, raw_pid = _raw_get(fs)
            try:
                for op in ("put", "ingest", "get"):
                    timed: dict[str, list[tuple[float, float]]] = {"": [], "_raw": []}
                    for rep in range(repeats):
                        ours, raw, count = _operation(op, store, fs, rng, addresses, raw_get)
                        pair = [("", ours), ("_raw", raw)]
                        for side, fn in pair if rep % 2 == 0 else pair[::-1]:
                            # PostgreSQL: each side's server backend is metered with it
                            # (a raw put/ingest meters its own connection's, _time).
                            timed[side].append(_time(fn, pid if side == "" else raw_pid))
                        store.log.integrate()  # untimed: the queue stays as small as served
                    for side, runs in timed.items():
                        walls = [w / count * 1e6 for w, _ in runs]
                        cpus = [c / count * 1e6 for _, c in runs]
                        out[f"{op}{side}_us"], out[f"{op}{side}_cpu_us"] = walls, cpus
                        out[f"{op}{side}_us_median"] = median(walls)
                        out[f"{op}{side}_cpu_us_median"] = median(cpus)
            finally:
                raw_close()
            return out
        finally:
            store.close()


def _operation(
    op: str, store: Any, fs: Any, rng: random.Random, addresses: list[str], raw_get: Any
) -> tuple[Any, Any, int]:
    """``(ours, raw ceiling, objects)`` for one repeat of ``op``: two callables, new inputs each.

    On PostgreSQL each side's CPU includes its connection's server backend: ours the store's,
    the ceiling's put and ingest their own connection's (``_raw_insert_blobs`` meters it)
    and its get the read connection's (before 2026-12-04 the raw get's was left out, so its
    CPU figure was the client's alone and could not grow with the table).
    """
    if op == "put":
        mine, theirs = _blobs(rng, PUT_N), _blobs(rng, PUT_N)
        return (
            lambda: store.put_many(mine),
            lambda: _core._raw_insert_blobs(fs, lambda: [_core._row(d) for d in theirs]),
            PUT_N,
        )
    if op == "ingest":
        docs, raw_docs = _docs(rng, INGEST_N), _docs(rng, INGEST_N)
        return (
            lambda: store.ingest([evstore.Document(d, kind="json") for d in docs]),
            lambda: _core._raw_insert_blobs(
                fs, lambda: _core._raw_json_rows(raw_docs), with_artifacts=True
            ),
            INGEST_N,
        )
    picks = [rng.choice(addresses) for _ in range(GET_N + WARM)]
    for a in picks[:WARM]:
        store.get("blake3:" + a)
        raw_get(a)
    refs = ["blake3:" + a for a in picks[WARM:]]

    def ours() -> None:
        for ref in refs:
            store.get(ref)

    def raw() -> None:
        for a in picks[WARM:]:
            raw_get(a)

    return ours, raw, GET_N


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
    for r in runs:
        lines.append(
            f"{r['n']:>10,d}  fill {r['fill_s']:.1f} s, then integrate {r['integrated']:,d}"
            f" queued entries {r['integrate_s']:.1f} s"
        )
    lines.append("raw ceiling, same stores:")
    for r in runs:
        cells = "".join(
            f"{r[f'{op}_raw_us_median']:>12.1f} [{r[f'{op}_raw_cpu_us_median']:>7.1f}]"
            for op in ("put", "ingest", "get")
        )
        lines.append(f"{r['n']:>10,d}  {cells}")
    for op in ("put", "ingest", "get"):
        for side, label in (("", "ours"), ("_raw", "raw ")):
            wall = large[f"{op}{side}_us_median"] / small[f"{op}{side}_us_median"]
            cpu = large[f"{op}{side}_cpu_us_median"] / small[f"{op}{side}_cpu_us_median"]
            result[f"{op}{side}_ratio"], result[f"{op}{side}_cpu_ratio"] = wall, cpu
            mark = "" if side or cpu <= TARGET else "  (above target)"
            lines.append(
                f"{op:6s} {label} {large['n']:,d} vs {small['n']:,d}: {wall:.2f}x"
                f" (CPU {cpu:.2f}x){mark}"
            )
    result["growth_target"] = GROWTH_TARGET
    for op in ("put", "ingest", "get"):
        wall = result[f"{op}_ratio"] / result[f"{op}_raw_ratio"]
        cpu = result[f"{op}_cpu_ratio"] / result[f"{op}_raw_cpu_ratio"]
        result[f"{op}_growth_vs_raw"], result[f"{op}_cpu_growth_vs_raw"] = wall, cpu
        mark = "" if cpu <= GROWTH_TARGET else f"  (above {GROWTH_TARGET})"
        lines.append(f"{op:6s} ours' growth / ceiling's: {wall:.2f} (CPU {cpu:.2f}){mark}")
    path = save_result(f"scaling-{args.backend}", result)
    print("\n".join(lines))
    print(f"result: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
