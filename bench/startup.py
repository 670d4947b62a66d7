"""Benchmark (c) of issue 10: start-up of an everyday command as a whole process.

    python bench/startup.py              # 30 alternating runs of each side
    python bench/startup.py --runs 10

Ours: ``evstore get REF`` of a 1 KiB blob (the console script of this interpreter's
environment, stdout to /dev/null, a SQLite store in a temporary directory). Ceiling:
``python3 -c 'import sqlalchemy, blake3'`` with the same interpreter: the two libraries every
command needs, and nothing else. Also reported, for scale: ``python3 -c pass`` and
``evstore --version``. Target: ours / ceiling <= 1.5 (median wall time, runs interleaved so
machine noise hits both sides alike). Prints one JSON object; writes it to bench/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import RESULTS_DIR, median

EXE = str(Path(sys.executable).parent / "evstore")


def _wall(argv: list[str], cwd: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="evbench-startup-") as tmp:
        blob = Path(tmp) / "blob.bin"
        blob.write_bytes(os.urandom(1024))
        ref = subprocess.run(
            [EXE, "-q", "put", str(blob)], cwd=tmp, capture_output=True, check=True, text=True
        ).stdout.strip()
        sides = {
            "evstore get (1 KiB)": [EXE, "get", ref],
            "python3 -c 'import sqlalchemy, blake3'": [
                sys.executable,
                "-c",
                "import sqlalchemy, blake3",
            ],
            "python3 -c pass": [sys.executable, "-c", "pass"],
            "evstore --version": [EXE, "--version"],
        }
        for argv in sides.values():  # warm the page cache and .pyc files
            _wall(argv, tmp)
        times: dict[str, list[float]] = {k: [] for k in sides}
        for _ in range(args.runs):
            for name, argv in sides.items():
                times[name].append(_wall(argv, tmp))
    med = {k: round(median(v) * 1000, 1) for k, v in times.items()}
    ours = med["evstore get (1 KiB)"]
    ceiling = med["python3 -c 'import sqlalchemy, blake3'"]
    result = {
        "benchmark": "issue 10 (c): start-up of evstore get",
        "runs": args.runs,
        "median_ms": med,
        "ratio": round(ours / ceiling, 2),
        "target": "<= 1.5",
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }
    text = json.dumps(result, indent=2, sort_keys=True)
    print(text)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    (RESULTS_DIR / f"startup-{stamp}.json").write_text(text + "\n")


if __name__ == "__main__":
    main()
