"""Eight processes ingest and put at once while a ninth signs checkpoints.

Entries must be dense (no gap, no duplicate), every acknowledged new write must have exactly
one entry (and nothing else may), and every checkpoint must be consistent with every later
one (checked with consistency proofs and the verifier, as an auditor would).
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections import Counter

import sqlalchemy as sa

import evstore
from evstore.db.tables import log_checkpoints, log_entries

WORKER = r"""
import json, sys
import evstore
from evstore import Document

url, i = sys.argv[1], int(sys.argv[2])
out = {"ingested": [], "put": [], "errors": []}
with evstore.open(url) as s:
    for n in range(10):
        try:
            r = s.ingest([Document(b'{"shared": %d}' % n), Document(b'{"own": [%d, %d]}' % (i, n))])
            out["ingested"] += [[a.digest.blake3, a.kind] for a in r.results if a.new]
            for data in (b"shared blob %d" % n, b"own blob %d %d" % (i, n)):
                p = s.put(data)
                if p.new:
                    out["put"].append(p.digest.blake3)
        except Exception as exc:
            out["errors"].append(f"{type(exc).__name__}: {exc}")
print(json.dumps(out))
"""

SIGNER = r"""
import json, sys, time
import evstore
url, key = sys.argv[1], sys.argv[2]
sizes = []
with evstore.open(url) as s:
    for _ in range(25):
        sizes.append(s.log.checkpoint(key)["size"])
        time.sleep(0.05)
print(json.dumps(sizes))
"""


def _spawn(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_eight_writers_give_dense_entries_one_per_acknowledged_write(store_url, tmp_path):
    key = tmp_path / "log.key"
    with evstore.open(store_url) as s:
        s.log.init_key(key)
        vkey = s.log.key()
    procs = [_spawn(WORKER, store_url, str(i)) for i in range(8)]
    signer = _spawn(SIGNER, store_url, str(key))
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        assert p.returncode == 0, stderr
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    stdout, stderr = signer.communicate(timeout=300)
    assert signer.returncode == 0, stderr
    assert json.loads(stdout) == sorted(json.loads(stdout))
    assert all(o["errors"] == [] for o in outs), [o["errors"] for o in outs]
    with evstore.open(store_url) as s:
        s.log.checkpoint(key)
        with s.db.read() as conn:
            idx = [int(r[0]) for r in conn.execute(sa.select(log_entries.c.idx))]
            sizes = [int(r[0]) for r in conn.execute(sa.select(log_checkpoints.c.size))]
        assert sorted(idx) == list(range(len(idx)))  # dense: no gap, no duplicate
        entries = [e["entry"] for e in s.log.entries()]
        ingests = Counter(
            (e["address"].removeprefix("blake3:"), e["kind"])
            for e in entries
            if e["op"] == "ingest"
        )
        puts = Counter(e["address"].removeprefix("blake3:") for e in entries if e["op"] == "put")
        acked_ingests = Counter(tuple(x) for o in outs for x in o["ingested"])
        acked_puts = Counter(x for o in outs for x in o["put"])
        assert ingests == acked_ingests and set(ingests.values()) == {1}
        assert puts == acked_puts and set(puts.values()) == {1}
        assert len(ingests) == 10 + 8 * 10 and len(puts) == 10 + 8 * 10
        assert len(entries) == len(ingests) + len(puts)
        # every checkpoint is consistent with every later one
        sizes = sorted(sizes)
        for old, new in itertools.combinations(sizes, 2):
            r = evstore.verify_log_proof(s.log.prove_consistency(old, new)["text"], vkey)
            assert (r["old_size"], r["new_size"], r["old_root_signed"]) == (old, new, True)
        assert list(s.check(record=False)) == []
