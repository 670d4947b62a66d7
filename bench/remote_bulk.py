"""Benchmark of a remote bulk put (issue 28): ``evstore --store http://... put DIR`` of N
small files against the same local ``evstore --store DATABASE-URL put DIR``, both backends,
a ratio measured in one run.

    python bench/remote_bulk.py                      # 10000 files, both backends
    python bench/remote_bulk.py --n 1000 --backend sqlite

Each side writes into a fresh store of the same backend (a new SQLite file, or a new database
on the same PostgreSQL server), so both store N new objects. The remote side is a real
``evstore serve`` process on 127.0.0.1 (one worker, no access log) with an ingest token; its
command is one request and one transaction (POST P/v1/objects/batch). Both commands are the
console script in a subprocess, timed by wall clock; the start-up of each (the same command
putting one file, in the same kind of store) is measured and given beside the figure, and the
per-object figure excludes it. Target: remote / local <= 1.5 (wall time of the whole command).
The server's peak resident memory (VmHWM of its process) is read after the start-up put and
after the put of the N files: bounded means the second does not grow with N.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fresh_store, machine_info, save_result

EVSTORE = str(Path(sys.executable).with_name("evstore"))
TARGET = 1.5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(token: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("EVSTORE_URL", "EVSTORE_TOKEN")}
    if token:
        env["EVSTORE_TOKEN"] = token
    return env


def _timed(url: str, path: Path, token: str | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(
        [EVSTORE, "-q", "--store", url, "put", str(path)],
        check=True,
        stdout=subprocess.DEVNULL,
        env=_env(token),
        timeout=1800,
    )
    return time.perf_counter() - start


def _serve(url: str) -> tuple[subprocess.Popen[bytes], str, str]:
    token = (
        subprocess.run(
            [EVSTORE, "--store", url, "token", "create", "--scope", "ingest"],
            check=True,
            capture_output=True,
            env=_env(),
        )
        .stdout.decode()
        .strip()
    )
    port = _free_port()
    proc = subprocess.Popen(
        [EVSTORE, "--store", url, "serve", "--host", "127.0.0.1", "--port", str(port)]
        + ["--no-access-log"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, f"http://127.0.0.1:{port}", token
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not start")


def _peak_rss_mib(pid: int) -> float:
    """The peak resident memory of process ``pid`` so far (VmHWM, /proc/PID/status), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run(backend: str, n: int, files: Path, one: Path) -> dict[str, float | int | str | bool]:
    """Local and remote put of ``files`` (and of ``one``, the start-up) on ``backend``."""
    out: dict[str, float | int | str | bool] = {"backend": backend, "files": n}
    with fresh_store(backend, "bulk-local") as local:
        out["local_startup_s"] = _timed(local.url, one)
        out["local_s"] = _timed(local.url, files)
    with fresh_store(backend, "bulk-remote") as remote:
        proc, url, token = _serve(remote.url)
        try:
            out["remote_startup_s"] = _timed(url, one, token)
            out["server_peak_rss_mib_startup"] = _peak_rss_mib(proc.pid)
            out["remote_s"] = _timed(url, files, token)
            out["server_peak_rss_mib"] = _peak_rss_mib(proc.pid)
        finally:
            _stop(proc)
    for side in ("local", "remote"):
        per = (float(out[f"{side}_s"]) - float(out[f"{side}_startup_s"])) / n
        out[f"{side}_us_per_object"] = round(per * 1e6, 1)
    out["ratio"] = round(float(out["remote_s"]) / float(out["local_s"]), 2)
    out["met"] = float(out["ratio"]) <= TARGET
    return out


def main() -> None:
    """Run the benchmark and print and save the figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000, help="Files (default 10000).")
    ap.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    args = ap.parse_args()
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    rows = []
    with tempfile.TemporaryDirectory(prefix="evbench-bulk-") as tmp:
        files = Path(tmp) / "files"
        for i in range(args.n):
            sub = files / f"d{i // 1000:03}"
            sub.mkdir(parents=True, exist_ok=True)
            (sub / f"f{i:06}.txt").write_bytes(f"small object {i} ".encode() * 8)
        one = Path(tmp) / "one.txt"
        one.write_bytes(b"start-up\n")
        for backend in backends:
            row = run(backend, args.n, files, one)
            rows.append(row)
            print(
                f"{backend}: local {row['local_s']:.2f} s (start-up {row['local_startup_s']:.2f}"
                f" s, {row['local_us_per_object']} us/object), remote {row['remote_s']:.2f} s "
                f"(start-up {row['remote_startup_s']:.2f} s, {row['remote_us_per_object']} "
                f"us/object): ratio {row['ratio']} (target <= {TARGET}: "
                f"{'met' if row['met'] else 'MISSED'}); server peak RSS "
                f"{row['server_peak_rss_mib_startup']} MiB after start-up, "
                f"{row['server_peak_rss_mib']} MiB after the {args.n} files"
            )
    path = save_result(
        "remote-bulk", {"rows": rows, "machine": machine_info(backends[0]), "n": args.n}
    )
    print(f"result: {path}")


if __name__ == "__main__":
    main()
