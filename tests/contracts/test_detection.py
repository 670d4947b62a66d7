"""Detection fails closed (issue 17): near misses of a contract's shape are rejected by that
contract, and a forced ``json`` kind never stores a document a contract kind claims.

Every test runs on both backends (the ``store`` fixture); docs/kinds.md#near-misses.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import evstore
from evstore import Document
from evstore.cli.main import cli
from evstore.core.canonical import dumps
from evstore.objects.kinds import claiming_kind, get_handler

FRAGMENT = {
    "document_id": "doc-1",
    "fragment_id": "frag-1",
    "start_offset": 0,
    "end_offset": 5,
    "quote_sha256": "a" * 64,
}


def _without(name: str) -> dict:
    return {k: v for k, v in FRAGMENT.items() if k != name}


def _manifest(shared_dir: Path, schema: str) -> dict:
    path = shared_dir / "fixtures/orbidocs/fixture.corpus-passage-evidence-manifest.json"
    doc = json.loads(path.read_text())
    doc["schema"] = schema
    return doc


#: (name, document, code, pointer) of near misses: each must be rejected by its contract.
NEAR_MISSES = [
    ("fragment-four-of-five", _without("quote_sha256"), "fragment.shape", "/quote_sha256"),
    (
        "fragment-misspelt",
        {**_without("quote_sha256"), "quote_sha_256": "a" * 64},
        "fragment.shape",
        "/quote_sha256",
    ),
    (
        "fragment-camel-case",
        {**_without("document_id"), "documentId": "doc-1"},
        "fragment.shape",
        "/document_id",
    ),
    (
        "batch-with-near-fragment",
        {"facts": {}, "evidence": [_without("end_offset")]},
        "fragment.shape",
        "/evidence/0/end_offset",
    ),
    ("request-version-1.3", {"version": "1.3", "question": "why?"}, "request.schema", "/version"),
    ("run-record-v2", {"record": "evstore.run-record.v2"}, "run.record-shape", "/record"),
]


def _ingest_error(store: evstore.Store, doc, kind: str | None = None) -> evstore.EvstoreError:
    with pytest.raises(evstore.EvstoreError) as info:
        store.ingest([Document(json.dumps(doc).encode(), "doc.json", kind)])
    return info.value


@pytest.mark.parametrize(("name", "doc", "code", "pointer"), NEAR_MISSES, ids=lambda v: "")
def test_near_miss_is_rejected_by_its_contract(store, snapshot, name, doc, code, pointer):
    before = snapshot(store)
    err = _ingest_error(store, doc)
    assert (err.code, err.pointer) == (code, pointer), name
    assert snapshot(store) == before


def test_misspelt_member_is_named_in_the_message(store):
    err = _ingest_error(store, {**_without("quote_sha256"), "quote_sha_256": "a" * 64})
    assert "quote_sha_256" in err.message


def test_manifest_of_another_version_is_rejected_at_schema(store, snapshot, shared_dir):
    before = snapshot(store)
    for schema in ("corpus-passage-evidence-manifest.v2", "Corpus-Passage-Evidence-Manifest.V1"):
        err = _ingest_error(store, _manifest(shared_dir, schema))
        assert (err.code, err.pointer) == ("manifest.schema", "/schema"), schema
    assert snapshot(store) == before


def test_package_kind_near_miss_is_a_package(store):
    err = _ingest_error(store, {"kind": "Answer-Evidence-Context"})
    assert err.code == "package.schema"


def test_near_units_are_refused_as_ambiguous(store):
    err = _ingest_error(store, [{"id": "u1", "kind": "p", "ref": "r"}])
    assert err.code == "context.kind-ambiguous"


def test_three_fragment_members_stay_plain_json(store):
    # Scenario manifests' evidence references carry three of the five: not a fragment.
    doc = {"evidence": [{"document_id": "d", "fragment_id": "f", "quote_sha256": "a" * 64}]}
    report = store.ingest([Document(json.dumps(doc).encode(), "ref.json")])
    assert [r.kind for r in report.results] == ["json"]


@pytest.mark.parametrize(
    ("doc", "claimed"),
    [
        (FRAGMENT, "fragment"),
        (_without("quote_sha256"), "fragment"),
        ({"schema": "corpus-passage-evidence-manifest.v2"}, "manifest"),
        ({"kind": "answer-evidence-context"}, "package"),
        ({"version": "1.3.0", "question": "q"}, "request"),
        ({"version": "1.3.0", "package_id": "p"}, "envelope"),
        ({"record": "evstore.run-record.v1"}, "run"),
        ([{"id": "u", "kind": "p", "text": "t", "ref": "r"}], "evidence-context"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_forced_json_refuses_a_claimed_document(store, snapshot, doc, claimed):
    before = snapshot(store)
    err = _ingest_error(store, doc, kind="json")
    assert err.code == "kind.claimed" and err.pointer == ""
    assert err.details["kind"] == claimed
    report = store.validate([Document(json.dumps(doc).encode(), "d.json", "json")])
    assert [f.code for f in report.faults] == ["kind.claimed"]
    assert snapshot(store) == before


def test_forced_json_still_stores_plain_json(store):
    report = store.ingest([Document(b'{"note": "hello"}', "n.json", "json")])
    assert [r.kind for r in report.results] == ["json"]


def test_cli_forced_json_exits_1_without_traceback(tmp_path, monkeypatch):
    monkeypatch.delenv("EVSTORE_URL", raising=False)
    url = f"sqlite:///{tmp_path / 's.db'}"
    f = tmp_path / "frag.json"
    f.write_text(json.dumps(_without("quote_sha256")))
    r = CliRunner().invoke(cli, ["--store", url, "--json", "ingest", "--kind", "json", str(f)])
    assert r.exit_code == 1, r.output
    assert json.loads(r.stdout)["error"]["code"] == "kind.claimed"
    assert "Traceback" not in r.output


def test_store_holding_a_claimed_json_document_opens_and_passes_check(store_url):
    # A store written before the near-miss rule: a near-miss fragment stored as kind json.
    canonical = dumps(_without("quote_sha256"))
    with evstore.open(store_url) as s:
        with s.db.engine.begin() as conn:
            from evstore.objects.artifacts import put_artifact

            put_artifact(conn, "json", "rfc8785", canonical)
    with evstore.open(store_url) as s:
        [stored] = s.ls()
        assert stored.kind == "json"
        warnings: list[dict[str, str]] = []
        assert list(s.check(warnings=warnings)) == []
        assert [(w["code"], w["address"]) for w in warnings] == [("kind.claimed", stored.address)]
        assert s.load(stored.address) == json.loads(canonical)  # still read
    audit = get_handler("json").audit(json.loads(canonical), "0" * 64, None)
    assert [w.code for w in audit.warnings] == ["kind.claimed"] and not audit.errors
    r = CliRunner().invoke(cli, ["--store", store_url, "--json", "check"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["ok"] is True and out["faults"] == []
    assert [w["code"] for w in out["warnings"]] == ["kind.claimed"]


def test_claiming_kind_leaves_plain_documents_alone():
    for doc in ({"a": 1}, [], [1, 2], "x", {"schema": "something-else"}, {"version": "2.0"}):
        assert claiming_kind(doc) is None, doc
