"""Build tests/data/store-<revision>.json: every row of a store made from examples/.

Run: python tools/make_upgrade_fixture.py [OUT.json]

It runs the README's main job (examples/run.sh, with the ``evstore`` command of the current
environment) against a fresh SQLite store in a scratch folder, then dumps every table of that
store: the Alembic revision, and for each table its column names and rows, sorted. Bytes are
written as ``{"base64": ...}`` and timestamps as ``{"datetime": ISO 8601}``, so the JSON holds
the stored bytes exactly.

tests/test_upgrade.py loads the dump into an empty store created at that revision (on SQLite
and on PostgreSQL), opens it with the current code, checks it and reads every artifact back.
The committed dump was made by the code of main before issue 9 (one shape, error boundary,
thin CLI): regenerate it only to add a fixture for a newer storage revision, never to make
the upgrade test pass. tests/data/store-0010.json was made by evstore 0.10.0 (main at
dd51606, schema 0010), with roots, leases, a collected object, a signed checkpoint and a
queued entry added (``_retention_and_log``) for revision 0012's rekeying.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import sqlalchemy as sa

ROOT = Path(__file__).resolve().parents[1]


def _cell(value: Any) -> Any:
    if isinstance(value, memoryview):
        value = bytes(value)
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, dt.datetime):
        return {"datetime": value.isoformat()}
    return value


def dump(url: str) -> dict[str, Any]:
    """Every table of the store at ``url`` (alembic_version apart) as JSON-ready rows."""
    engine = sa.create_engine(url)
    try:
        meta = sa.MetaData()
        meta.reflect(engine)
        with engine.connect() as conn:
            revision = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one()
            tables: dict[str, Any] = {}
            for name in sorted(meta.tables):
                if name == "alembic_version":
                    continue
                table = meta.tables[name]
                columns = [c.name for c in table.columns]
                rows = [[_cell(v) for v in r] for r in conn.execute(sa.select(table))]
                rows.sort(key=lambda r: json.dumps(r, sort_keys=True))
                tables[name] = {"columns": columns, "rows": rows}
    finally:
        engine.dispose()
    return {"revision": revision, "tables": tables}


def _big_bytes() -> bytes:
    """2.5 MiB of deterministic bytes: stored in three chunks (the inline limit is 1 MiB)."""
    out = bytearray()
    block = b"evstore upgrade fixture"
    while len(out) < 5 << 19:
        block = hashlib.sha256(block).digest()
        out += block
    return bytes(out[: 5 << 19])


def _package_with_warnings() -> dict[str, Any]:
    """The first example package under a new id with a wrong context.bytes: two warnings."""
    doc = json.loads((ROOT / "examples" / "packages" / "01-package-launch.json").read_text())
    doc["id"] = "0b6e2c4a-9d1f-4e8a-b3c5-7f2d1e0a9c84"
    doc["context"]["bytes"] += 7
    return doc


def _has_log(run: Any) -> bool:
    """Whether this evstore has roots and a signed log (schema revision 0007 and later)."""
    try:
        run("evstore", "log", "--help")
    except subprocess.CalledProcessError:
        return False
    return True


def _retention_and_log(run: Any, scratch: Path, big: Path) -> None:
    """Roots (one held until a time), a collected object, a signed checkpoint, a queued entry.

    What a store of revision 0007 and later holds besides its objects: the rows revision
    0012 rekeys (roots, leases, log entries) in each of their states.
    """
    import blake3

    address = "blake3:" + blake3.blake3(big.read_bytes()).hexdigest()
    run("evstore", "retain", "--root", "published", "--until", "2099-01-01T00:00:00Z", address)
    run("evstore", "retain", "--root", "kept", address)
    gone = scratch / "collected.bin"
    gone.write_bytes(b"stored, released and collected before the upgrade")
    run("evstore", "config", "gc.lease-seconds", "0")
    run("evstore", "put", str(gone))
    gone_ref = "blake3:" + blake3.blake3(gone.read_bytes()).hexdigest()
    run("evstore", "release", "--root", "default", gone_ref)
    run("evstore", "gc")
    run("evstore", "config", "gc.lease-seconds", "3600")
    run("evstore", "log", "init-key", str(scratch / "log.key"))
    run("evstore", "log", "checkpoint", "--key", str(scratch / "log.key"))
    late = scratch / "late.bin"
    late.write_bytes(b"put after the last checkpoint: its entry is still queued")
    run("evstore", "put", str(late))


def _env(scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["EVSTORE_URL"] = f"sqlite:///{scratch / 'store.db'}"
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def build(out: Path) -> dict[str, Any]:
    """Run examples/run.sh against a scratch SQLite store and write its dump to ``out``."""
    with tempfile.TemporaryDirectory() as scratch:
        url = f"sqlite:///{Path(scratch) / 'store.db'}"
        env = _env(Path(scratch))

        def run(*args: str) -> None:
            subprocess.run(args, cwd=scratch, env=env, check=True, stdout=subprocess.DEVNULL)

        run("bash", str(ROOT / "examples" / "run.sh"))
        # What examples/ does not reach: a chunked blob, a recorded warning, a changed setting.
        big = Path(scratch) / "big.bin"
        big.write_bytes(_big_bytes())
        run("evstore", "put", str(big))
        warned = Path(scratch) / "package-with-warnings.json"
        warned.write_text(json.dumps(_package_with_warnings(), indent=1))
        run("evstore", "ingest", str(warned))
        run("evstore", "config", "manifests.accept_unverified_phase", "true")
        if _has_log(run):
            _retention_and_log(run, Path(scratch), big)
        run("evstore", "check")
        data = dump(url)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return data


def main(argv: list[str]) -> int:
    """Write the dump (default tests/data/store-<revision>.json) and print what it holds."""
    if argv:
        out = Path(argv[0])
        data = build(out)
    else:
        tmp = ROOT / "tests" / "data" / "store-new.json"
        data = build(tmp)
        out = tmp.with_name(f"store-{data['revision']}.json")
        tmp.replace(out)
    kinds = sorted({row[1] for row in data["tables"]["artifacts"]["rows"]})
    counts = {name: len(t["rows"]) for name, t in data["tables"].items()}
    print(f"{out}: revision {data['revision']}, rows {counts}, kinds {kinds}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
