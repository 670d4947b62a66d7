"""insonic package ingest benchmark (issue 5): evstore against a ceiling measured in the same run.

Usage::

    python bench/packages.py --backend sqlite|postgresql [--quick] [--profile]

Workload: N distinct packages of 200 items each (about 330 KB of JSON apiece, non-ASCII text,
statements, a 200-node context tree, 20 recording revisions per package), ingested with one
``store.ingest`` call (kind ``package``): strict read, structural and semantic validation,
JCS, bindings (package id + 20 revisions), artifact, 43 lookup attributes.

Ceiling (same run, fresh store of the same schema): ``json.loads`` + structural validation
alone (jsonschema-rs ``is_valid``, our schema, formats asserted) + ``rfc8785.dumps`` +
SHA-256/BLAKE3, then raw ``executemany`` of the same rows the store writes (blobs,
artifacts, attrs, bindings) in one transaction. Ratio = ceiling seconds / our seconds.
Target >= 0.5.

The script measures and prints; it never asserts a target. A JSON result goes to
bench/results/ (gitignored).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import json
import pstats
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import blake3
import jsonschema_rs
import rfc8785
from _bookkeeping import write_bookkeeping
from _common import (
    RESULTS_DIR,
    fresh_store,
    machine_info,
    median,
    raw_pg,
    raw_sqlite,
)

import evstore
from evstore.contracts.packages import rules as PR
from evstore.contracts.packages import rules_context as PC
from evstore.contracts.packages import schema as PS
from evstore.contracts.packages import store as P

__all__ = ["main"]

FULL = {"n": 50, "repeats": 3}
QUICK = {"n": 10, "repeats": 1}
ITEMS = 200
RECORDINGS = 20
TARGET = 0.5
WS = "5e0b6a1c-7d2e-4f3a-8b4c-9d0e1f2a3b4c"
TEXT = (
    "Die Entscheidung über den Starttermin fiel nach langer Diskussion; "
    "le comité a confirmé le report à juin, et l'équipe marketing n'était pas informée. "
    "発売日は六月に変更されました。 The budget stays at forty thousand euros, pending review. "
)


def _h(s: str) -> str:
    return hashlib.sha256(s.encode()).hexdigest()


def make_package(k: int) -> dict[str, Any]:
    """Package ``k``: 200 items over 20 recordings of its own, about 330 KB as JSON."""
    recs = [str(uuid.UUID(int=(k << 32) + r + 1, version=4)) for r in range(RECORDINGS)]
    items = []
    for i in range(ITEMS):
        rec = recs[i % RECORDINGS]
        cue = f"cue-{i:04d}"
        text = f"[{k}:{i}] " + TEXT + TEXT[:40]
        items.append(
            {
                "id": f"ev:{rec}:{cue}",
                "reference": {
                    "workspace_id": WS,
                    "recording_id": rec,
                    "recording_revision": str(1 + k % 7),
                    "document_digest": _h(f"{rec}/doc"),
                    "source_digest": _h(f"{rec}/src"),
                    "source_map_digest": _h(f"{rec}/map"),
                    "identity_digest": _h(f"{rec}/id"),
                    "cue_id": cue,
                    "ordinal": str(i),
                    "source": {
                        "start_us": str(i * 5_000_000),
                        "end_us": str(i * 5_000_000 + 4_000_000),
                    },
                    "stream_index": 0,
                    "channel": i % 2,
                },
                "text": text,
                "local_speaker_ids": [f"spk-{i % 4}"],
                "recording_date": "2024-04-02",
                "date_known": True,
                "family": f"fam-{i % RECORDINGS}",
                "lineage": "same accepted source digest",
                "paths": [{"kind": "catalog-filter"}],
                "statements": [
                    {
                        "subject": "launch",
                        "relation": "moved to",
                        "object": "June",
                        "polarity": "positive",
                        "modality": "asserted",
                        "conditions": None,
                        "cue_ids": [cue],
                    }
                ],
                "score": {
                    "relevance": 1000 - i,
                    "independence": 3,
                    "coverage": 2,
                    "contradiction": 0,
                    "total": 1005 - i,
                },
                "reasons": ["question terms matched"],
            }
        )
    question = "When is the launch, and did the budget change?"
    doc = {
        "kind": "answer-evidence-context",
        "schema_version": "1.3.0",
        "id": str(uuid.UUID(int=(1 << 100) + k, version=4)),
        "workspace_id": WS,
        "key": _h(f"key-{k}"),
        "state": "complete",
        "request": {"version": "1.3.0", "question": question, "budget": {"items": 200}},
        "observation": {
            "source_epoch": _h(f"epoch-{k}"),
            "catalog_revision": "9007199254740993",
            "graph_state": "current",
        },
        "items": items,
        "independent_families": RECORDINGS,
        "conflicts": [{"evidence_ids": [items[0]["id"], items[1]["id"]], "reason": "month"}],
        "exclusions": [],
        "diagnostics": [],
        "usage": {
            "rows": 4096,
            "source_bytes": 1,
            "evidence_bytes": 1,
            "edges": 0,
            "rounds": 1,
            "elapsed_ms": 1,
        },
        "context": {
            "contract": "source-extract-v1",
            "question": question,
            "token_accounting": "utf8-byte-upper-bound",
            "bytes": 0,
            "tokens": 0,
            "omitted": 0,
            "nodes": [{"id": "root", "level": "cross-recording", "sources": []}]
            + [
                {
                    "id": f"n{i}",
                    "level": "cue",
                    "parent": "root",
                    "text": it["text"][:60],
                    "sources": [it["id"]],
                }
                for i, it in enumerate(items[:199])
            ],
        },
    }
    n = PC.context_fixed_point(doc["context"])
    doc["context"]["bytes"] = doc["context"]["tokens"] = n
    return doc


def _ceiling_rows(datas: list[bytes], validator: Any) -> dict[str, list[tuple[Any, ...]]]:
    """Structural validation + JCS + digests, and the rows the store would write."""
    rows: dict[str, list[tuple[Any, ...]]] = {
        "blobs": [],
        "artifacts": [],
        "attrs": [],
        "bindings": [],
    }
    for data in datas:
        doc = json.loads(data)
        if not validator.is_valid(doc):
            raise RuntimeError("benchmark package is not valid")
        canonical = rfc8785.dumps(doc)
        address = blake3.blake3(canonical).hexdigest()
        rows["blobs"].append(
            (address, hashlib.sha256(canonical).hexdigest(), len(canonical), canonical, None)
        )
        rows["artifacts"].append((address, "package", PR.CONTRACT_VERSION))
        found = [
            ("package_id", doc["id"]),
            ("workspace_id", doc["workspace_id"]),
            ("key", doc["key"]),
        ]
        binds = [(P.ID_NAMESPACE, doc["id"], address)]
        seen = set()
        for it in doc["items"]:
            r = it["reference"]
            key = f"{r['workspace_id']}/{r['recording_id']}/{r['recording_revision']}"
            if key in seen:
                continue
            seen.add(key)
            found += [("recording", key.rsplit("/", 1)[0]), ("recording_revision", key)]
            value = "/".join(
                r[f]
                for f in (
                    "document_digest",
                    "source_digest",
                    "source_map_digest",
                    "identity_digest",
                )
            )
            binds.append((P.REVISION_NAMESPACE, key, value))
        rows["attrs"] += [
            (n, hashlib.sha256(v.encode()).hexdigest(), v, address, "package")  # value_digest: 0004
            for n, v in found
        ]
        rows["bindings"] += [
            (ns, hashlib.sha256(key.encode()).hexdigest(), key, value, address)
            for ns, key, value in binds
        ]
    return rows


_SQL = {
    "blobs": "INSERT INTO blobs (address, sha256, size, data, chunk_set) VALUES ({})",
    "artifacts": "INSERT INTO artifacts (address, kind, contract_version, accepted_at)"
    " VALUES ({}, CURRENT_TIMESTAMP)",
    "attrs": "INSERT INTO attrs (name, value_digest, value, address, kind) VALUES ({})",
    "bindings": "INSERT INTO bindings (namespace, key_digest, key, value, origin) VALUES ({})",
}
_WIDTH = {"blobs": 5, "artifacts": 3, "attrs": 5, "bindings": 5}


def _writes(rows: dict[str, list[tuple[Any, ...]]]) -> list[Any]:
    """One ``ingest`` log entry per package (its leases, roots and log rows: bench/_bookkeeping)."""
    return [("ingest", r[0], r[1], r[2], "package") for r in rows["blobs"]]


def run_ceiling(backend: str, datas: list[bytes], validator: Any) -> float:
    with fresh_store(backend, "pkg") as fs:
        gc.collect()
        if fs.backend == "sqlite":
            conn = raw_sqlite(fs.sqlite_path)
            t0 = time.perf_counter()
            rows = _ceiling_rows(datas, validator)
            conn.execute("BEGIN IMMEDIATE")
            for table, sql in _SQL.items():
                conn.executemany(sql.format(", ".join("?" * _WIDTH[table])), rows[table])
            write_bookkeeping(conn, "sqlite", _writes(rows))
            conn.execute("COMMIT")
        else:
            conn = raw_pg(fs.pg_conninfo)
            t0 = time.perf_counter()
            rows = _ceiling_rows(datas, validator)
            with conn.cursor() as cur:
                for table, sql in _SQL.items():
                    cur.executemany(sql.format(", ".join(["%s"] * _WIDTH[table])), rows[table])
            write_bookkeeping(conn, "postgresql", _writes(rows))
            conn.commit()
        dt = time.perf_counter() - t0
        conn.close()
        return dt


def run_ours(backend: str, datas: list[bytes], profile: bool = False) -> float:
    docs = [evstore.Document(d, name=f"pkg{i}.json", kind="package") for i, d in enumerate(datas)]
    with fresh_store(backend, "pkg") as fs:
        store = evstore.open(fs.url)
        try:
            gc.collect()
            if profile:
                prof = cProfile.Profile()
                prof.enable()
            t0 = time.perf_counter()
            report = store.ingest(docs)
            dt = time.perf_counter() - t0
            if profile:
                prof.disable()
                pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
            if len(report.results) != len(docs) or any(r.warnings for r in report.results):
                raise RuntimeError("ingest returned unexpected results")
            return dt
        finally:
            store.close()


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print (and save) the result."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=["sqlite", "postgresql"], required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    p = QUICK if args.quick else FULL
    datas = [json.dumps(make_package(k), ensure_ascii=False).encode() for k in range(p["n"])]
    validator = jsonschema_rs.validator_map_for(
        PS.load_schema(), validate_formats=True, offline=True
    )["#"]
    if args.profile:
        run_ours(args.backend, datas, profile=True)
        return 0
    ours: list[float] = []
    ceiling: list[float] = []
    for rep in range(p["repeats"]):
        for variant in ("ours", "ceiling") if rep % 2 else ("ceiling", "ours"):
            if variant == "ours":
                ours.append(run_ours(args.backend, datas))
            else:
                ceiling.append(run_ceiling(args.backend, datas, validator))
    o, c = median(ours), median(ceiling)
    result = {
        "benchmark": "packages",
        "backend": args.backend,
        "quick": args.quick,
        "n": p["n"],
        "items_per_package": ITEMS,
        "input_bytes_mean": sum(map(len, datas)) / len(datas),
        "ours_s": ours,
        "ceiling_s": ceiling,
        "ours_packages_per_s": p["n"] / o,
        "ceiling_packages_per_s": p["n"] / c,
        "ratio": c / o,
        "target": TARGET,
        "machine": machine_info(args.backend),
    }
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = RESULTS_DIR / f"packages-{args.backend}-{'quick' if args.quick else 'full'}-{stamp}.json"
    path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    kb = result["input_bytes_mean"] / 1000
    print(
        f"{args.backend}: {p['n']} packages x {ITEMS} items ({kb:.0f} KB): "
        f"ours {result['ours_packages_per_s']:.1f}/s, "
        f"ceiling {result['ceiling_packages_per_s']:.1f}/s, "
        f"ratio {result['ratio']:.2f} (target >= {TARGET}); {path.name}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
