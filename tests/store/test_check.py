"""The batched check (store/check/checker.py): same faults as the per-object check it replaced, and
its options: sample, kinds, since/record (interrupted runs), jobs, read-only stores."""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from tamperkit import tampering

import evstore
from evstore.check.checker import CheckOptions, check_store
from evstore.core.canonical import dumps, loads
from evstore.core.errors import EvstoreError, Faults, error
from evstore.core.refs import parse_ref
from evstore.db.settings import load_settings
from evstore.db.tables import artifacts, blob_chunks, blobs, verified
from evstore.objects import blobs as _blobs
from evstore.objects.artifacts import Document
from evstore.objects.kinds import get_handler
from evstore.objects.txn import Txn


# -- the per-object check of the previous release, kept here as the oracle ------------------
def _oracle(db) -> Iterator[EvstoreError]:
    """The check as it was before batching (one query per object), fault for fault."""
    with db.read() as conn:
        txn = Txn(conn, load_settings(conn), "audit")
        cols = (blobs.c.address, blobs.c.sha256, blobs.c.size, blobs.c.chunk_set)
        for r in conn.execute(sa.select(*cols).order_by(blobs.c.address)).all():
            try:
                fault = _blobs.verify_stored(conn, _blobs.row_from(r))
            except EvstoreError as exc:
                fault = exc
            if fault is not None:
                yield fault
        arts = conn.execute(
            sa.select(artifacts.c.address, artifacts.c.kind).order_by(
                artifacts.c.address, artifacts.c.kind
            )
        ).all()
        for a in arts:
            where = "blake3:" + a.address
            row = _blobs.lookup(conn, parse_ref(where))
            if row is None:
                yield error("check.artifact-without-blob", "x", address=where)
                continue
            try:
                data = _blobs.read_verified(conn, row)
            except EvstoreError:
                continue
            try:
                value = loads(data)
            except EvstoreError as err:
                err.details["address"] = where
                yield err
                continue
            if dumps(value) != data:
                yield error("check.not-canonical", "x", address=where)
            try:
                handler = get_handler(a.kind)
            except EvstoreError as err:
                err.details["address"] = where
                yield err
                continue
            txn.faults = []
            audit = getattr(handler, "audit", None)
            try:
                found = Faults.of(
                    audit(value, a.address, txn) if audit else handler.check(value, txn)
                ).errors
            except EvstoreError as err:
                found = [err]
            for f in [*found, *txn.faults]:
                f.details.setdefault("address", where)
                yield f


def _doc(value) -> Document:
    return Document(json.dumps(value).encode(), kind="json")


def _key(faults) -> list[tuple[str, str, str]]:
    return [(f.code, f.details.get("address", ""), f.pointer) for f in faults]


def _set(store, table, where, **values) -> None:
    with store.db.engine.begin() as conn:
        conn.execute(sa.update(table).where(where).values(**values))


def _tampered(store) -> dict[str, str]:
    """A store with one fault of each kind the check finds, among clean objects."""
    store.put_many([b"clean %d" % i for i in range(40)])
    put = {n: store.put(n.encode() * 3).digest.blake3 for n in ("digest", "size", "sha")}
    _set(store, blobs, blobs.c.address == put["digest"], data=b"DIGESTDIGESTDIGEST")
    _set(store, blobs, blobs.c.address == put["size"], data=b"short")
    _set(store, blobs, blobs.c.address == put["sha"], sha256="0" * 64)
    big = store.put(io.BytesIO(b"q" * (2 * _blobs.CHUNK_SIZE + 5))).digest.blake3
    gap = store.put(io.BytesIO(b"g" * (3 * _blobs.CHUNK_SIZE))).digest.blake3
    with store.db.engine.begin() as conn:
        for address, seq, change in ((big, 2, "edit"), (gap, 1, "drop")):
            cs = conn.execute(
                sa.select(blobs.c.chunk_set).where(blobs.c.address == address)
            ).scalar_one()
            where = sa.and_(blob_chunks.c.chunk_set == cs, blob_chunks.c.seq == seq)
            if change == "edit":
                conn.execute(sa.update(blob_chunks).where(where).values(data=b"x" * 5))
            else:
                conn.execute(sa.delete(blob_chunks).where(where))
    docs = [_doc({"n": i, "text": f"record {i}"}) for i in range(30)]
    reports = store.ingest(docs)
    jsons = [r.digest.blake3 for r in reports.results]
    _set(store, blobs, blobs.c.address == jsons[3], data=b'{"n":3,"text":"tampered!!"}')
    odd = store.put(b'{"b":1, "a":2}').digest.blake3  # not canonical, stored as an artifact
    now = dt.datetime.now(dt.UTC)
    with tampering(store) as conn:  # an artifact row without its blob: past the foreign keys
        conn.execute(
            sa.insert(artifacts),
            [
                {"address": odd, "kind": "json", "contract_version": "x", "accepted_at": now},
                {"address": "f" * 64, "kind": "json", "contract_version": "x", "accepted_at": now},
                {
                    "address": jsons[7],
                    "kind": "no-such-kind",
                    "contract_version": "x",
                    "accepted_at": now,
                },
            ],
        )
    return {"json3": jsons[3], "odd": odd, **put, "big": big, "gap": gap}


@pytest.mark.parametrize(
    "batch,jobs,group", [(3, 1, None), (2000, 1, None), (7, 3, 40), (5, 1, 100)]
)
def test_batched_check_finds_exactly_the_faults_of_the_per_object_check(
    store, monkeypatch, batch, jobs, group
):
    if group is not None:  # bytes read per query: a few objects each
        monkeypatch.setattr("evstore.check.checker._GROUP_BYTES", group)
    bad = _tampered(store)
    expected = _key(_oracle(store.db))
    got = _key(check_store(store.db, options=CheckOptions(batch=batch, jobs=jobs, record=False)))
    assert got == expected
    codes = {c for c, _a, _p in got}
    assert {
        "corruption.digest",
        "corruption.size",
        "corruption.sha256-index",
        "check.not-canonical",
        "check.artifact-without-blob",
        "kind.unknown",
    } <= codes
    assert {a for _c, a, _p in got} >= {"blake3:" + a for a in bad.values()}
    assert _key(store.check()) == expected  # the public call, default options


def test_progress_counts_every_object_once(store):
    store.put_many([b"p %d" % i for i in range(25)])
    store.ingest([_doc({"i": i}) for i in range(5)])
    seen: list[tuple[int, int]] = []
    opts = CheckOptions(batch=4)
    assert list(check_store(store.db, lambda d, t: seen.append((d, t)), opts)) == []
    assert seen == [(i, 35) for i in range(1, 36)]


def _all_corrupt(store, n: int) -> list[str]:
    addrs = [r.digest.blake3 for r in store.put_many([b"blob %03d" % i for i in range(n)])]
    with store.db.engine.begin() as conn:
        conn.execute(sa.update(blobs).values(data=b"tampered"))
    return addrs


def test_sample_is_reproducible_for_a_seed_and_varies_with_it(store):
    _all_corrupt(store, 200)

    def sampled(seed: int, fraction: float = 0.25) -> set[str]:
        run = store.check(sample=fraction, seed=seed, record=False)
        found = {f.details["address"] for f in run}
        assert run.checked == len(found)
        return found

    first = sampled(7)
    assert sampled(7) == first
    assert 20 <= len(first) <= 80  # 200 * 0.25, far inside any plausible deviation
    assert sampled(8) != first
    assert len(sampled(7, 1.0)) == 200
    # A larger fraction with the same seed keeps the smaller sample (a threshold on one hash).
    assert first <= sampled(7, 0.5)


def test_sample_checks_an_artifact_with_its_blob(store):
    reports = store.ingest([_doc({"i": i}) for i in range(60)])
    with store.db.engine.begin() as conn:
        conn.execute(sa.update(blobs).values(sha256="0" * 64))
    found = {f.details["address"] for f in store.check(sample=0.3, seed=1, record=False)}
    run = store.check(sample=0.3, seed=1, record=False)
    assert list(run) and run.checked == 2 * len(found)  # each sampled blob and its artifact
    assert found < {r.digest.address for r in reports.results}


@pytest.mark.parametrize(
    "bad", [{"sample": 0}, {"sample": 1.5}, {"sample": "x"}, {"jobs": 0}, {"since": "soon"}]
)
def test_bad_options_are_typed_input_errors_before_any_read(store, bad):
    with pytest.raises(evstore.InputError) as exc:
        store.check(**bad)
    assert exc.value.code == "input.invalid"


def test_kind_filter(store):
    (doc,) = store.ingest([_doc({"k": 1})]).results
    plain = store.put(b"plain bytes").digest.blake3
    odd = store.put(b'{"b":1, "a":2}').digest.blake3
    with store.db.engine.begin() as conn:
        conn.execute(
            sa.insert(artifacts).values(
                address=odd, kind="json", contract_version="x", accepted_at=dt.datetime.now(dt.UTC)
            )
        )
        conn.execute(
            sa.update(blobs)
            .where(blobs.c.address.in_([doc.digest.blake3, plain]))
            .values(sha256="0" * 64)
        )
    everything = _key(store.check(record=False))
    assert len(everything) == 3
    json_only = store.check(kinds=["json"], record=False)
    assert sorted(_key(json_only)) == sorted(
        [
            ("corruption.sha256-index", doc.digest.address, ""),
            ("check.not-canonical", "blake3:" + odd, ""),
        ]
    )
    assert json_only.checked == 4  # two blobs, two artifacts
    blob_only = store.check(kinds=["blob"], record=False)
    assert sorted(_key(blob_only)) == sorted(
        [
            ("corruption.sha256-index", doc.digest.address, ""),
            ("corruption.sha256-index", "blake3:" + plain, ""),
        ]
    )
    assert blob_only.checked == 3
    with pytest.raises(evstore.InputError) as exc:
        store.check(kinds=["no-such-kind"])
    assert exc.value.code == "kind.unknown"


def _verified(store) -> dict[tuple[str, str], dt.datetime]:
    with store.db.read() as conn:
        return {(r.address, r.kind): r.verified_at for r in conn.execute(sa.select(verified))}


def test_since_resumes_an_interrupted_run_and_rechecks_faults(store):
    addrs = [r.digest.blake3 for r in store.put_many([b"n %02d" % i for i in range(30)])]
    bad = sorted(addrs)[20]
    _set(store, blobs, blobs.c.address == bad, data=b"bad!")
    start = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)

    class Stop(Exception):
        pass

    def stop_at_12(done: int, _total: int) -> None:
        if done == 12:
            raise Stop

    with pytest.raises(Stop):
        list(check_store(store.db, stop_at_12, CheckOptions(batch=5)))
    kept = _verified(store)
    # Every object verified so far: the pages before the interruption and the page in
    # flight (its blobs were all re-hashed before the first was reported).
    assert set(kept) == {(a, "") for a in sorted(addrs)[:15]}

    seen: list[int] = []
    run = store.check(lambda d, t: seen.append(t), since=start)
    assert _key(run) == [("corruption.digest", "blake3:" + bad, "")]
    assert seen[-1] == 15 and run.checked == 15 and run.recorded == 14
    assert set(_verified(store)) == {(a, "") for a in addrs if a != bad}
    # Again: only the faulty blob is still due, and it is still reported.
    run = store.check(since=start)
    assert _key(run) == [("corruption.digest", "blake3:" + bad, "")] and run.checked == 1
    # An age works too; a time before every record checks nothing already verified.
    run = store.check(since="1h")
    assert len(list(run)) == 1 and run.checked == 1
    # Without --since everything is checked again and the times move forward.
    before = _verified(store)
    run = store.check()
    assert len(list(run)) == 1 and run.checked == 30
    after = _verified(store)
    assert all(after[k] >= before[k] for k in before)


def test_since_reports_a_blob_corrupted_after_it_was_verified(store):
    (doc,) = store.ingest([_doc({"late": True})]).results
    assert list(store.check()) == []
    # Re-verify only the blob pass later than the artifact: make the artifact due.
    with store.db.engine.begin() as conn:
        conn.execute(
            sa.update(verified)
            .where(verified.c.kind == "json")
            .values(verified_at=dt.datetime(2000, 1, 1, tzinfo=dt.UTC))
        )
    _set(store, blobs, blobs.c.address == doc.digest.blake3, sha256="0" * 64)
    run = store.check(since="1h")
    assert _key(run) == [("corruption.sha256-index", doc.digest.address, "")]
    assert run.checked == 1  # the artifact only; its blob was verified within the hour


def test_closing_a_run_keeps_what_it_verified(store):
    store.put_many([b"c %02d" % i for i in range(10)])
    with store.db.engine.begin() as conn:
        conn.execute(sa.update(blobs).values(sha256="0" * 64))
    run = check_store(store.db, options=CheckOptions(batch=100))
    next(run)
    run.close()
    assert _verified(store) == {}  # faults are never recorded
    assert run.checked == 0


def test_no_record_writes_nothing(store):
    store.put_many([b"r %02d" % i for i in range(10)])
    run = store.check(record=False)
    assert list(run) == [] and run.checked == 10 and run.recorded == 0
    assert _verified(store) == {}


def _read_only(store, backend, request) -> None:
    if backend == "sqlite":

        @event.listens_for(store.db.engine, "connect")
        def _query_only(dbapi_conn, _record):
            dbapi_conn.execute("PRAGMA query_only = ON")

    else:
        with store.db.engine.connect() as conn:
            name = conn.exec_driver_sql("SELECT current_database()").scalar_one()
            conn.commit()
        with store.db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
            c.exec_driver_sql(f"ALTER DATABASE {name} SET default_transaction_read_only = on")
    store.db.engine.dispose()


def test_a_read_only_store_is_checked_and_nothing_recorded(store, backend, request):
    store.put_many([b"ro %02d" % i for i in range(10)])
    bad = store.put(b"bad").digest.blake3
    _set(store, blobs, blobs.c.address == bad, data=b"BAD")
    _read_only(store, backend, request)
    run = store.check()
    assert _key(run) == [("corruption.digest", "blake3:" + bad, "")]
    assert run.checked == 11 and run.recorded == 0
    assert run.not_recorded and "read-only" in run.not_recorded
    assert _verified(store) == {}


def test_cli_check_options(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from evstore.cli.main import cli

    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'c.db'}"
    s = evstore.open(url, create=True)
    s.put_many([b"cli %02d" % i for i in range(20)])
    s.ingest([_doc({"i": 1})])
    s.close()

    def run(*args):
        return CliRunner().invoke(cli, ["--store", url, *args], catch_exceptions=False)

    plain = run("check")
    assert plain.exit_code == 0 and plain.stdout == "ok: no faults\n"
    r = run("--json", "check", "--sample", "0.5", "--seed", "3", "--jobs", "2")
    out = json.loads(r.stdout)
    assert r.exit_code == 0 and out["ok"] and 0 < out["checked"] < 22
    assert run("--json", "check", "--sample", "0.5", "--seed", "3").stdout == r.stdout
    r = run("--json", "check", "--since", "1h")
    assert json.loads(r.stdout)["checked"] == 0  # every object verified by the plain check
    r = run("--json", "check", "--kind", "json", "--since", "2000-01-01")
    assert json.loads(r.stdout)["checked"] == 0
    r = run("--json", "check", "--kind", "json", "--no-record")
    assert json.loads(r.stdout)["checked"] == 2
    for bad, code in (
        (["--sample", "2"], "input.invalid"),
        (["--since", "yesterday"], "input.invalid"),
        (["--jobs", "0"], "input.invalid"),
        (["--kind", "nope"], "kind.unknown"),
    ):
        r = run("--json", "check", *bad)
        assert r.exit_code != 0 and json.loads(r.stdout)["error"]["code"] == code, bad
