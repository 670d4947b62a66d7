"""Typed settings on write, and a closed Store refuses every call."""

import pytest

import evstore
from evstore import Document


def test_set_config_checks_the_type_and_stores_nothing(store, snapshot):
    before = snapshot(store)
    for name, value in (
        ("packages.strict_context_bytes", 5),
        ("packages.strict_context_bytes", "maybe"),
        ("manifests.accept_unverified_phase", 1),
        ("fragments.revision_extension_keys", ["ok", ""]),
        ("fragments.revision_extension_keys", "[1]"),
    ):
        with pytest.raises(evstore.InputError) as exc:
            store.set_config(name, value)
        assert exc.value.code == "config.value", (name, value)
    with pytest.raises(evstore.InputError) as exc:
        store.set_config("no.such", True)
    assert exc.value.code == "config.unknown"
    assert snapshot(store) == before
    assert store.config()["packages.strict_context_bytes"] is False
    # Later reads and ingests still work (no corruption.setting).
    store.ingest([Document(b'{"a": 1}')])


def test_set_config_accepts_typed_values_and_parses_strings(store):
    assert store.set_config("packages.strict_context_bytes", True) is True
    assert store.config("packages.strict_context_bytes") == {"packages.strict_context_bytes": True}
    assert store.set_config("packages.strict_context_bytes", "false") is False
    assert store.set_config("fragments.revision_extension_keys", ["a.rev"]) == ["a.rev"]
    assert store.set_config("fragments.revision_extension_keys", "a.rev,b.rev") == [
        "a.rev",
        "b.rev",
    ]
    with pytest.raises(evstore.InputError) as exc:
        store.config("no.such")
    assert exc.value.code == "config.unknown"


def test_a_closed_store_refuses_every_call(store_url):
    store = evstore.open(store_url)
    address = store.put(b"x").digest.address
    store.close()
    calls = {
        "put": lambda: store.put(b"y"),
        "put_many": lambda: store.put_many([b"y"]),
        "get": lambda: store.get(address),
        "open_blob": lambda: store.open_blob(address).__enter__(),
        "stat": lambda: store.stat(address),
        "has": lambda: store.has([address]),
        "read_blobs": lambda: store.read_blobs([address]),
        "ingest": lambda: store.ingest([Document(b"{}")]),
        "validate": lambda: store.validate([Document(b"{}")]),
        "find": lambda: store.find("key", "k"),
        "ls": lambda: store.ls(),
        "iter_artifacts": lambda: store.iter_artifacts(),
        "iter_blobs": lambda: store.iter_blobs(),
        "warnings": lambda: store.warnings(address),
        "load": lambda: store.load(address),
        "check": lambda: store.check(),
        "recorded_warnings": lambda: store.recorded_warnings(),
        "config": lambda: store.config(),
        "set_config": lambda: store.set_config("packages.strict_context_bytes", True),
        "transaction": lambda: store.transaction(lambda txn: None),
        "reading": lambda: store.reading().__enter__(),
        "fragments": lambda: store.fragments,
        "manifests": lambda: store.manifests,
        "packages": lambda: store.packages,
        "contexts": lambda: store.contexts,
        "runs": lambda: store.runs,
        "log": lambda: store.log,
        "retention": lambda: store.retention,
        "transactions": lambda: store.transactions,
        "tokens": lambda: store.tokens,
    }
    public = {
        n
        for n in dir(evstore.Store)
        if not n.startswith("_") and n not in ("close", "url", "path", "db")
    }
    assert public == set(calls), public ^ set(calls)
    for name, call in calls.items():
        with pytest.raises(RuntimeError, match="closed"):
            call()
        assert name
