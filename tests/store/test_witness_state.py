"""The store as a witness (C2SP tlog-witness add-checkpoint) and the log asking one.

The log side here is built by hand (an RFC 9162 tree in memory, checkpoints signed with
``cryptography`` keys), so the witness sees exactly the requests the spec describes: a
fresh log, a stale old size, a fork at the same size, a smaller size, an inconsistent
proof, a bad signature, an unknown origin. Each refusal leaves the store as it was.
"""

from __future__ import annotations

import pytest

import evstore
from evstore.tlog import merkle
from evstore.tlog.checkpoint import Checkpoint, Signer, sign_checkpoint
from evstore.tlog.cosignature import (
    Cosigner,
    format_add_checkpoint,
    read_cosigner_key,
    verified_cosigners,
)

LOG = Signer.generate("example.test/log")
IMPOSTOR = Signer.generate("example.test/log")  # the same origin, another key
STRANGER = Signer.generate("stranger.test/log")


def _tree(n: int, tag: bytes = b"e") -> merkle.MemoryTree:
    return merkle.MemoryTree([tag + b"%d" % i for i in range(n)])


def _note(tree: merkle.MemoryTree, signer: Signer = LOG) -> str:
    return sign_checkpoint(Checkpoint(signer.name, tree.size, tree.root()), signer)


def _refused(store, w, body: bytes, snapshot) -> tuple[str, dict]:
    before = snapshot(store)
    with pytest.raises(evstore.EvstoreError) as caught:
        store.log.witness_add_checkpoint(w, body)
    assert snapshot(store) == before  # a refusal records nothing
    return caught.value.code, caught.value.details


def test_the_witness_cosigns_an_extension_and_refuses_forks(store, snapshot):
    w = Cosigner.generate("witness.test/w1")
    store.set_config("witness.logs", [LOG.verifier.vkey()])
    good = _tree(9)

    def refused(body: bytes) -> tuple[str, dict]:
        return _refused(store, w, body, snapshot)

    five = _note(merkle.MemoryTree([b"e%d" % i for i in range(5)]))
    done = store.log.witness_add_checkpoint(w, format_add_checkpoint(0, [], five))
    assert done["size"] == 5 and done["origin"] == "example.test/log"
    assert verified_cosigners(five + done["cosignature"], [w.key]).keys() == {w.name}
    assert [(r["origin"], r["size"]) for r in store.log.witnessed()] == [("example.test/log", 5)]
    assert store.log.witnessed()[0]["cosigned_at"].endswith("Z")  # one spelling, both backends

    # a stale old size: 409 naming the size held
    assert refused(format_add_checkpoint(0, [], five)) == (
        "witness.conflict",
        {"size": 5},
    )
    # a fork at the same size: another root at 5
    fork5 = _note(_tree(5, b"x"))
    code, details = refused(format_add_checkpoint(5, [], fork5))
    assert code == "witness.conflict" and "size" not in details
    # a smaller tree than the one cosigned
    three = _note(_tree(3))
    assert refused(format_add_checkpoint(5, [], three))[0] == "witness.old-size"
    assert refused(format_add_checkpoint(3, [], three))[0] == "witness.conflict"
    # a larger tree that does not extend the one cosigned (its own proof, another history)
    fork9 = _tree(9, b"x")
    body = format_add_checkpoint(5, fork9.consistency_proof(5, 9), _note(fork9))
    assert refused(body)[0] == "witness.inconsistent"
    # the right history with a wrong proof
    body = format_add_checkpoint(5, good.consistency_proof(4, 9), _note(good))
    assert refused(body)[0] == "witness.inconsistent"
    # not signed by the key the witness follows; a log it does not follow
    body = format_add_checkpoint(5, good.consistency_proof(5, 9), _note(good, IMPOSTOR))
    assert refused(body)[0] == "witness.unsigned"
    body = format_add_checkpoint(0, [], _note(good, STRANGER))
    assert refused(body)[0] == "witness.unknown-log"
    assert refused(b"old 01\n\n" + five.encode())[0] == "witness.request"
    assert [r["size"] for r in store.log.witnessed()] == [5]

    # the real extension is cosigned and becomes the state
    body = format_add_checkpoint(5, good.consistency_proof(5, 9), _note(good))
    nine = store.log.witness_add_checkpoint(w, body)
    assert nine["size"] == 9
    assert [r["size"] for r in store.log.witnessed()] == [9]
    # the same checkpoint again (old size 9): cosigned again, nothing rolls back
    again = store.log.witness_add_checkpoint(w, format_add_checkpoint(9, [], _note(good)))
    assert again["size"] == 9


def test_a_witness_key_file_round_trips_and_must_be_private(tmp_path):
    w = Cosigner.generate("witness.test/w2")
    path = tmp_path / "w.key"
    w.write_private_key(path)
    assert (path.stat().st_mode & 0o777) == 0o600
    back = read_cosigner_key(path)
    assert back.key == w.key
    with pytest.raises(FileExistsError):
        w.write_private_key(path)
    path.chmod(0o644)
    with pytest.raises(evstore.EvstoreError) as caught:
        read_cosigner_key(path)
    assert caught.value.code == "witness.key"
    bad = tmp_path / "bad.key"
    bad.write_text(Signer.generate("a.test/x").private_key_line() + "\n")
    bad.chmod(0o600)
    with pytest.raises(evstore.EvstoreError) as caught:  # a log key is no witness key
        read_cosigner_key(bad)
    assert caught.value.code == "witness.key"


@pytest.mark.parametrize("size", [1 << 63, (1 << 64) - 1])
def test_a_tree_size_past_a_signed_64_bit_integer_is_a_typed_refusal(store, snapshot, size):
    """A hostile log's checkpoint of size >= 2^63 (both backends keep sizes in a signed 64-bit
    column) is 400 ``witness.request``, not an overflow; an old size that large too.
    """
    w = Cosigner.generate("witness.test/w1")
    store.set_config("witness.logs", [LOG.verifier.vkey()])
    huge = sign_checkpoint(Checkpoint(LOG.name, size, merkle.EMPTY_ROOT), LOG)
    assert _refused(store, w, format_add_checkpoint(0, [], huge), snapshot)[0] == "witness.request"
    body = format_add_checkpoint(size, [], huge)
    assert _refused(store, w, body, snapshot)[0] == "witness.request"


@pytest.mark.parametrize(
    "policy",
    [
        "garbage",
        "quorum -1",
        "log {log}\nwitness {w} {wk} file:///etc",
        "log {log}\nwitness {w} {wk} ftp://witness.test/",
        "log {log}\nwitness {w} {wk} http://[::1",
        "log {log}\nwitness {w} {wk} http://user:pw@witness.test/",
        "log {log}\nwitness {w} {wk} /relative",
        "log {log}\nwitness {w} {wk}\nwitness {w} {wk}",
        "log {log}\nwitness {w} {wk}\nquorum 2",
    ],
)
def test_a_witness_policy_that_could_never_work_is_refused_when_set(store, snapshot, policy):
    w = Cosigner.generate("witness.test/w1")
    text = policy.format(log=LOG.verifier.vkey(), w=w.name, wk=w.key.vkey())
    before = snapshot(store)
    with pytest.raises(evstore.EvstoreError) as caught:
        store.set_config("log.witness_policy", text)
    assert caught.value.code == "witness.policy"
    assert snapshot(store) == before
    good = f"log {LOG.verifier.vkey()}\nwitness {w.name} {w.key.vkey()} https://witness.test/w"
    assert store.set_config("log.witness_policy", good) == good


def test_witness_logs_that_name_a_log_twice_or_a_bad_key_are_refused_when_set(store, snapshot):
    before = snapshot(store)
    for value, code in (
        ([LOG.verifier.vkey(), IMPOSTOR.verifier.vkey()], "config.value"),
        (["garbage"], "checkpoint.key"),
    ):
        with pytest.raises(evstore.EvstoreError) as caught:
            store.set_config("witness.logs", value)
        assert caught.value.code == code
    assert snapshot(store) == before
    assert store.set_config("witness.logs", [LOG.verifier.vkey(), STRANGER.verifier.vkey()])
