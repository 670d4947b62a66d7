"""Instructions per item of an ingest, for comparing two trees on a loaded machine (issue 24).

Usage::

    python bench/instructions.py --workload core-c|fragments --backend sqlite|postgresql \
        [--n 500] [--base 1]

Runs the process twice under valgrind's callgrind: once ingesting ``base`` items and once
``base + n`` items (core c: ~5 KB JSON documents, bench/core.py's ``_make_docs``; fragments:
bench/fragments.py's 1 MiB source and its fragments), each into a fresh store, and prints
(instructions of the larger run - instructions of the smaller) / n: the instructions one
item costs the client process, with the interpreter's start-up and imports cancelled out.
Unlike CPU seconds, the count does not move with the machine's load, so two trees can be
compared on a shared machine (run it with each tree's interpreter). On PostgreSQL the
server's work is not counted: compare the statements separately if a change touched SQL.
Needs ``valgrind`` (Debian). Prints only; asserts nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent


def _load(name: str) -> object:
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _child(workload: str, backend: str, n: int) -> None:
    """Ingest ``n`` items into a fresh store (the process that callgrind counts)."""
    from _common import fresh_store

    import evstore

    with fresh_store(backend, "instr") as fs:
        store = evstore.open(fs.url)
        try:
            if workload == "core-c":
                core = _load("core")
                datas = core._make_docs(n)  # type: ignore[attr-defined]
                docs = [
                    evstore.Document(d, name=f"d{i}.json", kind="json") for i, d in enumerate(datas)
                ]
                store.ingest(docs)
            else:
                fb = _load("fragments")
                data, bounds = fb.make_document()  # type: ignore[attr-defined]
                raw = json.dumps(fb.make_output(data, bounds, n)).encode()  # type: ignore[attr-defined]
                store.fragments.ingest(raw, sources=[(fb.DOCUMENT_ID, fb.FRAGMENT_ID, data)])  # type: ignore[attr-defined]
        finally:
            store.close()


def _count(workload: str, backend: str, n: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={tmp}/cg.out",
                sys.executable,
                __file__,
                "--child",
                "--workload",
                workload,
                "--backend",
                backend,
                "--n",
                str(n),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
    m = re.search(r"Collected : (\d+)", out.stderr)
    if not m:
        raise RuntimeError(out.stderr[-2000:])
    return int(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", choices=["core-c", "fragments"], required=True)
    ap.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--base", type=int, default=1)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(a.workload, a.backend, a.n)
        return 0
    small = _count(a.workload, a.backend, a.base)
    large = _count(a.workload, a.backend, a.base + a.n)
    print(
        json.dumps(
            {
                "workload": a.workload,
                "backend": a.backend,
                "n": a.n,
                "instructions_base": small,
                "instructions_per_item": (large - small) / a.n,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
