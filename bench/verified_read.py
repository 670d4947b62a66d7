"""Verified read of one large blob (issue 29, step 5): the API against the hashes alone.

Usage::

    python bench/verified_read.py [--backend sqlite|postgresql] [--mib 256] [--repeat 3]

One blob of ``--mib`` MiB of random bytes is stored (chunked). Then, alternated, median of
``--repeat``, wall and this process's CPU:

    get        ``store.get(ref)``: read, verify size, BLAKE3 and SHA-256, return the bytes
    stream     ``store.open_blob(ref)``: a verification pass, then the chunks
    ceiling    BLAKE3 and SHA-256 of the same bytes in memory, one after the other in one
               thread, in 1 MiB chunks (what a read must at least hash)
    ceiling2   the same two hashes at once, SHA-256 in a second thread (the stricter
               ceiling once reads hash in parallel, issue 29)

Ratio = ceiling seconds / ours (target >= 0.7); the ratio against ceiling2 is printed beside.
The server's HTTP GET is bench/server.py's.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import blake3
from _common import fresh_store, save_result

import evstore


def _timed(fn) -> tuple[float, float]:
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="sqlite", choices=["sqlite", "postgresql"])
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    data = os.urandom(args.mib << 20)
    view = memoryview(data)

    def ceiling() -> None:
        b, s = blake3.blake3(), hashlib.sha256()
        for i in range(0, len(data), 1 << 20):
            b.update(view[i : i + (1 << 20)])
        for i in range(0, len(data), 1 << 20):
            s.update(view[i : i + (1 << 20)])

    def ceiling2() -> None:
        b, s = blake3.blake3(), hashlib.sha256()

        def sha() -> None:
            for i in range(0, len(data), 1 << 20):
                s.update(view[i : i + (1 << 20)])

        t = threading.Thread(target=sha)
        t.start()
        for i in range(0, len(data), 1 << 20):
            b.update(view[i : i + (1 << 20)])
        t.join()

    with fresh_store(args.backend, "vread") as fs, evstore.open(fs.url) as store:
        import io

        ref = store.put(io.BytesIO(data)).digest.address

        def get() -> None:
            assert len(store.get(ref)) == len(data)

        def stream() -> None:
            with store.open_blob(ref) as (_, chunks):
                for _c in chunks:
                    pass

        runs: dict[str, list[tuple[float, float]]] = {
            "get": [],
            "stream": [],
            "ceiling": [],
            "ceiling2": [],
        }
        for _ in range(args.repeat):
            for name, fn in (
                ("ceiling", ceiling),
                ("get", get),
                ("ceiling2", ceiling2),
                ("stream", stream),
            ):
                runs[name].append(_timed(fn))
    med = {
        k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
        for k, v in runs.items()
    }
    cw, cc = med["ceiling"]
    pw = med["ceiling2"][0]
    for name in ("get", "stream"):
        w, c = med[name]
        print(
            f"{name:7s} {w:.3f} s wall / {c:.3f} s CPU; ceiling {cw:.3f} / {cc:.3f}; "
            f"ratio {cw / w:.2f} (CPU {cc / c:.2f}); ceiling2 {pw:.3f} s, ratio {pw / w:.2f}"
        )
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("result:", save_result(f"verified-read-{args.backend}", {"mib": args.mib, "median": med}))


if __name__ == "__main__":
    main()
