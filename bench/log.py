"""Tamper-evident log benchmark (issue 13): ingest cost of the log, proof latency at scale.

Usage::

    python bench/log.py --backend sqlite|postgresql [--base REV] [--docs N] [--entries N]
                        [--lookups N] [--queue N] [--connections N] [--wrk-seconds S]
                        [--rate R] [--duration S] [--checkpoint-every S] [--only ipcrtl]

Parts (docs/benchmarks.md, "Tamper-evident log", has the method and the recorded numbers):

    i  Ingest throughput of ~5 KB JSON artifacts (bench/core.py's documents), one
       ``store.ingest`` call (one transaction, one acknowledged ingest) per document, with
       one writer and with 8 writer processes: this tree with the log (each transaction
       queues its entries; an integrator process runs beside the writers, and the final
       round integrating the rest is timed in) against this tree with the log disabled
       (the commit hook patched out: no entry is made or queued), in the same run (issue
       26; target >= 0.9), or with
       ``--base REV`` against that commit's tree, exported with ``git archive`` and
       imported from a temporary directory. Ratio = base seconds / ours (throughput ratio).
    p  Inclusion-proof latency at ``--entries`` entries (default 1,000,000; the log is
       filled through the library's bulk append, 20,000 entries per transaction): p50 and
       p99 of ``store.log.prove(index=...)`` (checkpoint, entry and proof from one read
       snapshot, tlog-proof text) for random indices, against one primary-key lookup of an
       entry (``SELECT entry FROM log_entries WHERE idx = ?`` in a read transaction through
       the same pool). Target: p50 and p99 <= 20x the lookup's.
    c  Consistency proofs between random sizes at the same log: p50 and p99 of
       ``store.log.prove_consistency(old, new)`` with ``new`` a checkpointed size.
    r  Entries integrated per second (``--queue`` one-entry batches), bench/log_parts.py.
    t  Tile serving of an ``--entries`` log, ``evstore serve`` against nginx serving the
       exported files (wrk, ``--connections``, ``--wrk-seconds``; target >= 0.5).
    l  Acceptance to an including signed checkpoint under ``evstore serve --log-key``
       (``--rate`` puts/s for ``--duration`` s, ``--checkpoint-every``): p50, p99.

The script measures and prints; it never asserts a target. A JSON result goes to
bench/results/ (gitignored).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import log_parts
from _common import (
    PG_ADMIN_URL,
    RESULTS_DIR,
    fresh_store,
    machine_info,
    percentile,
)
from _common import median as median_of

ROOT = Path(__file__).resolve().parent.parent

#: The child that ingests one ~5 KB document per call; prints its timing as JSON.
_INGESTER = r"""
import json, random, sys, time
tree, url, first, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if tree:
    sys.path.insert(0, tree)
sys.path.insert(0, sys.argv[5])
import os
import evstore
if os.environ.get("EVBENCH_LOG_OFF"):  # the log disabled: no entry made, none queued
    import evstore.objects.log_entries as _le
    _le._Pending.__call__ = lambda self, conn: None
    _le._Pending.spill = lambda self, conn: None
from core import _make_doc
rng = random.Random(first)
docs = [json.dumps(_make_doc(rng, first + i), indent=1).encode() for i in range(count)]
with evstore.open(url, create=True) as s:
    start, cpu = time.time(), time.process_time()
    for d in docs:
        s.ingest(d)
    end, cpu = time.time(), time.process_time() - cpu
out = {"start": start, "end": end, "cpu": cpu, "n": count, "module": evstore.__file__}
print(json.dumps(out))
"""


def _base_tree(rev: str, into: Path) -> str:
    """Export ``store/`` and ``migrations/`` of ``rev`` as an importable ``evstore`` package."""
    sha = subprocess.run(
        ["git", "rev-parse", rev], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    archive = subprocess.run(
        ["git", "archive", sha, "store", "migrations"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    raw = into / "raw"
    raw.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(raw)], input=archive, check=True)
    (raw / "store").rename(into / "evstore")
    (raw / "migrations").rename(into / "evstore" / "migrations")
    return sha


def _empty_url(backend: str, tag: str, tmp: Path) -> tuple[str, Any]:
    """A URL where no store exists yet (the child creates it with its own code)."""
    if backend == "sqlite":
        return f"sqlite:///{tmp / (tag + '.db')}", None
    import psycopg

    name = f"evbench_log_{os.getpid()}_{tag}"
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return f"{base}/{name}", drop


#: The integrator beside the writers (issue 26): a round every 0.5 s until stdin speaks.
_INTEGRATOR = r"""
import select, sys
import evstore
with evstore.open(sys.argv[1]) as s:
    while not select.select([sys.stdin], [], [], 0.5)[0]:
        s.log.integrate()
"""


def _integrator(url: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _INTEGRATOR, url], stdin=subprocess.PIPE, text=True, env=env
    )


def _ingest_run(
    tree: str, url: str, docs: int, writers: int, log_off: bool = False
) -> dict[str, Any]:
    """Ingest ``docs`` documents with ``writers`` processes; wall seconds and docs/s.

    With the log on (this tree), an integrator process runs beside the writers and the
    final round integrating what is left is timed into the wall time; ``log_off`` runs
    the same code with the log's queue insert disabled.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.pop("EVBENCH_LOG_OFF", None)
    if log_off:
        env["EVBENCH_LOG_OFF"] = "1"
    bench = str(Path(__file__).resolve().parent)
    init = subprocess.run(
        [sys.executable, "-c", _INGESTER, tree, url, "0", "0", bench],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    module = json.loads(init.stdout)["module"]
    per = docs // writers
    integ = None if (log_off or tree) else _integrator(url, env)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _INGESTER, tree, url, str(1_000_000 * (w + 1)), str(per), bench],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for w in range(writers)
    ]
    outs = []
    for p in procs:
        out, err = p.communicate()
        if p.returncode:
            raise RuntimeError(err)
        outs.append(json.loads(out))
    wall = max(o["end"] for o in outs) - min(o["start"] for o in outs)
    if integ is not None:
        assert integ.stdin is not None
        integ.stdin.write("stop\n")
        integ.stdin.close()
        integ.wait(timeout=120)
        import evstore

        with evstore.open(url) as s:
            t = time.perf_counter()
            s.log.integrate()
            wall += time.perf_counter() - t
            if s.log.status()["size"] == 0:
                raise RuntimeError("nothing was logged")
    return {
        "docs": per * writers,
        "seconds": wall,
        "docs_per_s": per * writers / wall,
        "cpu_s": sum(o["cpu"] for o in outs),
        "module": module,
    }


def part_i(backend: str, base: str | None, docs: int, rounds: int) -> dict[str, Any]:
    """Ingest with the log against ``base``'s tree, or (``base`` None) this tree's log off."""
    tmp = Path(tempfile.mkdtemp(prefix="evbench-log-"))
    try:
        if base is None:
            out: dict[str, Any] = {"base": "this tree, log disabled"}
            base_tree = ""
        else:
            out = {"base": base, "base_commit": _base_tree(base, tmp / "base")}
            base_tree = str(tmp / "base")
        for writers in (1, 8):
            runs: dict[str, list[dict[str, Any]]] = {"base": [], "log": []}
            for r in range(rounds):  # alternate, so a change in the machine's load hits both
                for variant, tree in (("base", base_tree), ("log", "")):
                    url, drop = _empty_url(backend, f"{variant}{writers}r{r}", tmp)
                    off = variant == "base" and base is None
                    try:
                        runs[variant].append(_ingest_run(tree, url, docs, writers, off))
                    finally:
                        if drop:
                            drop()
            for variant, got in runs.items():  # the median run of each variant
                mid = sorted(got, key=lambda x: x["seconds"])[len(got) // 2]
                out[f"{variant}_{writers}"] = {**mid, "all_seconds": [x["seconds"] for x in got]}
            ratio = out[f"base_{writers}"]["seconds"] / out[f"log_{writers}"]["seconds"]
            out[f"ratio_best_{writers}"] = min(x["seconds"] for x in runs["base"]) / min(
                x["seconds"] for x in runs["log"]
            )
            out[f"ratio_{writers}"] = ratio
            out[f"ratio_cpu_{writers}"] = median_of([x["cpu_s"] for x in runs["base"]]) / median_of(
                [x["cpu_s"] for x in runs["log"]]
            )
            print(
                f"ingest, {writers} writer(s): base {out[f'base_{writers}']['docs_per_s']:.0f}"
                f" docs/s, log {out[f'log_{writers}']['docs_per_s']:.0f} docs/s,"
                f" ratio {ratio:.3f} (median runs), {out[f'ratio_best_{writers}']:.3f} (best runs),"
                f" client CPU ratio {out[f'ratio_cpu_{writers}']:.3f}",
                flush=True,
            )
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _fill(store: Any, entries: int) -> float:
    """Append ``entries`` synthetic entries through the library's bulk append; seconds."""
    from evstore.objects.log_entries import append_entries, entry_bytes

    start = time.perf_counter()
    done = 0
    while done < entries:
        n = min(20_000, entries - done)
        batch = []
        for i in range(done, done + n):
            address = f"{i:064x}"
            data = entry_bytes("put", address, address, i % 9000, "2026-12-02T00:00:00.000000Z")
            batch.append((address, data))
        store.db.run_transaction(lambda conn, b=batch: append_entries(conn, b))
        done += n
        if done % 200_000 == 0:
            print(f"  filled {done} entries", flush=True)
    return time.perf_counter() - start


def _timed(fn: Any, samples: int) -> list[float]:
    out = []
    for _ in range(samples):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def part_pc(backend: str, entries: int, lookups: int, only: str) -> dict[str, Any]:
    import sqlalchemy as sa

    import evstore
    from evstore.db.tables import log_entries

    out: dict[str, Any] = {"entries": entries, "lookups": lookups}
    with fresh_store(backend, "logproof") as fs, evstore.open(fs.url) as store:
        out["fill_s"] = _fill(store, entries)
        key = Path(tempfile.mkdtemp(prefix="evbench-key-")) / "k"
        store.log.init_key(key, origin="bench.example/log")
        store.log.checkpoint(key)
        rng = random.Random(2)
        idx = [rng.randrange(entries) for _ in range(lookups)]
        it = iter(idx)

        def lookup() -> None:
            with store.db.read() as conn:
                conn.execute(
                    sa.select(log_entries.c.entry).where(log_entries.c.idx == next(it))
                ).scalar_one()

        for _ in range(50):  # warm the pool and caches
            store.log.prove(index=rng.randrange(entries))
        pk = _timed(lookup, lookups)
        it2 = iter(idx)
        proofs = _timed(lambda: store.log.prove(index=next(it2)), lookups)
        out["pk_p50_ms"], out["pk_p99_ms"] = percentile(pk, 50) * 1e3, percentile(pk, 99) * 1e3
        out["prove_p50_ms"] = percentile(proofs, 50) * 1e3
        out["prove_p99_ms"] = percentile(proofs, 99) * 1e3
        out["prove_ratio_p50"] = out["prove_p50_ms"] / out["pk_p50_ms"]
        out["prove_ratio_p99"] = out["prove_p99_ms"] / out["pk_p99_ms"]
        print(
            f"inclusion proof at {entries}: p50 {out['prove_p50_ms']:.3f} ms,"
            f" p99 {out['prove_p99_ms']:.3f} ms; pk lookup p50 {out['pk_p50_ms']:.3f} ms,"
            f" p99 {out['pk_p99_ms']:.3f} ms; ratio p50 {out['prove_ratio_p50']:.1f},"
            f" p99 {out['prove_ratio_p99']:.1f}",
            flush=True,
        )
        if "c" in only:
            olds = [rng.randrange(entries) for _ in range(lookups)]
            it3 = iter(olds)
            cons = _timed(lambda: store.log.prove_consistency(next(it3)), lookups)
            out["consistency_p50_ms"] = percentile(cons, 50) * 1e3
            out["consistency_p99_ms"] = percentile(cons, 99) * 1e3
            print(
                f"consistency proof (random old size -> {entries}): p50"
                f" {out['consistency_p50_ms']:.3f} ms, p99 {out['consistency_p99_ms']:.3f} ms",
                flush=True,
            )
        shutil.rmtree(key.parent, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--backend", choices=["sqlite", "postgresql"], required=True)
    ap.add_argument(
        "--base",
        default=None,
        help="compare with this commit's tree (default: this tree with the log disabled)",
    )
    ap.add_argument("--docs", type=int, default=2000, help="documents per ingest run")
    ap.add_argument("--rounds", type=int, default=3, help="alternating runs per variant")
    ap.add_argument("--entries", type=int, default=1_000_000, help="log size for the proof parts")
    ap.add_argument("--lookups", type=int, default=2000, help="samples per latency measurement")
    ap.add_argument("--queue", type=int, default=100_000, help="queued entries (part r)")
    ap.add_argument("--connections", type=int, default=8, help="wrk connections (part t)")
    ap.add_argument("--wrk-seconds", type=int, default=10, help="seconds a wrk run (part t)")
    ap.add_argument("--tile-rounds", type=int, default=3, help="alternating runs (part t)")
    ap.add_argument("--rate", type=float, default=20.0, help="puts a second (part l)")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of puts (part l)")
    ap.add_argument(
        "--checkpoint-every", type=float, default=5.0, help="serve's signing period (part l)"
    )
    ap.add_argument("--only", default="ipc", help="parts to run (i, p, c, r, t, l)")
    args = ap.parse_args()
    base = args.base
    result: dict[str, Any] = {"machine": machine_info(args.backend), "args": vars(args)}
    if "i" in args.only:
        result["ingest"] = part_i(args.backend, base, args.docs, args.rounds)
    if "p" in args.only or "c" in args.only:
        result["proofs"] = part_pc(args.backend, args.entries, args.lookups, args.only)
    if "r" in args.only:
        result["integration"] = log_parts.part_r(args.backend, args.queue)
    if "t" in args.only:
        result["tiles"] = log_parts.part_t(
            args.backend,
            args.entries,
            _fill,
            args.wrk_seconds,
            args.connections,
            args.tile_rounds,
        )
    if "l" in args.only:
        result["latency"] = log_parts.part_l(
            args.backend, args.duration, args.rate, args.checkpoint_every
        )
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = RESULTS_DIR / f"log-{args.backend}-{stamp}.json"
    path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(f"result: {path}")


if __name__ == "__main__":
    main()
