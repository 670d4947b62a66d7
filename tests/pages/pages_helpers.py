"""Shared set-up of the page tests: the examples ingested, hostile evidence, a test client."""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path

import evstore

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "examples"
TOKEN = "read-token-for-tests"


def client(store, *, public_read=False, token=TOKEN, prefix=""):
    """A TestClient of a minimal app serving the pages of ``store`` under ``prefix``."""
    from fastapi import FastAPI

    with warnings.catch_warnings():  # starlette warns about its httpx backend on import
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient

    from evstore.pages import create_router

    app = FastAPI()
    app.include_router(
        create_router(store, authorize=lambda _r, t: t == TOKEN, public_read=public_read),
        prefix=prefix,
    )
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return TestClient(app, headers=headers)


def ingest_examples(store) -> dict[str, str]:
    """Ingest examples/ through the API, as examples/run.sh does; name -> address."""
    out: dict[str, str] = {}
    fx = EX / "fragments"
    clause = (fx / "clause-3.txt").read_bytes()
    rev = "d4dfd3fad5456c856258ee789f3b69c938346814d31896c19374b76af230b9d0"
    store.fragments.ingest_source(clause, "EX-DOC-0001", "clause-3", rev)
    scope = {
        "host_id": "EX-HOST-001",
        "tenant_id": "EX-TENANT-001",
        "authorization_scope_id": "EX-AUTH-SCOPE-001",
    }
    store.fragments.ingest((fx / "fee-extraction-output.json").read_bytes(), scope=scope)
    out["fragment"] = store.fragments.by_document("EX-DOC-0001")[0].address
    out["clause"] = "blake3:" + evstore.digest_bytes(clause).blake3
    mx = EX / "manifests"
    rep = store.ingest(mx / "manifest.json", supplied=[(mx / "rendered-evidence.md").read_bytes()])
    out["manifest"] = rep.results[0].digest.address
    rep = store.ingest(iter(sorted((EX / "packages").glob("*.json"))))
    for r in rep.results:
        out.setdefault(r.kind, r.digest.address)
    out["package"] = next(
        a.address
        for a in store.find("package_id", "7d3e9f10-2a4b-4c6d-8e0f-1a2b3c4d5e6f")
        if a.kind == "package"
    )
    run = store.runs.ingest_bundle(EX / "bundle")
    out["run"] = run.record.digest.address
    out["context"] = run.tree["files"]["evidence-context.json"]["artifact"]
    out["source_document"] = run.tree["evidence_context"]["source_document"]
    out["json"] = store.ingest(EX / "json" / "run-note.json").results[0].digest.address
    return out


HOSTILE = (
    '<script>alert("x")</script> <img src=x onerror=alert(1)> '
    "javascript:alert(1) \"quoted\" 'single' \u202egnp.exe\u202c & </textarea>"
)


def ingest_hostile(store) -> dict[str, object]:
    """Hostile evidence: markup, javascript: links, quotes, bidi controls, a 1 MB line."""
    line = ("A" * 1_048_576).encode()
    text = f"{HOSTILE}\n".encode() + line + b"\n" + f"tail {HOSTILE}".encode()
    start = text.index(b"<script>")
    end = start + len('<script>alert("x")</script>')
    frag = {
        "document_id": 'doc"><script>alert(1)</script>',
        "fragment_id": "javascript:alert(1)",
        "start_offset": start,
        "end_offset": end,
        "quote_sha256": hashlib.sha256(text[start:end]).hexdigest(),
    }
    res = store.fragments.ingest(
        json.dumps(frag).encode(), sources=[(frag["document_id"], frag["fragment_id"], text)]
    )
    fragment = res.results[0].digest.address
    note = {"note": HOSTILE, "link": "javascript:alert(1)", HOSTILE: "key", "big": "B" * 200_000}
    doc = store.ingest(json.dumps(note).encode()).results[0].digest.address
    units = [
        {
            "id": i,
            "kind": "segment",
            "text": HOSTILE if i % 2 else "plain",
            "ref": {"source_id": "hostile", "start_unit_id": i, "end_unit_id": i},
        }
        for i in range(4)
    ]
    src = (
        store.ingest(evstore.Document(json.dumps(units).encode(), kind="source-document"))
        .results[0]
        .digest.address
    )
    return {"fragment": fragment, "json": doc, "source": src, "text": text, "frag": frag}


def big_package(n: int = 500) -> dict:
    """A valid package of ``n`` items (bench/packages.py's generator, items raised to n)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_bench_packages", ROOT / "bench" / "packages.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.ITEMS = n
    doc = mod.make_package(n)
    doc["request"]["budget"]["items"] = n
    return doc
