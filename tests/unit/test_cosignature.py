"""Witness cosignatures, add-checkpoint decisions and policies (store/tlog/cosignature.py).

The cosignature bytes are checked against C2SP tlog-cosignature computed here by hand (key
ID, timestamped signature, signed message) with ``cryptography`` directly; the witness's
answers against C2SP tlog-witness (which request is refused with which status).
"""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

import evstore
from evstore.core.errors import http_status
from evstore.tlog import merkle
from evstore.tlog.checkpoint import Checkpoint, Signer, sign_checkpoint, verify_checkpoint
from evstore.tlog.cosignature import (
    Cosigner,
    Policy,
    format_add_checkpoint,
    parse_add_checkpoint,
    parse_cosigner_vkey,
    verified_cosigners,
    witness_decision,
)

LOG = Signer.generate("example.test/log")
OTHER = Signer.generate("example.test/log")  # the same origin, another key


def _note(tree: merkle.MemoryTree, signer: Signer = LOG) -> str:
    return sign_checkpoint(Checkpoint(signer.name, tree.size, tree.root()), signer)


def _tree(n: int, tag: bytes = b"e") -> merkle.MemoryTree:
    return merkle.MemoryTree([tag + b"%d" % i for i in range(n)])


def test_a_cosignature_is_the_specs_bytes():
    w = Cosigner.generate("witness.test/w1")
    note = _note(_tree(5))
    line = w.cosign(note, 1_679_315_147)
    assert line.startswith("\u2014 witness.test/w1 ") and line.endswith("\n")
    raw = base64.b64decode(line.split(" ")[2])
    pub = w.key.public_key
    assert raw[:4] == hashlib.sha256(b"witness.test/w1\n\x04" + pub).digest()[:4]
    assert int.from_bytes(raw[4:12], "big") == 1_679_315_147
    body = note[: note.index("\n\n") + 1]
    message = b"cosignature/v1\ntime 1679315147\n" + body.encode()
    Ed25519PublicKey.from_public_bytes(pub).verify(raw[12:], message)  # raises if not
    assert parse_cosigner_vkey(w.key.vkey()) == w.key
    cosigned = note + line
    assert verified_cosigners(cosigned, [w.key]) == {"witness.test/w1": 1_679_315_147}
    other = Cosigner.generate("witness.test/w1")  # same name, another key: ignored
    assert verified_cosigners(cosigned, [other.key]) == {}
    # the log's own verification ignores the witness line (signed-note)
    assert verify_checkpoint(cosigned, LOG.verifier).size == 5


def test_add_checkpoint_bodies_round_trip():
    proof = [bytes([i]) * 32 for i in range(3)]
    note = _note(_tree(9))
    assert parse_add_checkpoint(format_add_checkpoint(4, proof, note)) == (4, proof, note)
    for bad in (b"old 01\n\n" + note.encode(), b"new 1\n\n", b"old 1\nnot base64!\n\n"):
        with pytest.raises(evstore.InputError) as exc:
            parse_add_checkpoint(bad)
        assert exc.value.code == "witness.request"


def _status(fn) -> tuple[str, int]:
    with pytest.raises(evstore.EvstoreError) as exc:
        fn()
    return exc.value.code, http_status(exc.value)


def test_a_witness_cosigns_extensions_and_refuses_forks():
    logs = {LOG.name: LOG.verifier}
    t9, t20 = _tree(9), _tree(20)
    cp = witness_decision(logs, None, 0, [], _note(t9))
    latest = (cp.size, cp.root_hash)
    proof = t20.consistency_proof(9)
    cp = witness_decision(logs, latest, 9, proof, _note(t20))
    assert (cp.size, cp.root_hash) == (20, t20.root())
    latest = (cp.size, cp.root_hash)
    # the same checkpoint again: fine; another root at that size: a fork
    assert witness_decision(logs, latest, 20, [], _note(t20)).size == 20
    fork20 = _tree(20, b"forked")
    assert _status(lambda: witness_decision(logs, latest, 20, [], _note(fork20))) == (
        "witness.conflict",
        409,
    )
    # a larger fork whose proof cannot verify from what the witness cosigned
    fork30 = _tree(30, b"forked")
    bad = fork30.consistency_proof(20)
    assert _status(lambda: witness_decision(logs, latest, 20, bad, _note(fork30))) == (
        "witness.inconsistent",
        422,
    )
    # a stale old size: 409, naming the size the witness holds
    with pytest.raises(evstore.EvstoreError) as exc:
        witness_decision(logs, latest, 9, t20.consistency_proof(9), _note(_tree(25)))
    assert exc.value.code == "witness.conflict" and exc.value.details["size"] == 20
    assert _status(lambda: witness_decision(logs, latest, 21, [], _note(t20))) == (
        "witness.old-size",
        400,
    )
    assert _status(lambda: witness_decision({}, None, 0, [], _note(t9))) == (
        "witness.unknown-log",
        404,
    )
    assert _status(lambda: witness_decision(logs, None, 0, [], _note(t9, OTHER))) == (
        "witness.unsigned",
        403,
    )


def test_a_policy_needs_its_quorum_of_cosignatures():
    w1, w2, w3 = (Cosigner.generate(f"witness.test/w{i}") for i in (1, 2, 3))
    text = (
        f"# three witnesses, two must cosign\nlog {LOG.verifier.vkey()}\n"
        + "".join(f"witness {w.name} {w.key.vkey()} https://{w.name}/\n" for w in (w1, w2, w3))
        + "quorum 2\n"
    )
    policy = Policy.parse(text)
    assert policy.quorum == 2 and policy.urls["witness.test/w2"] == "https://witness.test/w2/"
    note = _note(_tree(4))
    one = note + w1.cosign(note, 10)
    assert _status(lambda: policy.check(one))[0] == "witness.quorum"
    two = one + w3.cosign(note, 11)
    assert policy.check(two) == {"witness.test/w1": 10, "witness.test/w3": 11}
    forged = one + Cosigner.generate("witness.test/w2").cosign(note, 12)
    assert _status(lambda: policy.check(forged))[0] == "witness.quorum"
    for bad in (
        "witness a b\n",
        f"log {LOG.verifier.vkey()}\nquorum 1\n",
        f"log {LOG.verifier.vkey()}\nwitness other {w1.key.vkey()}\n",
    ):
        with pytest.raises(evstore.InputError) as exc:
            Policy.parse(bad)
        assert exc.value.code in ("witness.policy", "witness.key")
