"""The tamper-evident log on both backends: entries, stored subtrees, proofs, checkpoints.

Known answers come from a naive RFC 9162 section 2.1 implementation written here (recursive
MTH, PATH and SUBPROOF over the leaves, memoised), not from evstore's code; the proof files
evstore writes are also verified by a short independent verifier below (RFC 9162 2.1.3.2 and
Ed25519 over the signed note with ``cryptography`` directly).
"""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from log_reference import Naive

import evstore
from evstore import Document
from evstore.db.tables import log_entries, log_nodes
from evstore.objects.log_entries import consistency_at, inclusion_at, root_at
from evstore.tlog import merkle

MAX = 300


# -- helpers ---------------------------------------------------------------------------------
def _fill(store: evstore.Store, n: int, tag: str = "e") -> list[bytes]:
    store.put_many([f"{tag} {i}".encode() for i in range(n)])
    store.log.integrate()
    with store.db.read() as conn:
        rows = conn.execute(sa.select(log_entries.c.entry).order_by(log_entries.c.idx)).all()
    return [bytes(r.entry) for r in rows]


@pytest.fixture
def keyed(store, tmp_path):
    key = tmp_path / "log.key"
    store.log.init_key(key, origin="test.example/log")
    return store, key


class _Rows:
    def __init__(self, rows):
        self.rows = rows

    def subtree_hash(self, level, index):
        return self.rows[(level, index)]


# -- entries and appends ---------------------------------------------------------------------
def test_each_accepted_write_appends_one_entry_and_repeats_append_nothing(store, snapshot):
    put = store.put(b"raw bytes")
    assert store.put(b"raw bytes").new is False
    store.ingest([Document(b'{"a": 1}'), Document(b'{"a": 1}')])
    store.ingest([Document(b'{"a": 1}')])  # identical content again: nothing
    before = snapshot(store)
    store.validate([Document(b'{"b": 2}')])  # validate never appends
    with pytest.raises(evstore.InputError):
        store.ingest([Document(b'{"c": 3}'), Document(b'{"bad": ')])  # rejected: nothing
    assert snapshot(store) == before
    assert store.log.entries() == []  # queued, not in the tree yet
    assert store.log.integrate()["integrated"] == 2
    rows = store.log.entries()
    assert [r["index"] for r in rows] == [0, 1]
    first, second = (r["entry"] for r in rows)
    assert first["op"] == "put" and first["address"] == put.digest.address
    assert first["sha256"] == "sha256:" + put.digest.sha256 and first["size"] == 9
    assert second["op"] == "ingest" and second["kind"] == "json" and "root" not in second
    assert second["accepted_at"].endswith("Z") and first["v"] == 1
    # the entry bytes are canonical RFC 8785 and hash to the stored leaf
    raw = base64.b64decode(rows[1]["bytes"])
    assert raw == evstore.dumps(json.loads(raw))
    assert base64.b64decode(rows[1]["leaf_hash"]) == hashlib.sha256(b"\x00" + raw).digest()
    assert store.log.entries(1, 2) == rows[1:]
    with pytest.raises(evstore.InputError) as exc:
        store.log.entries(2, 1)
    assert exc.value.code == "log.range"


def test_the_same_bytes_as_another_kind_and_supplied_content_are_logged(store):
    store.put(b'{"same":true}')
    store.ingest([Document(b'{"same":true}', kind="json")])
    store.log.integrate()
    ops = [(r["entry"]["op"], r["entry"].get("kind")) for r in store.log.entries()]
    assert ops == [("put", None), ("ingest", "json")]


def test_every_size_and_index_up_to_300_matches_the_naive_reference(store):
    entries = _fill(store, MAX)
    ref = Naive(entries)
    with store.db.read() as conn:
        rows = {
            (int(r.level), int(r.idx)): bytes(r.hash) for r in conn.execute(sa.select(log_nodes))
        }
    # every stored row is the MTH of its aligned range, and nothing else is stored
    assert all(h == ref.mth(i << lv, (i + 1) << lv) for (lv, i), h in rows.items())
    assert len(rows) == sum(MAX >> lv for lv in range(9))
    src = _Rows(rows)
    for n in range(0, MAX + 1):
        assert merkle.root(n, src) == ref.mth(0, n)
        for m in range(n):
            assert merkle.inclusion_proof(m, n, src) == ref.path(m, 0, n)
        for m in range(n + 1):
            assert merkle.consistency_proof(m, n, src) == ref.proof(m, n)


def test_the_database_query_path_agrees_with_the_reference(store):
    entries = _fill(store, MAX)
    ref = Naive(entries)
    sizes = [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 127, 128, 129, 255, 256, 257, 299, 300]
    with store.db.read() as conn:
        assert root_at(conn, 0) == hashlib.sha256(b"").digest()
        for n in sizes:
            assert root_at(conn, n) == ref.mth(0, n)
            for m in range(0, n, max(1, n // 40)):
                assert inclusion_at(conn, m, n) == ref.path(m, 0, n)
                assert consistency_at(conn, m, n) == ref.proof(m, n)
            assert consistency_at(conn, n, n) == []


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_random_sizes_agree_with_the_reference(store, data):
    with store.db.read() as conn:
        have = conn.execute(sa.select(sa.func.count()).select_from(log_entries)).scalar()
    if have == 0:
        _fill(store, 1100, "h")
    with store.db.read() as conn:
        entries = [
            bytes(r.entry)
            for r in conn.execute(sa.select(log_entries.c.entry).order_by(log_entries.c.idx))
        ]
        ref = Naive(entries)
        n = data.draw(st.integers(1, len(entries)))
        m = data.draw(st.integers(0, n - 1))
        old = data.draw(st.integers(0, n))
        assert root_at(conn, n) == ref.mth(0, n)
        assert inclusion_at(conn, m, n) == ref.path(m, 0, n)
        assert consistency_at(conn, old, n) == ref.proof(old, n)


def test_the_migration_appends_what_existed_before_the_log_in_the_documented_order(store):
    from alembic import command

    from evstore.db.engine import _alembic_config

    store.put_many([b"zeta blob", b"alpha blob"])
    store.ingest([Document(b'{"n": 2}'), Document(b'{"n": 1}')])
    store.ingest([Document(b'{"n": 3}')])
    store.put(b'{"n":3}')  # an artifact's bytes: logged by its ingest entry only
    cfg = _alembic_config()
    for action, revision in (("downgrade", "0004"), ("upgrade", "head")):
        with store.db.engine.begin() as conn:
            cfg.attributes["connection"] = conn
            getattr(command, action)(cfg, revision)
    with store.db.read() as conn:
        arts = conn.execute(
            sa.text("SELECT address, kind FROM artifacts ORDER BY accepted_at, address, kind")
        ).all()
        loose = conn.execute(
            sa.text(
                "SELECT address FROM blobs WHERE address NOT IN (SELECT address FROM artifacts)"
                " ORDER BY address"
            )
        ).all()
    entries = [e["entry"] for e in store.log.entries()]
    assert [(e["op"], e["address"], e.get("kind")) for e in entries] == [
        ("ingest", "blake3:" + a, k) for a, k in arts
    ] + [("put", "blake3:" + a, None) for (a,) in loose]
    assert len(arts) == 3 and len(loose) == 2
    assert list(store.check(record=False)) == []
    store.put(b"after the migration")  # appends after the backfill
    store.log.integrate()
    assert store.log.entries()[-1]["index"] == 5


@pytest.mark.parametrize("big", [1 << 63, 10**23])
def test_an_index_or_size_beyond_any_column_is_log_range(store, tmp_path, big):
    """Sizes past 2**63 - 1 are a typed log.range (they overflowed the driver before)."""
    store.ingest({"range": 1})
    store.log.init_key(str(tmp_path / "k"))
    store.log.checkpoint(str(tmp_path / "k"))
    for call in (
        lambda: store.log.entries(0, big),
        lambda: store.log.entries(big),
        lambda: store.log.prove_consistency(1, big),
    ):
        with pytest.raises(evstore.InputError) as exc:
            call()
        assert exc.value.code == "log.range"
