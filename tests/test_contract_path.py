"""A new contract takes one folder and one registry line (docs/contract-modules.md).

The toy contract in tests/data/toy_contract/ has the shape of store/contracts/<name>/: a
pure ``rules.py`` and a ``store.py`` with its kind handler. The test registers it with one
:class:`~evstore.objects.kinds.KindRecord` line (and the rows its codes would have in
store/core/error_codes.py), then uses it through the library, the CLI and archives, on both
backends, and undoes the registration.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import MappingProxyType

import pytest
from click.testing import CliRunner

import evstore
from evstore import Document
from evstore.cli.main import cli
from evstore.core import errors
from evstore.core.error_codes import Code
from evstore.objects import kinds

DATA = Path(__file__).resolve().parent / "data"

#: The registry line a contract adds to store/objects/kinds.py.
LINE = kinds.KindRecord(
    "toy-note",
    "toy_contract.store:ToyNoteKind",
    "toy_contract.rules",
    detection=65,
    number_tokens=True,
)
#: The rows its codes add to store/core/error_codes.py.
ROWS = (
    Code("toy.shape", "contract", "toy#shape", "a note's member has the wrong type"),
    Code("toy.version", "contract", "toy#version", "a note of another version"),
)
NOTE = {"toy": "note/v1", "text": "hello", "count": 3}


@pytest.fixture
def toy(monkeypatch):
    """The toy contract registered (its folder importable, its codes known); undone after."""
    monkeypatch.syspath_prepend(str(DATA))
    table = {**errors.CODES, **{row.code: row for row in ROWS}}
    monkeypatch.setattr(errors, "CODES", MappingProxyType(table))
    kinds.register_kind(LINE)
    yield
    kinds.unregister_kind(LINE.name)
    for name in [m for m in sys.modules if m == "toy_contract" or m.startswith("toy_contract.")]:
        del sys.modules[name]


def _doc(value: object, name: str = "note.json") -> Document:
    return Document(json.dumps(value).encode(), name=name)


def test_the_registry_line_is_all_the_registry_needs(toy):
    assert kinds.known_kinds()[-1] == "toy-note"
    order = kinds.detection_order()
    assert order.index("fragment") < order.index("toy-note") < order.index("run")
    assert order[-1] == "json"
    assert kinds.get_handler("toy-note").name == "toy-note"
    assert evstore.kind_page("toy-note") is None  # the generic artifact page
    evstore.check_kind("toy-note")


def test_registration_is_undone():
    assert "toy-note" not in kinds.known_kinds()
    with pytest.raises(evstore.InputError) as exc:
        evstore.check_kind("toy-note")
    assert exc.value.code == "kind.unknown"


def test_the_registry_refuses_a_second_line_of_a_name_or_a_detection_place(toy):
    with pytest.raises(ValueError):
        kinds.register_kind(LINE)
    with pytest.raises(ValueError):
        kinds.register_kind(kinds.KindRecord("toy-other", LINE.handler, detection=65))
    assert "toy-other" not in kinds.known_kinds()


def test_ingest_detects_validates_finds_lists_and_checks_the_toy_kind(toy, store, snapshot):
    [res] = store.ingest(_doc(NOTE)).results  # no kind given: detection finds it
    assert (res.kind, res.new) == ("toy-note", True)
    assert store.load(res.digest.address) == NOTE
    assert [a.address for a in store.find("toy_text", "hello", kind="toy-note")] == [
        res.digest.address
    ]
    assert [a.kind for a in store.ls("toy-note")] == ["toy-note"]
    assert list(store.check()) == []  # the declared default audit: check as at ingest
    before = snapshot(store)
    bad = {"toy": "note/v2", "text": 1, "count": 1}  # claimed by the toy kind, never json
    report = store.validate([_doc(bad, "bad.json")])
    assert [(f.code, f.pointer, f.path) for f in report.faults] == [
        ("toy.version", "/toy", "bad.json"),
        ("toy.shape", "/text", "bad.json"),
    ]
    assert isinstance(report.faults[0], evstore.ContractError)
    with pytest.raises(evstore.EvstoreError) as exc:
        store.ingest(Document(json.dumps(NOTE).encode(), kind="json"))
    assert (exc.value.code, exc.value.details["kind"]) == ("kind.claimed", "toy-note")
    assert snapshot(store) == before


def test_the_record_reads_numbers_as_written_for_the_toy_rules(toy, store, snapshot):
    before = snapshot(store)
    text = b'{"toy": "note/v1", "text": "x", "count": 10.0}'
    with pytest.raises(evstore.ContractError) as exc:
        store.ingest(Document(text, name="n.json"))
    assert (exc.value.code, exc.value.pointer, exc.value.path) == ("toy.shape", "/count", "n.json")
    assert snapshot(store) == before


def test_the_cli_needs_no_change_for_the_toy_kind(toy, store_url, tmp_path):
    good, bad = tmp_path / "note.json", tmp_path / "bad.json"
    good.write_text(json.dumps(NOTE))
    bad.write_text(json.dumps({"toy": "note/v1", "text": 5}))

    def run(*args: str):
        return CliRunner().invoke(cli, ["--store", store_url, *args], catch_exceptions=False)

    r = run("ingest", str(good))
    assert r.exit_code == 0 and r.stdout.split()[1:] == ["toy-note", "(new)"]
    r = run("--json", "ingest", "--kind", "toy-note", str(bad))
    assert r.exit_code == 1
    assert json.loads(r.stdout)["error"]["code"] == "toy.shape"
    r = run("--json", "ls", "--kind", "toy-note")
    assert [a["kind"] for a in json.loads(r.stdout)["artifacts"]] == ["toy-note"]


def test_archives_export_verify_and_import_the_toy_kind(toy, store, tmp_path, monkeypatch):
    [res] = store.ingest(_doc(NOTE)).results
    out = tmp_path / "toy.tar"
    evstore.export_archive(store, [res.digest.address], out)
    import toy_contract.rules as toy_rules

    seen = []
    validate = toy_rules.validate

    def spy(doc, settings=None, *, kind=None):
        seen.append((doc, kind))
        return validate(doc, settings, kind=kind)

    monkeypatch.setattr(toy_rules, "validate", spy)
    checked = evstore.verify_archive(out)  # the record's rules module, with no store
    assert checked.ok, [f.to_dict() for f in checked.faults]
    assert seen == [(NOTE, "toy-note")]
    other = tmp_path / "other.db"
    with evstore.open(f"sqlite:///{other}", create=True) as fresh:
        got = evstore.import_archive(fresh, out)
        assert got.new_artifacts == 1
        assert [a.kind for a in fresh.ls()] == ["toy-note"]
