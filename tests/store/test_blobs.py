"""Blobs on both backends: put/get/stat/has, streaming, corruption, repair."""

import io

import pytest
import sqlalchemy as sa

import evstore
from evstore.core.digests import digest_bytes
from evstore.db.tables import blob_chunks, blobs
from evstore.objects.blobs import CHUNK_SIZE, INLINE_MAX


def _corrupt_inline(store, address_hex, data):
    with store.db.engine.begin() as conn:
        conn.execute(sa.update(blobs).where(blobs.c.address == address_hex).values(data=data))


def test_all_four_ref_forms_resolve(store):
    data = "héllo wörld\n".encode()
    put = store.put(data)
    d = put.digest
    for ref in (
        d.address,
        "sha256:" + d.sha256,
        "sha256:" + d.sha256_b64u,
        "object-store:sha256:" + d.sha256_b64u,
    ):
        assert store.get(ref) == data
        assert store.stat(ref)["size"] == len(data)
    assert store.has([d.address, "sha256:" + d.sha256]) == []


def test_missing_and_bad_refs(store):
    missing = "blake3:" + "0" * 64
    assert store.has([missing]) == [missing]
    with pytest.raises(evstore.NotFound) as exc:
        store.get(missing)
    assert exc.value.code == "not-found.blob"
    with pytest.raises(evstore.RefSyntaxError):
        store.get("sha256:" + "A" * 64)


def test_stat_reports_digests_and_size_without_reading(store):
    put = store.put(b"abc")
    st = store.stat(put.digest.address)
    assert st["sha256"] == "sha256:" + digest_bytes(b"abc").sha256
    assert st["object_store"].startswith("object-store:sha256:")
    assert st["size"] == 3 and st["artifacts"] == []


def test_empty_blob(store):
    put = store.put(b"")
    assert store.get(put.digest.address) == b""
    assert put.digest.size == 0


@pytest.mark.parametrize("size", [INLINE_MAX, INLINE_MAX + 1, 3 * CHUNK_SIZE + 5])
def test_streamed_put_stores_exact_bytes(store, size):
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    put = store.put(io.BytesIO(data))
    assert put.digest == digest_bytes(data)
    assert store.get(put.digest.address) == data
    with store.open_blob("sha256:" + put.digest.sha256) as (dg, chunks):
        assert b"".join(chunks) == data
    assert store.stat(put.digest.address)["stored"] == (
        "inline" if size <= INLINE_MAX else "chunked"
    )
    again = store.put(io.BytesIO(data))
    assert not again.new
    with store.db.engine.connect() as conn:  # the duplicate left no orphan chunks
        sets = conn.execute(sa.select(sa.func.count(sa.distinct(blob_chunks.c.chunk_set)))).scalar()
    assert sets == (0 if size <= INLINE_MAX else 1)


def test_equal_bytes_stored_once(store):
    results = store.put_many([b"a", b"b", b"a"])
    assert [r.new for r in results] == [True, True, False]
    with store.db.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(blobs)).scalar() == 2


def test_corrupt_inline_blob_is_never_served_and_put_repairs_it(store):
    put = store.put(b"original bytes")
    _corrupt_inline(store, put.digest.blake3, b"tampered bytes")
    with pytest.raises(evstore.CorruptionError) as exc:
        store.get(put.digest.address)
    assert exc.value.code == "corruption.digest"
    faults = list(store.check())
    assert [f.code for f in faults] == ["corruption.digest"]
    # Same size, other bytes; and a truncated copy: both repaired by putting the content again.
    store.put(b"original bytes")
    assert store.get(put.digest.address) == b"original bytes"
    _corrupt_inline(store, put.digest.blake3, b"orig")
    with pytest.raises(evstore.CorruptionError) as exc:
        store.get(put.digest.address)
    assert exc.value.code == "corruption.size"
    store.put_many([b"original bytes"])
    assert store.get(put.digest.address) == b"original bytes"
    assert list(store.check()) == []


def test_corrupt_chunk_is_detected_before_any_byte(store):
    data = b"z" * (2 * CHUNK_SIZE + 10)
    put = store.put(io.BytesIO(data))
    with store.db.engine.begin() as conn:
        cs = conn.execute(
            sa.select(blobs.c.chunk_set).where(blobs.c.address == put.digest.blake3)
        ).scalar()
        conn.execute(
            sa.update(blob_chunks)
            .where(blob_chunks.c.chunk_set == cs, blob_chunks.c.seq == 2)
            .values(data=b"y" * 10)
        )
    emitted = []
    with pytest.raises(evstore.CorruptionError):
        with store.open_blob(put.digest.address) as (_d, chunks):
            for c in chunks:
                emitted.append(c)
    assert emitted == []
    store.put(io.BytesIO(data))  # repair
    assert store.get(put.digest.address) == data


def test_sha256_index_corruption_is_reported_by_check(store):
    put = store.put(b"abc")
    with store.db.engine.begin() as conn:
        conn.execute(
            sa.update(blobs).where(blobs.c.address == put.digest.blake3).values(sha256="0" * 64)
        )
    assert [f.code for f in store.check()] == ["corruption.sha256-index"]


def test_tampered_sha256_index_never_answers_for_other_bytes(store, tamper):
    a = store.put(b"AAAA")
    b = store.put(b"BBBB")
    with tamper(store) as conn:  # A's row now claims B's SHA-256; B's row is gone
        conn.execute(sa.delete(blobs).where(blobs.c.address == b.digest.blake3))
        conn.execute(
            sa.update(blobs)
            .where(blobs.c.address == a.digest.blake3)
            .values(sha256=b.digest.sha256)
        )
    with pytest.raises(evstore.CorruptionError) as exc:
        store.get("sha256:" + b.digest.sha256)
    assert exc.value.code == "corruption.sha256-index"
    # and a write-time lookup by SHA-256 does not bind the wrong bytes
    with pytest.raises(evstore.CorruptionError):
        store.transaction(lambda t: t.blob_by_sha256(b.digest.sha256))
    # supplying the right bytes stores them properly
    row = store.transaction(lambda t: t.blob_by_sha256(b.digest.sha256), supplied=[b"BBBB"])
    assert row.digest.blake3 == b.digest.blake3


def test_malformed_rows_are_corruption_not_crashes(store):
    a = store.put(b"AAAA")
    if store.db.backend != "sqlite":
        pytest.skip("only SQLite lets a row hold TEXT in a BLOB column")
    with store.db.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE blobs SET data = 'AAAA' WHERE address = ?", (a.digest.blake3,))
    with pytest.raises(evstore.CorruptionError) as exc:
        store.get(a.digest.address)
    assert exc.value.code == "corruption.row"
    assert [f.code for f in store.check()] == ["corruption.row"]


def test_bulk_copy_falls_back_when_a_concurrent_writer_stored_a_row_first(store):
    if store.db.backend != "postgresql":
        pytest.skip("the COPY bulk path is PostgreSQL's")
    from evstore.objects import blob_inserts as b

    datas = [b"row %d" % i for i in range(1200)]
    store.put(datas[7])  # stored by "someone else" after our existence check
    rows = []
    for d in datas:
        dg = digest_bytes(d)
        rows.append(
            {
                "address": dg.blake3,
                "sha256": dg.sha256,
                "size": dg.size,
                "data": d,
                "chunk_set": None,
            }
        )
    written = store.db.run_transaction(lambda conn: b.copy_blobs(conn, rows))
    assert written == {r["address"] for r in rows} - {digest_bytes(datas[7]).blake3}
    assert all(store.get(digest_bytes(d).address) == d for d in datas[:20])
    with store.db.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(blobs)).scalar() == 1200


def test_stat_and_has_rehash_before_reporting_digests(store, tamper):
    a = store.put(b"AAAA")
    b = store.put(b"BBBB")
    with tamper(store) as conn:
        conn.execute(sa.delete(blobs).where(blobs.c.address == a.digest.blake3))
        conn.execute(
            sa.update(blobs)
            .where(blobs.c.address == b.digest.blake3)
            .values(sha256=a.digest.sha256)
        )
    for ref in ("sha256:" + a.digest.sha256, b.digest.address):
        with pytest.raises(evstore.CorruptionError) as exc:
            store.stat(ref, verify=True)
        assert exc.value.code == "corruption.sha256-index"
        # Without verify, stat reports the recorded row (and says it was not verified).
        st = store.stat(ref)
        assert st["verified"] is False and st["sha256"] == "sha256:" + a.digest.sha256
    assert store.has(["sha256:" + a.digest.sha256]) == ["sha256:" + a.digest.sha256]


def test_malformed_artifact_rows_and_settings_are_listed_by_check(store):
    if store.db.backend != "sqlite":
        pytest.skip("only SQLite lets a row hold text where a timestamp belongs")
    from evstore import Document

    store.ingest([Document(b'{"a":1}')])
    with store.db.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE artifacts SET accepted_at = 'garbage'")
        conn.exec_driver_sql(
            "INSERT INTO settings VALUES ('fragments.revision_extension_keys', '5')"
        )
    with pytest.raises(evstore.CorruptionError) as exc:
        store.ls()
    assert exc.value.code == "corruption.row"
    codes = [f.code for f in store.check()]
    assert codes == ["corruption.setting", "corruption.row"]


@pytest.mark.parametrize("size", [40, INLINE_MAX + 100])
def test_has_agrees_across_ref_forms_after_a_byte_changes(store, size):
    """``has`` verifies: a changed byte makes every ref form of the blob answer missing."""
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    put = store.put(io.BytesIO(data))
    refs = list(
        dict.fromkeys(
            [put.digest.address, *(v for k, v in put.digest.forms().items() if k != "size")]
        )
    )
    assert store.has(refs) == []
    tampered = bytearray(data[: min(size, CHUNK_SIZE)])
    tampered[3] ^= 0x01
    with store.db.engine.begin() as conn:
        if size <= INLINE_MAX:
            conn.execute(
                sa.update(blobs)
                .where(blobs.c.address == put.digest.blake3)
                .values(data=bytes(tampered))
            )
        else:
            cs = conn.execute(
                sa.select(blobs.c.chunk_set).where(blobs.c.address == put.digest.blake3)
            ).scalar()
            conn.execute(
                sa.update(blob_chunks)
                .where(blob_chunks.c.chunk_set == cs, blob_chunks.c.seq == 0)
                .values(data=bytes(tampered))
            )
    assert store.has(refs) == refs


def test_corruption_digest_names_what_was_found(store):
    put = store.put(b"the original bytes")
    _corrupt_inline(store, put.digest.blake3, b"the 0riginal bytes")
    found = digest_bytes(b"the 0riginal bytes")
    for read in (
        lambda: store.get(put.digest.address),
        lambda: store.stat(put.digest.address, verify=True),
    ):
        with pytest.raises(evstore.CorruptionError) as exc:
            read()
        assert exc.value.code == "corruption.digest"
        assert exc.value.details == {
            "address": put.digest.address,
            "expected_sha256": "sha256:" + put.digest.sha256,
            "expected_size": put.digest.size,
            "found_blake3": found.address,
            "found_sha256": "sha256:" + found.sha256,
            "found_size": found.size,
        }
        assert found.address in exc.value.message
    [fault] = store.check()
    assert fault.code == "corruption.digest"
    assert fault.details["found_sha256"] == "sha256:" + found.sha256
    # a size change names the size found
    _corrupt_inline(store, put.digest.blake3, b"short")
    with pytest.raises(evstore.CorruptionError) as exc:
        store.get(put.digest.address)
    assert exc.value.code == "corruption.size"
    assert exc.value.details["found_size"] == 5
    assert exc.value.details["found_blake3"] == digest_bytes(b"short").address


def test_api_get_and_load_by_blake3_refuse_a_tampered_sha256_column(store):
    """Every read path answers the same for the same damage (the CLI get refuses it too)."""
    from evstore import Document

    put = store.put(b"AAAA")
    art = store.ingest([Document(b'{"a": 1}')]).results[0]
    with store.db.engine.begin() as conn:
        conn.execute(sa.update(blobs).values(sha256="0" * 64))
    for read in (
        lambda: store.get(put.digest.address),
        lambda: store.load(art.digest.address),
        lambda: store.stat(put.digest.address, verify=True),
    ):
        with pytest.raises(evstore.CorruptionError) as exc:
            read()
        assert exc.value.code == "corruption.sha256-index"
    assert store.has([put.digest.address, art.digest.address]) == [
        put.digest.address,
        art.digest.address,
    ]


def test_ls_and_find_show_an_artifact_whose_blob_row_is_missing(store, tamper):
    from evstore import Document

    a, b = store.ingest([Document(b'{"a": 1}'), Document(b'{"b": 2}')]).results
    with tamper(store) as conn:
        conn.execute(sa.delete(blobs).where(blobs.c.address == a.digest.blake3))
    listed = {i.address: i for i in store.ls()}
    assert set(listed) == {a.digest.address, b.digest.address}
    assert listed[a.digest.address].damage == "check.artifact-without-blob"
    assert listed[a.digest.address].size is None
    assert listed[a.digest.address].to_dict()["damage"] == "check.artifact-without-blob"
    assert listed[b.digest.address].damage is None
    assert "damage" not in listed[b.digest.address].to_dict()
    assert [i.address for i in store.ls("json")] == [i.address for i in store.ls()]
    assert store.warnings(a.digest.address) == []
    codes = [f.code for f in store.check()]
    assert "check.artifact-without-blob" in codes


def test_accepted_at_reads_the_same_on_both_backends(store):
    """RFC 3339 UTC with Z and six fraction digits on SQLite and PostgreSQL alike (SQLite
    keeps whole seconds, PostgreSQL microseconds: docs/design.md, "Times")."""
    import re

    address = store.ingest({"n": 1}).results[0].digest.address
    (info,) = store.ls()
    (kind,) = store.stat(address)["artifacts"]
    for value in (info.accepted_at, kind["accepted_at"]):
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", value), value
