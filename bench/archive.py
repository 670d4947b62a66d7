"""Archive benchmark (issue 14): export against ``tar``, import against ``sha256sum -c`` + insert.

Usage::

    python bench/archive.py [--backend sqlite|postgresql] [--objects 10000] [--size 10240]
                            [--repeat 3]

Store A holds ``--objects`` random blobs of ``--size`` bytes (10k x 10 KiB: 100 MiB) and one
``json`` document naming them all (its ``mentions`` edges make them its closure). Each
variant runs ``--repeat`` times, interleaved, median taken:

    export   ``evstore.export_archive(A, [root], out.tar)``: the closure walked, every object
             streamed from the database and verified, written as an OCI layout tar.
    tar      ``tar -cf x.tar -C layout .`` of the same files (the extracted layout, warm in
             the page cache). Ratio tar s / export s, target >= 0.5. CPU seconds of
             both are reported beside the wall times (export: this process, its hashing
             worker included; tar: the child's user + system).
    import   ``evstore.import_archive(B, out.tar)`` into a fresh store B: every offline check
             (SHA-256 and BLAKE3 of every byte, the closure, the document's rules), then the
             blobs and the document stored in one transaction.
    ceiling  ``sha256sum -c`` of the extracted files, plus a raw bulk insert of the same
             bytes into a fresh store's blobs table (SQLite: ``executemany`` in one
             transaction; PostgreSQL: binary ``COPY``), addresses precomputed, with the
             lease, root and log rows the store writes for each (bench/_bookkeeping.py).
             Ratio ceiling s / import s, target >= 0.4.

It measures and prints; it never asserts. A JSON result goes to bench/results/ (gitignored).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bookkeeping import write_bookkeeping
from _common import RESULTS_DIR, fresh_store, machine_info, raw_pg, raw_sqlite

import evstore


def _fill(url: str, n: int, size: int) -> str:
    """Store ``n`` random blobs and one json document naming them; returns its address."""
    with evstore.open(url) as store:
        puts = store.put_many(os.urandom(size) for _ in range(n))
        doc = {"objects": [p.digest.address for p in puts]}
        (result,) = store.ingest(doc).results
        return result.digest.address


def _raw_insert(fs, files: list[Path]) -> float:
    """Insert the files' bytes as blob rows (address = the BLAKE3 annotation, precomputed)."""
    t0 = time.perf_counter()
    rows = []
    for f in files:
        data = f.read_bytes()
        rows.append((f.name, len(data), data))
    # Every stored blob also gets the store's lease, root and log rows (bench/_bookkeeping.py).
    writes = [("put", "b" + name[1:], name, size, None) for name, size, _ in rows]
    if fs.backend == "sqlite":
        conn = raw_sqlite(fs.sqlite_path)
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO blobs (address, sha256, size, data) VALUES (?, ?, ?, ?)",
            [("b" + r[0][1:], r[0], r[1], r[2]) for r in rows],
        )
        write_bookkeeping(conn, "sqlite", writes)
        conn.execute("COMMIT")
        conn.close()
    else:
        with raw_pg(fs.pg_conninfo) as conn, conn.cursor() as cur:
            with cur.copy("COPY blobs (address, sha256, size, data) FROM STDIN") as copy:
                for name, size, data in rows:
                    copy.write_row(("b" + name[1:], name, size, data))
            write_bookkeeping(conn, "postgresql", writes)
            conn.commit()
    return time.perf_counter() - t0


def _children_cpu() -> float:
    """User + system CPU seconds of the finished child processes."""
    t = os.times()
    return t.children_user + t.children_system


def main() -> None:
    """Run the benchmark and print the medians and the ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    ap.add_argument("--objects", type=int, default=10_000)
    ap.add_argument("--size", type=int, default=10 * 1024, help="bytes per object")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    runs: dict[str, list[float]] = {"export": [], "tar": [], "import": [], "ceiling": []}
    # CPU seconds of export (this process, its hashing worker included) and of tar (the child).
    cpu: dict[str, list[float]] = {"export": [], "tar": []}
    with fresh_store(a.backend, "archive-a") as src, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        root = _fill(src.url, a.objects, a.size)
        for i in range(a.repeat):
            out = work / f"out{i}.tar"
            with evstore.open(src.url) as store:
                c0 = time.process_time()
                t0 = time.perf_counter()
                evstore.export_archive(store, [root], out)
                runs["export"].append(time.perf_counter() - t0)
                cpu["export"].append(time.process_time() - c0)
            layout = work / f"layout{i}"
            layout.mkdir()
            with tarfile.open(out) as tf:
                tf.extractall(layout, filter="data")
            c0 = _children_cpu()
            t0 = time.perf_counter()
            subprocess.run(
                # a new file each run, as the export writes (overwriting the last run's
                # 100 MiB made tar 1.5-2.5x slower: a ceiling must not be slowed)
                ["tar", "-cf", str(work / f"plain{i}.tar"), "-C", str(layout), "."],
                check=True,
            )
            runs["tar"].append(time.perf_counter() - t0)
            cpu["tar"].append(_children_cpu() - c0)
            with fresh_store(a.backend, "archive-b") as dst, evstore.open(dst.url) as store:
                t0 = time.perf_counter()
                evstore.import_archive(store, out)
                runs["import"].append(time.perf_counter() - t0)
            blobs = sorted((layout / "blobs" / "sha256").iterdir())
            listing = "".join(f"{p.name}  {p.name}\n" for p in blobs).encode()
            t0 = time.perf_counter()
            subprocess.run(
                ["sha256sum", "--check", "--quiet", "--strict"],
                input=listing,
                cwd=layout / "blobs" / "sha256",
                check=True,
            )
            check_s = time.perf_counter() - t0
            with fresh_store(a.backend, "archive-raw") as raw:
                runs["ceiling"].append(check_s + _raw_insert(raw, blobs))
            out.unlink()
    med = {k: statistics.median(v) for k, v in runs.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    result = {
        "benchmark": "archive",
        "backend": a.backend,
        "objects": a.objects,
        "size": a.size,
        "repeat": a.repeat,
        "runs_s": runs,
        "median_s": med,
        "ratio_tar_over_export": med["tar"] / med["export"],
        "cpu_s": cpu,
        "median_cpu_s": med_cpu,
        "ratio_tar_over_export_cpu": med_cpu["tar"] / med_cpu["export"],
        "ratio_ceiling_over_import": med["ceiling"] / med["import"],
        "machine": machine_info(a.backend),
    }
    mib = a.objects * a.size / (1 << 20)
    for k, v in med.items():
        print(f"{k:8s} {v:7.3f} s  ({mib / v:,.0f} MiB/s)")
    print(f"ratio tar/export          {result['ratio_tar_over_export']:.2f}  target >= 0.5")
    print(
        f"CPU: export {med_cpu['export']:.3f} s, tar {med_cpu['tar']:.3f} s,"
        f" ratio {result['ratio_tar_over_export_cpu']:.2f}"
    )
    print(
        f"ratio (sha256sum+insert)/import {result['ratio_ceiling_over_import']:.2f}  target >= 0.4"
    )
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = RESULTS_DIR / f"archive-{a.backend}-{stamp}.json"
    path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(f"result: {path}")


if __name__ == "__main__":
    main()
