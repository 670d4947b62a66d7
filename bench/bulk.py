"""Bulk put benchmark (issue 10 a): one ``evstore put`` process against git, same files.

Usage::

    python bench/bulk.py [--files 10000] [--size 1024] [--repeat 3]

Measures whole processes (start-up included) on the same machine in one run, each on a fresh
target, median of ``--repeat`` runs:

    ours   ``evstore --store sqlite:///S put DIR`` (a directory argument) and
           ``evstore put --stdin-paths -z`` (the same paths on stdin), into a SQLite store
           made by ``evstore init`` beforehand (not timed).
    git    ``git hash-object -w --stdin-paths`` of the same paths into a fresh
           ``git init --bare`` repository (not timed), loose objects, zlib-compressed.

Ratio = git seconds / our seconds (>= 1.0: at least as fast as git; target >= 1.0).
The script measures and prints; it never asserts a target. A JSON result goes to
bench/results/bulk-UTCSTAMP.json (gitignored).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS_DIR, machine_info

EVSTORE = str(Path(sys.executable).with_name("evstore"))


def _make_files(root: Path, n: int, size: int) -> list[str]:
    paths = []
    for i in range(n):
        d = root / f"{i // 1000:03d}"
        d.mkdir(exist_ok=True)
        p = d / f"f{i:06d}.bin"
        p.write_bytes(os.urandom(size))
        paths.append(str(p))
    return paths


def _timed(cmd: list[str], stdin: bytes | None = None, env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, input=stdin, capture_output=True, env=env, check=False)
    elapsed = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed ({p.returncode}): {p.stderr.decode()[-500:]}")
    return elapsed


def _ours(work: Path, root: Path, stdin: bytes | None, tag: str) -> float:
    db = work / f"{tag}.db"
    db.unlink(missing_ok=True)
    url = f"sqlite:///{db}"
    subprocess.run([EVSTORE, "--store", url, "init"], check=True, capture_output=True)
    if stdin is None:
        return _timed([EVSTORE, "--store", url, "put", str(root)])
    return _timed([EVSTORE, "--store", url, "put", "--stdin-paths", "-z"], stdin)


def _git(work: Path, listing: bytes) -> float:
    repo = work / "repo.git"
    shutil.rmtree(repo, ignore_errors=True)
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    env = dict(os.environ, GIT_DIR=str(repo))
    return _timed(["git", "hash-object", "-w", "--stdin-paths"], listing, env)


def main() -> None:
    """Run the benchmark and print one line per variant, then the ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--size", type=int, default=1024, help="bytes per file")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="evbench-bulk-") as tmp:
        work = Path(tmp)
        root = work / "files"
        root.mkdir()
        paths = _make_files(root, a.files, a.size)
        nul = b"\0".join(p.encode() for p in paths)
        lines = b"\n".join(p.encode() for p in paths) + b"\n"
        runs: dict[str, list[float]] = {"ours_dir": [], "ours_stdin": [], "git": []}
        for _ in range(a.repeat):  # interleaved, so load changes hit every variant alike
            runs["git"].append(_git(work, lines))
            runs["ours_dir"].append(_ours(work, root, None, "dir"))
            runs["ours_stdin"].append(_ours(work, root, nul, "stdin"))
    med = {k: statistics.median(v) for k, v in runs.items()}
    result = {
        "benchmark": "bulk-put",
        "files": a.files,
        "size": a.size,
        "repeat": a.repeat,
        "runs_s": runs,
        "median_s": med,
        "ratio_git_over_ours_dir": med["git"] / med["ours_dir"],
        "ratio_git_over_ours_stdin": med["git"] / med["ours_stdin"],
        "machine": machine_info("sqlite"),
    }
    for k, v in med.items():
        print(f"{k:11s} {v:7.3f} s  ({a.files / v:,.0f} files/s)")
    print(f"ratio git/ours (directory)   {result['ratio_git_over_ours_dir']:.2f}  target >= 1.0")
    print(f"ratio git/ours (stdin paths) {result['ratio_git_over_ours_stdin']:.2f}  target >= 1.0")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = RESULTS_DIR / f"bulk-{stamp}.json"
    out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(f"result: {out}")


if __name__ == "__main__":
    main()
