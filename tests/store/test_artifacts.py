"""JSON artifacts on both backends: mentions edges, batches, new/not new."""

import json

import sqlalchemy as sa

from evstore import Document
from evstore.core.digests import digest_bytes
from evstore.db.tables import edges


def test_mentions_edges_to_stored_blobs_and_to_earlier_documents_of_the_batch(store):
    blob = store.put(b"report bytes")
    first = b'{"n":1}'
    first_address = digest_bytes(first).address  # canonical form of {"n":1} is the same bytes
    docs = [
        Document(first),
        Document(
            json.dumps(
                {"see": [blob.digest.address, "sha256:" + "0" * 64], "prev": first_address}
            ).encode()
        ),
    ]
    report = store.ingest(docs)
    assert [r.new for r in report.results] == [True, True]
    src = report.results[1].digest.blake3
    with store.db.engine.connect() as conn:
        got = {(r.role, r.dst) for r in conn.execute(sa.select(edges).where(edges.c.src == src))}
    assert got == {("mentions", blob.digest.blake3), ("mentions", digest_bytes(first).blake3)}


def test_mentions_edges_to_earlier_documents_hashed_only_when_a_ref_asks(store):
    # The json kind hashes the earlier documents of a run only when a document has a ref:
    # refs by BLAKE3 and by SHA-256 to documents before and after an earlier ref-holding
    # document (the pending list is emptied and filled again) all get their edge.
    plain = [b'{"n":%d}' % i for i in range(4)]  # canonical already: address = digest
    dg = [digest_bytes(p) for p in plain]
    first_ref = json.dumps({"a": dg[0].address}).encode()
    second_ref = json.dumps({"b": "sha256:" + dg[2].sha256, "c": dg[1].address}).encode()
    third_ref = json.dumps({"d": "sha256:" + dg[3].sha256}).encode()
    docs = [Document(d) for d in (plain[0], plain[1], first_ref, plain[2], second_ref)]
    docs += [Document(plain[3]), Document(third_ref)]
    report = store.ingest(docs)
    assert all(r.new for r in report.results)
    want = {
        2: {("mentions", dg[0].blake3)},
        4: {("mentions", dg[2].blake3), ("mentions", dg[1].blake3)},
        6: {("mentions", dg[3].blake3)},
    }
    with store.db.engine.connect() as conn:
        for i, result in enumerate(report.results):
            src = result.digest.blake3
            got = {
                (r.role, r.dst) for r in conn.execute(sa.select(edges).where(edges.c.src == src))
            }
            assert got == want.get(i, set()), i


def test_batch_of_equal_documents_is_stored_once(store):
    report = store.ingest([Document(b'{"a":1,"b":2}'), Document(b'{"b":2, "a":1}')])
    assert [r.new for r in report.results] == [True, False]
    assert report.results[0].digest == report.results[1].digest
