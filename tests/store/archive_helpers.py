"""Helpers of the archive tests: a store holding every kind, and layout surgery."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from pathlib import Path

import pytest

import evstore
from evstore.core.canonical import dumps

REPO = Path(__file__).resolve().parents[2]
EX = REPO / "examples"
CRM3 = Path("fixtures/templiqx/examples/crm3/evals")
REVISION = "d4dfd3fad5456c856258ee789f3b69c938346814d31896c19374b76af230b9d0"
SCOPE = {
    "host_id": "EX-HOST-001",
    "tenant_id": "EX-TENANT-001",
    "authorization_scope_id": "EX-AUTH-SCOPE-001",
}


def populate(store: evstore.Store, shared: Path | None) -> None:
    """Everything examples/run.sh stores (every kind), plus the crm3 fixture from ../shared."""
    store.ingest(EX / "json" / "run-note.json")
    store.fragments.ingest_source(
        (EX / "fragments" / "clause-3.txt").read_bytes(), "EX-DOC-0001", "clause-3", REVISION
    )
    store.fragments.ingest(
        (EX / "fragments" / "fee-extraction-output.json").read_bytes(), scope=SCOPE
    )
    store.ingest(
        EX / "manifests" / "manifest.json",
        supplied=[(EX / "manifests" / "rendered-evidence.md").read_bytes()],
    )
    store.ingest(iter(sorted((EX / "packages").glob("*.json"))))
    store.runs.ingest_bundle(EX / "bundle")
    if shared is not None:
        inputs = json.loads((shared / CRM3 / "bli-61-request.json").read_text())["inputs"]
        text = inputs["document_text"].encode()
        store.fragments.ingest(
            (shared / CRM3 / "bli-61-output.json").read_bytes(),
            sources=[("SYN-DOC-0001", "clause-2", text)],
        )


PG_ADMIN = os.environ.get("EVSTORE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def pg_exec(sql: str) -> None:
    """Run one statement on the PostgreSQL server of the tests (as tests/conftest.py does)."""
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(sql)


def pg_database(request: pytest.FixtureRequest, template: str) -> str:
    """URL of a new database made from ``template``, dropped when ``request`` ends."""
    name = f"evt_{uuid.uuid4().hex[:16]}"
    pg_exec(f"CREATE DATABASE {name} TEMPLATE {template}")
    request.addfinalizer(lambda: pg_exec(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    return f"{PG_ADMIN.rsplit('/', 1)[0]}/{name}"


def fresh_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, migrated, empty store on ``backend`` (dropped at the end of the test)."""
    if backend == "sqlite":
        path = tmp_path / f"s-{uuid.uuid4().hex[:8]}.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        return f"sqlite:///{path}"
    return pg_database(request, request.getfixturevalue("pg_template"))


# --------------------------------------------------------------------------- layout surgery


class Layout:
    """An exported layout directory, edited as a hostile party would (digests kept right)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.index = json.loads((root / "index.json").read_bytes())

    def blob(self, hexpart: str) -> Path:
        return self.root / "blobs" / "sha256" / hexpart

    def manifest(self, i: int = 0) -> dict:
        return json.loads(self.blob(self.index["manifests"][i]["digest"][7:]).read_bytes())

    def put(self, data: bytes) -> tuple[str, int]:
        hexpart = hashlib.sha256(data).hexdigest()
        self.blob(hexpart).write_bytes(data)
        return hexpart, len(data)

    def save_manifest(self, doc: dict, i: int = 0) -> None:
        """Write ``doc`` as manifest ``i`` (a new blob), drop the old one, rewrite index.json."""
        entry = self.index["manifests"][i]
        self.blob(entry["digest"][7:]).unlink()
        hexpart, size = self.put(dumps(doc))
        entry["digest"], entry["size"] = "sha256:" + hexpart, size
        (self.root / "index.json").write_bytes(dumps(self.index))

    def find(self, kind: str) -> int:
        """The index position of the first root of ``kind``."""
        for i, e in enumerate(self.index["manifests"]):
            if e["annotations"]["dev.evstore.kind"] == kind:
                return i
        raise AssertionError(f"no root of kind {kind}")
