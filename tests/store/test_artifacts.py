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


def test_batch_of_equal_documents_is_stored_once(store):
    report = store.ingest([Document(b'{"a":1,"b":2}'), Document(b'{"b":2, "a":1}')])
    assert [r.new for r in report.results] == [True, False]
    assert report.results[0].digest == report.results[1].digest
