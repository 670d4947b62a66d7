"""kill -9 of a witness while a log submits checkpoints to it (issue 26), repeated.

C2SP tlog-witness: the witness MUST persist a checkpoint before it answers with its
cosignature. So after any kill -9 the size it holds is at least the largest size it
returned a cosignature for, its root is that log's root at that size (never a torn row),
and it goes on cosigning from there. Rounds and waits are bounded.
"""

from __future__ import annotations

import random
import threading
import time

import httpx
from serverkit import start_process

import evstore
from evstore.tlog import merkle
from evstore.tlog.checkpoint import Checkpoint, Signer, sign_checkpoint
from evstore.tlog.cosignature import Cosigner, format_add_checkpoint, verified_cosigners

ROUNDS = 3
ROUND_S = 1.5


def _note(tree: merkle.MemoryTree, size: int, signer: Signer) -> str:
    return sign_checkpoint(Checkpoint(signer.name, size, tree.root(size)), signer)


def test_kill_9_never_rolls_the_witness_back(store_url, tmp_path):
    log = Signer.generate("crash.test/log")
    w = Cosigner.generate("crash.test/w")
    w.write_private_key(tmp_path / "w.key")
    with evstore.open(store_url) as store:
        store.set_config("witness.logs", [log.verifier.vkey()])
    tree = merkle.MemoryTree([b"leaf %d" % i for i in range(4000)])
    args = ["--store", store_url, "serve", "--no-access-log", "--witness-key"]
    held, cosigned_max = 0, 0
    rng = random.Random(26)
    for _ in range(ROUNDS):
        server = start_process([*args, str(tmp_path / "w.key")], tmp_path)
        url = server.base + "/add-checkpoint"
        # where does the witness stand? (a 409 names its size; 200 when it held nothing)
        r = httpx.post(url, content=format_add_checkpoint(0, [], _note(tree, 1, log)), timeout=30)
        if r.status_code == 409:
            held = int(r.text)
        else:
            assert r.status_code == 200 and held == 0, r.text
            held = 1
        assert held >= cosigned_max, "the witness lost a checkpoint it had cosigned"
        # its root is the log's root at that size: the same checkpoint again is accepted
        same = httpx.post(
            url, content=format_add_checkpoint(held, [], _note(tree, held, log)), timeout=30
        )
        assert same.status_code == 200, same.text
        killer = threading.Timer(rng.uniform(0.2, ROUND_S), server.proc.kill)  # SIGKILL
        killer.start()
        deadline = time.monotonic() + ROUND_S + 5
        try:
            while held < tree.size - 10 and time.monotonic() < deadline:
                new = min(tree.size, held + rng.randint(1, 9))
                body = format_add_checkpoint(
                    held, tree.consistency_proof(held, new), _note(tree, new, log)
                )
                try:
                    r = httpx.post(url, content=body, timeout=10)
                except httpx.HTTPError:
                    break  # killed
                assert r.status_code == 200, r.text
                assert verified_cosigners(_note(tree, new, log) + r.text, [w.key])
                held = cosigned_max = new
        finally:
            killer.cancel()
            server.proc.kill()
            server.proc.wait(timeout=30)
            server.stop()
    with evstore.open(store_url) as store:
        (row,) = store.log.witnessed()
    assert row["size"] >= cosigned_max and check_clean(store_url)


def check_clean(url: str) -> bool:
    with evstore.open(url) as store:
        return list(store.check()) == []
