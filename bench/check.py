"""Check benchmark (issue 10, benchmark b): ``evstore check`` against a raw read-and-hash.

Usage::

    python bench/check.py --backend sqlite|postgresql [--n 100000] [--repeat 3]

One store of N random 1 KiB blobs (``store.put_many``). Each variant runs as a whole process
(``subprocess``), timed by wall clock and by the child's CPU time (user + system, from
``wait4``); the machine may be shared, so CPU-time ratios are reported beside wall ratios.
PostgreSQL's own server CPU is in neither figure (it is the same work for both sides).

    raw       a python3 process: the raw driver (sqlite3 / psycopg) reads every row
              (``SELECT address, sha256, size, data FROM blobs``) and hashes the bytes with
              BLAKE3 and SHA-256, comparing them with the row: the ceiling.
    check     ``evstore --store URL check`` (records each verified object, as by default)
    norecord  ``evstore check --no-record``
    jobs2     ``evstore check --no-record --jobs 2``
    since     ``evstore check --since 1h`` right after a recording run (nothing is due)
    b3sum     ``b3sum`` over the same bytes as N files (``find -print0 | xargs -0``), and
    sha256sum the same with coreutils, for reference (report only).

Ratio = raw seconds / our seconds (1.0 = as fast as the ceiling). Target (issue 10) >= 0.6.
The script measures and prints; it never asserts. A JSON result goes to bench/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS_DIR, fresh_store, machine_info, median

EVSTORE = [sys.executable, "-c", "from evstore.cli.main import main; main()"]

_RAW = r"""
import hashlib, sys, time
import blake3
url = sys.argv[1]
n = bad = 0
if url.startswith("sqlite"):
    import sqlite3
    conn = sqlite3.connect(url.split("///", 1)[1])
    cur = conn.execute("SELECT address, sha256, size, data FROM blobs")
else:
    import psycopg
    conn = psycopg.connect(url)
    cur = conn.cursor(name="scan")
    cur.itersize = 2000
    cur.execute("SELECT address, sha256, size, data FROM blobs")
for address, sha, size, data in cur:
    data = bytes(data)
    n += 1
    if (len(data) != size or blake3.blake3(data).hexdigest() != address
            or hashlib.sha256(data).hexdigest() != sha):
        bad += 1
print(n, bad)
"""


def _timed(cmd: list[str], **kw: Any) -> tuple[float, float, str]:
    """(wall seconds, child CPU seconds from wait4, stdout) of one whole process."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, **kw)
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        text = out.read().decode()
        if proc.returncode:
            raise RuntimeError(f"{cmd[-3:]} exited {proc.returncode}: {err.read().decode()[-800:]}")
    return wall, usage.ru_utime + usage.ru_stime, text


def _fill(url: str, n: int) -> list[bytes]:
    import evstore

    datas = [os.urandom(1024) for _ in range(n)]
    with evstore.open(url) as store:
        for i in range(0, n, 10_000):
            store.put_many(datas[i : i + 10_000])
    return datas


def _files(datas: list[bytes]) -> Path:
    root = Path(tempfile.mkdtemp(prefix="evbench-check-files-"))
    for i, d in enumerate(datas):
        sub = root / f"{i // 1000:03d}"
        if i % 1000 == 0:
            sub.mkdir()
        (sub / f"{i:06d}.bin").write_bytes(d)
    return root


def main() -> None:
    """Measure and print one backend's figures; write a JSON result."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=["sqlite", "postgresql"], required=True)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    results: dict[str, Any] = {"n": args.n, "blob_size": 1024, "backend": args.backend}
    with fresh_store(args.backend, "check") as fs:
        datas = _fill(fs.url, args.n)
        raw_url = fs.url if fs.sqlite_path is None else f"sqlite:///{fs.sqlite_path}"
        variants: dict[str, list[str]] = {
            "raw": [sys.executable, "-c", _RAW, raw_url],
            "check": [*EVSTORE, "--store", fs.url, "check"],
            "norecord": [*EVSTORE, "--store", fs.url, "check", "--no-record"],
            "jobs2": [*EVSTORE, "--store", fs.url, "check", "--no-record", "--jobs", "2"],
            "since": [*EVSTORE, "--store", fs.url, "check", "--since", "1h"],
        }
        root = _files(datas)
        try:
            files = f"cd {root} && find . -type f -print0 | xargs -0 "
            if shutil.which("b3sum"):
                variants["b3sum"] = ["sh", "-c", files + "b3sum > /dev/null"]
                variants["b3sum_1thread"] = ["sh", "-c", files + "b3sum --num-threads 1 >/dev/null"]
            variants["sha256sum"] = ["sh", "-c", files + "sha256sum > /dev/null"]
            runs: dict[str, dict[str, list[float]]] = {k: {"wall": [], "cpu": []} for k in variants}
            for _ in range(args.repeat):  # interleaved, so load changes hit every variant
                for name, cmd in variants.items():
                    wall, cpu, out = _timed(cmd)
                    if name == "raw":
                        assert out.split() == [str(args.n), "0"], out
                    runs[name]["wall"].append(wall)
                    runs[name]["cpu"].append(cpu)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    raw_w, raw_c = median(runs["raw"]["wall"]), median(runs["raw"]["cpu"])
    for name, r in runs.items():
        w, c = median(r["wall"]), median(r["cpu"])
        results[name] = {
            "wall_s": round(w, 3),
            "cpu_s": round(c, 3),
            "ratio_wall": round(raw_w / w, 3),
            "ratio_cpu": round(raw_c / c, 3) if c else None,
            "runs_wall": [round(x, 3) for x in r["wall"]],
        }
        print(
            f"{args.backend:10} {name:14} wall {w:7.2f} s  cpu {c:7.2f} s  "
            f"raw/ours wall {raw_w / w:5.2f}  cpu {raw_c / c if c else float('nan'):5.2f}"
        )
    results["machine"] = machine_info(args.backend)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = RESULTS_DIR / f"check-{args.backend}-{stamp}.json"
    path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(json.dumps({"written": str(path)}))


if __name__ == "__main__":
    main()
