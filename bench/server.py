"""Benchmarks of the HTTP server (issue 11): three parts, each a ratio against a ceiling
measured in the same run on the same machine.

    python bench/server.py                 # all three parts, about 2-3 minutes
    python bench/server.py --only a        # one part
    python bench/server.py --quick         # short runs (debugging the script)

(a) GET of a 1 KiB object with a read token, 32 connections, keep-alive (wrk), one worker
    and two: requests/s and p50/p99 against the same stack (same worker count) checking a
    token in a dict and returning the same bytes from memory (bench/server_ceiling.py).
    Targets (issue 29): >= 0.6x, p99 <= 2x.
(b) GET of a 256 MiB object: MB/s against a static file server on the same machine serving
    the same bytes from a file (nginx from Debian when installed, else
    ``python -m http.server``), and beside it the same stack's ``FileResponse``; the
    server's peak RSS above idle. Targets (issue 29): >= 0.3x of the static server, <= 64 MiB.
(c) ingest of 5 KB JSON documents over HTTP, one per request, 8 connections, against
    in-process ``Store.ingest`` of one document per call from 8 threads, same backend
    (the same number of documents as the larger HTTP run). Two load generators: wrk with a
    Lua script making each request a new document (``ratio``: its CPU is a small part of
    the server's), and beside it a bounded Python one (httpx, keep-alive, 8 threads,
    ``ratio_httpx``), which spends about as much CPU a document as the server on the same
    cores. Target (issue 29): >= 0.5x.

(floors) On PostgreSQL, parts (a) and (b) also measure, in the same rounds, a floor: the
    ceiling's stack plus the least PostgreSQL work any store keeping its index or bytes there
    must do per request, with psycopg directly (bench/server_floor.py): (a) one prepared
    ``SELECT data FROM blobs WHERE address = $1`` per GET on pooled async connections (and,
    since that route is ``async def``, the ceiling's route as ``async def`` too:
    ``ceiling_async``);
    (b) the 256 chunk rows streamed as one binary COPY reads them, unhashed
    (``floor_mb_s``), and the same with both hashes of every chunk (``floor_hashed_mb_s``).
    ``floor / ceiling`` is the best ratio such a store can reach here: below the target, the
    target is impossible on this machine with the bytes in PostgreSQL (issue 29).

Each part runs on every backend of ``--backends`` (default: sqlite and postgresql; the
PostgreSQL server of ``EVBENCH_PG_URL``). Every server runs on 127.0.0.1 on a free port, no
access log, and is stopped by SIGTERM; ours and the ceiling alternate which goes first from
one round to the next (a shared machine's load drifts). wrk comes from Debian
(``apt-get install wrk``); without it part (a) uses the Python load generator (noted in the
result).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

import evstore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fresh_store, machine_info, percentile, write_result

HERE = Path(__file__).resolve().parent
EVSTORE = str(Path(sys.executable).with_name("evstore"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, "server exited"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server did not start")


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_workers(proc: subprocess.Popen, workers: int) -> None:
    """Until ``workers`` child processes run and each is idle (under 50 ms of CPU in a
    second): the socket listens before every worker has imported and started, and a
    worker still starting would share the cores with the measured one.
    """
    deadline = time.monotonic() + 180
    before: dict[int, float] = {}
    while time.monotonic() < deadline:
        assert proc.poll() is None, "server exited"
        kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        now = {}
        for pid in map(int, kids):
            try:
                now[pid] = _cpu_s(pid)
            except OSError:
                continue
        busy = [pid for pid, t in now.items() if t - before.get(pid, -1.0) > 0.05]
        # multiprocessing's resource tracker is a child too: count the idle ones
        if len(now) - len(busy) >= workers and not busy:
            return
        before = now
        time.sleep(1.0)
    raise RuntimeError("the workers did not start")


class Proc:
    def __init__(
        self, argv: list[str], port: int, env: dict[str, str] | None = None, workers: int = 1
    ):
        self.proc = subprocess.Popen(
            argv,
            env={**os.environ, **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.port = port
        try:
            wait_port(port, self.proc)
            if workers > 1:
                wait_workers(self.proc, workers)
        except BaseException:
            self.stop()  # a server that did not start is not left running
            raise

    def rss(self, field: str = "VmRSS") -> int:
        text = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(re.search(rf"{field}:\s+(\d+) kB", text).group(1)) * 1024

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def evstore_server(url: str, port: int, workers: int = 1) -> Proc:
    argv = [EVSTORE, "--store", url, "-q", "serve", "--port", str(port), "--no-access-log"]
    return Proc([*argv, "--workers", str(workers)], port, workers=workers)


def _uvicorn_app(app: str, port: int, env: dict[str, str], workers: int) -> Proc:
    """``app`` (``module:attribute`` in bench/) under uvicorn, no access log."""
    argv = [sys.executable, "-m", "uvicorn", app, "--app-dir", str(HERE)]
    argv += ["--port", str(port), "--no-access-log", "--log-level", "warning"]
    return Proc([*argv, "--workers", str(workers)], port, env, workers)


def ceiling_server(port: int, env: dict[str, str], workers: int = 1) -> Proc:
    """bench/server_ceiling.py under uvicorn."""
    return _uvicorn_app("server_ceiling:app", port, env, workers)


def floor_server(port: int, env: dict[str, str], workers: int = 1) -> Proc:
    """bench/server_floor.py under uvicorn: ``env`` gives EVBENCH_FLOOR, EVBENCH_PG, ..."""
    return _uvicorn_app("server_floor:app", port, env, workers)


def static_server(root: Path, port: int) -> tuple[Proc, str]:
    """nginx (when installed) or ``python -m http.server`` serving ``root``; (proc, name)."""
    nginx = shutil.which("nginx", path=os.environ.get("PATH", "") + ":/usr/sbin")
    if nginx is None:
        argv = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
        return Proc([*argv, "--directory", str(root)], port), "python -m http.server"
    top = root.parent
    temps = " ".join(
        f"{kind}_temp_path {top}/{kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    conf = top / "nginx.conf"
    conf.write_text(
        f"daemon off; worker_processes 1; pid {top}/nginx.pid; error_log stderr;\n"
        "events { worker_connections 64; }\n"
        f"http {{ access_log off; sendfile on; {temps}\n"
        f"  server {{ listen 127.0.0.1:{port}; root {root}; }} }}\n"
    )
    return Proc([nginx, "-c", str(conf), "-p", str(top)], port), "nginx"


def _ms(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    if m is None:  # no request answered: wrk prints no figure
        return float("nan")
    value, unit = float(m.group(1)), m.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


def wrk(url: str, token: str, seconds: int, connections: int) -> dict[str, float]:
    out = subprocess.run(
        [
            "wrk",
            "-t2",
            f"-c{connections}",
            f"-d{seconds}s",
            "--latency",
            "-H",
            f"Authorization: Bearer {token}",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=seconds + 60,
        check=True,
    ).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    # anchored: the Latency line's "+/- Stdev" column (e.g. "98.50%") is no percentile
    p50 = _ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))
    p99 = _ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    return {
        "rps": rps,
        "p50_ms": p50,
        "p99_ms": p99,
        "non_2xx": int(non2xx.group(1)) if non2xx else 0,
        "socket_errors": errors.group(1) if errors else "",
    }


def pyload(url: str, token: str, seconds: float, connections: int) -> dict[str, float]:
    """A bounded Python load generator: ``connections`` threads, keep-alive, for ``seconds``."""
    lat: list[float] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def run() -> None:
        mine = []
        with httpx.Client(headers={"Authorization": f"Bearer {token}"}) as c:
            for _ in range(1_000_000):
                if time.monotonic() > deadline:
                    break
                t = time.perf_counter()
                c.get(url).raise_for_status()
                mine.append(time.perf_counter() - t)
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=run) for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {
        "rps": len(lat) / seconds,
        "p50_ms": percentile(lat, 50) * 1000,
        "p99_ms": percentile(lat, 99) * 1000,
    }


def warmed(load, url: str, token: str, seconds: int) -> dict:
    """``load`` of ``url`` for ``seconds`` after a discarded run of the same load (a fresh
    server's first requests import and compile; on a loaded machine that took seconds and
    a short run measured nothing but the warm-up).
    """
    try:
        load(url, token, 3, 32)
    except (AttributeError, subprocess.CalledProcessError):
        pass  # a warm-up that answered nothing in time
    return load(url, token, seconds, 32)


def part_a(quick: bool, backend: str) -> dict:
    seconds = 3 if quick else 10
    load = wrk if shutil.which("wrk") else pyload
    out: dict = {"load_generator": load.__name__}
    with fresh_store(backend, "srv-a") as fs:
        with evstore.open(fs.url) as store:
            address = store.put(os.urandom(1024)).digest.address
            token = evstore.create_token(store, "read")["token"]
        url_path = f"/v1/objects/{address}"

        def ours(workers: int) -> dict:
            port = free_port()
            srv = evstore_server(fs.url, port, workers)
            try:
                return warmed(load, f"http://127.0.0.1:{port}{url_path}", token, seconds)
            finally:
                srv.stop()

        def ceiling(workers: int, extra: dict[str, str] | None = None) -> dict:
            port = free_port()
            env = {"EVBENCH_TOKEN": token, "EVBENCH_SIZE": "1024", **(extra or {})}
            ceil = ceiling_server(port, env, workers)
            try:
                return warmed(load, f"http://127.0.0.1:{port}{url_path}", token, seconds)
            finally:
                ceil.stop()

        def floor(workers: int) -> dict:
            port = free_port()
            env = {"EVBENCH_TOKEN": token, "EVBENCH_FLOOR": "row", "EVBENCH_PG": fs.pg_conninfo}
            srv = floor_server(port, env, workers)
            try:
                return warmed(load, f"http://127.0.0.1:{port}{url_path}", token, seconds)
            finally:
                srv.stop()

        def ceiling_async(workers: int) -> dict:
            return ceiling(workers, {"EVBENCH_ASYNC": "1"})

        sides = [ours, ceiling]
        if backend == "postgresql":
            sides += [floor, ceiling_async]
        for n, workers in enumerate((1, 2)):
            order = sides if n % 2 == 0 else sides[::-1]
            got = {side.__name__: side(workers) for side in order}
            row = out[f"workers_{workers}"] = {
                **got,
                "order": [side.__name__ for side in order],
                "loadavg": Path("/proc/loadavg").read_text().split()[:3],
                "throughput_ratio": got["ours"]["rps"] / got["ceiling"]["rps"],
                "p99_ratio": got["ours"]["p99_ms"] / got["ceiling"]["p99_ms"],
            }
            if "floor" in got:
                row["floor_ratio"] = got["floor"]["rps"] / got["ceiling"]["rps"]
                row["ours_to_floor"] = got["ours"]["rps"] / got["floor"]["rps"]
                row["floor_to_ceiling_async"] = got["floor"]["rps"] / got["ceiling_async"]["rps"]
    out["targets"] = {"throughput_ratio": ">= 0.6", "p99_ratio": "<= 2"}
    return out


def _download(url: str, token: str, proc: Proc) -> tuple[float, int]:
    """Seconds to download ``url`` (curl, to /dev/null) and the server's peak RSS meanwhile."""
    peak = [proc.rss()]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            try:
                peak[0] = max(peak[0], proc.rss())
            except (OSError, AttributeError):
                return
            time.sleep(0.01)

    t = threading.Thread(target=sample)
    t.start()
    started = time.perf_counter()
    subprocess.run(
        ["curl", "-sf", "-o", "/dev/null", "-H", f"Authorization: Bearer {token}", url],
        check=True,
        timeout=600,
    )
    elapsed = time.perf_counter() - started
    done.set()
    t.join()
    return elapsed, peak[0]


def part_b(quick: bool, backend: str) -> dict:
    size = (32 if quick else 256) << 20
    repeats = 1 if quick else 3
    with tempfile.TemporaryDirectory(prefix="evbench-srv-b-") as tmp:
        root = Path(tmp) / "www"
        root.mkdir()
        Path(tmp).chmod(0o755)  # nginx's worker runs as another user
        root.chmod(0o755)
        blob = root / "blob.bin"
        with blob.open("wb") as fh:
            for _ in range(size >> 20):
                fh.write(os.urandom(1 << 20))
        blob.chmod(0o644)
        runs: dict[str, list[tuple[float, int]]] = {}
        with fresh_store(backend, "srv-b") as fs:
            with evstore.open(fs.url) as store, blob.open("rb") as fh:
                address = store.put(fh).digest.address
                token = evstore.create_token(store, "read")["token"]
            servers: dict[str, tuple[Proc, str, str]] = {}  # name -> (proc, url, token)
            try:
                port = free_port()
                url = f"http://127.0.0.1:{port}/v1/objects/{address}"
                servers["ours"] = (evstore_server(fs.url, port), url, token)
                port = free_port()
                st, static_name = static_server(root, port)
                servers["static"] = (st, f"http://127.0.0.1:{port}/blob.bin", "")
                port = free_port()
                env = {"EVBENCH_TOKEN": token, "EVBENCH_FILE": str(blob)}
                url = f"http://127.0.0.1:{port}/v1/objects/x"
                servers["same_stack"] = (ceiling_server(port, env), url, token)
                if backend == "postgresql":
                    for mode in ("stream", "hashed"):
                        port = free_port()
                        env = {"EVBENCH_TOKEN": token, "EVBENCH_PG": fs.pg_conninfo}
                        srv = floor_server(port, {**env, "EVBENCH_FLOOR": mode})
                        url = f"http://127.0.0.1:{port}/v1/objects/{address}"
                        servers[f"floor_{mode}"] = (srv, url, token)
                idle = servers["ours"][0].rss()
                names = list(servers)
                for n in range(repeats):  # alternate: each round in the other order
                    for name in names if n % 2 == 0 else names[::-1]:
                        proc, url, tok = servers[name]
                        runs.setdefault(name, []).append(_download(url, tok, proc))
            finally:
                for proc, _, _ in servers.values():
                    proc.stop()
    mb = size / 1e6
    best = {name: min(r[0] for r in got) for name, got in runs.items()}
    med = {name: statistics.median(r[0] for r in got) for name, got in runs.items()}
    out = {
        "size_bytes": size,
        "static_server": static_name,
        "ours_mb_s": mb / best["ours"],
        "static_mb_s": mb / best["static"],
        "same_stack_file_mb_s": mb / best["same_stack"],
        "throughput_ratio": best["static"] / best["ours"],
        "ratio_to_same_stack_file": best["same_stack"] / best["ours"],
        "median_mb_s": {name: mb / t for name, t in med.items()},
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
        "server_idle_rss_mib": idle / 2**20,
        "server_peak_rss_mib": max(r[1] for r in runs["ours"]) / 2**20,
        "peak_above_idle_mib": (max(r[1] for r in runs["ours"]) - idle) / 2**20,
        "targets": {"throughput_ratio": ">= 0.3", "peak_above_idle_mib": "<= 64"},
    }
    for mode in ("stream", "hashed"):
        if f"floor_{mode}" in best:
            key = "floor" if mode == "stream" else "floor_hashed"
            out[f"{key}_mb_s"] = mb / best[f"floor_{mode}"]
            out[f"{key}_ratio"] = best["static"] / best[f"floor_{mode}"]
            out[f"ours_to_{key}"] = best[f"floor_{mode}"] / best["ours"]
    return out


def _doc(tag: str, i: int) -> dict:
    return {"tag": tag, "i": i, "text": "evidence " * 560}  # about 5 KB as JSON


def part_c(quick: bool, backend: str) -> dict:
    per_thread = 25 if quick else 100
    threads_n = 8

    def run_threads(fn) -> float:
        ts = [threading.Thread(target=fn, args=(n,)) for n in range(threads_n)]
        started = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return time.perf_counter() - started

    use_wrk = shutil.which("wrk") is not None
    wrk_run = None
    with fresh_store(backend, "srv-c-http") as fs:
        with evstore.open(fs.url) as store:
            token = evstore.create_token(store, "ingest")["token"]
        port = free_port()
        srv = evstore_server(fs.url, port)
        statuses: dict[int, int] = {}
        lock = threading.Lock()

        def http_worker(n: int) -> None:
            with httpx.Client(
                base_url=f"http://127.0.0.1:{port}",
                headers={"Authorization": f"Bearer {token}"},
                timeout=120,
            ) as c:
                for i in range(per_thread):
                    body = {"documents": [{"document": _doc(f"h{n}", i), "kind": "json"}]}
                    r = c.post("/v1/ingest", json=body)
                    with lock:
                        statuses[r.status_code] = statuses.get(r.status_code, 0) + 1

        try:
            http_s = run_threads(http_worker)
            wrk_run = wrk_ingest(port, token, 3 if quick else 10, threads_n) if use_wrk else None
        finally:
            srv.stop()
    # The in-process ceiling ingests as many documents as the larger HTTP run did, so both
    # sides end on stores of about the same size.
    n = per_thread * threads_n
    if wrk_run is not None:
        per_thread = max(per_thread, wrk_run["documents"] // threads_n)
    with fresh_store(backend, "srv-c-inproc") as fs, evstore.open(fs.url) as store:

        def inproc_worker(n: int) -> None:
            for i in range(per_thread):
                store.ingest(evstore.Document(json.dumps(_doc(f"p{n}", i)).encode(), kind="json"))

        inproc_s = run_threads(inproc_worker)
    inproc_docs_s = per_thread * threads_n / inproc_s
    out = {
        "documents": n,
        "http_docs_s": n / http_s,
        "inproc_documents": per_thread * threads_n,
        "inproc_docs_s": inproc_docs_s,
        "ratio_httpx": n / http_s / inproc_docs_s,
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
        "http_statuses": statuses,
        "targets": {"ratio": ">= 0.5"},
    }
    if wrk_run is not None:
        out["wrk"] = wrk_run
        out["ratio"] = wrk_run["docs_s"] / inproc_docs_s
    else:
        out["ratio"] = out["ratio_httpx"]
    return out


#: wrk's script for part (c): each request a new ~5 KB document (the thread's number and a
#: counter make it unique, as ``_doc`` does), POSTed as one ingest.
_INGEST_LUA = """
local n = 0
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
function request()
  n = n + 1
  local body = '{"documents": [{"document": {"tag": "w' .. tid .. '", "i": ' .. n ..
    ', "text": "TEXT"}, "kind": "json"}]}'
  return wrk.format("POST", "/v1/ingest", HEADERS, body)
end
"""


def wrk_ingest(port: int, token: str, seconds: int, connections: int) -> dict:
    """Part (c) driven by wrk (C, two threads, ``connections`` keep-alive connections) for
    ``seconds``: documents/s answered 2xx. The Python load generator's own CPU (660-790 us a
    document, on the same two cores) is not in this figure.
    """
    text = "evidence " * 560
    script = _INGEST_LUA.replace("TEXT", text).replace(
        "HEADERS",
        '{["Content-Type"] = "application/json", ["Authorization"] = "Bearer ' + token + '"}',
    )
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
    try:
        out = subprocess.run(
            [
                "wrk",
                "-t2",
                f"-c{connections}",
                f"-d{seconds}s",
                "-s",
                f.name,
                f"http://127.0.0.1:{port}/v1/ingest",
            ],
            capture_output=True,
            text=True,
            timeout=seconds + 60,
            check=True,
        ).stdout
    finally:
        os.unlink(f.name)
    total = int(re.search(r"(\d+) requests in", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    bad = int(non2xx.group(1)) if non2xx else 0
    secs = float(re.search(r"requests in ([\d.]+)s", out).group(1))
    return {
        "documents": total - bad,
        "non_2xx": bad,
        "seconds": secs,
        "docs_s": (total - bad) / secs,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="abc")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--backends", default="sqlite,postgresql")
    args = ap.parse_args()
    backends = args.backends.split(",")
    result: dict = {"machine": machine_info(backends[0])}
    for part, fn in (("a", part_a), ("b", part_b), ("c", part_c)):
        if part in args.only:
            for backend in backends:
                key = f"{part}_{backend}"
                result[key] = fn(args.quick, backend)
                print(key, json.dumps(result[key], indent=2), flush=True)
    path = write_result("server", args.quick, result)
    print(f"written {path}")


if __name__ == "__main__":
    main()
