"""OCI distribution benchmark (issue 27): skopeo pulling from ``evstore serve`` vs a local copy.

Usage::

    python bench/oci.py [--backend sqlite|postgresql] [--objects 1000] [--size 10240]
                        [--repeat 3] [--only pull|push] [--timeout 3600]
                        [--client skopeo|oras] [--jobs 4]

The store holds ``--objects`` random blobs of ``--size`` bytes and one ``json`` document
naming them all (its closure: ``--objects`` + 1 objects), retained under the root
``bench/closure``, and is served by ``evstore serve --public-read`` on 127.0.0.1 (a
subprocess). The same closure is exported once as a layout directory. Each variant runs
``--repeat`` times, interleaved, median taken:

    pull     ``skopeo copy docker://127.0.0.1:PORT/bench/closure@DIGEST oci:OUT``: the manifest
             and every blob over HTTP, each object read from the database and verified on
             read by the server, hashed and written by skopeo.
    ceiling  ``skopeo copy oci:LAYOUT:ROOT oci:OUT`` of the exported layout: the same tool,
             the same blobs, the same writes, no server. Ratio ceiling s / pull s, target
             >= 0.5.
    start-up the same two commands for a closure of one blob (a second root): the fixed
             cost of one skopeo run, stated beside the per-object figures.
    push     ``skopeo copy oci:LAYOUT:ROOT docker://127.0.0.1:PORT/bench/pushed:ROOT``
             into an empty store served with an ingest token (a new store and server each
             run): every blob uploaded, spooled, then the manifest imported with every
             check of ``archive import``.
    import   ``evstore archive import TAR`` of the same closure exported as a tar, into an
             empty store (a new one each run). Ratio import s / push s, target >= 0.7.

With ``--client oras`` the client is bench/oci_oras.py instead of skopeo: the ``oras`` SDK
moving ``--jobs`` layers at once (pull into a layout, every blob hashed and checked; push of
every blob, then the manifest), and the pull's ceiling is the same script copying the layout
on disk with the same threads (read, hash, write: no server). The push's ceiling is still
``archive import``.

Besides the wall clock, each run records CPU seconds: the client's (skopeo, or the import
process: its own and its children's), and the server's (``utime + stime`` of the ``evstore
serve`` process from ``/proc``, before and after the command), so the per-object cost of
each side can be followed as the closure grows. A command still running after ``--timeout``
seconds is killed and recorded as unfinished (``null``), with the CPU it had used.

It measures and prints; it never asserts. A JSON result goes to bench/results/ (gitignored).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS_DIR, fresh_store, machine_info

import evstore

ROOT = "bench/closure"
ONE = "bench/one"
EVSTORE = str(Path(sys.executable).with_name("evstore"))
ORAS = str(Path(__file__).resolve().with_name("oci_oras.py"))


def _fill(url: str, n: int, size: int) -> tuple[str, str]:
    """``n`` random blobs and a json document naming them (retained); one more blob alone."""
    with evstore.open(url) as store:
        puts = store.put_many(os.urandom(size) for _ in range(n))
        (result,) = store.ingest({"objects": [p.digest.address for p in puts]}).results
        store.retention.retain([result.digest.address], ROOT)
        single = store.put(os.urandom(size)).digest.address
        store.retention.retain([single], ONE)
        return result.digest.address, single


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(url: str, port: int, log: Path, public: bool = True) -> subprocess.Popen:
    # a push target is served without --public-read (reads need a token there too)
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            [EVSTORE, "--store", url, "serve", "--no-access-log"]
            + (["--public-read"] if public else [])
            + ["--host", "127.0.0.1", "--port", str(port)],
            stdout=fh,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"evstore serve did not listen: {log.read_text()}")


#: Seconds one command may run before it is killed and recorded as unfinished (--timeout).
TIMEOUT_S = 3600.0


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) the process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _timed(
    args: list[str], server: int | None = None, env: dict[str, str] | None = None
) -> dict[str, float | None]:
    """Run ``args``: ``{"wall": s or None (killed at TIMEOUT_S), "cpu": s, "server_cpu": s}``.

    ``cpu`` is the command's (and its children's) CPU seconds; ``server_cpu`` that of the
    process ``server`` over the same time (absent when None).
    """
    c0, s0 = _children_cpu(), None if server is None else _cpu(server)
    t0 = time.perf_counter()
    wall: float | None
    try:
        done = subprocess.run(
            args,
            capture_output=True,
            timeout=TIMEOUT_S,
            check=False,
            env=None if env is None else {**os.environ, **env},
        )
        wall = time.perf_counter() - t0
    except subprocess.TimeoutExpired:  # killed and waited for: its CPU is counted below
        done, wall = None, None
    out: dict[str, float | None] = {"wall": wall, "cpu": _children_cpu() - c0}
    if server is not None and s0 is not None:
        out["server_cpu"] = _cpu(server) - s0
    if done is not None and done.returncode != 0:
        raise SystemExit(f"{args[:3]} failed: {done.stderr.decode(errors='replace')[-2000:]}")
    return out


def _push(
    a: argparse.Namespace, skopeo: str, layout: Path, root: str, manifest: str, work: Path
) -> dict[str, float | None]:
    """The client pushing the closure ``root`` (its manifest ``manifest``) of ``layout``
    into an empty store (:func:`_timed`).
    """
    backend = a.backend
    with fresh_store(backend, "ocipush") as dst:
        with evstore.open(dst.url) as store:
            token = evstore.create_token(store, "ingest", "bench")["token"]
        port = _port()
        server = _serve(dst.url, port, work / "push.log", public=False)
        try:
            if a.client == "oras":
                return _timed(
                    [sys.executable, ORAS, "push", "--host", f"127.0.0.1:{port}"]
                    + ["--name", "bench/pushed", "--layout", str(layout)]
                    + ["--manifest", manifest, "--tag", root[7:], "--jobs", str(a.jobs)],
                    server.pid,
                    env={"EVSTORE_TOKEN": token},
                )
            return _timed(
                [skopeo, "--insecure-policy", "copy", "-q", "--dest-tls-verify=false"]
                + [f"--dest-creds=evstore:{token}", f"oci:{layout}:{root[7:]}"]
                + [f"docker://127.0.0.1:{port}/bench/pushed:{root[7:]}"],
                server.pid,
            )
        finally:
            server.terminate()
            server.wait(timeout=60)


def _import(backend: str, tar: Path) -> dict[str, float | None]:
    """``evstore archive import`` of ``tar`` into an empty store (:func:`_timed`)."""
    with fresh_store(backend, "ociimport") as dst:
        return _timed([EVSTORE, "--store", dst.url, "archive", "import", str(tar)])


def _median(values: list[float | None]) -> float | None:
    """The median, or None when a run did not finish (a killed run is no number to rank)."""
    if not values or any(v is None for v in values):
        return None
    return statistics.median(v for v in values if v is not None)


def main() -> None:
    """Run the benchmark and print the medians and the ratio."""
    global TIMEOUT_S
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    ap.add_argument("--objects", type=int, default=1000)
    ap.add_argument("--size", type=int, default=10 * 1024, help="bytes per object")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=["pull", "push"], default=None, help="one side only")
    ap.add_argument("--client", choices=["skopeo", "oras"], default="skopeo")
    ap.add_argument("--jobs", type=int, default=4, help="layers at once (--client oras)")
    ap.add_argument(
        "--timeout", type=float, default=TIMEOUT_S, help="seconds before a command is killed"
    )
    a = ap.parse_args()
    TIMEOUT_S = a.timeout
    skopeo = shutil.which("skopeo")
    if skopeo is None:
        raise SystemExit("skopeo is not installed (apt-get install skopeo)")
    keys = ("pull", "ceiling", "pull_one", "ceiling_one", "push", "import")
    runs: dict[str, list[dict[str, float | None]]] = {k: [] for k in keys}
    load0 = os.getloadavg()
    with fresh_store(a.backend, "oci") as src, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        root, single = _fill(src.url, a.objects, a.size)
        with evstore.open(src.url) as store:
            report = evstore.export_archive(store, [root, single], work / "layout")
            evstore.export_archive(store, [root], work / "closure.tar")
        digests = {r["address"]: r["manifest"] for r in report.roots}
        port = _port()
        server = _serve(src.url, port, work / "serve.log")
        base = [skopeo, "--insecure-policy", "copy", "-q"]
        try:
            for i in range(a.repeat):
                if a.only != "pull":
                    layout = work / "layout"
                    runs["push"].append(_push(a, skopeo, layout, root, digests[root], work))
                    runs["import"].append(_import(a.backend, work / "closure.tar"))
                if a.only == "push":
                    continue
                for key, name, address in (("", ROOT, root), ("_one", ONE, single)):
                    digest, layout_ref = digests[address], address[7:]
                    src_ref = f"docker://127.0.0.1:{port}/{name}@{digest}"
                    pulled = work / f"pull{key}{i}"
                    copied = work / f"copy{key}{i}"
                    if a.client == "oras":
                        common = ["--manifest", digest, "--jobs", str(a.jobs)]
                        pull_args = [sys.executable, ORAS, "pull", *common, "--out", str(pulled)]
                        pull_args += ["--host", f"127.0.0.1:{port}", "--name", name]
                        copy_args = [sys.executable, ORAS, "copy", *common, "--out", str(copied)]
                        copy_args += ["--layout", str(work / "layout")]
                    else:
                        pull_args = [*base, "--src-tls-verify=false", src_ref, f"oci:{pulled}"]
                        copy_args = [*base, f"oci:{work / 'layout'}:{layout_ref}", f"oci:{copied}"]
                    runs["pull" + key].append(_timed(pull_args, server.pid))
                    runs["ceiling" + key].append(_timed(copy_args))
                    shutil.rmtree(pulled, ignore_errors=True)
                    shutil.rmtree(copied, ignore_errors=True)
        finally:
            server.terminate()
            server.wait(timeout=60)
    n = a.objects + 1
    # medians of the wall clock (None: a run was killed) and of each CPU measure
    med = {k: _median([r["wall"] for r in v]) for k, v in runs.items() if v}
    cpu = {
        f"{k}_{what}": _median([r[what] for r in v])
        for k, v in runs.items()
        if v
        for what in ("cpu", "server_cpu")
        if what in v[0]
    }
    per_object = {
        k: (med[k] - med[k + "_one"]) / (n - 1) * 1000
        for k in ("pull", "ceiling")
        if med.get(k) is not None and med.get(k + "_one") is not None
    }
    # CPU per object of the whole closure (start-up included), ms: how each side grows
    cpu_per_object = {k: v / n * 1000 for k, v in cpu.items() if v is not None}

    def ratio(num: str, den: str) -> float | None:
        x, y = med.get(num), med.get(den)
        return None if x is None or y is None else x / y

    result = {
        "benchmark": "oci",
        "backend": a.backend,
        "objects": a.objects,
        "size": a.size,
        "repeat": a.repeat,
        "client": a.client,
        "jobs": a.jobs if a.client == "oras" else None,
        "timeout_s": TIMEOUT_S,
        "runs_s": runs,
        "median_s": med,
        "cpu_median_s": cpu,
        "cpu_per_object_ms": cpu_per_object,
        "per_object_ms": per_object,
        "ratio_ceiling_over_pull": ratio("ceiling", "pull"),
        "ratio_import_over_push": ratio("import", "push"),
        "loadavg_before_after": [load0, os.getloadavg()],
        "machine": machine_info(a.backend),
    }
    for k, v in med.items():
        took = f"{v:8.3f} s" if v is not None else f"unfinished in {TIMEOUT_S:.0f} s"
        print(f"{k:12s} {took}")
    for k, v in per_object.items():
        print(f"{k:12s} {v:8.3f} ms per object beyond the start-up ({k}_one)")
    for k, v in cpu.items():
        if v is not None:
            print(f"{k:22s} {v:8.3f} s CPU, {v / n * 1000:7.3f} ms per object")
    for key, target in (("ratio_ceiling_over_pull", 0.5), ("ratio_import_over_push", 0.7)):
        if result[key] is not None:
            print(f"{key} {result[key]:.2f}  target >= {target}")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    client = "" if a.client == "skopeo" else f"{a.client}-"
    path = RESULTS_DIR / f"oci-{client}{a.backend}-{stamp}.json"
    path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(f"result: {path}")


if __name__ == "__main__":
    main()
