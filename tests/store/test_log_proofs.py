"""Checkpoints, proof files, their verification with no store, mutations and tampering."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat

import pytest
import sqlalchemy as sa
from log_reference import Naive, independent_inclusion, independent_note

import evstore
from evstore import Document
from evstore.db.tables import log_checkpoints, log_entries, log_keys, log_nodes
from evstore.tlog.checkpoint import Signer, format_tlog_proof, parse_tlog_proof


@pytest.fixture
def keyed(store, tmp_path):
    key = tmp_path / "log.key"
    store.log.init_key(key, origin="test.example/log")
    return store, key


def _fill(store, n, tag="p"):
    store.put_many([f"{tag} {i}".encode() for i in range(n)])
    store.log.integrate()


def _vcode(text, vkey, content=None):
    """The code verify_log_proof raises for ``text`` (None when it verifies)."""
    return _codes(lambda: evstore.verify_log_proof(text, vkey, content))


def _codes(fn):
    try:
        fn()
    except evstore.EvstoreError as err:
        return err.code
    return None


# -- keys ------------------------------------------------------------------------------------
def test_init_key_writes_a_0600_file_stores_only_the_verifier_key(store, tmp_path, snapshot):
    key = tmp_path / "k"
    r = store.log.init_key(key, origin="example.com/log")
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    assert r["vkey"] == store.log.key() and r["vkey"].startswith("example.com/log+")
    # PRIVATE+KEY+<name>+<key hash>+<base64 key>: the key's standard base64 may hold "+" too
    secret = key.read_text().strip().split("+", 4)[4]
    dumped = repr(snapshot(store))
    assert secret not in dumped and r["vkey"] in dumped  # the private key never enters the DB
    before = snapshot(store)
    assert _codes(lambda: store.log.init_key(tmp_path / "k2")) == "log.key-exists"
    assert not (tmp_path / "k2").exists() and snapshot(store) == before
    assert _codes(lambda: store.log.init_key(key)) in ("log.key-exists", "log.key-file")


def test_no_key_no_file_and_a_foreign_key_are_typed_errors(store, tmp_path, snapshot):
    assert _codes(store.log.key) == "log.no-key"
    assert _codes(lambda: store.log.checkpoint(None)) == "log.key-file"
    assert _codes(lambda: store.log.checkpoint(tmp_path / "none")) == "log.key-file"
    other = tmp_path / "other.key"
    Signer.generate("elsewhere").write_private_key(other)
    assert _codes(lambda: store.log.checkpoint(other)) == "log.no-key"
    assert _codes(lambda: store.log.init_key(tmp_path / "no-dir" / "k")) == "log.key-file"
    store.log.init_key(tmp_path / "mine.key")
    before = snapshot(store)
    assert _codes(lambda: store.log.checkpoint(other)) == "log.key-mismatch"
    os.chmod(tmp_path / "mine.key", 0o644)
    assert _codes(lambda: store.log.checkpoint(tmp_path / "mine.key")) == "checkpoint.key"
    assert snapshot(store) == before


# -- checkpoints -----------------------------------------------------------------------------
def test_checkpoints_sign_the_current_tree_and_repeat_when_unchanged(keyed):
    store, key = keyed
    empty = store.log.checkpoint(key)  # size 0: the empty tree
    assert empty["size"] == 0 and empty["new"] is True
    assert base64.b64decode(empty["root"]) == hashlib.sha256(b"").digest()
    _fill(store, 5)
    cp = store.log.checkpoint(key)
    origin, size, root = independent_note(cp["note"], store.log.key())
    assert (origin, size) == ("test.example/log", 5) and base64.b64encode(root).decode() == cp[
        "root"
    ]
    again = store.log.checkpoint(key)
    assert again["new"] is False and again["note"] == cp["note"]
    status = store.log.status()
    assert status["size"] == 5 and status["checkpoint"]["note"] == cp["note"]
    assert store.log.latest()["size"] == 5


def test_a_tree_inconsistent_with_the_last_checkpoint_is_not_signed(keyed, snapshot):
    store, key = keyed
    _fill(store, 6)
    store.log.checkpoint(key)
    _fill(store, 3, "more")
    with store.db.engine.begin() as conn:  # rewrite history below the signed size
        conn.execute(
            sa.update(log_nodes)
            .where(log_nodes.c.level == 2, log_nodes.c.idx == 0)
            .values(hash=b"\x07" * 32)
        )
    before = snapshot(store)
    assert _codes(lambda: store.log.checkpoint(key)) == "log.inconsistent"
    assert snapshot(store) == before


# -- inclusion proofs ------------------------------------------------------------------------
def test_a_proof_verifies_with_independent_code_and_with_verify_proof(keyed):
    store, key = keyed
    _fill(store, 12)
    target = store.put(b"the evidence")
    _fill(store, 7, "after")
    store.log.checkpoint(key)
    vkey = store.log.key()
    p = store.log.prove(target.digest.address)
    assert p["index"] == 12 and p["size"] == 20
    parsed = parse_tlog_proof(p["text"])
    _, size, root = independent_note(parsed.checkpoint, vkey)
    leaf = hashlib.sha256(b"\x00" + parsed.extra).digest()
    assert independent_inclusion(leaf, parsed.index, size, list(parsed.hashes), root)
    r = evstore.verify_log_proof(p["text"], vkey, b"the evidence")
    assert r["type"] == "inclusion" and r["content"] is True and r["index"] == 12
    assert _vcode(p["text"], vkey, b"other") == ("log.content-mismatch")
    # by sha256 ref and by index, the same proof
    assert store.log.prove("sha256:" + target.digest.sha256)["text"] == p["text"]
    assert store.log.prove(index=12)["text"] == p["text"]
    assert store.log.prove(target.digest.address, index=12)["text"] == p["text"]


def test_proof_requests_outside_the_checkpoint_are_typed(keyed):
    store, key = keyed
    assert _codes(lambda: store.log.prove(index=0)) == "log.no-checkpoint"
    store.log.checkpoint(key)  # size 0
    assert _codes(lambda: store.log.prove(index=0)) == "log.range"  # index >= size (0)
    _fill(store, 3)
    store.log.checkpoint(key)
    late = store.put(b"after the checkpoint")
    assert _codes(lambda: store.log.prove(index=3)) == "log.range"
    assert _codes(lambda: store.log.prove(late.digest.address)) == "log.not-integrated"
    store.log.integrate()  # in the tree now, but beyond the signed checkpoint
    assert _codes(lambda: store.log.prove(late.digest.address)) == "log.not-logged"
    assert _codes(lambda: store.log.prove("blake3:" + "0" * 64)) == "log.not-logged"
    assert _codes(lambda: store.log.prove("sha256:" + "0" * 64)) == "log.not-logged"
    assert _codes(lambda: store.log.prove(late.digest.address, index=1)) == "log.not-logged"
    assert _codes(lambda: store.log.prove()) == "input.invalid"
    assert _codes(lambda: store.log.prove("nonsense")) == "ref.syntax"


def _mutations(text: str):
    """Every mutation of a valid tlog-proof: flipped bits, dropped or added hashes, wrong index."""
    proof = parse_tlog_proof(text)
    hashes = list(proof.hashes)
    for i, h in enumerate(hashes):
        for bit in (0, 7, 255):
            flipped = bytearray(h)
            flipped[bit // 8] ^= 1 << (bit % 8)
            yield f"flip {i}/{bit}", hashes[:i] + [bytes(flipped)] + hashes[i + 1 :], proof.index
        yield f"drop {i}", hashes[:i] + hashes[i + 1 :], proof.index
    yield "add", hashes + [hashlib.sha256(b"x").digest()], proof.index
    yield "add front", [hashlib.sha256(b"x").digest()] + hashes, proof.index
    yield "swap", hashes[::-1], proof.index
    for index in {proof.index + 1, proof.index - 1, proof.index ^ 1, 2**40} - {proof.index, -1}:
        yield f"index {index}", hashes, index


def test_every_mutation_of_an_inclusion_proof_fails(keyed):
    store, key = keyed
    _fill(store, 21)
    store.log.checkpoint(key)
    vkey = store.log.key()
    for index in (0, 5, 16, 20):
        text = store.log.prove(index=index)["text"]
        proof = parse_tlog_proof(text)
        assert evstore.verify_log_proof(text, vkey)["index"] == index
        for what, hashes, idx in _mutations(text):
            bad = format_tlog_proof(type(proof)(idx, tuple(hashes), proof.checkpoint, proof.extra))
            assert _vcode(bad, vkey) == "tlog-proof.inclusion", what
        # another entry's bytes in the proof
        other_index = index - 1 if index else 1
        other = base64.b64decode(store.log.entries(other_index, other_index + 1)[0]["bytes"])
        bad = format_tlog_proof(type(proof)(index, proof.hashes, proof.checkpoint, other))
        assert _vcode(bad, vkey) == "tlog-proof.inclusion"
        # the checkpoint: another size, another root, a bit of the signature, origin, key
        note = proof.checkpoint
        lines = note.split("\n")
        wrong_size = "\n".join([lines[0], str(int(lines[1]) + 1), *lines[2:]])
        wrong_root = "\n".join(
            [lines[0], lines[1], base64.b64encode(b"\0" * 32).decode(), *lines[3:]]
        )
        sig = lines[4].rsplit(" ", 1)
        raw = bytearray(base64.b64decode(sig[1]))
        raw[10] ^= 1
        wrong_sig = "\n".join(
            [*lines[:4], sig[0] + " " + base64.b64encode(raw).decode(), *lines[5:]]
        )
        for bad_note, code in (
            (wrong_size, "checkpoint.signature"),
            (wrong_root, "checkpoint.signature"),
            (wrong_sig, "checkpoint.signature"),
        ):
            bad = format_tlog_proof(type(proof)(index, proof.hashes, bad_note, proof.extra))
            assert _vcode(bad, vkey) == code
        foreign = Signer.generate("test.example/log").verifier.vkey()  # same origin, other key
        assert _vcode(text, foreign) == "checkpoint.unsigned"
        # the same key bytes under another origin name: no line by that key name
        other_origin = Signer.generate("other.example/log")
        assert _vcode(text, other_origin.verifier.vkey()) == "checkpoint.unsigned"
    # a proof signed by the right key for another origin (a different log) fails on origin
    twin = Signer.generate("twin.example/log")
    from evstore.tlog.checkpoint import Checkpoint, TlogProof, sign_checkpoint

    cp = Checkpoint("not-the-key-name", 1, hashlib.sha256(b"\x00e").digest())
    note = sign_checkpoint(cp, twin)
    bad = format_tlog_proof(TlogProof(0, (), note, b"e"))
    assert _vcode(bad, twin.verifier.vkey()) == "checkpoint.origin"


def test_malformed_proof_files_are_typed(keyed):
    store, key = keyed
    _fill(store, 2)
    store.log.checkpoint(key)
    vkey = store.log.key()
    text = store.log.prove(index=1)["text"]
    proof = parse_tlog_proof(text)
    no_extra = format_tlog_proof(type(proof)(1, proof.hashes, proof.checkpoint, None))
    not_entry = format_tlog_proof(type(proof)(1, proof.hashes, proof.checkpoint, b"{}"))
    for data, code in (
        (b"\xff\xfe", "log.proof-malformed"),
        ("garbage", "tlog-proof.malformed"),
        (no_extra, "log.proof-malformed"),
        ("{not json", "log.proof-malformed"),
        ('{"format": "x"}', "log.proof-malformed"),
    ):
        assert _vcode(data, vkey) == code
    # a well-formed proof whose entry is not an evstore entry verifies its inclusion first
    assert _vcode(not_entry, vkey) == "tlog-proof.inclusion"
    assert _vcode(text, "not a key") == "checkpoint.key"


# -- consistency proofs ----------------------------------------------------------------------
def test_consistency_proofs_between_every_checkpoint_pair(keyed):
    store, key = keyed
    sizes = []
    for n in (0, 1, 2, 5, 8, 13):
        _fill(store, n, f"c{n}")
        sizes.append(store.log.checkpoint(key)["size"])
    vkey = store.log.key()
    entries = [base64.b64decode(e["bytes"]) for e in store.log.entries()]
    ref = Naive(entries)
    for i, old in enumerate(sizes):
        for new in sizes[i:]:
            p = store.log.prove_consistency(old, new)
            assert [base64.b64decode(h) for h in p["proof"]] == ref.proof(old, new)
            r = evstore.verify_log_proof(p["text"], vkey)
            assert (r["old_size"], r["new_size"], r["old_root_signed"]) == (old, new, True)
    # an old size with no checkpoint of its own: the root is the one computed, unsigned
    assert 4 not in sizes
    r = evstore.verify_log_proof(store.log.prove_consistency(4)["text"], vkey)
    assert r["old_root_signed"] is False and r["new_size"] == sizes[-1]
    assert base64.b64decode(r["old_root"]) == ref.mth(0, 4)
    assert _codes(lambda: store.log.prove_consistency(sizes[-1] + 1)) == "log.range"
    assert _codes(lambda: store.log.prove_consistency(0, 4)) == "log.no-checkpoint"
    assert _codes(lambda: store.log.prove_consistency(-1)) == "log.range"


def test_every_mutation_of_a_consistency_proof_fails(keyed):
    store, key = keyed
    _fill(store, 6)
    store.log.checkpoint(key)
    _fill(store, 11, "b")
    store.log.checkpoint(key)
    vkey = store.log.key()
    for old in (0, 3, 4, 6, 17):
        doc = store.log.prove_consistency(old)
        doc.pop("text")
        assert evstore.verify_log_proof(json.dumps(doc), vkey)["old_size"] == old

        def fails(doc=doc, **change):
            bad = {**doc, **change}
            return _vcode(json.dumps(bad), vkey)

        hashes = doc["proof"]
        for i, h in enumerate(hashes):
            raw = bytearray(base64.b64decode(h))
            raw[0] ^= 1
            flipped = hashes[:i] + [base64.b64encode(raw).decode()] + hashes[i + 1 :]
            assert fails(proof=flipped) == "log.consistency"
            assert fails(proof=hashes[:i] + hashes[i + 1 :]) == "log.consistency"
        extra = base64.b64encode(b"\1" * 32).decode()
        assert fails(proof=hashes + [extra]) == "log.consistency"
        assert fails(old_size=old + 1, old_checkpoint=None) == "log.consistency"
        if old:
            assert fails(old_size=old - 1, old_checkpoint=None) == "log.consistency"
        assert fails(old_root=extra, old_checkpoint=None) == "log.consistency"
        assert fails(new_size=doc["new_size"] + 1) == "log.consistency"
        if doc["old_checkpoint"] is not None:
            assert fails(old_root=extra) == "log.consistency"
        assert fails(checkpoint=doc["checkpoint"].replace("\n17\n", "\n18\n")) == (
            "checkpoint.signature"
        )
        assert fails(proof="x") == "log.proof-malformed"
        assert fails(proof=["@@"]) == "log.proof-malformed"
    content = _vcode(store.log.prove_consistency(1)["text"], vkey, b"x")
    assert content == "input.invalid"


# -- tampering -------------------------------------------------------------------------------
def _faults(store):
    return [(f.code, f.details) for f in store.check(record=False)]


def test_tampering_with_an_entry_is_named_and_breaks_its_proof(keyed):
    store, key = keyed
    _fill(store, 9)
    store.log.checkpoint(key)
    vkey = store.log.key()
    assert _faults(store) == []
    with store.db.engine.begin() as conn:
        row = conn.execute(sa.select(log_entries.c.entry).where(log_entries.c.idx == 4)).scalar()
        forged = bytes(row).replace(b'"size":3', b'"size":4')
        assert forged != bytes(row)
        conn.execute(sa.update(log_entries).where(log_entries.c.idx == 4).values(entry=forged))
    faults = _faults(store)
    assert ("check.log-node", {"address": "log", "level": 0, "index": 4}) in faults
    assert any(c == "check.log-checkpoint" for c, _ in faults)
    assert _vcode(store.log.prove(index=4)["text"], vkey) == ("tlog-proof.inclusion")
    with store.db.engine.begin() as conn:  # an entry that is no entry, and a gap
        conn.execute(sa.update(log_entries).where(log_entries.c.idx == 1).values(entry=b"junk"))
        conn.execute(sa.delete(log_entries).where(log_entries.c.idx == 6))
    codes = [(c, d.get("index")) for c, d in _faults(store)]
    assert ("check.log-entry", 1) in codes and ("check.log-entry", 6) in codes
    assert store.log.entries(1, 2)[0]["entry"] is None  # shown, not parsed; no traceback
    assert store.log.prove(index=1)["entry"] is None


def test_tampering_with_a_node_is_named_and_breaks_proofs_through_it(keyed):
    store, key = keyed
    _fill(store, 16)
    store.log.checkpoint(key)
    vkey = store.log.key()
    with store.db.engine.begin() as conn:
        conn.execute(
            sa.update(log_nodes)
            .where(log_nodes.c.level == 2, log_nodes.c.idx == 1)
            .values(hash=b"\x09" * 32)
        )
    assert _faults(store) == [
        ("check.log-node", {"address": "log", "level": 2, "index": 1}),
    ]
    # entry 0's path uses subtree (2, 1) (leaves 4..7): its proof fails; entry 5's does not
    assert _vcode(store.log.prove(index=0)["text"], vkey) == ("tlog-proof.inclusion")
    assert evstore.verify_log_proof(store.log.prove(index=5)["text"], vkey)["index"] == 5
    with store.db.engine.begin() as conn:  # a missing row and a row that should not exist
        conn.execute(sa.delete(log_nodes).where(log_nodes.c.level == 1, log_nodes.c.idx == 0))
        conn.execute(sa.insert(log_nodes).values(level=9, idx=0, hash=b"\0" * 32))
    codes = [(c, d.get("level")) for c, d in _faults(store)]
    assert ("check.log-node", 1) in codes and ("check.log-node", 5) in codes


def test_tampering_with_a_checkpoint_or_the_key_is_named(keyed):
    store, key = keyed
    _fill(store, 5)
    cp = store.log.checkpoint(key)
    vkey = store.log.key()
    text = store.log.prove(index=2)["text"]
    forged = cp["note"].replace("\n5\n", "\n4\n")
    with store.db.engine.begin() as conn:
        conn.execute(sa.update(log_checkpoints).values(note=forged))
    assert _faults(store)[0][0] == "check.log-checkpoint"
    assert _codes(store.log.status) == "check.log-checkpoint"
    assert _vcode(store.log.prove(index=2)["text"], vkey) == ("checkpoint.signature")
    assert evstore.verify_log_proof(text, vkey)["size"] == 5  # the proof taken before holds
    with store.db.engine.begin() as conn:  # a checkpoint beyond the log, signed correctly
        conn.execute(sa.update(log_checkpoints).values(note=cp["note"], size=5))
        conn.execute(sa.delete(log_keys))
    assert _faults(store) == [
        ("check.log-checkpoint", {"address": "log", "size": 5}),
    ]


def test_a_rejected_or_validated_ingest_appends_nothing_on_any_path(store, snapshot):
    store.ingest([Document(b'{"first": 1}')])
    before = snapshot(store)
    store.validate([Document(b'{"second": 2}')])
    with pytest.raises(evstore.InputError):
        store.put_many([b"ok", 42])  # type: ignore[list-item]
    assert snapshot(store) == before
    store.log.integrate()
    assert [e["entry"]["op"] for e in store.log.entries()] == ["ingest"]
    assert store.put_many([b"one", b"two", b"one"], batch=1)[2].new is False
    store.log.integrate()
    assert [e["entry"]["op"] for e in store.log.entries()] == ["ingest", "put", "put"]


def test_large_streamed_puts_are_logged_once(store):
    import io

    data = os.urandom(3 << 20)
    assert store.put(io.BytesIO(data)).new is True
    assert store.put(io.BytesIO(data)).new is False
    store.log.integrate()
    (entry,) = [e["entry"] for e in store.log.entries()]
    assert entry["size"] == len(data) and entry["op"] == "put"
    assert [e["entry"]["size"] for e in store.log.entries()] == [len(data)]
    store.ingest([Document(b'{"x": 1}')])
    store.log.integrate()
    assert len(store.log.entries()) == 2
    assert list(store.check(record=False)) == []
