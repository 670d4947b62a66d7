"""The log and the settings of evstore.StoreProtocol (issue 28): one specification, every store.

Each test writes its own objects into the module's shared store and asks the log about them;
errors are compared whole with the local reference store's.
"""

from __future__ import annotations

import pytest

import evstore


def _error(call, *args) -> dict:
    with pytest.raises(evstore.EvstoreError) as exc:
        call(*args)
    return exc.value.to_dict()


def test_every_put_is_an_entry_of_the_log(any_store, unique):
    before = any_store.log.status()
    assert set(before) == {"size", "root", "vkey", "checkpoint", "pending"}
    put = any_store.put(f"logged {unique}".encode())
    queued = any_store.log.status()  # a write queues its entry; integration adds it
    assert (queued["size"], queued["pending"]) == (before["size"], before["pending"] + 1)
    done = any_store.log.integrate()
    assert (done["integrated"], done["pending"], done["checkpoint"]) == (1, 0, None)
    after = any_store.log.status()
    assert after["size"] == before["size"] + 1 and after["root"] != before["root"]
    rows = any_store.log.entries(before["size"])
    assert [r["index"] for r in rows] == [before["size"]]
    assert rows[0]["entry"]["address"] == put.digest.address
    assert any_store.log.entries(after["size"], after["size"]) == []


def test_log_errors_are_the_local_ones(any_store, reference):
    for name, call in (
        ("range", lambda s: s.log.entries(3, 1)),
        ("no checkpoint", lambda s: s.log.prove(index=0)),
        ("no checkpoint, consistency", lambda s: s.log.prove_consistency(0)),
        ("no key", lambda s: s.log.key()),
        ("neither", lambda s: s.log.prove()),
    ):
        assert _error(call, any_store) == _error(call, reference), name
    assert any_store.log.latest() is None


def test_settings_read_and_written_as_locally(any_store, reference):
    assert any_store.config() == reference.config()
    assert any_store.config("gc.lease-seconds") == reference.config("gc.lease-seconds")
    assert _error(lambda: any_store.config("no.such")) == _error(
        lambda: reference.config("no.such")
    )
    assert _error(lambda: any_store.set_config("gc.lease-seconds", "soon")) == _error(
        lambda: reference.set_config("gc.lease-seconds", "soon")
    )
    assert any_store.set_config("gc.lease-seconds", "4000") == 4000
    assert any_store.config("gc.lease-seconds") == {"gc.lease-seconds": 4000}
    assert any_store.set_config("gc.lease-seconds", 3600) == 3600


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("gc.lease-seconds", "-1"),
        ("gc.lease-seconds", -1),
        ("blobs.timeout_seconds", "0"),
        ("blobs.inline_max", -5),
        ("blobs.deletion_delay_seconds", "-3600"),
    ],
)
def test_a_setting_below_its_minimum_is_refused_and_not_written(any_store, name, value):
    before = any_store.config(name)
    err = _error(lambda: any_store.set_config(name, value))
    assert err["code"] == "config.value" and "at least" in err["message"]
    assert any_store.config(name) == before
