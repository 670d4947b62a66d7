"""The batched write paths and the per-thread point read of issue 16, on both backends."""

import hashlib
import threading

import pytest
import sqlalchemy as sa

from evstore.db import engine as dbmod
from evstore.db.tables import bindings
from evstore.objects import rows as rows_mod
from evstore.objects.bindings import BindingBatch, lookup_binding


def test_binding_batch_decides_in_order_and_inserts_once(store):
    def work(conn):
        batch = BindingBatch(conn, "ns")
        batch.prefetch(["a", "b"])
        first = batch.stage([("a", "1"), ("b", "2"), ("a", "9")], "ab" * 32, "doc1")
        second = batch.stage([("b", "3"), ("c", "4")], "cd" * 32, "doc2")  # c: not prefetched
        return first, second, batch.flush()

    first, second, lost = store.db.run_transaction(work)
    # first write wins inside the run; a conflict names the value staged first
    assert first == [None, None, "1"]
    assert second == ["2", None]
    assert lost == []
    with store.db.engine.connect() as c:
        assert [lookup_binding(c, "ns", k) for k in "abc"] == ["1", "2", "4"]


def test_binding_batch_reports_a_key_another_writer_bound_first(store):
    def work(conn):
        batch = BindingBatch(conn, "ns")
        batch.prefetch(["k", "same"])
        assert batch.stage([("k", "mine"), ("same", "v")], "ab" * 32, "doc7") == [None, None]
        # another writer binds both keys between the lookup and the insert (simulated here,
        # in the same transaction, as a concurrent commit would look to the insert)
        for key, value in (("k", "theirs"), ("same", "v")):
            conn.execute(
                sa.insert(bindings).values(
                    namespace="ns",
                    key_digest=hashlib.sha256(key.encode()).hexdigest(),
                    key=key,
                    value=value,
                    origin="",
                )
            )
        return batch.flush()

    # only the key now bound to another value is a conflict, with its tag and pair index
    assert store.db.run_transaction(work) == [("doc7", 0, "theirs")]


def test_put_many_in_small_statements_and_again(store, monkeypatch):
    monkeypatch.setattr(rows_mod, "_PG_ROWS", 2)  # PostgreSQL: several unnest statements
    items = [bytes([i]) * 100 for i in range(5)] + [b"\x00" * 100]
    first = store.put_many(items)
    assert [r.new for r in first] == [True] * 5 + [False]
    again = store.put_many(items[:3] + [b"new"])
    assert [r.new for r in again] == [False, False, False, True]
    for r, d in zip(first, items, strict=True):
        assert store.get(f"blake3:{r.digest.blake3}") == d


def test_get_on_several_threads_and_after_a_broken_connection(store):
    data = b"point read" * 100
    ref = f"blake3:{store.put(data).digest.blake3}"
    got: list[bytes] = []
    threads = [threading.Thread(target=lambda: got.append(store.get(ref))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert got == [data] * 3
    assert store.get(ref) == data
    raw = getattr(store.db._point, "raw", None)
    if store.db.backend == "sqlite":
        assert raw is not None
        raw.dbapi_connection.close()  # the thread's connection breaks underneath
        assert store.get(ref) == data  # the general path answers; the connection is replaced
        assert store.get(ref) == data
        assert store.db._point.raw is not raw
    store.close()
    assert store.db._point_raws == []


def test_point_reads_survive_a_terminated_backend_and_keep_to_their_cap(store, monkeypatch):
    """PostgreSQL: a point-read connection killed by the server fails once, unseen; at most
    POINT_CONNECTIONS threads hold one, the others read through the pool."""
    if store.db.backend != "postgresql":
        pytest.skip("a server backend to terminate is PostgreSQL's")
    data = b"point read pg" * 50
    ref = f"blake3:{store.put(data).digest.blake3}"
    assert store.get(ref) == data
    raw = store.db._point.raw
    pid = raw.dbapi_connection.info.backend_pid
    with store.db.engine.connect() as conn:
        conn.exec_driver_sql(f"SELECT pg_terminate_backend({pid})")
    assert store.get(ref) == data  # the general path answers; the connection is replaced
    assert store.get(ref) == data
    assert store.db._point.raw is not raw
    monkeypatch.setattr(dbmod, "POINT_CONNECTIONS", 2)
    got: list[bytes] = []
    gate = threading.Barrier(4)

    def read() -> None:
        gate.wait(timeout=30)
        got.append(store.get(ref))
        gate.wait(timeout=30)  # every thread is alive while the others read

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert got == [data] * 4
    assert len(store.db._point_raws) <= 2


def test_a_store_dropped_without_close_closes_its_point_read_connections(store_url):
    """No connection is left open (nor a ResourceWarning raised) by a store never closed."""
    import gc
    import warnings

    import evstore

    s = evstore.open(store_url)
    ref = f"blake3:{s.put(b'dropped store').digest.blake3}"
    assert s.get(ref) == b"dropped store"
    t = threading.Thread(target=s.get, args=(ref,))  # a second thread, a second connection
    t.start()
    t.join(timeout=60)
    drivers = list(s.db._point_drivers)
    assert len(drivers) == 2
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        del s, t
        gc.collect()
    for conn in drivers:  # the finalizer closed them: a closed connection refuses work
        with pytest.raises(Exception, match="(?i)closed"):
            conn.cursor().execute("SELECT 1")
    assert not [w for w in seen if issubclass(w.category, ResourceWarning)]


def test_a_connection_returned_after_close_is_closed_not_left_to_the_collector(store_url):
    """A connection another thread still held when the store was closed is closed when it is
    returned (a pool the engine no longer holds would keep it open until a garbage
    collection deleted it, with a ResourceWarning at that random moment)."""
    import evstore

    s = evstore.open(store_url)
    conn = s.db.engine.connect()  # checked out, as by a request still running
    driver = conn.connection.dbapi_connection
    s.close()
    conn.close()  # returned to the pool after the close
    with pytest.raises(Exception, match="(?i)closed"):
        driver.cursor().execute("SELECT 1")
