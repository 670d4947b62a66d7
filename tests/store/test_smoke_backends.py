import pytest

import evstore
from evstore import Document


def test_put_get_roundtrip(store, snapshot):
    put = store.put(b"hello")
    assert put.new
    assert store.get(put.digest.address) == b"hello"
    assert store.get("sha256:" + put.digest.sha256) == b"hello"
    again = store.put(b"hello")
    assert not again.new and again.digest == put.digest


def test_rejected_ingest_leaves_store_unchanged(store, snapshot):
    store.put(b"x")
    before = snapshot(store)
    with pytest.raises(evstore.JSONFormError) as exc:
        store.ingest([Document(b'{"a":1}'), Document(b'{"a":1,"a":2}', name="bad.json")])
    assert exc.value.code == "json.duplicate-key"
    assert exc.value.path == "bad.json"
    assert snapshot(store) == before
