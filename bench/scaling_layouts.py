"""Index-layout probe (issue 16, scaling): how SQLite's own per-put cost grows with the store.

Usage::

    python bench/scaling_layouts.py                          # 10k and 1M, every layout
    python bench/scaling_layouts.py --sizes 10000,100000     # a quicker run

No evstore code runs here: each layout is a plain ``sqlite3`` database with the store's
pragmas (WAL, ``synchronous = NORMAL``, foreign keys on, the default 2 MiB page cache), filled
with N random 1 KiB blobs, then timed on a put of 2,000 new blobs in one transaction (median
of ``--repeats``), exactly the rows one ``put_many`` writes: the blob row, its root under
``default``, its lease, its log entry (a 300-byte stand-in) and the log's new subtree nodes.

current     the schema of migrations 0001-0007: blobs keyed by their 64-hex address, and
            roots, leases and log entries referring to it by address. Six B-tree indexes
            take a random key per new blob: blobs' address and SHA-256, roots' (name,
            address) and address, leases' address, log entries' address.
sequential  a layout that keeps only the two lookups content addressing needs on random
            keys (blobs' address and SHA-256) and keys every other table by the blob's
            integer row id, which grows with each insert: their inserts append.
floor       the blob rows and their address index alone, no other table or index: no
            content-addressed store on SQLite's B-trees writes less per put.

The result says what a schema change could buy: the growth of the database's own cost from
the smallest size to the largest, per layout. The script measures and prints; it never
asserts. A JSON result goes to bench/results/ (gitignored).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import blake3
from _common import machine_info, median, save_result

__all__ = ["main"]

FILL_BATCH = 50_000
PUT_N = 2_000
EXPIRES = "2026-12-09 00:00:00.000000"

_SCHEMAS = {
    "current": """
        CREATE TABLE blobs (address VARCHAR(64) NOT NULL PRIMARY KEY, sha256 VARCHAR(64)
            NOT NULL, size BIGINT NOT NULL, data BLOB, chunk_set BIGINT);
        CREATE INDEX ix_blobs_sha256 ON blobs (sha256);
        CREATE TABLE roots (name VARCHAR(128) NOT NULL, address VARCHAR(64) NOT NULL
            REFERENCES blobs (address), until DATETIME, PRIMARY KEY (name, address));
        CREATE INDEX ix_roots_address ON roots (address);
        CREATE TABLE leases (address VARCHAR(64) NOT NULL PRIMARY KEY
            REFERENCES blobs (address), expires_at DATETIME NOT NULL);
        CREATE TABLE log_entries (idx BIGINT NOT NULL PRIMARY KEY, address VARCHAR(64)
            NOT NULL, entry BLOB NOT NULL);
        CREATE INDEX ix_log_entries_address ON log_entries (address);
        CREATE TABLE log_nodes (level INTEGER NOT NULL, idx BIGINT NOT NULL, hash BLOB
            NOT NULL, PRIMARY KEY (level, idx));
    """,
    "sequential": """
        CREATE TABLE blobs (id INTEGER PRIMARY KEY, address VARCHAR(64) NOT NULL UNIQUE,
            sha256 VARCHAR(64) NOT NULL, size BIGINT NOT NULL, data BLOB, chunk_set BIGINT);
        CREATE INDEX ix_blobs_sha256 ON blobs (sha256);
        CREATE TABLE roots (name VARCHAR(128) NOT NULL, blob INTEGER NOT NULL
            REFERENCES blobs (id), until DATETIME, PRIMARY KEY (name, blob));
        CREATE INDEX ix_roots_blob ON roots (blob);
        CREATE TABLE leases (blob INTEGER PRIMARY KEY REFERENCES blobs (id),
            expires_at DATETIME NOT NULL);
        CREATE TABLE log_entries (idx INTEGER PRIMARY KEY, blob INTEGER NOT NULL,
            entry BLOB NOT NULL);
        CREATE INDEX ix_log_entries_blob ON log_entries (blob);
        CREATE TABLE log_nodes (level INTEGER NOT NULL, idx BIGINT NOT NULL, hash BLOB
            NOT NULL, PRIMARY KEY (level, idx));
    """,
    "floor": """
        CREATE TABLE blobs (id INTEGER PRIMARY KEY, address VARCHAR(64) NOT NULL UNIQUE,
            sha256 VARCHAR(64) NOT NULL, size BIGINT NOT NULL, data BLOB, chunk_set BIGINT);
        CREATE TABLE log_entries (idx INTEGER PRIMARY KEY);
    """,
}


def _connect(path: Path, layout: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode = WAL", "synchronous = NORMAL", "foreign_keys = ON"):
        conn.execute(f"PRAGMA {pragma}")
    conn.executescript(_SCHEMAS[layout])
    return conn


def _put(conn: sqlite3.Connection, layout: str, rng: random.Random, n: int) -> None:
    """One transaction storing ``n`` new random 1 KiB blobs and their bookkeeping rows."""
    rows = []
    for _ in range(n):
        data = rng.randbytes(1024)
        rows.append((blake3.blake3(data).hexdigest(), hashlib.sha256(data).hexdigest(), data))
    rows.sort()
    conn.execute("BEGIN IMMEDIATE")
    start = conn.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM log_entries").fetchone()[0]
    blob_sql = "INSERT INTO blobs (address, sha256, size, data) VALUES (?, ?, 1024, ?)"
    if layout == "floor":
        conn.executemany(blob_sql, rows)
        conn.execute("COMMIT")
        return
    if layout == "current":
        keys = [(r[0],) for r in rows]
        conn.executemany(blob_sql, rows)
        conn.executemany("INSERT INTO roots (name, address) VALUES ('default', ?)", keys)
        conn.executemany(f"INSERT INTO leases (address, expires_at) VALUES (?, '{EXPIRES}')", keys)
        log_sql = "INSERT INTO log_entries (idx, address, entry) VALUES (?, ?, ?)"
    else:
        ids = [conn.execute(blob_sql + " RETURNING id", r).fetchone()[0] for r in rows]
        keys = [(i,) for i in ids]
        conn.executemany("INSERT INTO roots (name, blob) VALUES ('default', ?)", keys)
        conn.executemany(f"INSERT INTO leases (blob, expires_at) VALUES (?, '{EXPIRES}')", keys)
        log_sql = "INSERT INTO log_entries (idx, blob, entry) VALUES (?, ?, ?)"
    conn.executemany(log_sql, [(start + j, k[0], b"e" * 300) for j, k in enumerate(keys)])
    nodes = [(1, start // 2 + j, b"h" * 32) for j in range(n // 2)]
    nodes += [(2, start // 4 + j, b"h" * 32) for j in range(n // 4)]
    conn.executemany("INSERT INTO log_nodes (level, idx, hash) VALUES (?, ?, ?)", nodes)
    conn.execute("COMMIT")


def measure(layout: str, n: int, repeats: int, seed: int) -> dict[str, Any]:
    """Fill a fresh database of ``layout`` with ``n`` blobs; time puts of PUT_N on it."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix=f"evlayout-{layout}-") as tmp:
        conn = _connect(Path(tmp) / "layout.db", layout)
        try:
            t0 = time.perf_counter()
            for start in range(0, n, FILL_BATCH):
                _put(conn, layout, rng, min(FILL_BATCH, n - start))
            fill_s = time.perf_counter() - t0
            _put(conn, layout, rng, 200)  # warm-up
            walls, cpus = [], []
            for _ in range(repeats):
                w, c = time.perf_counter(), time.process_time()
                _put(conn, layout, rng, PUT_N)
                walls.append((time.perf_counter() - w) / PUT_N * 1e6)
                cpus.append((time.process_time() - c) / PUT_N * 1e6)
        finally:
            conn.close()
    return {
        "layout": layout,
        "n": n,
        "fill_s": fill_s,
        "put_us": walls,
        "put_cpu_us": cpus,
        "put_us_median": median(walls),
        "put_cpu_us_median": median(cpus),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the probe and print (and save) the result."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,1000000", help="comma-separated sizes (blobs)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--layouts", default=",".join(_SCHEMAS), help="comma-separated layouts")
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",")]
    layouts = [x for x in _SCHEMAS if x in args.layouts.split(",")]
    runs = [
        measure(layout, n, args.repeats, seed=1700 + i)
        for layout in layouts
        for i, n in enumerate(sizes)
    ]
    lines = [f"SQLite {sqlite3.sqlite_version}: put cost per blob (us, median; CPU in brackets)"]
    result: dict[str, Any] = {
        "benchmark": "scaling_layouts",
        "sizes": sizes,
        "repeats": args.repeats,
        "machine": machine_info("sqlite"),
        "loadavg": os.getloadavg(),
        "runs": runs,
    }
    for layout in layouts:
        mine = [r for r in runs if r["layout"] == layout]
        for r in mine:
            lines.append(
                f"{layout:11s} {r['n']:>10,d}  {r['put_us_median']:8.1f}"
                f" [{r['put_cpu_us_median']:7.1f}]"
            )
        wall = mine[-1]["put_us_median"] / mine[0]["put_us_median"]
        cpu = mine[-1]["put_cpu_us_median"] / mine[0]["put_cpu_us_median"]
        result[f"{layout}_ratio"], result[f"{layout}_cpu_ratio"] = wall, cpu
        lines.append(f"{layout:11s} {sizes[-1]:,d} vs {sizes[0]:,d}: {wall:.2f}x (CPU {cpu:.2f}x)")
    path = save_result("scaling_layouts", result)
    print("\n".join(lines))
    print(f"result: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
