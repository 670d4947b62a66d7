"""Several processes at once: one row per content, first-write-wins bindings, no lock errors."""

import json
import subprocess
import sys

import sqlalchemy as sa

import evstore
from evstore.db.tables import artifacts, bindings, blobs

WORKER = r"""
import json, sys
import evstore
from evstore import Document
from evstore.objects.bindings import bind

url, i = sys.argv[1], int(sys.argv[2])
out = {"puts": [], "errors": [], "bind": None}
with evstore.open(url) as s:
    for n in range(15):
        try:
            # the same bytes in every process, plus bytes of its own
            out["puts"].append(s.put(b"shared blob %d" % n).digest.address)
            s.put(b"own blob %d %d" % (i, n))
            s.ingest([Document(b'{"shared": %d}' % n), Document(b'{"own": [%d, %d]}' % (i, n))])
        except Exception as exc:  # report, the test asserts none happened
            out["errors"].append(f"{type(exc).__name__}: {exc}")
    r = s.db.run_transaction(lambda conn: bind(conn, "test.race", "the-key", f"value-{i}"))
    out["bind"] = [r.value, r.new, r.conflict]
print(json.dumps(out))
"""


def test_eight_writers(store_url):
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, store_url, str(i)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(8)
    ]
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    for o in outs:
        assert o["errors"] == [], o["errors"]
        assert not any("locked" in e for e in o["errors"])
    # every caller got the same address for the same bytes
    assert all(o["puts"] == outs[0]["puts"] for o in outs)
    # exactly one binding value won, and every process sees it
    winners = {o["bind"][0] for o in outs}
    assert len(winners) == 1
    assert sum(1 for o in outs if o["bind"][1]) == 1
    assert sum(1 for o in outs if o["bind"][2]) == 7
    with evstore.open(store_url) as s, s.db.engine.connect() as conn:
        n_blobs = conn.execute(sa.select(sa.func.count()).select_from(blobs)).scalar()
        n_arts = conn.execute(sa.select(sa.func.count()).select_from(artifacts)).scalar()
        n_bind = conn.execute(sa.select(sa.func.count()).select_from(bindings)).scalar()
    # 15 shared + 8*15 own raw blobs, 15 shared + 8*15 own JSON artifacts (their blobs too)
    assert n_blobs == 2 * (15 + 8 * 15)
    assert n_arts == 15 + 8 * 15
    assert n_bind == 1


CREATOR = r"""
import sys
import evstore
with evstore.open(sys.argv[1], create=True) as s:
    s.put(b"first use")
print("ok")
"""


def test_eight_processes_create_one_store_at_once(empty_url):
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CREATOR, empty_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert out.strip() == "ok"
    with evstore.open(empty_url) as s:
        assert s.has(["sha256:" + __import__("hashlib").sha256(b"first use").hexdigest()]) == []


BULK_WRITER = r"""
import json, random, sys
import evstore

url, seed = sys.argv[1], int(sys.argv[2])
items = [b"bulk blob %d" % n for n in range(1200)]
random.Random(seed).shuffle(items)
out = {"errors": [], "addresses": {}}
with evstore.open(url) as s:
    for round_ in range(2):
        try:
            # the COPY path on PostgreSQL (1,000+ new rows), executemany on SQLite
            batch = items[round_ * 200 :] + items[: round_ * 200]
            results = s.put_many(batch)
            out["addresses"] = {d.decode(): r.digest.address for d, r in zip(batch, results)}
        except Exception as exc:  # report, the test asserts none happened
            out["errors"].append(f"{type(exc).__name__}: {getattr(exc, 'code', '')} {exc}")
print(json.dumps(out))
"""


def test_bulk_writers_of_one_batch_in_different_orders(store_url):
    """Overlapping put_many batches in shuffled orders: no deadlock escapes, nothing fails."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", BULK_WRITER, store_url, str(seed)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in range(4)
    ]
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr
        assert "Traceback" not in stderr, stderr
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    for o in outs:
        assert o["errors"] == [], o["errors"]
    assert all(o["addresses"] == outs[0]["addresses"] for o in outs)
    assert len(outs[0]["addresses"]) == 1200
    with evstore.open(store_url) as s:
        for data, address in list(outs[0]["addresses"].items())[::50]:
            assert s.get(address) == data.encode()
        with s.db.engine.connect() as conn:
            n_blobs = conn.execute(sa.select(sa.func.count()).select_from(blobs)).scalar()
    assert n_blobs == 1200


SAME_NEW = r"""
import json, sys, time
import evstore
from evstore import Document

url, start = sys.argv[1], float(sys.argv[2])
big = 3 * (1 << 20) // 2  # chunked: over the 1 MiB inline limit
out = {}
with evstore.open(url) as s:
    s.put(b"warm the connection")
    for r in range(3):
        time.sleep(max(0.0, start + 0.4 * r - time.time()))
        out[f"put-inline-{r}"] = s.put(b"same inline %d" % r).new
        out[f"put-chunked-{r}"] = s.put(bytes([r]) * big).new
        many = s.put_many([b"many a %d" % r, b"many b %d" % r, b"many a %d" % r])
        out[f"many-a-{r}"] = many[0].new
        out[f"many-b-{r}"] = many[1].new
        assert many[2].new is False
        rep = s.ingest([Document(b'{"same document": %d}' % r)])
        out[f"ingest-{r}"] = rep.results[0].new
print(json.dumps(out))
"""


def test_six_processes_putting_the_same_new_bytes_one_is_told_new(store_url):
    """put, put_many, ingest; inline and chunked: exactly one caller is told ``new``."""
    import time

    start = time.time() + 4.0  # every process is up and connected before the first round
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SAME_NEW, store_url, str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=120)
        assert p.returncode == 0, stderr
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    for name in outs[0]:
        told = [o[name] for o in outs]
        assert told.count(True) == 1, (name, told)


SAME_300 = r"""
import hashlib, json, random, sys, time
import evstore
from evstore import Document
from evstore.core.canonical import dumps

url, writer, start = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])


def sha(b):
    return hashlib.sha256(b).hexdigest()


def docs300(seed):
    # 100 source records (bindings, attrs, supplied blobs), 100 fragments (attrs, edges,
    # bindings), 100 plain JSON documents; every group in its own order per call
    contents = [b"Clause %d: the tenant pays the rent on day %d.\n" % (i, i) for i in range(100)]
    sources = [
        Document(dumps({"document_id": f"DOC-{i}", "fragment_id": f"frag-{i}",
                        "content_sha256": sha(c), "revision_checksum": sha(b"rev %d" % i)}),
                 kind="fragment-source")
        for i, c in enumerate(contents)
    ]
    frags = [
        Document(dumps({"document_id": f"DOC-{i}", "fragment_id": f"frag-{i}",
                        "start_offset": 0, "end_offset": 9, "quote_sha256": sha(c[:9])}))
        for i, c in enumerate(contents)
    ]
    plain = [Document(dumps({"plain": i})) for i in range(100)]
    rnd = random.Random(seed)
    for group in (sources, frags, plain, contents):
        rnd.shuffle(group)
    return sources + plain + frags, contents


out = {"errors": [], "new": {}}
with evstore.open(url) as s:
    s.put(b"warm the connection")
    time.sleep(max(0.0, start - time.time()))
    for call in range(1):
        docs, contents = docs300(writer * 10 + call)
        try:
            for r in s.ingest(docs, supplied=contents).results:
                out["new"][r.digest.address] = out["new"].get(r.digest.address, 0) + r.new
        except Exception as exc:  # report, the test asserts none happened
            out["errors"].append(f"{type(exc).__name__}: {getattr(exc, 'code', '')} {exc}")
print(json.dumps(out))
"""


def test_eight_writers_ingesting_the_same_300_documents_in_different_orders(store_url):
    """Rows are written in canonical order in every statement: no deadlock, no failure."""
    import time

    start = time.time() + 4.0
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SAME_300, store_url, str(i), str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(8)
    ]
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=240)
        assert p.returncode == 0, stderr
        assert "Traceback" not in stderr, stderr
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    assert [o["errors"] for o in outs] == [[]] * 8
    told_new: dict[str, int] = {}
    for o in outs:
        for address, n in o["new"].items():
            told_new[address] = told_new.get(address, 0) + n
    assert len(told_new) == 300
    assert set(told_new.values()) == {1}  # every artifact: exactly one caller was told new
    with evstore.open(store_url) as s:
        assert len(s.ls()) == 300
        assert list(s.check()) == []
