"""One conformance suite every blob backend passes (the directory and a real S3 server).

The model is restic's backend test suite and distribution's storage-driver test suites:
the same calls, the same answers, the same typed errors, whatever holds the bytes.
"""

from __future__ import annotations

import os
import time

import pytest

import evstore
from evstore.backends.base import CHUNK, blob_key
from evstore.backends.spec import open_backend, parse_spec

ADDR = "ab" + "cd" * 31  # 64 hex


def test_a_key_is_fanned_out_by_address():
    assert blob_key(ADDR) == f"blake3/ab/cd/{ADDR}"


def test_put_get_stat_and_stream(blob_backend):
    key = blob_key(ADDR)
    assert blob_backend.stat(key) is None
    blob_backend.put_bytes(key, b"0123456789")
    assert blob_backend.stat(key) == 10
    assert b"".join(blob_backend.iter_chunks(key)) == b"0123456789"


@pytest.mark.parametrize(
    "start,end,want",
    [(0, 10, b"0123456789"), (2, 5, b"234"), (8, 20, b"89"), (10, 12, b""), (3, 3, b"")],
)
def test_ranges_are_half_open_and_short_at_the_end(blob_backend, start, end, want):
    key = blob_key(ADDR)
    blob_backend.put_bytes(key, b"0123456789")
    assert blob_backend.get_range(key, start, end) == want


def test_a_missing_object_is_none_on_stat_and_a_corruption_code_on_read(blob_backend):
    key = blob_key("00" * 32)
    assert blob_backend.stat(key) is None
    for read in (
        lambda: blob_backend.get_range(key, 0, 1),
        lambda: b"".join(blob_backend.iter_chunks(key)),
    ):
        with pytest.raises(evstore.CorruptionError) as info:
            read()
        assert info.value.code == "corruption.blob-missing"
    blob_backend.delete(key)  # no error


def test_a_repeated_upload_under_a_key_is_harmless(blob_backend):
    key = blob_key(ADDR)
    blob_backend.put_bytes(key, b"same bytes")
    blob_backend.put_bytes(key, b"same bytes")
    assert b"".join(blob_backend.iter_chunks(key)) == b"same bytes"
    assert [x.key for x in blob_backend.list("blake3")] == [key]


def test_a_large_file_streams_in_chunks_and_ranges_cross_them(blob_backend, tmp_path):
    data = os.urandom(5 * CHUNK + 7)
    src = tmp_path / "big"
    src.write_bytes(data)
    key = blob_key("ef" * 32)
    blob_backend.put_file(key, str(src))
    assert blob_backend.stat(key) == len(data)
    chunks = list(blob_backend.iter_chunks(key))
    assert b"".join(chunks) == data
    assert max(len(c) for c in chunks) <= 16 * CHUNK
    for start in (0, CHUNK - 3, 3 * CHUNK + 1, len(data) - 5):
        assert blob_backend.get_range(key, start, start + 10) == data[start : start + 10]


def test_chunks_of_a_size_asked_for(blob_backend):
    data = os.urandom(3 * CHUNK + 5)
    key = blob_key("ee" * 32)
    blob_backend.put_bytes(key, data)
    chunks = list(blob_backend.iter_chunks(key, 2 * CHUNK))
    assert b"".join(chunks) == data
    assert all(len(c) >= 2 * CHUNK for c in chunks[:-1]) and len(chunks) <= 2


@pytest.mark.parametrize("size", [10, 3 * CHUNK + 1, 17 * CHUNK + 3])  # one part, several
def test_put_chunks_stores_what_the_iterable_yields(blob_backend, size):
    data = os.urandom(size)
    key = blob_key("dd" * 32)
    pieces = (data[i : i + CHUNK + 1] for i in range(0, size, CHUNK + 1))
    blob_backend.put_chunks(key, pieces)
    assert blob_backend.stat(key) == size
    assert b"".join(blob_backend.iter_chunks(key)) == data


class _Refused(Exception):
    pass


@pytest.mark.parametrize("size", [10, 17 * CHUNK + 3])
def test_put_chunks_that_raise_at_the_end_leave_the_key_as_it_was(blob_backend, size):
    key = blob_key("dc" * 32)
    fresh = blob_key("db" * 32)
    blob_backend.put_bytes(key, b"the old object")

    def pieces(refuse_at_end: bool):
        data = os.urandom(size)
        for i in range(0, size, 4 * CHUNK):
            yield data[i : i + 4 * CHUNK]
        if refuse_at_end:
            raise _Refused("changed")

    for k in (key, fresh):
        with pytest.raises(_Refused):  # the iterable's own exception, unchanged
            blob_backend.put_chunks(k, pieces(True))
    assert b"".join(blob_backend.iter_chunks(key)) == b"the old object"
    assert blob_backend.stat(fresh) is None
    assert {x.key for x in blob_backend.list("")} == {key}


def test_list_by_directory_prefix_and_delete(blob_backend):
    keys = {blob_key(f"{a}{b}" + "0" * 60) for a in ("aa", "bb") for b in ("01", "02")}
    for k in keys:
        blob_backend.put_bytes(k, k.encode())
    listed = {x.key: x for x in blob_backend.list("blake3")}
    assert set(listed) == keys
    assert all(listed[k].size == len(k.encode()) for k in keys)
    assert all(abs(listed[k].modified.timestamp() - time.time()) < 600 for k in keys)
    assert {x.key for x in blob_backend.list("blake3/aa")} == {k for k in keys if "/aa/" in k}
    assert list(blob_backend.list("blake3/cc")) == []
    gone = sorted(keys)[0]
    blob_backend.delete(gone)
    assert blob_backend.stat(gone) is None
    assert {x.key for x in blob_backend.list("")} == keys - {gone}


def test_delete_many_removes_every_key_in_bulk_and_absent_ones_are_no_error(blob_backend):
    keys = [blob_key(f"{i:04x}" + "0" * 60) for i in range(1203)]  # over one request's 1,000
    for k in keys[:1200]:
        blob_backend.put_bytes(k, b"x")
    keep = blob_key("ff" * 32)
    blob_backend.put_bytes(keep, b"kept")
    assert blob_backend.delete_many(keys) == {}  # the last three never existed
    assert [x.key for x in blob_backend.list("")] == [keep]
    assert blob_backend.delete_many([]) == {}
    assert blob_backend.get_range(keep, 0, 10) == b"kept"


def test_delete_many_returns_the_keys_it_could_not_delete_and_deletes_the_rest(tmp_path):
    (tmp_path / "blobs").mkdir()
    b = open_backend(f"file:{tmp_path / 'blobs'}")
    keys = [blob_key(f"{i:02x}" + "0" * 62) for i in range(3)]
    for k in keys:
        b.put_bytes(k, b"x")
    stuck = tmp_path / "blobs" / keys[1]
    stuck.unlink()
    stuck.mkdir()  # a directory where the object was: unlink fails on it
    (stuck / "inside").write_bytes(b"y")
    failed = b.delete_many([*keys, "../escape"])
    assert sorted(failed) == sorted([keys[1], "../escape"])
    assert failed[keys[1]].code == "blobs.backend"
    assert failed["../escape"].code == "blobs.key"
    assert b.stat(keys[0]) is None and b.stat(keys[2]) is None


def test_an_s3_bulk_delete_that_fails_is_settled_key_by_key(s3_server, monkeypatch):
    import obstore

    b = open_backend(f"s3://{s3_server.bucket}/p{os.getpid()}x{time.time_ns()}")
    keys = [blob_key(f"{i:02x}" + "0" * 62) for i in range(4)]
    for k in keys:
        b.put_bytes(k, b"x")
    real = obstore.delete

    def refusing(store, paths):  # DeleteObjects answered with a per-key error for keys[2]
        if isinstance(paths, list):
            real(store, [p for p in paths if p != keys[2]])
            raise RuntimeError("Error performing DeleteObjects: AccessDenied for one key")
        if paths == keys[2]:
            raise RuntimeError("AccessDenied")
        return real(store, paths)

    monkeypatch.setattr(obstore, "delete", refusing)
    failed = b.delete_many(keys)
    assert list(failed) == [keys[2]] and failed[keys[2]].code == "blobs.backend"
    monkeypatch.setattr(obstore, "delete", real)
    assert [x.key for x in b.list("")] == [keys[2]]
    b.delete(keys[2])


def test_an_unreachable_s3_server_fails_a_bulk_delete_whole(s3_credentials):
    b = open_backend("s3://evstore-down/x?endpoint=http://127.0.0.1:9&region=us-east-1")
    with pytest.raises(evstore.StoreStateError) as info:
        b.delete_many([blob_key(ADDR)])
    assert info.value.code == "blobs.unreachable"


def test_the_directory_backend_writes_whole_files_or_nothing(tmp_path):
    (tmp_path / "blobs").mkdir()
    b = open_backend(f"file:{tmp_path / 'blobs'}")
    key = blob_key(ADDR)
    with pytest.raises(FileNotFoundError):
        b.put_file(key, str(tmp_path / "no-such-file"))
    assert b.stat(key) is None
    leftovers = [p for p in (tmp_path / "blobs").rglob("*") if p.is_file()]
    assert leftovers == []
    with pytest.raises(evstore.InputError) as info:
        b.put_bytes("../escape", b"x")
    assert info.value.code == "blobs.key"


def test_an_unreachable_s3_server_is_a_typed_retryable_error_in_seconds(s3_credentials):
    b = open_backend("s3://evstore-down/x?endpoint=http://127.0.0.1:9&region=us-east-1")
    started = time.monotonic()
    with pytest.raises(evstore.StoreStateError) as info:
        b.stat(blob_key(ADDR))
    assert info.value.code == "blobs.unreachable"
    assert time.monotonic() - started < 30


@pytest.mark.parametrize(
    "text,kind,norm",
    [
        ("inline", "inline", "inline"),
        ("s3://evidence/prod/a", "s3", "s3://evidence/prod/a"),
        ("s3://evidence", "s3", "s3://evidence"),
        (
            "s3://evidence/p?region=eu-west-1&endpoint=http://127.0.0.1:8333",
            "s3",
            "s3://evidence/p?endpoint=http://127.0.0.1:8333&region=eu-west-1",
        ),
    ],
)
def test_specs_parse_to_one_normal_form(text, kind, norm):
    spec = parse_spec(text)
    assert (spec.kind, spec.text) == (kind, norm)


def test_a_file_spec_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_spec("file:blobs").text == f"file:{tmp_path / 'blobs'}"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "file:",
        "s3://",
        "s3://UPPER/x",
        "s3://key:secret@bucket/x",
        "s3://bucket/a//b",
        "s3://bucket/../b",
        "s3://bucket/x?token=1",
        "s3://bucket/x?endpoint=ftp://h",
        "gs://bucket",
        "inline2",
    ],
)
def test_a_malformed_spec_is_a_typed_input_error(text):
    with pytest.raises(evstore.InputError) as info:
        parse_spec(text)
    assert info.value.code == "blobs.spec"


def test_a_missing_directory_is_unreachable_never_recreated(tmp_path):
    b = open_backend(f"file:{tmp_path / 'gone'}")
    for call in (lambda: b.stat(blob_key(ADDR)), lambda: b.put_bytes(blob_key(ADDR), b"x")):
        with pytest.raises(evstore.StoreStateError) as info:
            call()
        assert info.value.code == "blobs.unreachable"
    assert not (tmp_path / "gone").exists()


@pytest.mark.parametrize(
    "text",
    [
        "s3://bucket/x?endpoint=http://u:p@127.0.0.1:1",
        "s3://bucket/x?region=us%26endpoint%3Dhttp://127.0.0.1:2",
        "s3://bucket/x?endpoint=http://127.0.0.1:2#frag",
        "s3://bucket/x?region=US",
        "s3://bucket/" + "p" * 500,
    ],
)
def test_a_spec_that_would_not_read_back_the_same_is_refused(text):
    with pytest.raises(evstore.InputError) as info:
        parse_spec(text)
    assert info.value.code == "blobs.spec"


def test_a_hung_s3_server_is_unreachable_within_the_timeout_setting(s3_credentials):
    """A server that accepts connections and never answers (a hung process) is
    ``blobs.unreachable`` after about twice ``blobs.timeout_seconds``, not obstore's 30 s
    request timeout (the bound below only guards against that hang).
    """
    import socket

    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(8)  # connections complete in the kernel's backlog; nothing answers
        port = hung.getsockname()[1]
        b = open_backend(f"s3://evstore-hung/x?endpoint=http://127.0.0.1:{port}", timeout=0.5)
        started = time.monotonic()
        with pytest.raises(evstore.StoreStateError) as info:
            b.stat(blob_key(ADDR))
        assert info.value.code == "blobs.unreachable"
        assert time.monotonic() - started < 20


def test_put_chunks_passes_an_oserror_of_the_iterable_on_unchanged(blob_backend):
    # The directory backend turned any OSError met while writing into blobs.backend, the
    # iterable's own included: a caller's read failure must stay the caller's (attack7).
    key = blob_key("da" * 32)
    failure = OSError(5, "Input/output error")

    def pieces():
        yield os.urandom(CHUNK)
        raise failure

    with pytest.raises(OSError) as info:
        blob_backend.put_chunks(key, pieces())
    assert info.value is failure
    assert blob_backend.stat(key) is None
    assert list(blob_backend.list("")) == []
