"""Issue 17, "Faults are named precisely": each fault at its place, with its own code, and
messages that teach. Every test runs on SQLite and PostgreSQL (the `store` fixture)."""

from __future__ import annotations

import hashlib
import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import evstore
from evstore import Document
from evstore.cli.main import cli
from evstore.core.canonical import dumps, loads

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
PACKAGE = (EXAMPLES / "packages" / "01-package-launch.json").read_bytes()
ENVELOPE = (EXAMPLES / "packages" / "04-envelope-launch.json").read_bytes()
MANIFEST = (EXAMPLES / "manifests" / "manifest.json").read_bytes()
CONTENT = (EXAMPLES / "manifests" / "rendered-evidence.md").read_bytes()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _faults(report: Any) -> list[tuple[str, str]]:
    return [(f.code, f.pointer) for f in report.faults]


def _doc(value: Any, kind: str | None = None, name: str = "d.json") -> Document:
    return Document(json.dumps(value, ensure_ascii=False).encode(), name=name, kind=kind)


# --------------------------------------------------------------------------- packages


def test_unexpected_package_member_is_reported_at_its_own_pointer(store, snapshot):
    pkg = loads(PACKAGE)
    pkg["extra"] = 1
    pkg["items"][1]["stray"] = True
    report = store.validate([_doc(pkg)])
    assert ("package.schema", "/extra") in _faults(report)
    assert ("package.schema", "/items/1/stray") in _faults(report)
    assert all(f.pointer != "" for f in report.faults), _faults(report)
    extra = next(f for f in report.faults if f.pointer == "/extra")
    assert extra.details["unexpected"] == ["extra"]
    assert extra.details["keyword"] == "additionalProperties"
    before = snapshot(store)
    with pytest.raises(evstore.ContractError) as exc:
        store.ingest([_doc(pkg)])
    assert exc.value.code == "package.schema"
    assert exc.value.pointer in ("/extra", "/items/1/stray")
    assert snapshot(store) == before


# --------------------------------------------------------------------------- fragments


def _fragment(start: int, end: int, quote: bytes) -> dict[str, Any]:
    return {
        "document_id": "DOC-17",
        "fragment_id": "f-1",
        "start_offset": start,
        "end_offset": end,
        "quote_sha256": _sha(quote),
    }


def test_ill_formed_source_is_named_before_an_offset_fault(store, snapshot):
    source = b"ab\xff"  # not UTF-8; the fragment does not fit it either (end 10 > 3 bytes)
    frag = _fragment(0, 10, b"a")
    options = {"sources": [("DOC-17", "f-1", source)]}
    report = store.validate([_doc(frag)], options=options, supplied=[source])
    codes = [c for c, _ in _faults(report)]
    assert "fragment.range" not in codes
    assert codes and set(codes) == {"fragment.source-encoding"}, codes
    before = snapshot(store)
    with pytest.raises(evstore.ContractError) as exc:
        store.ingest([_doc(frag)], options=options, supplied=[source])
    assert exc.value.code == "fragment.source-encoding"
    assert exc.value.details["byte"] == 2
    assert snapshot(store) == before


def test_quote_digest_of_another_normal_form_says_so(store):
    source = unicodedata.normalize("NFC", "Le café ouvre.").encode()
    start = source.index("café".encode())
    end = start + len("café".encode())
    nfd = unicodedata.normalize("NFD", "café").encode()
    assert nfd != source[start:end]
    store.fragments.ingest_source(source, "DOC-17", "f-1", None)
    with pytest.raises(evstore.ContractError) as exc:
        store.ingest([_doc(_fragment(start, end, nfd))])
    err = exc.value
    assert err.code == "fragment.quote-mismatch"
    assert err.details["normalization"] == "NFD"
    assert "normalisation NFD" in err.message and "NFC vs NFD" in err.message
    # A plain mismatch stays plain.
    with pytest.raises(evstore.ContractError) as exc:
        store.ingest([_doc(_fragment(start, end, b"other"))])
    assert "normalization" not in exc.value.details
    assert "normalisation" not in exc.value.message


def test_citation_quote_in_another_normal_form_says_so(store):
    pkg = loads(PACKAGE)
    env = loads(ENVELOPE)
    cite = env["claims"][0]["citations"][0]
    item = next(i for i in pkg["items"] if i["id"] == cite["evidence_id"])
    item["text"] += " " + unicodedata.normalize("NFC", "Café Noël")
    cite["quote"] = unicodedata.normalize("NFD", "Café Noël")
    store.ingest([_doc(pkg)])
    report = store.validate([_doc(env)])
    [fault] = [f for f in report.faults if f.code == "envelope.citation-quote"]
    assert fault.pointer == "/claims/0/citations/0/quote"
    assert "Unicode normalisation" in fault.message and "NFC vs NFD" in fault.message


# --------------------------------------------------------------------------- manifests


def test_rule_1_does_not_fire_without_the_revision_it_tests(store):
    doc = loads(MANIFEST)
    del doc["projection"]["revision"]
    doc["phase"] = {"ref": "x"}
    codes = [c for c, _ in _faults(store.validate([_doc(doc)], supplied=[CONTENT]))]
    assert "manifest.schema" in codes
    assert "manifest.rule-1" not in codes
    # The rule still fires when its condition holds.
    doc = loads(MANIFEST)
    doc["phase"] = {"ref": "x"}
    codes = [c for c, _ in _faults(store.validate([_doc(doc)], supplied=[CONTENT]))]
    assert "manifest.rule-1" in codes


def test_content_for_a_failing_manifest_is_not_called_unused(store):
    doc = loads(MANIFEST)
    del doc["reader"]
    codes = [c for c, _ in _faults(store.validate([_doc(doc)], supplied=[CONTENT]))]
    assert "manifest.schema" in codes
    assert "input.unused-content" not in codes
    # Bytes no document uses are still reported when every document passes.
    codes = [c for c, _ in _faults(store.validate([Document(MANIFEST)], supplied=[CONTENT, b"x"]))]
    assert codes == ["input.unused-content"]


# --------------------------------------------------------------------------- root pointer


def test_root_pointer_is_written_as_the_document_root(store_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "j.json").write_bytes(b'{"a": 1}')
    (tmp_path / "u.json").write_bytes(b"\xff")
    runner = CliRunner()
    res = runner.invoke(cli, ["--store", store_url, "validate", "--kind", "manifest", "j.json"])
    assert res.exit_code == 1
    assert "at the document root" in res.output
    assert " at /:" not in res.output and " at / " not in res.output
    assert "manifest.schema at /a:" in res.output  # a member is still named by its pointer
    res = runner.invoke(cli, ["--store", store_url, "ingest", "u.json"])
    assert res.exit_code == 1
    text = res.output + (res.stderr if res.stderr_bytes is not None else "")
    assert "json.utf8 at the document root" in text


def test_error_str_names_the_root_and_no_place_for_store_errors():
    err = evstore.error("manifest.schema", "x is required", "")
    assert str(err) == "manifest.schema at the document root: x is required"
    assert str(evstore.error("manifest.schema", "m", "/a/0")) == "manifest.schema at /a/0: m"
    err = evstore.error("store.missing", "no store", "")
    assert str(err) == "store.missing: no store"


# --------------------------------------------------------------------------- unit ids


def _unit(uid: str, start: str, end: str) -> bytes:
    return (
        f'[{{"id":{uid},"kind":"k","text":"t",'
        f'"ref":{{"source_id":"s","start_unit_id":{start},"end_unit_id":{end}}}}}]'
    ).encode()


@pytest.mark.parametrize("kind", ["evidence-context", "source-document"])
@pytest.mark.parametrize(
    ("uid", "start", "end", "code", "pointer"),
    [
        ("10.0", "10", "10", "context.unit-id", "/0/id"),
        ("1e1", "10", "10", "context.unit-id", "/0/id"),
        ("10", "10.0", "10", "context.self-ref", "/0/ref/start_unit_id"),
        ("10", "10", "1E1", "context.self-ref", "/0/ref/end_unit_id"),
    ],
)
def test_unit_ids_must_be_integer_tokens(store, snapshot, kind, uid, start, end, code, pointer):
    data = _unit(uid, start, end)
    report = store.validate([Document(data, kind=kind)])
    assert _faults(report) == [(code, pointer)]
    before = snapshot(store)
    with pytest.raises(evstore.ContractError) as exc:
        store.ingest([Document(data, kind=kind)])
    assert (exc.value.code, exc.value.pointer) == (code, pointer)
    assert snapshot(store) == before


def test_integer_unit_ids_keep_their_address_and_pass_check(store):
    # A context stored before the rule was stored canonically: 10.0 became 10, the same bytes
    # as a context written with 10, so such a store opens and passes check.
    assert dumps(loads(_unit("10.0", "1e1", "10"))) == dumps(loads(_unit("10", "10", "10")))
    token = loads(_unit("10.0", "1e1", "10"), number_tokens=True)
    assert dumps(token) == dumps(loads(_unit("10", "10", "10")))
    [res] = store.ingest([Document(_unit("10", "10", "10"), kind="evidence-context")]).results
    assert (
        res.digest.address
        == "blake3:" + evstore.digest_bytes(dumps(loads(_unit("10.0", "10", "10")))).blake3
    )
    assert list(store.check()) == []


def test_number_tokens_change_no_other_document():
    for text in ('{"a": 10.0, "b": [1e1, 2.5, -0.0]}', "[1.0]", '"10.0"', "7"):
        plain, token = loads(text), loads(text, number_tokens=True)
        assert dumps(plain) == dumps(token)
    assert loads('{"a": 10.0}') == {"a": 10} and type(loads("10.0")) is int
    assert type(loads("10.0", number_tokens=True)) is float
    assert type(loads('"10.0"', number_tokens=True)) is str


# --------------------------------------------------------------------------- int range


@pytest.mark.parametrize("text", ["9007199254740992", "-9007199254740992", "1e17", "1" * 40])
def test_integer_beyond_the_safe_range_says_to_send_a_string(store, text):
    with pytest.raises(evstore.JSONFormError) as exc:
        store.ingest([Document(('{"n": ' + text + "}").encode(), kind="json")])
    assert exc.value.code == "json.int-range"
    assert exc.value.pointer == "/n"
    assert "send a larger integer as a JSON string" in exc.value.message
    with pytest.raises(evstore.JSONFormError) as exc:
        dumps({"n": 2**60})
    assert "as a JSON string" in exc.value.message
