"""Sequencing in the write, integration after it (issue 26), on both backends.

Writes queue their entries; the integrator gives them dense indices in commit order and
adds them to the tree. Here: the order and grouping of indices, the typed answer for an entry
not integrated yet, rounds of any size giving the same tree, an integrator or a writer killed
with SIGKILL in the middle (bounded repeats), two integrators at once, and a log made before
revision 0010 carried over unchanged.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
import sqlalchemy as sa
from log_reference import Naive

import evstore
from evstore import Document
from evstore.db.tables import log_checkpoints, log_entries, log_nodes, log_queue


def _table(store: evstore.Store, table: sa.Table) -> list[tuple]:
    # Revision 0012's log_entries.blob is left out: a store at 0009 has no such column.
    columns = [c for c in table.c if not (table is log_entries and c.name == "blob")]
    with store.db.read() as conn:
        return sorted(
            tuple(bytes(v) if isinstance(v, memoryview) else v for v in r)
            for r in conn.execute(sa.select(*columns))
        )


def _addresses(store: evstore.Store) -> list[str]:
    return [e["entry"]["address"] for e in store.log.entries()]


def _codes(fn) -> str | None:
    try:
        fn()
    except evstore.EvstoreError as err:
        return err.code
    return None


def test_entries_wait_in_the_queue_and_get_indices_in_commit_order(store):
    a = store.put(b"first write")
    many = store.put_many([b"second write: one", b"second write: two", b"second write: three"])
    (doc,) = store.ingest([Document(b'{"third": "write"}')]).results
    assert store.log.entries() == [] and store.log.status()["pending"] == 5
    assert len(_table(store, log_queue)) == 5
    done = store.log.integrate()
    assert (done["integrated"], done["size"], done["pending"]) == (5, 5, 0)
    assert done["checkpoint"] is None
    assert _addresses(store) == [
        a.digest.address,
        *(r.digest.address for r in many),  # one transaction: consecutive, in its order
        doc.digest.address,
    ]
    assert _table(store, log_queue) == []
    again = store.log.integrate()
    assert (again["integrated"], again["size"]) == (0, 5)  # nothing twice
    assert list(store.check(record=False)) == []


def test_an_entry_not_integrated_yet_is_typed_and_a_checkpoint_integrates_first(store, tmp_path):
    key = tmp_path / "log.key"
    store.log.init_key(key)
    store.put(b"before")
    cp = store.log.checkpoint(key)  # integrates, then signs: the write is in the tree signed
    assert cp["size"] == 1
    late = store.put(b"queued")
    assert _codes(lambda: store.log.prove(late.digest.address)) == "log.not-integrated"
    r = store.log.integrate(key)
    assert r["integrated"] == 1 and r["checkpoint"]["size"] == 2 and r["checkpoint"]["new"]
    proof = store.log.prove(late.digest.address)
    assert evstore.verify_log_proof(proof["text"], store.log.key(), b"queued")["index"] == 1


@pytest.mark.parametrize("limit", [1, 3, 1000])
def test_rounds_of_any_size_give_the_reference_tree(store, limit):
    for i in range(7):
        store.put_many([b"round %d item %d" % (i, j) for j in range(i % 3 + 1)])
    store.log.integrate(limit=limit)
    entries = [bytes(r[2]) for r in sorted(_table(store, log_entries))]
    assert len(entries) == sum(i % 3 + 1 for i in range(7))
    ref = Naive(entries)
    nodes = {(lv, i): h for lv, i, h in _table(store, log_nodes)}
    assert all(h == ref.mth(i << lv, (i + 1) << lv) for (lv, i), h in nodes.items())
    assert len(nodes) == sum(len(entries) >> lv for lv in range(8))
    assert list(store.check(record=False)) == []


# -- crashes ----------------------------------------------------------------------------------
#: A child that queues writes, then is killed by SIGKILL inside the integrator's transaction,
#: after the entries and subtrees are inserted and before the commit.
KILL_INTEGRATOR = r"""
import os, signal, sys
import evstore
import evstore.log.integrate as integ
url, n = sys.argv[1], int(sys.argv[2])
with evstore.open(url) as s:
    s.put_many([b"crash %d item %d" % (n, j) for j in range(5)])
    original = integ.append_entries
    def dying(conn, entries):
        first = original(conn, entries)
        os.kill(os.getpid(), signal.SIGKILL)
        return first
    integ.append_entries = dying
    s.log.integrate()
"""

#: A child killed by SIGKILL inside a write's commit hook, after its entries are queued.
KILL_WRITER = r"""
import os, signal, sys
import evstore
import evstore.objects.log_entries as le
url = sys.argv[1]
original = le.enqueue_entries
def dying(conn, entries):
    original(conn, entries)
    os.kill(os.getpid(), signal.SIGKILL)
le.enqueue_entries = dying
with evstore.open(url) as s:
    s.put(b"never acknowledged")
"""


def _run_killed(code: str, *args: str) -> None:
    p = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == -signal.SIGKILL, p.stderr


def test_an_integrator_killed_mid_round_loses_nothing_and_the_next_round_completes(store_url):
    with evstore.open(store_url) as s:
        s.put(b"already in the tree")
        s.log.integrate()
    for n in range(3):  # bounded repeats
        _run_killed(KILL_INTEGRATOR, store_url, str(n))
        with evstore.open(store_url) as s:
            # the killed round left the tree as it was and the queue whole
            assert s.log.status()["size"] == 1 + 5 * n
            assert s.log.status()["pending"] == 5
            assert s.log.integrate()["integrated"] == 5
            idx = [r[0] for r in _table(s, log_entries)]
            assert idx == list(range(1 + 5 * (n + 1)))  # dense, none twice
            assert list(s.check(record=False)) == []


def test_a_writer_killed_after_queueing_acknowledged_nothing_and_logged_nothing(store_url):
    with evstore.open(store_url) as s:
        s.put(b"kept")
    for _ in range(2):
        _run_killed(KILL_WRITER, store_url)
    with evstore.open(store_url) as s:
        assert s.log.status()["pending"] == 1  # the acknowledged write only
        s.log.integrate()
        assert len(s.log.entries()) == 1
        lost = evstore.digest_bytes(b"never acknowledged").address
        assert s.has([lost]) == [lost]  # the killed write stored nothing
        assert list(s.check(record=False)) == []


# -- two integrators and eight writers -------------------------------------------------------
WRITER = r"""
import json, sys, time
import evstore
url, i, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
acked = []
with evstore.open(url) as s:
    end = time.monotonic() + seconds  # from the open: starting up is not writing
    n = 0
    while time.monotonic() < end and n < 400:
        r = s.put(b"writer %d write %d" % (i, n))
        if r.new:
            acked.append(r.digest.address)
        n += 1
print(json.dumps(acked))
"""

INTEGRATOR = r"""
import json, sys, time
import evstore
url, key, seconds = sys.argv[1], sys.argv[2] or None, float(sys.argv[3])
sizes = []
with evstore.open(url) as s:
    end = time.monotonic() + seconds
    while time.monotonic() < end and len(sizes) < 400:
        r = s.log.integrate(key, limit=7)
        sizes.append(r["size"])
        time.sleep(0.02)
print(json.dumps(sizes))
"""


def _spawn(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )


def test_two_integrators_and_eight_writers_give_one_dense_entry_per_write(store_url, tmp_path):
    key = tmp_path / "log.key"
    with evstore.open(store_url) as s:
        s.log.init_key(key)
        vkey = s.log.key()
    seconds = "4"
    writers = [_spawn(WRITER, store_url, str(i), seconds) for i in range(8)]
    integrators = [_spawn(INTEGRATOR, store_url, k, seconds) for k in (str(key), "")]
    acked: list[str] = []
    for p in writers:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        acked += json.loads(out.strip().splitlines()[-1])
    for p in integrators:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        sizes = json.loads(out.strip().splitlines()[-1])
        assert sizes == sorted(sizes)  # the tree never shrinks
    assert len(acked) >= 8
    with evstore.open(store_url) as s:
        s.log.checkpoint(key)
        idx = [r[0] for r in _table(s, log_entries)]
        assert idx == list(range(len(acked)))  # dense, none twice, one per write
        assert sorted(_addresses(s)) == sorted(acked)
        sizes = [r[0] for r in _table(s, log_checkpoints)]
        for old, new in zip(sizes, sizes[1:], strict=False):
            r = evstore.verify_log_proof(s.log.prove_consistency(old, new)["text"], vkey)
            assert (r["old_size"], r["new_size"], r["old_root_signed"]) == (old, new, True)
        assert list(s.check(record=False)) == []


# -- upgrade --------------------------------------------------------------------------------
def test_a_log_made_before_0010_is_carried_over_unchanged(store, tmp_path):
    from alembic import command

    from evstore.db.engine import _alembic_config

    key = tmp_path / "log.key"
    store.log.init_key(key)
    store.put_many([b"old %d" % i for i in range(11)])
    store.ingest([Document(b'{"old": true}')])
    store.log.checkpoint(key)
    store.put(b"queued when the store went down to 0009")
    cfg = _alembic_config()
    with store.db.engine.begin() as conn:  # the previous release's schema, with its log
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0009")
    old = {t: _table(store, t) for t in (log_entries, log_nodes, log_checkpoints)}
    assert len(old[log_entries]) == 13  # 0010's downgrade put the queued entry in the tree
    with store.db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
    assert {t: _table(store, t) for t in old} == old  # no entry, index, subtree or note
    assert _table(store, log_queue) == []
    assert list(store.check(record=False)) == []
    late = store.put(b"after the upgrade")
    cp = store.log.checkpoint(key)
    assert cp["size"] == 14
    assert store.log.prove(late.digest.address)["index"] == 13
    r = evstore.verify_log_proof(store.log.prove_consistency(12)["text"], store.log.key())
    assert r["old_root_signed"] is True


def test_check_names_a_damaged_queued_entry(store, tamper):
    store.put_many([b"queued one", b"queued two", b"queued three"])
    assert list(store.check(record=False)) == []
    with tamper(store) as conn:
        conn.execute(sa.update(log_queue).where(log_queue.c.pos == 1).values(entry=b"junk"))
        conn.execute(sa.delete(log_queue).where(log_queue.c.pos == 0))
    faults = [(f.code, f.details.get("pos")) for f in store.check(record=False)]
    assert faults == [("check.log-entry", 0), ("check.log-entry", 1)]


#: A child killed by SIGKILL during a tile export, after ``n`` files were renamed into place.
KILL_EXPORT = r"""
import os, signal, sys
import evstore
import evstore.log.tiles as tiles
url, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
original, done = tiles._write_atomic, [0]
def dying(target, data):
    original(target, data)
    done[0] += 1
    if done[0] == n:
        os.kill(os.getpid(), signal.SIGKILL)
tiles._write_atomic = dying
with evstore.open(url) as s:
    s.log.export_tiles(out)
"""


def test_a_tile_export_killed_midway_is_completed_by_the_next(store_url, tmp_path):
    key, out = tmp_path / "log.key", tmp_path / "static"
    with evstore.open(store_url) as s:
        s.log.init_key(key)
        vkey = s.log.key()
    for n, size in ((2, 300), (3, 700)):  # bounded repeats, the log growing in between
        with evstore.open(store_url) as s:
            have = s.log.status()["size"]
            s.put_many([b"export %d" % i for i in range(have, size)])
            s.log.checkpoint(key)
        _run_killed(KILL_EXPORT, store_url, str(out), str(n))
        assert not [p for p in out.rglob(".tmp-*")]  # whole files only
        with evstore.open(store_url) as s:
            r = s.log.export_tiles(out)
        assert r["size"] == size
        for m in (0, size // 2, size - 1):
            assert evstore.verify_log_tiles(str(out), vkey, m)["size"] == size


def test_each_write_queues_one_batch_whatever_its_size(store):
    """One entry, a few, over 100 (SQLite's one-statement bound), 256+ (PostgreSQL's COPY)."""
    sizes = [1, 2, 1, 101, 300, 1]
    wrote = []
    for n, k in enumerate(sizes):
        blobs = [b"batch %d blob %d" % (n, i) for i in range(k)]
        if k == 1:
            wrote.append([store.put(blobs[0]).digest.address])
        else:
            wrote.append([r.digest.address for r in store.put_many(blobs)])
    with store.db.read() as conn:
        rows = conn.execute(
            sa.select(log_queue.c.batch, log_queue.c.pos, log_queue.c.address).order_by(
                log_queue.c.batch, log_queue.c.pos
            )
        ).all()
    batches: dict[int, list[tuple[int, str]]] = {}
    for b, pos, address in rows:
        batches.setdefault(int(b), []).append((int(pos), str(address)))
    assert len(batches) == len(sizes)  # one batch per transaction, numbered in commit order
    for (_, got), addresses in zip(sorted(batches.items()), wrote, strict=True):
        assert got == [(i, a.split(":", 1)[1]) for i, a in enumerate(addresses)]
    store.log.integrate()
    assert _addresses(store) == [a for w in wrote for a in w]
    assert list(store.check(record=False)) == []


@pytest.mark.parametrize(
    ("kind", "root", "size"),
    [
        (None, None, 0),
        ("json", None, 5120),
        (None, "release-1.0/x y", 10**15 - 1),
        ('kind with "quote"', None, 7),  # the rest: the canonical writer
        (None, "back\\slash", 7),
        ("caf\u00e9", None, 7),
        ("tab\there", "\u2028", 7),
        ("json", None, 10**15),
    ],
)
def test_entry_bytes_written_directly_are_the_canonical_bytes(kind, root, size):
    """The direct formatting of plain entries equals RFC 8785 of the entry object."""
    from evstore.core.canonical import dumps
    from evstore.objects import log_entries as le

    args = ("ingest", "blake3:" + "0a" * 32, "9f" * 32, size, "2026-12-04T14:00:00.000001Z")
    canonical = dumps(le._entry(*args, kind, root))
    direct = le._plain_bytes(*args, kind, root)
    assert direct is None or direct == canonical
    plain = all(
        v is None or all(" " <= c <= "~" and c not in '"\\' for c in v) for v in (kind, root)
    )
    assert (direct is not None) == (plain and size < 10**15)
    assert le.parse_entry(canonical)["size"] == size
    assert le._plain_bytes("ingest", "AB" * 32, "9f" * 32, 1, "t", None, None) is None
    pending = le._Pending()  # a transaction mixing both forms keeps its recording order
    pending.items += [("put", "0a" * 32, "9f" * 32, 1, None, None), (*args[:4], kind, root)]
    seen: list[list[tuple[str, bytes]]] = []
    original = le.enqueue_entries
    le.enqueue_entries = lambda conn, entries: seen.append(list(entries))
    try:
        pending(None)  # type: ignore[arg-type]
    finally:
        le.enqueue_entries = original
    ((first, second),) = seen
    at = le.parse_entry(first[1])["accepted_at"]
    assert first[1] == dumps(le._entry("put", "0a" * 32, "9f" * 32, 1, at, None, None))
    assert second[1] == dumps(le._entry(*args[:4], at, kind, root))
