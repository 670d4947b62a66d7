"""Fail closed: a kind whose handler cannot be imported is refused, typed, everywhere."""

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import evstore
from evstore import Document
from evstore.objects import kinds

REPO = Path(__file__).resolve().parents[2]
MANIFEST = (REPO / "examples" / "manifests" / "manifest.json").read_bytes()
CONTENT = (REPO / "examples" / "manifests" / "rendered-evidence.md").read_bytes()
HIDDEN = (
    "evstore.contracts.manifests.store",
    "evstore.contracts.manifests.rules",
    "evstore.contracts.packages.store",
    "evstore.contracts.packages.rules",
    "evstore.contracts.packages.schema",
    "evstore.contracts.packages.rules_context",
    "evstore.contracts.contexts.schema",
    "evstore.contracts.contexts.rules",
    "evstore.contracts.contexts.store",
    "evstore.contracts.runs.rules_bundle",
    "evstore.core.json_schema",
    "evstore.contracts.runs.rules",
    "evstore.contracts.runs.store",
)


def _hide(monkeypatch):
    """Make jsonschema_rs unimportable and forget every module that imports it (from
    sys.modules and as attributes of their parent packages, which `from . import x` reads)."""
    kinds.clear_cache()
    monkeypatch.setitem(sys.modules, "jsonschema_rs", None)
    for name in HIDDEN:
        monkeypatch.delitem(sys.modules, name, raising=False)
        parent, leaf = name.rsplit(".", 1)
        monkeypatch.delattr(importlib.import_module(parent), leaf, raising=False)


@pytest.fixture
def no_jsonschema(monkeypatch):
    """jsonschema_rs unimportable, and every module that imports it forgotten."""
    _hide(monkeypatch)
    yield
    monkeypatch.undo()
    kinds.clear_cache()


def _refused(exc_info):
    err = exc_info.value
    assert isinstance(err, evstore.StoreStateError)
    assert err.code == "store.kind-unavailable"
    assert err.to_dict()["family"] == "store"


def test_manifest_is_refused_never_stored_as_json(store, snapshot, no_jsonschema):
    before = snapshot(store)
    for kind in (None, "manifest"):
        with pytest.raises(evstore.EvstoreError) as exc:
            store.ingest([Document(MANIFEST, name="m.json", kind=kind)])
        _refused(exc)
        assert exc.value.path == "m.json"
        with pytest.raises(evstore.EvstoreError) as exc:
            store.validate([Document(MANIFEST, name="m.json", kind=kind)])
        _refused(exc)
    assert snapshot(store) == before
    assert store.ls() == []


def test_detection_fails_closed_and_so_does_an_explicit_json_kind(store, no_jsonschema):
    # --kind json refuses a document any contract kind claims (docs/kinds.md), so it must
    # ask every kind too: with one unavailable it cannot tell, and refuses.
    for kind in (None, "json"):
        with pytest.raises(evstore.EvstoreError) as exc:
            store.ingest([Document(b'{"a": 1}', kind=kind)])
        _refused(exc)


def test_find_ls_and_kind_check_refuse_the_kind(store, no_jsonschema):
    for call in (
        lambda: evstore.check_kind("manifest"),
        lambda: store.ls("manifest"),
        lambda: store.find("manifest_ref", "x", kind="manifest"),
        lambda: store.ls("package"),
    ):
        with pytest.raises(evstore.EvstoreError) as exc:
            call()
        _refused(exc)
    with pytest.raises(evstore.InputError) as exc2:
        evstore.check_kind("no-such-kind")
    assert exc2.value.code == "kind.unknown"


def test_check_reports_artifacts_of_the_unavailable_kind(store, monkeypatch):
    [res] = store.ingest([Document(MANIFEST, kind="manifest")], supplied=[CONTENT]).results
    assert list(store.check()) == []
    _hide(monkeypatch)
    try:
        faults = list(store.check())
    finally:
        monkeypatch.undo()
        kinds.clear_cache()
    assert [f.code for f in faults] == ["store.kind-unavailable"]
    assert faults[0].details["address"] == res.digest.address


_CLI = """
import sys
sys.modules["jsonschema_rs"] = None
from evstore.cli.main import main
sys.argv = ["evstore", "--json", "--store", sys.argv[1], *sys.argv[2:]]
main()
"""


def _cli(url, *args):
    return subprocess.run(
        [sys.executable, "-c", _CLI, url, *args], capture_output=True, text=True, timeout=120
    )


def test_cli_refuses_typed_and_writes_nothing(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    evstore.init(url)
    path = tmp_path / "m.json"
    path.write_bytes(MANIFEST)
    for args in (
        ["ingest", str(path)],
        ["ingest", "--kind", "manifest", str(path)],
        ["validate", str(path)],
        ["ls", "--kind", "manifest"],
        ["find", "--kind", "manifest", "--key", "k"],
        ["manifest", "address", str(path)],
    ):
        r = _cli(url, *args)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        out = json.loads(r.stdout)
        assert out["error"]["code"] == "store.kind-unavailable", (args, out)
        assert "Traceback" not in r.stderr
    r = _cli(url, "ls")
    assert r.returncode == 0 and json.loads(r.stdout) == {"artifacts": []}
    r = _cli(url, "check")
    assert r.returncode == 0, r.stdout
