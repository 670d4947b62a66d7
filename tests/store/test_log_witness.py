"""verify-proof --policy: a proof is accepted only with a quorum of witness cosignatures."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import evstore
from evstore.cli.main import cli
from evstore.tlog.cosignature import Cosigner


def _code(fn) -> str | None:
    try:
        fn()
    except evstore.EvstoreError as err:
        return err.code
    return None


def test_a_proof_needs_the_policys_quorum_of_cosignatures(store, tmp_path):
    key = tmp_path / "log.key"
    store.log.init_key(key, origin="witnessed.test/log")
    vkey = store.log.key()
    target = store.put(b"witnessed bytes")
    store.put_many([b"more %d" % i for i in range(6)])
    store.log.checkpoint(key)
    text = store.log.prove(target.digest.address)["text"]
    note = store.log.latest()["note"]
    assert text.endswith(note)  # the checkpoint is the proof file's last part
    w1, w2 = Cosigner.generate("w1.test/w"), Cosigner.generate("w2.test/w")
    policy = (
        f"log {vkey}\nwitness {w1.name} {w1.key.vkey()}\nwitness {w2.name} {w2.key.vkey()}\n"
        "quorum 2\n"
    )
    assert evstore.verify_log_proof(text, vkey)["index"] == 0  # no policy: as before
    assert _code(lambda: evstore.verify_log_proof(text, vkey, policy=policy)) == "witness.quorum"
    one = text + w1.cosign(note, 100)
    assert _code(lambda: evstore.verify_log_proof(one, vkey, policy=policy)) == "witness.quorum"
    both = one + w2.cosign(note, 101)
    r = evstore.verify_log_proof(both, vkey, b"witnessed bytes", policy=policy)
    assert r["cosigned"] == {"w1.test/w": 100, "w2.test/w": 101} and r["content"] is True
    # a cosignature over another checkpoint does not count
    other = "witnessed.test/log\n1\n" + note.split("\n")[2] + "\n\n" + note.split("\n\n", 1)[1]
    wrong = one + w2.cosign(other, 102)
    assert _code(lambda: evstore.verify_log_proof(wrong, vkey, policy=policy)) == "witness.quorum"
    # consistency proofs too
    cons = store.log.prove_consistency(1)["text"]
    assert _code(lambda: evstore.verify_log_proof(cons, vkey, policy=policy)) == "witness.quorum"
    # through the CLI, and a policy for another log is refused
    (tmp_path / "proof").write_text(both)
    (tmp_path / "policy").write_text(policy)
    args = ["verify-proof", str(tmp_path / "proof"), "--key", vkey, "--policy"]
    ok = CliRunner().invoke(cli, [*args, str(tmp_path / "policy")])
    assert ok.exit_code == 0, ok.output
    (tmp_path / "other").write_text(policy.replace(vkey, evstore_other_vkey(tmp_path)))
    bad = CliRunner().invoke(cli, [*args, str(tmp_path / "other"), "--json"])
    assert bad.exit_code == 1 and "witness.policy" in bad.output


def evstore_other_vkey(tmp_path) -> str:
    from evstore.tlog.checkpoint import Signer

    return Signer.generate("witnessed.test/log").verifier.vkey()


@pytest.mark.parametrize("quorum", ["3", "x"])
def test_a_malformed_policy_is_typed(quorum):
    w = Cosigner.generate("w.test/w")
    from evstore.tlog.checkpoint import Signer

    text = f"log {Signer.generate('l.test/l').verifier.vkey()}\nwitness {w.name} {w.key.vkey()}\n"
    from evstore.tlog.cosignature import Policy

    with pytest.raises(evstore.InputError) as exc:
        Policy.parse(text + f"quorum {quorum}\n")
    assert exc.value.code == "witness.policy"
