"""Probes of bench/core.py: our path one layer at a time (``python bench/core.py --probe a|c|d``).

Each replays one step of our path at a time on the part's data, so a proposed fix can be
sized before it is made (the causes in docs/benchmarks.md). They call private core functions
on purpose; a probe that no longer matches the core fails loudly and is updated or dropped,
it never changes a result.
"""

from __future__ import annotations

import gc
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import blake3
import rfc8785
from _common import RESULTS_DIR, fresh_store, machine_info, percentile, raw_pg, raw_sqlite
from _common import Meter as _Meter
from core import _BLOB_COLS, _make_docs, _pg_copy, _row

import evstore

__all__ = ["probe_a", "probe_c", "probe_d", "run_probe"]


def _probe_times(variants: dict[str, Any], repeats: int = 2) -> dict[str, list[float]]:
    """Wall seconds per repeat; a variant that returns a float reports its own timing."""
    out: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(repeats):
        for name, fn in variants.items():
            with _Meter() as m:
                own = fn()
            out[name].append(own if isinstance(own, float) else m.wall)
    return out


def probe_a(backend: str, p: dict[str, Any]) -> dict[str, Any]:
    """Pieces of ``blobs.put_many`` for part (a), each in a fresh store."""
    from evstore.core.digests import digest_bytes
    from evstore.objects import blob_inserts as bi
    from evstore.objects import blobs as eb

    rng = random.Random(1)
    items = [rng.randbytes(1024) for _ in range(p["a_n"])]
    rows = [_row(d) for d in items]
    addrs = [r[0] for r in rows]
    cols = ("address", "sha256", "size", "data", "chunk_set")
    dict_rows = [dict(zip(cols, r, strict=True)) for r in rows]

    def in_store(work: Any) -> Any:
        def run() -> float:  # the store's creation stays outside the timing
            with fresh_store(backend, "pa") as fs:
                store = evstore.open(fs.url)
                try:
                    with _Meter() as m:
                        store.db.run_transaction(work)
                    return m.wall
                finally:
                    store.close()

        return run

    def pg_direct_or_staged(staged: bool) -> Any:
        def work(conn: Any) -> None:
            dc = conn.connection.dbapi_connection
            if staged:
                bi.copy_blobs(conn, dict_rows)
            else:
                _pg_copy(dc, rows)

        return in_store(work)

    variants: dict[str, Any] = {
        "digest_bytes of every item": lambda: [digest_bytes(d) for d in items],
        "blobs.existing (IN lists of 500)": in_store(lambda c: eb._existing(c, addrs)),
        "store.put_many (all of it)": in_store(lambda c: eb.put_many(c, items)),
    }
    if backend == "sqlite":
        sql = f"INSERT INTO blobs ({_BLOB_COLS}) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
        variants["insert_ignore(dict rows) via SQLAlchemy"] = in_store(
            lambda c: eb.insert_ignore(c, eb.blobs, dict_rows)
        )
        variants["exec_driver_sql(tuples), same statement"] = in_store(
            lambda c: c.exec_driver_sql(sql, rows)
        )
    else:
        variants["blob_inserts.copy_blobs (stage + INSERT SELECT)"] = pg_direct_or_staged(True)
        variants["binary COPY straight into blobs"] = pg_direct_or_staged(False)

        def any_array(c: Any) -> None:
            with c.connection.dbapi_connection.cursor() as cur:
                cur.execute(
                    "SELECT address, sha256, size, chunk_set FROM blobs WHERE address = ANY(%s)",
                    (addrs,),
                )
                cur.fetchall()

        variants["existence by one = ANY(array) query"] = in_store(any_array)
    return _probe_times(variants)


def probe_c(backend: str, p: dict[str, Any]) -> dict[str, Any]:
    """Part (c): strict reader pieces, and the write half per document vs one batch."""
    from evstore.core import canonical
    from evstore.objects import artifacts as ea

    datas = _make_docs(p["c_n"])
    texts = [d.decode() for d in datas]
    values = [json.loads(d) for d in datas]
    cans = [rfc8785.dumps(v) for v in values]
    walk = canonical._walk

    def loads_without_walk() -> None:
        canonical._walk = lambda _v: None
        try:
            [canonical.loads(d) for d in datas]
        finally:
            canonical._walk = walk

    def writes(batched: bool) -> Any:
        def run() -> float:  # the store's creation stays outside the timing
            with fresh_store(backend, "pc") as fs:
                store = evstore.open(fs.url)
                try:
                    with _Meter() as m:
                        if batched:
                            items = [(c, (), (), ()) for c in cans]
                            store.db.run_transaction(
                                lambda conn: ea.put_artifacts(conn, "json", "rfc8785", items)
                            )
                        else:
                            store.db.run_transaction(
                                lambda conn: [
                                    ea.put_artifact(conn, "json", "rfc8785", c) for c in cans
                                ]
                            )
                    return m.wall
                finally:
                    store.close()

        return run

    variants = {
        "stdlib json.loads": lambda: [json.loads(d) for d in datas],
        "canonical.loads (strict reader)": lambda: [canonical.loads(d) for d in datas],
        "canonical.loads without _walk": loads_without_walk,
        "gate scans (bracket count, \\ud escape)": lambda: [
            (t.count("[") + t.count("{"), "\\ud" in t or "\\uD" in t) for t in texts
        ],
        "rfc8785.dumps (of values parsed beforehand)": lambda: [rfc8785.dumps(v) for v in values],
        "writes: put_artifact per document": writes(False),
        "writes: one put_artifacts call": writes(True),
    }
    out: dict[str, Any] = _probe_times(variants)
    # Garbage collector time inside one real ingest call.
    docs = [evstore.Document(d, name=f"doc{i}.json", kind="json") for i, d in enumerate(datas)]
    spent = [0.0, 0]
    t_start = [0.0]

    def cb(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            t_start[0] = time.perf_counter()
        else:
            spent[0] += time.perf_counter() - t_start[0]
            spent[1] += info["generation"] == 2

    with fresh_store(backend, "pc") as fs:
        store = evstore.open(fs.url)
        try:
            gc.collect()
            gc.callbacks.append(cb)
            with _Meter() as m:
                store.ingest(docs)
        finally:
            gc.callbacks.remove(cb)
            store.close()
    out["ingest (one call)"] = [m.wall]
    out["gc time inside that ingest"] = [spent[0]]
    out["gc full collections inside that ingest"] = [float(spent[1])]
    return out


def probe_d(backend: str, p: dict[str, Any]) -> dict[str, Any]:
    """Part (d): ``get`` with one layer removed at a time, interleaved per operation (p50, p99)."""
    import sqlalchemy as sa

    from evstore.core.refs import parse_ref
    from evstore.db.tables import blobs as tb

    rng = random.Random(4)
    items = [rng.randbytes(1024) for _ in range(p["d_pop"])]
    one = sa.select(tb.c.sha256, tb.c.size, tb.c.chunk_set, tb.c.data).where(
        tb.c.address == sa.bindparam("a")
    )
    data_only = sa.select(tb.c.data).where(tb.c.address == sa.bindparam("a"))
    ph = "?" if backend == "sqlite" else "%s"
    sql = f"SELECT sha256, size, chunk_set, data FROM blobs WHERE address = {ph}"

    def check(data: Any, a: str) -> bytes:
        if blake3.blake3(data).hexdigest() != a:
            raise RuntimeError("probe read mismatch")
        return bytes(data)

    with fresh_store(backend, "pd") as fs:
        store = evstore.open(fs.url)
        db = store.db
        addrs = [r.digest.blake3 for r in store.put_many(items)]
        picks = [rng.choice(addrs) for _ in range(p["d_n"])]
        rawc = (
            raw_sqlite(fs.sqlite_path)
            if backend == "sqlite"
            else raw_pg(fs.pg_conninfo, autocommit=True)
        )

        def two_prebuilt(a: str) -> bytes:
            with db.read() as conn:
                conn.execute(one, {"a": parse_ref("blake3:" + a).hex}).first()
                return check(conn.execute(data_only, {"a": a}).first()[0], a)

        def one_prebuilt(a: str) -> bytes:
            with db.read() as conn:
                return check(conn.execute(one, {"a": parse_ref("blake3:" + a).hex}).first()[3], a)

        def one_driver_sql(a: str) -> bytes:
            with db.read() as conn:
                return check(conn.exec_driver_sql(sql, (a,)).first()[3], a)

        def pooled_dbapi(a: str) -> bytes:
            dc = db.engine.raw_connection()
            try:
                drv = dc.driver_connection
                if backend == "postgresql":
                    drv.autocommit = True
                row = drv.execute(sql, (parse_ref("blake3:" + a).hex,)).fetchone()
                if backend == "postgresql":
                    drv.autocommit = False
            finally:
                dc.close()
            return check(row[3], a)

        def raw(a: str) -> bytes:
            return check(
                rawc.execute(f"SELECT data FROM blobs WHERE address = {ph}", (a,)).fetchone()[0], a
            )

        variants = {
            "store.get (today)": lambda a: store.get("blake3:" + a),
            "two prebuilt statements in db.read()": two_prebuilt,
            "one prebuilt statement in db.read()": one_prebuilt,
            "one exec_driver_sql in db.read()": one_driver_sql,
            "pooled DBAPI connection, one statement": pooled_dbapi,
            "raw ceiling": raw,
        }
        try:
            for fn in variants.values():
                for a in addrs[:200]:
                    fn(a)
            lat: dict[str, list[float]] = {k: [] for k in variants}
            names = list(variants)
            for i, a in enumerate(picks):
                for name in names if i % 2 == 0 else names[::-1]:
                    t0 = time.perf_counter_ns()
                    variants[name](a)
                    lat[name].append((time.perf_counter_ns() - t0) / 1000)
        finally:
            rawc.close()
            store.close()
    return {k: [percentile(v, 50), percentile(v, 99)] for k, v in lat.items()}


def run_probe(part: str, backend: str, p: dict[str, Any]) -> None:
    res = {"a": probe_a, "c": probe_c, "d": probe_d}[part](backend, p)
    unit = "p50 / p99 us" if part == "d" else "seconds per repeat"
    print(f"probe {part} ({backend}; {unit}):")
    for k, v in res.items():
        print(f"  {k:<48}" + " ".join(f"{x:9.3f}" for x in v))
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"probe-{backend}-{part}.json"
    path.write_text(
        json.dumps({"unit": unit, "results": res, "machine": machine_info(backend)}, indent=2)
    )
    print(f"result: {path}")
