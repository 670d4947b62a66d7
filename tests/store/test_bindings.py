"""The first-write-wins primitive on both backends."""

import evstore
from evstore.objects.bindings import bind, bind_many, lookup_binding


def test_bind_once_then_conflict(store):
    r1 = store.db.run_transaction(lambda c: bind(c, "ns", "k", "v1", "ab" * 32))
    assert r1.new and not r1.conflict
    r2 = store.db.run_transaction(lambda c: bind(c, "ns", "k", "v1"))
    assert not r2.new and not r2.conflict
    r3 = store.db.run_transaction(lambda c: bind(c, "ns", "k", "v2"))
    assert r3.conflict and r3.value == "v1"
    # namespaces are independent; long keys work
    long_key = "x" * 10_000
    assert store.db.run_transaction(lambda c: bind(c, "other", long_key, "v2")).new
    with store.db.engine.connect() as c:
        assert lookup_binding(c, "other", long_key) == "v2"
        assert lookup_binding(c, "ns", "missing") is None


def test_bind_many_in_order(store):
    store.db.run_transaction(lambda c: bind(c, "ns", "a", "1"))
    res = store.db.run_transaction(
        lambda c: bind_many(c, "ns", [("a", "1"), ("a", "2"), ("b", "3"), ("b", "3"), ("b", "4")])
    )
    assert [(r.new, r.conflict) for r in res] == [
        (False, False),
        (False, True),
        (True, False),
        (False, False),
        (False, True),
    ]
    assert res[1].value == "1" and res[4].value == "3"


def test_txn_bind_conflict_rolls_back_everything(store, snapshot):
    store.transaction(
        lambda t: t.bind("ns", "k", "v1", on_conflict=lambda e: evstore.BindingConflict(e))
    )
    before = snapshot(store)

    def work(t):
        t.put_blob(b"written before the conflict")
        t.bind(
            "ns",
            "k",
            "v2",
            on_conflict=lambda e: evstore.BindingConflict(f"bound to {e}", code="test.conflict"),
        )

    try:
        store.transaction(work)
    except evstore.BindingConflict as err:
        assert err.code == "test.conflict"
    else:
        raise AssertionError("conflict not raised")
    assert snapshot(store) == before
