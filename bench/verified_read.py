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

On ``--backend postgresql`` the floors run in the same rounds (bench/_pg_floor.py): the
256 chunk rows read with psycopg on a connection of their own, no evstore code, NO hashing,
each of four ways (one statement a chunk, 8 a statement, a server-side cursor, one binary
COPY). The fastest floor's median bounds any PostgreSQL-backed read: ``ceiling / floor`` is
the best ratio a store keeping its bytes in PostgreSQL could reach here; below 0.7 the
target is impossible on this machine (issue 29). Beside them ``copy_hashed``: the COPY
floor with each chunk given to ``Hasher.submit`` (both hashes in worker threads while the
next chunk is read, as evstore does) and the digest taken: the least a verified read from
PostgreSQL must do, against which evstore's own overhead is ``get`` or ``stream`` minus it.

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
from evstore.core.digests import Hasher


def _timed(fn) -> tuple[float, float]:
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def _floor(conn, reader, ref: str, n: int, size: int, hashed: bool = False):
    """A timed floor: all chunks of ``ref`` through ``reader`` (bench/_pg_floor.py), unhashed
    unless ``hashed`` (then each chunk goes to ``Hasher.submit`` and the digest is checked).
    """

    def run() -> None:
        h = Hasher() if hashed else None
        got = 0
        for chunk in reader(conn, ref, n):
            got += len(chunk)
            if h is not None:
                h.submit(chunk)
        assert got == size, (got, size)
        if h is not None:
            assert h.digest().address == ref

    return run


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

        order = [("ceiling", ceiling), ("get", get), ("ceiling2", ceiling2), ("stream", stream)]
        pg = None
        if args.backend == "postgresql":
            import psycopg
            from _pg_floor import READERS

            pg = psycopg.connect(fs.pg_conninfo)
            for name, (reader, n) in READERS.items():
                order.append((name, _floor(pg, reader, ref, n, len(data))))
            order.append(
                ("copy_hashed", _floor(pg, READERS["floor_copy"][0], ref, 0, len(data), True))
            )
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in order}
        try:
            for r in range(args.repeat):  # alternate: each round in the other order
                for name, fn in order if r % 2 == 0 else order[::-1]:
                    runs[name].append(_timed(fn))
        finally:
            if pg is not None:
                pg.close()
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
    floors = {k: v for k, v in med.items() if k.startswith("floor_")}
    if "copy_hashed" in med:
        w, c = med["copy_hashed"]
        print(f"copy_hashed   {w:.3f} s wall / {c:.3f} s CPU; ceiling / it {cw / w:.2f}")
    for name, (w, c) in floors.items():
        print(f"{name:13s} {w:.3f} s wall / {c:.3f} s CPU; ceiling / floor {cw / w:.2f}")
    if floors:
        best = min(floors, key=lambda k: floors[k][0])
        bound = cw / floors[best][0]
        verdict = "impossible here" if bound < 0.7 else "possible"
        print(f"floor = {best}: best reachable ratio {bound:.2f} (target 0.7: {verdict})")
    print(f"load average {open('/proc/loadavg').read().strip()}")
    print("result:", save_result(f"verified-read-{args.backend}", {"mib": args.mib, "median": med}))


if __name__ == "__main__":
    main()
