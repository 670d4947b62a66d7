"""Batch reads and re-puts against git, b3sum and sha256sum (issue 29).

Usage::

    python bench/batch.py [--backend sqlite|postgresql] [--n 10000] [--repeat 3] [--only chvp]

The same N files (random bytes, 1-4 KiB) are stored in an evstore store (``put_many``, not
timed) and in a bare git repository (``git hash-object -w``, not timed). Then, whole
processes, each run with its input and again with empty input (its start-up), median of
``--repeat``:

    c  ``evstore cat-batch`` of the N BLAKE3 refs   vs ``git cat-file --batch`` of the N ids
    h  ``evstore has -`` of N refs, half stored     vs ``git cat-file --batch-check``, half
    v  ``evstore verify-list`` of a b3sum and of a sha256sum manifest of the N files
                                                    vs ``b3sum --check`` / ``sha256sum -c``
    p  ``evstore put --stdin-paths`` of the N files, all stored already
                                                    vs ``git hash-object -w --stdin-paths``
    k  ``evstore check --no-record``, whole process  vs ``git fsck --full`` (CPU ratio)

Per-object cost = (CPU with input - CPU on empty input) / N, CPU being the child's user +
system time (``os.wait4``; on PostgreSQL the server's own CPU is not in it). Ratio = the
peer's per-object cost / ours (target: c, h, p >= 0.5; v >= 0.3). Whole-process wall and CPU
are printed beside. Output goes to /dev/null for both sides. The script measures and
prints; it never asserts a target. A JSON result goes to bench/results/batch-*.json.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import blake3
from _common import fresh_store, machine_info, save_result

import evstore

EVSTORE = str(Path(sys.executable).with_name("evstore"))


def _run(cmd: list[str], stdin: bytes, cwd: str | None = None, ok: tuple[int, ...] = (0,)):
    """(wall s, CPU s) of one child process, stdout to /dev/null."""
    with tempfile.TemporaryFile() as inp:
        inp.write(stdin)
        inp.seek(0)
        t0 = time.perf_counter()
        p = subprocess.Popen(
            cmd, stdin=inp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd
        )
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        err = p.stderr.read() if p.stderr else b""
        if p.stderr:
            p.stderr.close()
        p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode not in ok:
        raise SystemExit(f"{cmd[:4]} exited {p.returncode}: {err.decode()[-400:]}")
    return wall, usage.ru_utime + usage.ru_stime


def _per_object(m: dict, n: int) -> float:
    return max(m["cpu"] - m["start_cpu"], 1e-9) / n * 1e6  # us


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="sqlite", choices=["sqlite", "postgresql"])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="chvp")
    args = ap.parse_args()
    n = args.n
    rng = random.Random(29)
    work = Path(tempfile.mkdtemp(prefix="evbench-batch-"))
    results: dict[str, Any] = {"n": n, "backend": args.backend, "parts": {}}
    try:
        files = work / "files"
        paths = []
        datas = []
        for i in range(n):
            d = files / f"{i // 1000:03d}"
            d.mkdir(parents=True, exist_ok=True)
            p = d / f"f{i:06d}.bin"
            data = os.urandom(rng.randint(1024, 4096))
            p.write_bytes(data)
            paths.append(str(p))
            datas.append(data)
        listing = "".join(p + "\n" for p in paths).encode()
        git = work / "repo.git"
        subprocess.run(["git", "init", "-q", "--bare", str(git)], check=True)
        gitenv = ["git", f"--git-dir={git}"]
        ids = subprocess.run(
            [*gitenv, "hash-object", "-w", "--stdin-paths"],
            input=listing,
            capture_output=True,
            check=True,
        ).stdout
        absent_git = "".join(
            hashlib.sha1(b"absent %d" % i).hexdigest() + "\n" for i in range(n // 2)
        ).encode()
        half_git = b"".join(ids.splitlines(keepends=True)[: n - n // 2]) + absent_git
        pairs = list(zip(datas, paths, strict=True))
        b3 = "".join(f"{blake3.blake3(d).hexdigest()}  {p}\n" for d, p in pairs)
        sha = "".join(f"{hashlib.sha256(d).hexdigest()}  {p}\n" for d, p in pairs)
        (work / "B3SUMS").write_text(b3)
        (work / "SHA256SUMS").write_text(sha)
        (work / "EMPTY").write_text("")
        with fresh_store(args.backend, "batch") as fs:
            with evstore.open(fs.url) as s:
                refs = [r.digest.address for r in s.put_many(datas)]
            ev = [EVSTORE, "--store", fs.url]
            ref_lines = "".join(r + "\n" for r in refs).encode()
            absent = "".join(
                "blake3:" + blake3.blake3(b"absent %d" % i).hexdigest() + "\n"
                for i in range(n // 2)
            ).encode()
            half = "".join(r + "\n" for r in refs[: n - n // 2]).encode() + absent
            parts = {
                "c": (
                    "cat-batch",
                    ([*ev, "cat-batch"], ref_lines, b"", {}),
                    ([*gitenv, "cat-file", "--batch"], ids, b"", {}),
                ),
                "h": (
                    "has - (half stored)",
                    ([*ev, "has", "-"], half, b"", {"ok": (0, 1)}),
                    ([*gitenv, "cat-file", "--batch-check"], half_git, b"", {}),
                ),
                "v": (
                    "verify-list b3sum",
                    ([*ev, "verify-list", "-a", "blake3", str(work / "B3SUMS")], b"", b"", {}),
                    (["b3sum", "--check", str(work / "B3SUMS")], b"", b"", {}),
                ),
                "s": (
                    "verify-list sha256sum",
                    ([*ev, "verify-list", "-a", "sha256", str(work / "SHA256SUMS")], b"", b"", {}),
                    (["sha256sum", "-c", str(work / "SHA256SUMS")], b"", b"", {"ok": (0, 1)}),
                ),
                "p": (
                    "put (every file stored already)",
                    ([*ev, "put", "--stdin-paths"], listing, b"", {}),
                    ([*gitenv, "hash-object", "-w", "--stdin-paths"], listing, b"", {}),
                ),
            }
            parts["k"] = (
                "check, whole process",
                ([*ev, "check", "--no-record"], b"", b"", {}),
                ([*gitenv, "fsck", "--full"], b"", b"", {}),
            )
            only = args.only + ("s" if "v" in args.only else "")
            for key, (label, ours, peer) in parts.items():
                if key not in only:
                    continue
                ours_cmd, ours_in, ours_empty, ours_kw = ours
                peer_cmd, peer_in, peer_empty, peer_kw = peer
                if key == "k":  # a whole-process comparison: no start-up run
                    o = _whole(ours_cmd, ours_in, ours_kw, args.repeat)
                    p = _whole(peer_cmd, peer_in, peer_kw, args.repeat)
                    ratio = p["cpu"] / o["cpu"]
                    results["parts"][key] = {"label": label, "ours": o, "peer": p, "ratio": ratio}
                    print(
                        f"k {label:32s} whole process: ours {o['wall']:.2f} s wall / "
                        f"{o['cpu']:.2f} s CPU, git fsck {p['wall']:.2f} / {p['cpu']:.2f} s, "
                        f"CPU ratio {ratio:.2f}",
                        flush=True,
                    )
                    continue
                if key in "vs":  # an empty manifest: the start-up
                    ours_empty_cmd = [*ours_cmd[:-1], str(work / "EMPTY")]
                    peer_empty_cmd = [*peer_cmd[:-1], str(work / "EMPTY")]
                else:
                    ours_empty_cmd, peer_empty_cmd = ours_cmd, peer_cmd
                o = _measure_pair(ours_cmd, ours_empty_cmd, ours_in, ours_kw, args.repeat)
                p = _measure_pair(peer_cmd, peer_empty_cmd, peer_in, peer_kw, args.repeat)
                ratio = _per_object(p, n) / _per_object(o, n)
                results["parts"][key] = {"label": label, "ours": o, "peer": p, "ratio": ratio}
                print(
                    f"{key} {label:32s} per object: ours {_per_object(o, n):7.1f} us, "
                    f"peer {_per_object(p, n):6.1f} us, ratio {ratio:.2f} | whole process "
                    f"ours {o['wall']:.2f} s wall / {o['cpu']:.2f} s CPU (start-up "
                    f"{o['start_cpu']:.2f} s CPU), peer {p['wall']:.2f} / {p['cpu']:.2f} s",
                    flush=True,
                )
        results["machine"] = machine_info(args.backend)
        print("result:", save_result(f"batch-{args.backend}", results))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _whole(cmd, stdin, kw, repeat):
    runs = [_run(cmd, stdin, **kw) for _ in range(repeat)]
    return {
        "wall": statistics.median(w for w, _ in runs),
        "cpu": statistics.median(c for _, c in runs),
    }


def _measure_pair(cmd, empty_cmd, stdin, kw, repeat):
    full, idle = [], []
    for _ in range(repeat):
        full.append(_run(cmd, stdin, **kw))
        idle.append(_run(empty_cmd, b"", **kw))
    med = statistics.median
    return {
        "wall": med(w for w, _ in full),
        "cpu": med(c for _, c in full),
        "start_wall": med(w for w, _ in idle),
        "start_cpu": med(c for _, c in idle),
    }


if __name__ == "__main__":
    main()
