"""Archive export floor (issue 29): the least work a verified export does, against ``tar``.

Usage::

    python bench/archive_floor.py [--backend sqlite|postgresql] [--objects 10000]
                                  [--size 10240] [--repeat 5]

The store holds ``--objects`` random blobs of ``--size`` bytes (as bench/archive.py). The
floor reads every blob's bytes on the raw driver, 500 rows a statement in SHA-256 order (one
read transaction), hashes each with BLAKE3 and SHA-256 and compares both with its row, and
writes the tar members (the export's own USTAR headers, bytes, padding) with ``writev``: no
closure walk, no manifest, no worker thread. ``tar -cf`` of the extracted files (into a new
file each time) runs after each floor run. It prints the medians of wall and CPU (this
process; tar's child) and their ratios tar / floor: what ``archive export`` could reach if
it did nothing but the work it cannot skip. It measures; it never asserts.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import blake3

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fresh_store, raw_pg, raw_sqlite

import evstore
from evstore.archive.layout import tar_end, tar_header

_ZEROS = bytes(512)


def _fill(url: str, n: int, size: int) -> None:
    with evstore.open(url) as store:
        store.put_many(os.urandom(size) for _ in range(n))


def _floor(query: Any, rows: list[tuple[str, str, int]], out: Path) -> None:
    """Read, verify and write every row's bytes as tar members into ``out``."""
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    off = 0
    for i in range(0, len(rows), 500):
        part = rows[i : i + 500]
        got = dict(query([r[0] for r in part]))
        iov: list[bytes] = []
        for address, sha, size in part:
            data = got[address]
            if (
                len(data) != size
                or blake3.blake3(data).hexdigest() != address
                or hashlib.sha256(data).hexdigest() != sha
            ):
                raise SystemExit(f"blake3:{address} does not match its row")
            iov += [tar_header("blobs/sha256/" + sha, size), data, _ZEROS[: -size % 512]]
        for j in range(0, len(iov), 1024):
            off += os.writev(fd, iov[j : j + 1024])
    os.write(fd, tar_end(off))
    os.close(fd)


def main() -> None:
    """Run the floor and tar alternately and print the medians and ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    ap.add_argument("--objects", type=int, default=10_000)
    ap.add_argument("--size", type=int, default=10 * 1024)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    runs: dict[str, list[float]] = {"floor": [], "tar": [], "floor_cpu": [], "tar_cpu": []}
    with fresh_store(a.backend, "archive-floor") as fs, tempfile.TemporaryDirectory() as tmp:
        _fill(fs.url, a.objects, a.size)
        if fs.backend == "sqlite":
            conn = raw_sqlite(fs.sqlite_path)
            conn.execute("BEGIN")

            def query(addresses: list[str]) -> list[tuple[Any, ...]]:
                marks = ",".join("?" * len(addresses))
                sql = f"SELECT address, data FROM blobs WHERE address IN ({marks})"
                return conn.execute(sql, addresses).fetchall()

            rows = conn.execute("SELECT address, sha256, size FROM blobs").fetchall()
        else:
            conn = raw_pg(fs.pg_conninfo)

            def query(addresses: list[str]) -> list[tuple[Any, ...]]:
                with conn.cursor(binary=True) as cur:
                    cur.execute(
                        "SELECT address, data FROM blobs WHERE address = ANY(%b)", (addresses,)
                    )
                    return cur.fetchall()

            rows = conn.execute("SELECT address, sha256, size FROM blobs").fetchall()
        rows.sort(key=lambda r: r[1])
        work = Path(tmp)
        layout = work / "layout"
        for i in range(a.repeat):
            out = work / "floor.tar"
            c0, t0 = time.process_time(), time.perf_counter()
            _floor(query, rows, out)
            runs["floor"].append(time.perf_counter() - t0)
            runs["floor_cpu"].append(time.process_time() - c0)
            if i == 0:
                layout.mkdir()
                with tarfile.open(out) as tf:
                    tf.extractall(layout, filter="data")
            out.unlink()
            plain = work / "plain.tar"
            plain.unlink(missing_ok=True)
            t = os.times()
            t0 = time.perf_counter()
            subprocess.run(["tar", "-cf", str(plain), "-C", str(layout), "."], check=True)
            runs["tar"].append(time.perf_counter() - t0)
            u = os.times()
            runs["tar_cpu"].append(
                u.children_user + u.children_system - t.children_user - t.children_system
            )
        conn.close()
    med = {k: statistics.median(v) for k, v in runs.items()}
    print({k: [round(x, 3) for x in v] for k, v in runs.items()})
    print(
        f"floor {med['floor']:.3f} s (CPU {med['floor_cpu']:.3f}), tar {med['tar']:.3f} s"
        f" (CPU {med['tar_cpu']:.3f}): ratio tar/floor wall {med['tar'] / med['floor']:.2f},"
        f" CPU {med['tar_cpu'] / med['floor_cpu']:.2f}"
    )


if __name__ == "__main__":
    main()
