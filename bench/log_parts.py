"""Parts r, t and l of bench/log.py (issue 26): integration rate, tile serving, latency.

r  Entries integrated per second: ``--queue`` entries queued as one-entry batches (the
   shape one-document ingests leave), then ``store.log.integrate()`` (rounds of up to
   20,000 entries, one transaction each) timed until the queue is empty.
t  Tile serving of a ``--entries`` log (filled by the library's bulk append, as part p;
   one signed checkpoint): ``evstore serve`` (one worker, public reads) against nginx
   serving the files ``store.log.export_tiles`` wrote, in the same run, alternating,
   with the same client (wrk, a Lua script picking a random full tile, entry bundle or
   the checkpoint per request) at the same concurrency. Ratio = evstore req/s / nginx
   req/s; target >= 0.5. Beside them, the same files served from memory by the smallest
   ASGI app on the same server stack (uvicorn, one worker, a dict from path to bytes: no
   framework, no store, no check), the best any Python ASGI server can do here, so its
   ratio to nginx bounds what evstore serve can reach; and evstore's own ``GET /v1``.
l  Time from acceptance (a ``put`` returned: committed) to the first signed checkpoint
   that includes its entry, with ``evstore serve --log-key K --checkpoint-every S``
   integrating and signing as it does in production, a writer putting ``--rate`` new
   blobs a second for ``--seconds``, and a poller reading ``/checkpoint`` every 20 ms
   (the poll adds up to 20 ms). p50, p99 and the maximum, against the documented bound
   (about S + 1 s plus a round's time).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from _common import fresh_store, median, percentile
from server import EVSTORE, Proc, _ms, free_port, static_server

#: A fixed accepting time for synthetic entries.
_AT = "2026-12-04T00:00:00.000000Z"


def part_r(backend: str, entries: int) -> dict[str, Any]:
    """Queue ``entries`` one-entry batches, then time integrating them all."""
    import evstore
    from evstore.objects.log_entries import enqueue_entries, entry_bytes

    out: dict[str, Any] = {"queued": entries}
    with fresh_store(backend, "lograte") as fs, evstore.open(fs.url) as store:
        start, done = time.perf_counter(), 0
        while done < entries:
            n = min(5_000, entries - done)

            def work(conn: Any, first: int = done, n: int = n) -> None:
                for i in range(first, first + n):  # one batch each, as one ingest queues
                    a = f"{i:064x}"
                    enqueue_entries(conn, [(a, entry_bytes("put", a, a, i % 9000, _AT))])

            store.db.run_transaction(work)
            done += n
        out["fill_s"] = time.perf_counter() - start
        rounds: list[float] = []
        total = time.perf_counter()
        for _ in range(10_000):  # bounded: one round per call, until the queue is empty
            t = time.perf_counter()
            r = store.log.integrate(max_rounds=1)
            if r["integrated"] == 0:
                break
            rounds.append(time.perf_counter() - t)
        out["integrate_s"] = time.perf_counter() - total
        size = store.log.status()["size"]
        if size != entries:
            raise RuntimeError(f"integrated {size} of {entries}")
        out["rounds"] = len(rounds)
        out["round_median_s"] = median(rounds)
        out["entries_per_s"] = entries / sum(rounds)
    print(
        f"integration: {entries} queued one-entry batches in {out['rounds']} rounds,"
        f" {out['entries_per_s']:.0f} entries/s (round median {out['round_median_s']:.3f} s;"
        f" queue filled in {out['fill_s']:.1f} s)",
        flush=True,
    )
    return out


_LUA = """
local paths = {%s}
math.randomseed(%d)
request = function()
  return wrk.format("GET", paths[math.random(#paths)])
end
"""


def _wrk(url: str, script: Path | None, seconds: int, connections: int) -> dict[str, Any]:
    import re

    lua = [] if script is None else ["-s", str(script)]
    res = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", *lua, url],
        capture_output=True,
        text=True,
        timeout=seconds + 60,
        check=True,
    ).stdout
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", res)
    if not float(re.search(r"Requests/sec:\s+([\d.]+)", res).group(1)):  # type: ignore[union-attr]
        raise RuntimeError(f"wrk answered nothing from {url}:\n{res}")
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", res).group(1)),  # type: ignore[union-attr]
        # anchored: the Latency line's "+/- Stdev" column (e.g. "98.50%") is no percentile
        "p50_ms": _ms(re.search(r"^\s+50%\s+(\S+)", res, re.M).group(1)),  # type: ignore[union-attr]
        "p99_ms": _ms(re.search(r"^\s+99%\s+(\S+)", res, re.M).group(1)),  # type: ignore[union-attr]
        "mb_per_s": _rate(re.search(r"Transfer/sec:\s+(\S+)", res)),
        "non_2xx": int(non2xx.group(1)) if non2xx else 0,
    }


def _rate(m: Any) -> float:
    if m is None:
        return float("nan")
    text = m.group(1)
    scale = {"B": 1e-6, "KB": 1.024e-3, "MB": 1.048576, "GB": 1073.741824}
    for unit, f in sorted(scale.items(), key=lambda x: -len(x[0])):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * f
    return float("nan")


def _nginx(root: Path, port: int) -> Proc:
    """nginx serving ``root`` on 127.0.0.1:port, 1 worker (bench/server.py's static server)."""
    proc, name = static_server(root, port)
    if name != "nginx":
        proc.stop()
        raise RuntimeError("part t needs nginx (Debian's nginx package)")
    return proc


#: The stack ceiling of part t: the exported files from memory, nothing else (raw ASGI).
_STACK_APP = """
import os
ROOT = os.environ["EVBENCH_TILES"]
FILES = {}
for d, _, names in os.walk(ROOT):
    for n in names:
        full = os.path.join(d, n)
        FILES["/" + os.path.relpath(full, ROOT)] = open(full, "rb").read()


async def app(scope, receive, send):
    body = FILES.get(scope["path"])
    if body is None:
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    headers = [(b"content-length", str(len(body)).encode()), (b"content-type", b"text/plain")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})
"""


def _stack(root: Path, port: int) -> Proc:
    """uvicorn (the server stack of ``evstore serve``) with :data:`_STACK_APP` over ``root``."""
    import sys

    app_dir = root.parent / "stackapp"
    app_dir.mkdir(exist_ok=True)
    (app_dir / "tiles_stack.py").write_text(_STACK_APP)
    argv = [sys.executable, "-m", "uvicorn", "tiles_stack:app", "--app-dir", str(app_dir)]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--no-access-log", "--log-level"]
    argv += ["warning"]
    os.environ["EVBENCH_TILES"] = str(root)
    return Proc(argv, port)


def part_t(
    backend: str,
    entries: int,
    fill: Callable[[Any, int], float],
    seconds: int,
    connections: int,
    rounds: int,
) -> dict[str, Any]:
    """Served tiles against the same files from nginx (see the module docstring)."""
    import evstore
    from evstore.tlog.tiles import tiles_for_size

    out: dict[str, Any] = {"entries": entries, "connections": connections, "seconds": seconds}
    tmp = Path(tempfile.mkdtemp(prefix="evbench-tiles-"))
    try:
        with fresh_store(backend, "logtiles") as fs:
            with evstore.open(fs.url) as store:
                out["fill_s"] = fill(store, entries)
                store.log.init_key(tmp / "log.key", origin="bench.example/tiles")
                t = time.perf_counter()
                store.log.checkpoint(tmp / "log.key")
                out["checkpoint_s"] = time.perf_counter() - t
                t = time.perf_counter()
                exported = store.log.export_tiles(tmp / "www")
                out["export_s"] = time.perf_counter() - t
                out["files"] = exported["written"]
            # mkdtemp's 0700: nginx's worker is another user (the files are 0644)
            for d, _, files in os.walk(tmp):
                os.chmod(d, 0o755)
                for f in files:
                    os.chmod(os.path.join(d, f), 0o644)
            full = [ref.path() for ref in tiles_for_size(entries) if ref.full]
            rng = random.Random(26)
            paths = [rng.choice(full) for _ in range(4000)] + ["checkpoint"] * 250
            rng.shuffle(paths)
            script = tmp / "tiles.lua"
            script.write_text(_LUA % (", ".join(f'"/{p}"' for p in paths), 26))
            out["paths"] = {"full_tiles": len(full), "sampled": len(paths), "checkpoint": 250}
            runs: dict[str, list[dict[str, Any]]] = {
                "evstore": [],
                "nginx": [],
                "evstore_v1": [],
                "stack": [],
            }
            for _ in range(rounds):  # alternate, so a change in the machine's load hits all
                for name in ("evstore", "nginx", "stack"):
                    port = free_port()
                    if name == "nginx":
                        proc = _nginx(tmp / "www", port)
                    elif name == "stack":
                        proc = _stack(tmp / "www", port)
                    else:
                        argv = [EVSTORE, "--store", fs.url, "-q", "serve", "--port", str(port)]
                        argv += ["--no-access-log", "--public-read"]
                        proc = Proc(argv, port)
                    try:
                        base = f"http://127.0.0.1:{port}"
                        for p in paths[:20]:  # the same bytes from both (and warm)
                            r = httpx.get(base + "/" + p.lstrip("/"), timeout=30)
                            r.raise_for_status()
                        runs[name].append(_wrk(base, script, seconds, connections))
                        if name == "evstore":  # the server's own floor: a route with no read
                            runs["evstore_v1"].append(
                                _wrk(base + "/v1", None, seconds, connections)
                            )
                    finally:
                        proc.stop()
            same = _same_bytes(fs.url, tmp / "www", paths[:50])
            out["same_bytes"] = same
        for name, got in runs.items():
            out[name] = sorted(got, key=lambda x: x["rps"])[len(got) // 2]
            out[name]["all_rps"] = [x["rps"] for x in got]
        out["ratio"] = out["evstore"]["rps"] / out["nginx"]["rps"]
        out["ratio_to_own_floor"] = out["evstore"]["rps"] / out["evstore_v1"]["rps"]
        out["stack_ratio_to_nginx"] = out["stack"]["rps"] / out["nginx"]["rps"]
        print(
            f"tiles at {entries} entries, {connections} connections: evstore"
            f" {out['evstore']['rps']:.0f} req/s (p50 {out['evstore']['p50_ms']:.2f} ms, p99"
            f" {out['evstore']['p99_ms']:.2f} ms), nginx {out['nginx']['rps']:.0f} req/s (p50"
            f" {out['nginx']['p50_ms']:.2f} ms, p99 {out['nginx']['p99_ms']:.2f} ms):"
            f" ratio {out['ratio']:.3f}; evstore's GET /v1 (no read) {out['evstore_v1']['rps']:.0f}"
            f" req/s (tiles at {out['ratio_to_own_floor']:.2f} of it); the bare stack serving"
            f" the files from memory {out['stack']['rps']:.0f} req/s"
            f" ({out['stack_ratio_to_nginx']:.3f} of nginx); fill"
            f" {out['fill_s']:.0f} s, export {out['export_s']:.0f} s ({out['files']} files)",
            flush=True,
        )
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _same_bytes(url: str, root: Path, paths: list[str]) -> bool:
    """The served tiles are the exported files, byte for byte (a fresh server)."""
    port = free_port()
    proc = Proc(
        [EVSTORE, "--store", url, "-q", "serve", "--port", str(port), "--public-read"], port
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
            return all(c.get("/" + p).content == (root / p).read_bytes() for p in paths)
    finally:
        proc.stop()


def part_l(backend: str, seconds: float, rate: float, every: float) -> dict[str, Any]:
    """Acceptance to an including signed checkpoint (see the module docstring)."""
    import evstore

    out: dict[str, Any] = {"seconds": seconds, "rate": rate, "checkpoint_every": every}
    tmp = Path(tempfile.mkdtemp(prefix="evbench-latency-"))
    try:
        with fresh_store(backend, "loglat") as fs:
            with evstore.open(fs.url) as store:
                store.log.init_key(tmp / "log.key", origin="bench.example/latency")
            port = free_port()
            argv = [EVSTORE, "--store", fs.url, "-q", "serve", "--port", str(port)]
            argv += ["--no-access-log", "--public-read", "--log-key", str(tmp / "log.key")]
            server = Proc([*argv, "--checkpoint-every", str(every)], port)
            seen: list[tuple[float, int]] = []  # (first time seen, checkpoint size)
            stop = threading.Event()

            def poll() -> None:
                with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as c:
                    while not stop.is_set():
                        r = c.get("/checkpoint")
                        now = time.time()
                        if r.status_code == 200:
                            size = int(r.text.split("\n")[1])
                            if not seen or size > seen[-1][1]:
                                seen.append((now, size))
                        stop.wait(0.02)

            poller = threading.Thread(target=poll, daemon=True)
            poller.start()
            accepted: list[tuple[str, float]] = []
            try:
                with evstore.open(fs.url) as store:
                    n = int(seconds * rate)
                    start = time.monotonic()
                    for i in range(n):
                        wait = start + i / rate - time.monotonic()
                        if wait > 0:
                            time.sleep(wait)
                        r = store.put(b"latency bench blob %d %f" % (i, time.time()))
                        accepted.append((r.digest.address, time.time()))
                    deadline = time.monotonic() + every + 30
                    while time.monotonic() < deadline and (not seen or seen[-1][1] < n):
                        time.sleep(0.05)
                    index = {e["entry"]["address"]: e["index"] for e in store.log.entries()}
            finally:
                stop.set()
                poller.join(timeout=15)
                server.stop()
        lat = []
        for address, at in accepted:
            idx = index[address]
            first = next((t for t, size in seen if size > idx), None)
            if first is None:
                raise RuntimeError(f"entry {idx} never in a checkpoint seen")
            lat.append(first - at)
        out.update(
            writes=len(accepted),
            checkpoints_seen=len(seen),
            p50_s=percentile(lat, 50),
            p99_s=percentile(lat, 99),
            max_s=max(lat),
            bound_s=every + 1.0,
        )
        print(
            f"acceptance to an including signed checkpoint ({rate:g} puts/s for {seconds:g} s,"
            f" --checkpoint-every {every:g}): p50 {out['p50_s']:.2f} s, p99 {out['p99_s']:.2f} s,"
            f" max {out['max_s']:.2f} s ({len(seen)} checkpoints; documented bound about"
            f" {out['bound_s']:.0f} s + a round)",
            flush=True,
        )
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
