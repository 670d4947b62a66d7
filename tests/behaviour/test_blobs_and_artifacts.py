"""The blob and artifact methods of evstore.StoreProtocol: one specification, every store.

Each test runs against a local Store (SQLite, PostgreSQL) and a RemoteStore through a real
server (SQLite, PostgreSQL behind it) and asserts the same answers and the same errors
(class, code, pointer, path), so a difference between the implementations fails here.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest

import evstore

MISSING = "blake3:" + "0" * 64


def forms(data: bytes) -> dict:
    return dict(evstore.digest_bytes(data).forms())


def raises(call, cls: type, code: str, pointer: str = "", path: str | None = None):
    """The error ``call()`` raises: of ``cls``, with ``code``, ``pointer`` (and ``path``)."""
    with pytest.raises(cls) as exc:
        call()
    err = exc.value
    assert (err.code, err.pointer) == (code, pointer), err.to_dict()
    if path is not None:
        assert err.path == path, err.to_dict()
    return err


def same_error(store, reference, call) -> dict:
    """``call(store)`` fails as ``call(reference)`` does: the whole error, message included."""
    with pytest.raises(evstore.EvstoreError) as want:
        call(reference)
    with pytest.raises(evstore.EvstoreError) as got:
        call(store)
    assert type(got.value) is type(want.value)
    assert got.value.to_dict() == want.value.to_dict()
    return got.value.to_dict()


# -- the protocol itself -----------------------------------------------------------------------


def test_the_store_is_a_store_protocol_with_its_namespaces(any_store):
    assert isinstance(any_store, evstore.StoreProtocol)
    assert isinstance(any_store.url, str) and any_store.created is False
    for name in ("fragments", "manifests", "packages", "contexts", "runs", "retention"):
        assert getattr(any_store, name) is not None


# -- blobs -------------------------------------------------------------------------------------


def test_put_answers_the_digest_and_whether_the_bytes_were_new(any_store, unique):
    data = f"put {unique}\n".encode()
    first = any_store.put(data)
    assert isinstance(first, evstore.PutResult)
    assert first.digest == evstore.digest_bytes(data) and first.new is True
    again = any_store.put(io.BytesIO(data))
    assert again.digest == first.digest and again.new is False


def test_get_answers_the_bytes_for_every_ref_form(any_store, unique):
    data = f"get {unique}\n".encode()
    any_store.put(data)
    f = forms(data)
    for ref in (f["address"], f["sha256"], f["sha256_b64u"], f["object_store"]):
        assert any_store.get(ref) == data, ref


def test_get_refuses_a_malformed_ref_and_a_missing_blob(any_store):
    raises(lambda: any_store.get("nope"), evstore.RefSyntaxError, "ref.syntax")
    raises(lambda: any_store.get("sha256:" + "g" * 64), evstore.RefSyntaxError, "ref.syntax")
    raises(lambda: any_store.get(MISSING), evstore.NotFound, "not-found.blob")


def test_open_blob_streams_the_verified_bytes(any_store, unique):
    data = (unique.encode() * 4096)[: 3 << 17]  # 384 KiB
    digest = any_store.put(data).digest
    for verify_first in (True, False):
        with any_store.open_blob(digest.address, verify_first=verify_first) as (d, chunks):
            got = b"".join(chunks)
        assert got == data and d.size == len(data) and d.address == digest.address
    raises(lambda: any_store.open_blob(MISSING).__enter__(), evstore.NotFound, "not-found.blob")


def test_stat_lists_the_digest_forms_and_how_the_blob_is_stored(any_store, unique):
    data = f"stat {unique}\n".encode()
    any_store.put(data)
    f = forms(data)
    want = {**f, "verified": False, "stored": "inline", "artifacts": []}
    assert any_store.stat(f["object_store"]) == want
    assert any_store.stat(f["address"], verify=True) == {**want, "verified": True}
    raises(lambda: any_store.stat(MISSING), evstore.NotFound, "not-found.blob")


def test_has_answers_the_missing_refs_as_given_in_order(any_store, unique):
    data = f"has {unique}\n".encode()
    any_store.put(data)
    f = forms(data)
    other = "sha256:" + hashlib.sha256(b"never " + unique.encode()).hexdigest()
    asked = [other, f["sha256_b64u"], MISSING, f["address"], other]
    assert any_store.has(asked) == [other, MISSING, other]
    assert any_store.has([]) == []
    raises(lambda: any_store.has(f["address"]), evstore.InputError, "input.invalid")
    raises(lambda: any_store.has([f["address"], "bad"]), evstore.RefSyntaxError, "ref.syntax")


def test_put_many_answers_one_result_per_item_in_order(any_store, unique, tmp_path):
    path = tmp_path / "file.bin"
    path.write_bytes(f"file {unique}".encode())
    items = [f"a {unique}".encode(), path, io.BytesIO(f"c {unique}".encode())]
    done: list[tuple[int, int]] = []
    out = any_store.put_many(items, batch=2, on_batch=lambda b, n: done.append((b, n)))
    want = [f"a {unique}".encode(), path.read_bytes(), f"c {unique}".encode()]
    assert [r.digest for r in out] == [evstore.digest_bytes(d) for d in want]
    assert [r.new for r in out] == [True, True, True] and done == [(1, 2), (2, 3)]
    err = raises(lambda: any_store.put_many([b"x", 3]), evstore.InputError, "input.invalid")
    assert err.details["item"] == 1
    raises(
        lambda: any_store.put_many([tmp_path / "absent"]), evstore.InputError, "input.unreadable"
    )


def test_iter_blobs_pages_by_address_after_a_cursor(any_store, unique):
    addresses = sorted(
        any_store.put(f"blob {i} {unique}".encode()).digest.address for i in range(3)
    )
    first = next(iter(any_store.iter_blobs(limit=1)))
    assert set(first) == {"address", "sha256", "size"}
    after = addresses[0]
    listed = [b["address"] for b in any_store.iter_blobs(after=after)]
    assert listed == sorted(listed) and after not in listed
    assert set(addresses[1:]) <= set(listed)
    raises(lambda: list(any_store.iter_blobs(after="garbage")), evstore.InputError, "input.invalid")


# -- artifacts ---------------------------------------------------------------------------------


def test_ingest_takes_every_input_form_and_answers_the_same_report(any_store, unique, tmp_path):
    value = {"note": unique, "n": 1}
    canonical = evstore.dumps(value)
    path = tmp_path / "note.json"
    path.write_bytes(json.dumps(value).encode())
    first = any_store.ingest(value)
    assert isinstance(first, evstore.IngestReport) and first.documents == 1
    (result,) = first.results
    assert isinstance(result, evstore.ArtifactResult)
    assert (result.digest, result.kind, result.new) == (
        evstore.digest_bytes(canonical),
        "json",
        True,
    )
    for form in (canonical, path, evstore.Document(canonical, name="n.json"), (canonical,)):
        again = any_store.ingest(form)
        assert [(r.digest.address, r.new) for r in again.results] == [
            (result.digest.address, False)
        ]
    assert any_store.load(result.digest.address) == value
    assert any_store.warnings(result.digest.address) == []


def test_ingest_refuses_input_of_no_accepted_form_as_the_library_does(any_store, reference):
    bad_inputs = [
        "text",
        5,
        None,
        [evstore.Document(b"{}"), b"{}"],
        (b"{}", 5),
        {1: "a"},
    ]
    for bad in bad_inputs:
        err = same_error(any_store, reference, lambda s, bad=bad: s.ingest(bad))
        assert err["code"] == "input.invalid", bad
        err = same_error(any_store, reference, lambda s, bad=bad: s.validate(bad))
        assert err["code"] == "input.invalid", bad
    # A value outside the JSON domain is the strict reader's typed fault, on both stores.
    err = same_error(any_store, reference, lambda s: s.ingest({"x": float("nan")}))
    assert (err["code"], err["pointer"]) == ("json.non-finite", "/x")


def test_a_rejected_ingest_writes_nothing_and_names_the_fault(any_store, reference, unique):
    good = evstore.Document(evstore.dumps({"kept": unique}), name="good.json")
    dup = evstore.Document(b'{"a": 1, "a": 2}', name="dup.json")
    err = same_error(any_store, reference, lambda s: s.ingest([good, dup]))
    assert (err["code"], err["pointer"], err["path"]) == ("json.duplicate-key", "/a", "dup.json")
    address = evstore.digest_bytes(good.data).address
    assert any_store.has([address]) == [address]
    fragment = {"document_id": unique, "fragment_id": "f", "start_offset": 0, "end_offset": 2}
    err = same_error(any_store, reference, lambda s: s.ingest(fragment))
    assert (err["code"], err["pointer"]) == ("fragment.shape", "/quote_sha256")


def test_validate_lists_every_fault_and_writes_nothing(any_store, reference, unique):
    docs = [
        evstore.Document(b'{"a": 1, "a": 2}', name="dup.json"),
        evstore.Document(evstore.dumps({"valid": unique}), name="ok.json"),
        evstore.Document(b"[1,", name="cut.json"),
        evstore.Document(
            evstore.dumps({"document_id": unique, "fragment_id": "f"}),
            name="f.json",
            kind="fragment",
        ),
    ]
    got = any_store.validate(docs).to_dict()
    assert got == reference.validate(docs).to_dict()
    assert [(f["code"], f["pointer"], f["path"]) for f in got["faults"]][:2] == [
        ("json.duplicate-key", "/a", "dup.json"),
        ("json.syntax", "", "cut.json"),
    ]
    assert got["ok"] is False and got["documents"] == 4
    address = evstore.digest_bytes(docs[1].data).address
    assert any_store.has([address]) == [address]


def test_ingest_in_batches_says_what_was_committed_before_a_failing_one(any_store, unique):
    docs = [evstore.Document(evstore.dumps({"batch": unique, "i": i})) for i in range(3)]
    docs.append(evstore.Document(b"{", name="broken.json"))
    seen: list[tuple[int, int]] = []
    err = raises(
        lambda: any_store.ingest(docs, batch=2, on_batch=lambda b, n: seen.append((b, n))),
        evstore.JSONFormError,
        "json.syntax",
        path="broken.json",
    )
    assert err.details["committed_batches"] == 1 and err.details["committed_items"] == 2
    assert seen == [(1, 2)]
    kept = [evstore.digest_bytes(d.data).address for d in docs[:3]]
    assert any_store.has(kept) == [kept[2]]


def test_find_ls_and_iter_artifacts_list_the_same_artifacts(any_store, unique):
    source = f"notes {unique}: the quoted words are here.".encode()
    start = source.index(b"the quoted")
    end = start + len(b"the quoted words")
    fragment = {
        "document_id": f"doc-{unique}",
        "fragment_id": "notes.txt",
        "start_offset": start,
        "end_offset": end,
        "quote_sha256": hashlib.sha256(source[start:end]).hexdigest(),
    }
    any_store.fragments.ingest_source(source, fragment["document_id"], "notes.txt")
    (result,) = any_store.ingest(fragment).results
    address = result.digest.address
    found = any_store.find("quote_sha256", fragment["quote_sha256"].upper(), kind="fragment")
    assert [(a.address, a.kind, a.size) for a in found] == [
        (address, "fragment", result.digest.size)
    ]
    assert all(isinstance(a, evstore.ArtifactInfo) and a.damage is None for a in found)
    assert any_store.find("document_id", f"doc-{unique}", kind="fragment") == found
    assert {a.kind for a in any_store.find("document_id", f"doc-{unique}")} == {
        "fragment",
        "fragment-source",
    }
    assert any_store.find("document_id", f"none-{unique}") == []
    listed = any_store.ls("fragment")
    assert [a.to_dict() for a in listed if a.address == address] == [found[0].to_dict()]
    assert any_store.ls("fragment", attr=("document_id", f"doc-{unique}")) == found
    keyed = list(any_store.iter_artifacts("fragment"))
    assert [(a.address, a.kind) for a in keyed] == sorted((a.address, a.kind) for a in keyed)
    assert found[0] in keyed
    cursor = f"{address}/fragment"
    assert found[0] not in list(any_store.iter_artifacts("fragment", after=cursor))
    keyed_attr = list(any_store.iter_artifacts("fragment", attr=("document_id", f"doc-{unique}")))
    assert keyed_attr == found
    assert any_store.warnings(address) == []


def test_find_and_ls_refuse_as_the_library_does(any_store, reference):
    for call in (
        lambda s: s.find("quote_sha256", "XYZ"),
        lambda s: s.ls("nope"),
        lambda s: s.find("document_id", "x", kind="nope"),
        lambda s: list(s.iter_artifacts(after="garbage")),
        lambda s: s.warnings("nope"),
        lambda s: s.load(MISSING),
    ):
        same_error(any_store, reference, call)


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.find("document_id", "a\udcff"),
        lambda s: s.find("a\udcff", "b"),
        lambda s: s.find("a\x00", "b"),
    ],
)
def test_text_no_database_holds_is_input_invalid_alike(any_store, call):
    # The client raised UnicodeEncodeError (a lone surrogate); PostgreSQL answered a NUL in
    # the name with store.database (HTTP 500).
    with pytest.raises(evstore.EvstoreError) as info:
        call(any_store)
    assert info.value.code == "input.invalid"


def test_paths_of_the_examples_ingest_alike(any_store):
    path = Path(__file__).resolve().parents[2] / "examples" / "json" / "run-note.json"
    report = any_store.ingest(path)
    want = evstore.digest_bytes(evstore.dumps(json.loads(path.read_bytes())))
    assert [r.digest for r in report.results] == [want]


@pytest.mark.parametrize("data", ["text", 5, None, ["a list"]])
def test_put_of_neither_bytes_nor_a_stream_is_input_invalid(any_store, data):
    before = any_store.log.status()["size"] + any_store.log.status()["pending"]
    with pytest.raises(evstore.EvstoreError) as exc:
        any_store.put(data)
    assert exc.value.code == "input.invalid" and type(data).__name__ in exc.value.message
    assert any_store.log.status()["size"] + any_store.log.status()["pending"] == before
