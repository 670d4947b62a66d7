"""``evstore blobs move``: bytes moved between inline, a directory and a bucket (issue 25).

Every test runs on SQLite and PostgreSQL; those taking ``spec`` also on a directory and a
real SeaweedFS bucket. ``blobs.inline_max`` is 1 KiB so small payloads take the backend path;
one blob is over 1 MiB so it lives in chunk rows when inline.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

import evstore
from evstore.backends.base import blob_key
from evstore.backends.spec import open_backend
from evstore.db.tables import blob_chunks, blob_deletions, blobs
from evstore.retention import moves

INLINE_MAX = 1024
EXE = Path(sys.executable).with_name("evstore")


@pytest.fixture(params=["file", "s3"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "file":
        return f"file:{tmp_path / 'blobs'}"  # made by the move
    sw = request.getfixturevalue("s3_server")
    return f"s3://{sw.bucket}/m{uuid.uuid4().hex[:12]}?endpoint={sw.endpoint}"


@pytest.fixture
def s(store):
    store.set_config("blobs.inline_max", INLINE_MAX)
    store.set_config("gc.lease-seconds", 0)
    store.set_config("blobs.deletion_delay_seconds", 0)
    return store


def _fill(store, n: int = 6) -> dict[str, bytes]:
    """Blobs of every storage form: inline, over inline_max, over 1 MiB (chunk rows)."""
    rng = random.Random(n)
    sizes = [
        10,
        3 * INLINE_MAX,
        (1 << 20) + 5,
        *[rng.randrange(2, 40) * INLINE_MAX for _ in range(n)],
    ]
    out = {}
    for size in sizes:
        data = os.urandom(size)
        out[store.put(data).digest.address] = data
    return out


def _rows(store) -> dict[str, tuple]:
    with store.db.engine.connect() as conn:
        return {
            "blake3:" + r.address: (r.stored_in, r.chunk_set, r.data is not None)
            for r in conn.execute(
                sa.select(blobs.c.address, blobs.c.stored_in, blobs.c.chunk_set, blobs.c.data)
            )
        }


def _objects(spec: str) -> set[str]:
    return {"blake3:" + x.key.rsplit("/", 1)[-1] for x in open_backend(spec).list("blake3")}


def _chunk_sets(store) -> set[int]:
    with store.db.engine.connect() as conn:
        return {r[0] for r in conn.execute(sa.select(blob_chunks.c.chunk_set).distinct())}


def _drain(store) -> None:
    """Make every queued deletion due, then let gc drain the queue."""
    with store.db.engine.begin() as conn:
        past = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
        conn.execute(sa.update(blob_deletions).values(not_before=past))
    store.retention.gc()
    with store.db.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(blob_deletions)).scalar() == 0


def _all_readable(store, blobs_: dict[str, bytes]) -> None:
    for address, data in blobs_.items():
        assert store.get(address) == data
    assert store.has(list(blobs_)) == []
    assert list(store.check()) == []


def test_inline_to_a_backend_to_another_and_back(s, spec, tmp_path):
    data = _fill(s)
    large = {a for a, d in data.items() if len(d) > INLINE_MAX}
    report = s.retention.move_blobs(spec, batch=3)
    assert (report.moved, report.remaining, report.faults) == (len(large), 0, [])
    assert report.bytes == sum(len(data[a]) for a in large)
    assert s.config("blobs.backend")["blobs.backend"] == report.to
    rows = _rows(s)
    assert {a for a, r in rows.items() if r[0] == report.to} == large
    assert all(rows[a] == (None, None, True) for a in set(data) - large)  # small: inline
    assert _objects(spec) == large
    assert _chunk_sets(s) == set()  # the chunk rows of the 1 MiB blob are gone
    _all_readable(s, data)

    other = f"file:{tmp_path / 'other'}"
    second = s.retention.move_blobs(other, batch=4)
    assert (second.moved, second.queued, second.remaining) == (len(large), len(large), 0)
    assert _objects(spec) == large  # the old copies wait for the deletion delay
    _all_readable(s, data)
    _drain(s)
    assert _objects(spec) == set()
    assert _objects(other) == large
    _all_readable(s, data)

    back = s.retention.move_blobs("inline")
    assert (back.moved, back.remaining) == (len(large), 0)
    assert all(r[0] is None for r in _rows(s).values())
    assert len(_chunk_sets(s)) == 1  # the blob over 1 MiB is in chunk rows again
    _drain(s)
    assert _objects(other) == set()
    _all_readable(s, data)
    # New writes follow the setting the move set.
    res = s.put(os.urandom(5 * INLINE_MAX))
    assert _rows(s)[res.digest.address][0] is None


def test_a_move_to_where_everything_is_moves_nothing(s, spec):
    data = _fill(s, 2)
    s.retention.move_blobs(spec)
    again = s.retention.move_blobs(spec)
    assert (again.moved, again.batches, again.queued, again.remaining) == (0, 0, 0, 0)
    _all_readable(s, data)


@pytest.mark.parametrize("step", ["copied", "repointed", "committed"])
def test_an_interrupted_move_loses_nothing_and_resumes(s, spec, step, monkeypatch, tmp_path):
    s.set_config("blobs.orphan_grace_seconds", 0)
    data = _fill(s)
    first = s.retention.move_blobs(spec)
    large = {a for a, r in _rows(s).items() if r[0] == first.to}
    other = f"file:{tmp_path / 'other'}"
    calls = []

    def interrupt(name: str) -> None:
        calls.append(name)
        if name == step and calls.count(name) == 2:  # in the second batch
            raise KeyboardInterrupt

    monkeypatch.setattr(moves, "_HOOK", interrupt)
    with pytest.raises(KeyboardInterrupt):
        s.retention.move_blobs(other, batch=2)
    _all_readable(s, data)
    _drain(s)  # whatever was queued by then is not needed by any row
    _all_readable(s, data)
    monkeypatch.setattr(moves, "_HOOK", None)
    done = s.retention.move_blobs(other, batch=2)
    assert done.remaining == 0
    assert {a for a, r in _rows(s).items() if r[0] == done.to} == large
    _drain(s)
    assert _objects(spec) == set()
    assert _objects(other) == large
    _all_readable(s, data)


def test_damaged_bytes_are_not_moved_and_are_reported(s, spec, tmp_path):
    data = _fill(s, 2)
    s.retention.move_blobs(spec)
    bad = next(a for a, r in _rows(s).items() if r[0] is not None)
    open_backend(spec).put_bytes(blob_key(bad[7:]), bytes(len(data[bad])))
    report = s.retention.move_blobs(f"file:{tmp_path / 'other'}")
    assert [f["address"] for f in report.faults] == [bad]
    assert report.faults[0]["code"] == "corruption.digest"
    assert report.remaining == 1
    assert _rows(s)[bad][0] == parse(spec)  # left where it was
    del data[bad]
    for address, d in data.items():
        assert s.get(address) == d


def parse(spec: str) -> str:
    from evstore.backends.spec import parse_spec

    return parse_spec(spec).text


def test_a_blob_collected_during_the_move_leaves_no_copy(s, spec, monkeypatch, tmp_path):
    with s.retention.rooting("tmp"):
        res = s.put(os.urandom(4 * INLINE_MAX))
    kept = s.put(os.urandom(3 * INLINE_MAX))
    other = f"file:{tmp_path / 'other'}"

    def collect(name: str) -> None:
        if name == "copied":
            monkeypatch.setattr(moves, "_HOOK", None)
            s.retention.release("tmp")
            assert [o["address"] for o in s.retention.gc().objects] == [res.digest.address]

    s.retention.move_blobs(spec)
    monkeypatch.setattr(moves, "_HOOK", collect)
    report = s.retention.move_blobs(other)
    assert (report.moved, report.lost_races) == (1, 1)
    _drain(s)
    assert _objects(other) == {kept.digest.address}
    assert _objects(spec) == set()
    assert list(s.check()) == []


def test_a_put_during_a_move_goes_to_the_new_backend(s, spec, monkeypatch, tmp_path):
    data = _fill(s, 3)
    s.retention.move_blobs(spec)
    other = f"file:{tmp_path / 'other'}"
    fresh: list[bytes] = []

    def put(name: str) -> None:
        if name == "copied" and not fresh:
            fresh.append(os.urandom(6 * INLINE_MAX))
            data[s.put(fresh[0]).digest.address] = fresh[0]

    monkeypatch.setattr(moves, "_HOOK", put)
    report = s.retention.move_blobs(other, batch=2)
    assert report.remaining == 0
    _drain(s)
    _all_readable(s, data)
    assert _objects(spec) == set()


def test_a_bad_target_changes_nothing(s, tmp_path):
    data = _fill(s, 1)
    before = _rows(s)
    with pytest.raises(evstore.InputError) as info:
        s.retention.move_blobs("ftp://nowhere")
    assert info.value.code == "blobs.spec"
    assert s.config("blobs.backend")["blobs.backend"] == "inline"
    assert _rows(s) == before
    _all_readable(s, data)


def _cli(url: str, *args: str, **kw) -> subprocess.Popen[bytes]:
    env = {**os.environ, "EVSTORE_URL": url}
    return subprocess.Popen(
        [str(EXE), "--json", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw
    )


def _moved(url: str, spec: str) -> int:
    engine = sa.create_engine(url if "://" in url else f"sqlite:///{url}")
    try:
        with engine.connect() as conn:
            q = sa.select(sa.func.count()).where(blobs.c.stored_in == parse(spec))
            return int(conn.execute(q).scalar_one())
    finally:
        engine.dispose()


def test_kill_9_of_the_move_command_loses_nothing(store_url, spec, tmp_path):
    """The move is killed (SIGKILL) once it has committed a batch, at a random moment
    after, a bounded number of times; then run to its end: every blob reads back, check is
    clean after each kill, and the old backend ends empty once the queue is drained.
    """
    with evstore.open(store_url) as st:
        st.set_config("blobs.inline_max", INLINE_MAX)
        st.set_config("blobs.deletion_delay_seconds", 0)
        st.set_config("blobs.orphan_grace_seconds", 0)
        data = {}
        for _ in range(60):
            d = os.urandom(random.randrange(2, 200) * INLINE_MAX)
            data[st.put(d).digest.address] = d
        st.retention.move_blobs(f"file:{tmp_path / 'first'}")
    rng = random.Random(7)
    kills = 0
    for _ in range(4):  # bounded: four kills at most
        seen = _moved(store_url, spec)
        p = _cli(store_url, "blobs", "move", "--to", spec, "--batch", "2")
        deadline = time.monotonic() + 60
        while p.poll() is None and time.monotonic() < deadline:
            if _moved(store_url, spec) > seen:  # a batch committed: kill it soon after
                time.sleep(rng.uniform(0, 0.05))
                break
            time.sleep(0.01)
        if p.poll() is not None:
            p.communicate()
            break
        p.send_signal(signal.SIGKILL)
        p.communicate(timeout=30)
        kills += 1
        with evstore.open(store_url) as st:
            _all_readable(st, data)
    p = _cli(store_url, "blobs", "move", "--to", spec)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err.decode()
    assert json.loads(out)["remaining"] == 0
    with evstore.open(store_url) as st:
        _drain(st)
        _all_readable(st, data)
        assert _objects(f"file:{tmp_path / 'first'}") == set()
        assert _objects(spec) == {a for a, d in data.items() if len(d) > INLINE_MAX}
    assert kills >= 1  # at least one kill landed mid-move


def test_the_cli_reports_and_refuses(store_url, tmp_path):
    p = _cli(store_url, "blobs", "move", "--to", "nowhere:x")
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 1
    assert json.loads(out)["error"]["code"] == "blobs.spec"
    p = _cli(store_url, "blobs", "move", "--to", f"file:{tmp_path / 'b'}")
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0
    assert json.loads(out)["moved"] == 0
