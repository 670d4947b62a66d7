"""The bulk Python API (issue 10): any iterable, streamed, batched; one-document inputs."""

from __future__ import annotations

import io
import json
from pathlib import Path

import blake3
import pytest

import evstore
import evstore.facade.ingest as ingest_mod
from evstore import Document


def test_ingest_takes_one_document_in_every_form(store, tmp_path):
    r = store.ingest({"a": 1})
    assert r.documents == 1 and r.results[0].kind == "json"
    assert store.load(r.results[0].digest.address) == {"a": 1}
    arr = store.ingest([{"a": 1}, 2])  # a list that is not of Documents: one array document
    assert arr.documents == 1 and store.load(arr.results[0].digest.address) == [{"a": 1}, 2]
    assert store.ingest(b'{"b": 2}').results[0].new is True
    p = tmp_path / "c.json"
    p.write_bytes(b'{"c": 3}')
    assert store.ingest(p).results[0].digest.address == (
        "blake3:" + blake3.blake3(b'{"c":3}').hexdigest()
    )
    many = store.ingest([Document(b"[1]"), Document(b"[2]")])  # list of Documents: many
    assert many.documents == 2
    assert store.ingest([]).documents == 0


@pytest.mark.parametrize("bad", ["{}", 3, None, 1.5, object()])
def test_ingest_refuses_other_values_typed(store, snapshot, bad):
    before = snapshot(store)
    with pytest.raises(evstore.InputError) as ei:
        store.ingest(bad)
    assert ei.value.code == "input.invalid"
    assert snapshot(store) == before


@pytest.mark.parametrize(
    ("value", "code", "pointer", "key"),
    [
        ({1: "a"}, "input.invalid", "", "1"),  # json.dumps would store {"1":"a"}
        ({"a": [0, {"b": {None: 1}}]}, "input.invalid", "/a/1/b", "None"),
        ([{"ok": 1}, {True: 2}], "input.invalid", "/1", "True"),
        ({"a/b": {"c": {1, 2}}}, "input.invalid", "/a~1b/c", None),  # a set is no JSON value
        ({"s": "\ud83d"}, "json.surrogate", "/s", None),  # was a plain UnicodeEncodeError
        ({"\udc80": 1}, "json.surrogate", "", None),
        ({"x": float("nan")}, "json.non-finite", "/x", None),
        ({"n": [2**60]}, "json.int-range", "/n/0", None),
    ],
)
def test_ingest_of_a_parsed_value_is_held_to_the_domain_of_dumps(
    store, snapshot, value, code, pointer, key
):
    """Issue 23: a dict or list is refused where evstore.dumps refuses it, typed, at its pointer."""
    before = snapshot(store)
    with pytest.raises(evstore.InputError) as ei:
        store.ingest(value)
    err = ei.value
    assert (err.code, err.pointer) == (code, pointer), err
    assert err.details.get("key") == key
    assert snapshot(store) == before  # nothing written
    with pytest.raises((evstore.InputError, TypeError)):
        evstore.dumps(value)  # the same domain as the canonical form's
    if code.startswith("json."):  # validate lists the fault instead of raising it
        report = store.validate(value)
        assert [(f.code, f.pointer) for f in report.faults] == [(code, pointer)]
    else:
        with pytest.raises(evstore.InputError) as vi:
            store.validate(value)
        assert (vi.value.code, vi.value.pointer) == (code, pointer)
    assert snapshot(store) == before


def test_ingest_of_a_parsed_value_stores_its_canonical_form(store):
    value = {"b": [1, 2.5, None, True], "a": {"é": "\U0001f600"}}
    (res,) = store.ingest(value).results
    assert store.get(res.digest.address) == evstore.dumps(value)
    assert store.load(res.digest.address) == value


def test_ingest_generator_streams_in_one_transaction(store, snapshot, monkeypatch):
    monkeypatch.setattr(ingest_mod, "STREAM_CHUNK", 3)  # several chunks in one transaction
    before = snapshot(store)

    def docs(bad_at: int | None):
        for i in range(10):
            yield Document(b"{oops" if i == bad_at else json.dumps({"i": i}).encode(), name=f"d{i}")

    with pytest.raises(evstore.JSONFormError) as ei:
        store.ingest(docs(8))  # chunks 1-2 were written inside the transaction, then rolled back
    assert ei.value.path == "d8" and "committed_batches" not in ei.value.details
    assert snapshot(store) == before
    r = store.ingest(docs(None))
    assert r.documents == 10 and len(r.results) == 10
    with pytest.raises(evstore.InputError) as ei:
        store.ingest(x for x in [Document(b"[]"), {"a": 1}])  # mixed items
    assert ei.value.code == "input.invalid" and ei.value.details["item"] == 1


def test_ingest_batches_bad_document_in_batch_3_of_5(store):
    def docs():
        for i in range(10):
            yield Document(b"{bad" if i == 5 else json.dumps({"b": i}).encode(), name=f"{i}")

    seen = []
    with pytest.raises(evstore.JSONFormError) as ei:
        store.ingest(docs(), batch=2, on_batch=lambda b, n: seen.append((b, n)))
    err = ei.value
    assert err.details["batch"] == 3
    assert err.details["committed_batches"] == 2 and err.details["committed_items"] == 4
    assert "batches 1-2 were committed" in err.message
    assert seen == [(1, 2), (2, 4)]
    assert len(store.ls("json")) == 4
    with pytest.raises(evstore.InputError):
        store.ingest(docs(), batch=0)


def test_put_many_any_iterable_paths_streams_and_batches(store, snapshot, tmp_path):
    rs = store.put_many(b"item %d" % i for i in range(7))  # a generator
    assert [r.new for r in rs] == [True] * 7
    big = tmp_path / "big.bin"
    big.write_bytes(b"z" * (9 << 20))  # over the 8 MiB read-whole limit: streamed
    small = tmp_path / "small.bin"
    small.write_bytes(b"small")
    rs = store.put_many([small, big, io.BytesIO(b"stream"), b"item 0"])
    assert [r.new for r in rs] == [True, True, True, False]
    assert rs[1].digest.size == 9 << 20 and store.get(rs[1].digest.address) == b"z" * (9 << 20)
    assert store.get(rs[2].digest.address) == b"stream"

    before = snapshot(store)
    with pytest.raises(evstore.InputError) as ei:
        store.put_many([b"new 1", tmp_path / "missing", b"new 2"])
    assert ei.value.code == "input.unreadable"
    assert snapshot(store) == before
    with pytest.raises(evstore.InputError) as ei:
        store.put_many(iter([b"new 1", "a str"]))
    assert ei.value.code == "input.invalid" and snapshot(store) == before

    items = [b"batch %d" % i for i in range(5)] + [Path(tmp_path / "missing")] + [b"later"]
    with pytest.raises(evstore.InputError) as ei:
        store.put_many(iter(items), batch=2)
    assert ei.value.details["committed_batches"] == 2
    assert store.has([rs.digest.address for rs in store.put_many([])]) == []
    stored = {b["address"] for b in store.iter_blobs()}
    for i in range(4):
        assert "blake3:" + blake3.blake3(b"batch %d" % i).hexdigest() in stored
    assert "blake3:" + blake3.blake3(b"batch 4").hexdigest() not in stored


def test_listing_pages_are_stable(store):
    rs = store.put_many([b"p%d" % i for i in range(7)])
    for i in range(3):
        store.ingest({"doc": i})
    everything = [b["address"] for b in store.iter_blobs()]
    assert everything == sorted(everything) and len(everything) == 10
    first = list(store.iter_blobs(limit=4))
    rest = list(store.iter_blobs(after=first[-1]["address"]))
    assert [b["address"] for b in first + rest] == everything
    assert {r.digest.address for r in rs} <= set(everything)
    arts = list(store.iter_artifacts())
    assert len(arts) == 3
    page = list(store.iter_artifacts(limit=2))
    tail = list(store.iter_artifacts(after=f"{page[-1].address}/{page[-1].kind}"))
    assert page + tail == arts
    assert list(store.iter_artifacts("fragment")) == []
    with pytest.raises(evstore.InputError):
        list(store.iter_blobs(after="blake3:zz"))


def test_progress_counts_items_across_chunks_and_batches(store, monkeypatch):
    monkeypatch.setattr(ingest_mod, "STREAM_CHUNK", 2)
    ticks: list[int] = []
    store.ingest((Document(b"[%d]" % i) for i in range(5)), progress=ticks.append)
    assert ticks == [2, 4, 5]
    ticks.clear()
    store.ingest((Document(b"[%d]" % (i + 10)) for i in range(5)), batch=3, progress=ticks.append)
    assert ticks == [2, 3, 5]  # batch 1: chunks of 2 and 1; batch 2 counts on from 3
    ticks.clear()
    store.put_many((b"t%d" % i for i in range(5)), batch=2, progress=ticks.append)
    assert ticks[-1] == 5 and ticks == sorted(ticks)


def test_a_failure_in_batch_2_names_batch_1_alone(store):
    docs = [Document(json.dumps({"c": i}).encode(), name=f"{i}") for i in range(3)]
    docs.append(Document(b"{bad", name="bad"))
    with pytest.raises(evstore.JSONFormError) as ei:
        store.ingest(docs, batch=3)
    assert "(batch 2 was rolled back; batch 1 was committed: 3 item(s) stored)" in str(
        ei.value.message
    )
