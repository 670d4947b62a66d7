"""Shared helpers for the benchmarks in bench/: fresh stores, raw connections, timing, results.

Benchmarks measure; they never assert. Every helper here is about making the raw ceiling and
the store run under the same conditions: a fresh store per measurement (a SQLite file in its
own temporary directory, or a PostgreSQL database created for it and dropped after), the same
schema (the raw ceiling writes into the tables the store's own Alembic migration created),
and the same connection settings (the SQLite pragmas of store/db/engine.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "PG_ADMIN_URL",
    "RESULTS_DIR",
    "FreshStore",
    "Meter",
    "fresh_store",
    "machine_info",
    "median",
    "percentile",
    "raw_pg",
    "raw_sqlite",
    "save_result",
    "store_backend_pid",
    "write_result",
]

#: The PostgreSQL server the benchmark creates its databases on (user postgres, no password).
PG_ADMIN_URL = os.environ.get("EVBENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
#: Where result JSON files go (gitignored).
RESULTS_DIR = Path(__file__).resolve().parent / "results"

_counter = 0


@dataclass
class FreshStore:
    """A newly created, migrated, empty store.

    Attributes:
        backend: ``"sqlite"`` or ``"postgresql"``.
        url: the store URL to pass to ``evstore.open``.
        sqlite_path: the SQLite file (None on PostgreSQL).
        pg_conninfo: the libpq URL of the fresh database (None on SQLite).
    """

    backend: str
    url: str
    sqlite_path: Path | None = None
    pg_conninfo: str | None = None


def _pg_admin() -> Any:
    import psycopg

    return psycopg.connect(PG_ADMIN_URL, autocommit=True)


@contextlib.contextmanager
def fresh_store(backend: str, tag: str) -> Iterator[FreshStore]:
    """Create and migrate an empty store; remove it (file or database) afterwards.

    The schema comes from ``evstore.open(url, create=True)`` (the Alembic migration), so the
    raw ceiling writes into exactly the table shape (columns, primary key, SHA-256 index) that
    the store writes into.
    """
    import evstore

    global _counter
    _counter += 1
    if backend == "sqlite":
        tmp = Path(tempfile.mkdtemp(prefix=f"evbench-{tag}-"))
        path = tmp / "store.db"
        fs = FreshStore("sqlite", f"sqlite:///{path}", sqlite_path=path)
        try:
            evstore.open(fs.url, create=True).close()
            yield fs
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    if backend != "postgresql":
        raise ValueError(f"unknown backend {backend!r}")
    name = f"evbench_{os.getpid()}_{_counter}_{tag}".lower().replace("-", "_")
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    fs = FreshStore("postgresql", f"{base}/{name}", pg_conninfo=f"{base}/{name}")
    with _pg_admin() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        evstore.open(fs.url, create=True).close()
        yield fs
    finally:
        with _pg_admin() as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def raw_sqlite(path: Path) -> sqlite3.Connection:
    """A plain sqlite3 connection with the store's pragmas (store/db/engine.py ``_sqlite_events``).

    Autocommit (``isolation_level=None``): the caller issues ``BEGIN IMMEDIATE``/``COMMIT``
    around writes, exactly as the store does.
    """
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=30.0, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 30000")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


class Meter:
    """Wall and CPU seconds of one measurement (``with Meter(pid) as m: ...``; m.wall, m.cpu).

    CPU is this process's CPU time plus, on PostgreSQL, the CPU time of the server backend
    ``pg_pid`` serving the measured connection (from /proc, 10 ms ticks). It leaves out the
    time spent descheduled, so on a machine shared with other work it is the steadier of the
    two; WAL writer, checkpointer and disk waits are not in it.
    """

    def __init__(self, pg_pid: int | None = None) -> None:
        self.pg_pid = pg_pid
        self.wall = self.cpu = 0.0

    def _backend_cpu(self) -> float:
        if self.pg_pid is None:
            return 0.0
        try:
            fields = Path(f"/proc/{self.pg_pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # a server on another host: client CPU only
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __enter__(self) -> Meter:
        import gc

        gc.collect()
        self._b0 = self._backend_cpu()
        self._c0 = time.process_time()
        self._w0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._w0
        self.cpu = time.process_time() - self._c0 + self._backend_cpu() - self._b0


def store_backend_pid(store: Any) -> int | None:
    """The server pid of the one pooled connection a single-threaded Store will use."""
    if store.db.backend != "postgresql":
        return None
    with store.db.engine.connect() as c:
        return int(c.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())


def raw_pg(conninfo: str, *, autocommit: bool = False) -> Any:
    """A plain psycopg 3 connection to the fresh database."""
    import psycopg

    return psycopg.connect(conninfo, autocommit=autocommit)


def median(xs: list[float]) -> float:
    """The median (of repeated timings)."""
    return statistics.median(xs)


def percentile(xs: list[float], p: float) -> float:
    """The ``p``-th percentile (0-100) by the nearest-rank method on the sorted sample."""
    s = sorted(xs)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1))
    return s[k]


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def machine_info(backend: str) -> dict[str, Any]:
    """What the numbers were measured on: CPU, cores, memory, versions, database settings."""
    import blake3
    import psycopg
    import rfc8785  # noqa: F401
    import sqlalchemy

    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in _read("/proc/cpuinfo").splitlines()
            if ln.startswith("model name")
        ),
        platform.processor(),
    )
    mem_kib = next(
        (
            int(ln.split()[1])
            for ln in _read("/proc/meminfo").splitlines()
            if ln.startswith("MemTotal")
        ),
        0,
    )
    info: dict[str, Any] = {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "sha_ni": "sha_ni" in _read("/proc/cpuinfo"),
        "memory_gib": round(mem_kib / 1024 / 1024, 1),
        "kernel": platform.release(),
        "python": sys.version.split()[0],
        "sqlalchemy": sqlalchemy.__version__,
        "psycopg": psycopg.__version__,
        "blake3": getattr(blake3, "__version__", "?"),
        "sqlite": sqlite3.sqlite_version,
        "tmpdir": tempfile.gettempdir(),
    }
    try:
        info["git_commit"] = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).resolve().parent.parent,
        ).stdout.strip()
        info["git_dirty"] = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "--", "store"],
                capture_output=True,
                text=True,
                check=False,
                cwd=Path(__file__).resolve().parent.parent,
            ).stdout.strip()
        )
    except OSError:
        pass
    # The measured code: the core files' content digest, so a result names exactly what ran
    # (the work tree may hold uncommitted changes; git_dirty says so).
    import hashlib

    import evstore

    core = Path(evstore.__file__).resolve().parent
    h = hashlib.sha256()
    for name in (
        "api.py",
        "artifacts.py",
        "blobs.py",
        "canonical.py",
        "db.py",
        "digests.py",
        "kinds.py",
        "refs.py",
        "tables.py",
        "txn.py",
    ):
        with contextlib.suppress(OSError):
            h.update(name.encode() + b"\0" + (core / name).read_bytes())
    info["core_files_sha256"] = h.hexdigest()[:16]
    # Which evstore ran: the work tree, or a snapshot put first on PYTHONPATH.
    info["evstore_path"] = str(core)
    if os.environ.get("EVBENCH_CODE"):
        info["evstore_code"] = os.environ["EVBENCH_CODE"]
    info["loadavg_at_end"] = os.getloadavg()
    if backend == "postgresql":
        with _pg_admin() as admin:
            info["postgresql"] = admin.execute("SHOW server_version").fetchone()[0]
            for name in (
                "fsync",
                "synchronous_commit",
                "shared_buffers",
                "wal_level",
                "max_wal_size",
            ):
                info[f"pg_{name}"] = admin.execute(f"SHOW {name}").fetchone()[0]
    return info


def write_result(backend: str, quick: bool, result: dict[str, Any]) -> Path:
    """Write ``result`` to bench/results/core-BACKEND-MODE-UTCSTAMP.json and return the path."""
    return save_result(f"core-{backend}-{'quick' if quick else 'full'}", result)


def save_result(stem: str, result: dict[str, Any]) -> Path:
    """Write ``result`` to bench/results/STEM-UTCSTAMP.json (sorted, indented); its path."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = RESULTS_DIR / f"{stem}-{stamp}.json"
    path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    return path
