"""The witness commands: witness init-key, witness status, log cosign, serve --witness-key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import evstore
from evstore.cli.main import cli
from evstore.tlog.checkpoint import Signer
from evstore.tlog.cosignature import format_add_checkpoint, read_cosigner_key


def _run(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_witness_init_key_status_and_log_cosign(store_url, tmp_path):
    key = tmp_path / "w.key"
    r = _run("--json", "witness", "init-key", str(key), "--name", "cli.test/w")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    w = read_cosigner_key(key)
    assert out["vkey"] == w.key.vkey() and (key.stat().st_mode & 0o777) == 0o600
    again = _run("--json", "witness", "init-key", str(key), "--name", "cli.test/w")
    assert again.exit_code == 1 and json.loads(again.output)["error"]["code"] == "witness.key"
    bad = _run("--json", "witness", "init-key", str(tmp_path / "x"), "--name", "a b")
    assert bad.exit_code == 1 and json.loads(bad.output)["error"]["code"] == "witness.key"

    with evstore.open(store_url) as store:
        store.log.init_key(tmp_path / "log.key", origin="cli.test/log")
        store.put(b"cli bytes")
        signed = store.log.checkpoint(tmp_path / "log.key")
        vkey = store.log.key()
        store.set_config("witness.logs", [vkey])  # the store witnesses its own log here
        store.log.witness_add_checkpoint(w, format_add_checkpoint(0, [], signed["note"]))
    r = _run("--store", store_url, "witness", "status")
    assert r.exit_code == 0 and r.output.startswith("cli.test/log\t1\t"), r.output

    # no policy: nothing asked, exit 0; a witness down: listed under failed, and the quorum
    # of one is not met: exit 1 witness.quorum after printing what was asked
    r = _run("--store", store_url, "--json", "log", "cosign")
    assert r.exit_code == 0 and json.loads(r.output)["witnesses"] == 0
    policy = f"log {vkey}\nwitness {w.name} {w.key.vkey()} http://127.0.0.1:9\n"
    assert _run("--store", store_url, "config", "log.witness_policy", policy).exit_code == 0
    r = _run("--store", store_url, "log", "cosign", "--timeout", "2")
    assert r.exit_code == 1 and "failed: cli.test/w: unreachable" in r.stdout, r.output
    assert "checkpoint size: 1" in r.stdout and "cosigned:" not in r.stdout
    assert "witness.quorum" in r.stderr and "0 of the policy's witnesses" in r.stderr
    r = _run("--store", store_url, "--json", "log", "cosign", "--timeout", "2")
    err = json.loads(r.output)["error"]  # one JSON object: the error, the result its details
    assert r.exit_code == 1 and err["code"] == "witness.quorum", r.output
    assert err["details"]["quorum"] == 1 and err["details"]["size"] == 1
    assert err["details"]["failed"]["cli.test/w"].startswith("unreachable")
    bad_policy = f"log {vkey}\nwitness other.test/w {w.key.vkey()}\n"
    r = _run("--store", store_url, "--json", "config", "log.witness_policy", bad_policy)
    assert r.exit_code == 1 and json.loads(r.output)["error"]["code"] == "witness.policy"
    r = _run("--store", store_url, "--json", "config", "log.witness_policy")
    assert json.loads(r.output)["log.witness_policy"].strip() == policy.strip()  # not replaced


def test_serve_refuses_a_witness_key_it_cannot_use(store_url, tmp_path):
    exposed = tmp_path / "exposed.key"
    evstore.Cosigner.generate("x.test/w").write_private_key(exposed)
    exposed.chmod(0o644)
    r = _run("--store", store_url, "--json", "serve", "--witness-key", str(exposed))
    assert r.exit_code == 1 and json.loads(r.output)["error"]["code"] == "witness.key"
    r = _run("--store", store_url, "--json", "serve", "--witness-key", str(tmp_path / "none"))
    assert r.exit_code == 1 and json.loads(r.output)["error"]["code"] == "witness.key"
    assert "none" in json.loads(r.output)["error"]["message"]  # the help and the code agree


def test_verify_proof_tiles_with_a_policy(store_url, tmp_path):
    """verify-proof --tiles DIR --policy: the exported checkpoint must carry the quorum."""
    w1, w2 = evstore.Cosigner.generate("t.test/w1"), evstore.Cosigner.generate("t.test/w2")
    with evstore.open(store_url) as store:
        store.log.init_key(tmp_path / "log.key", origin="tiles.test/log")
        store.put_many([b"tiled %d" % i for i in range(300)])  # a full tile and a partial one
        store.log.checkpoint(tmp_path / "log.key")
        vkey = store.log.key()
        store.log.export_tiles(tmp_path / "tiles")
    (tmp_path / "vkey").write_text(vkey + "\n")
    exported = [p for p in (tmp_path / "tiles").rglob("*") if p.is_file()]
    assert len(exported) > 5  # public files: a web server's own user reads them
    assert {p.stat().st_mode & 0o777 for p in exported} == {0o644}
    cp = tmp_path / "tiles" / "checkpoint"
    note = cp.read_text()
    cp.write_text(note + w1.cosign(note, 1_700_000_000))  # one witness cosigned it

    def policy(quorum: int, *ws: evstore.Cosigner) -> str:
        path = tmp_path / f"policy{quorum}{len(ws)}"
        lines = [f"log {vkey}", *(f"witness {x.name} {x.key.vkey()}" for x in ws)]
        path.write_text("\n".join([*lines, f"quorum {quorum}"]) + "\n")
        return str(path)

    def verify(*extra: str):
        args = ["--json", "verify-proof", "--tiles", str(tmp_path / "tiles"), "--index", "270"]
        r = _run(*args, "--key", str(tmp_path / "vkey"), *extra)
        return r.exit_code, json.loads(r.output)

    code, out = verify("--policy", policy(1, w1, w2))  # one of two: met
    assert code == 0 and out["ok"] and out["index"] == 270 and out["tiles"], out
    assert out["cosigned"] == {"t.test/w1": 1_700_000_000}
    code, out = verify("--policy", policy(2, w1, w2))  # two of two: not met
    assert code == 1 and out["error"]["code"] == "witness.quorum", out
    code, out = verify("--policy", policy(1, w2))  # a witness that did not cosign
    assert code == 1 and out["error"]["code"] == "witness.quorum", out
    other = Signer.generate("other.test/log").verifier.vkey()
    (tmp_path / "other").write_text(f"log {other}\nwitness {w1.name} {w1.key.vkey()}\n")
    code, out = verify("--policy", str(tmp_path / "other"))  # a policy of another log
    assert code == 1 and out["error"]["code"] == "witness.policy", out
    # the library: the same checks, and a forged cosignature line counts for nothing
    assert evstore.verify_log_tiles(str(tmp_path / "tiles"), vkey, 3)["tiles"]
    forged = w2.cosign(note, 1_700_000_000).replace("t.test/w2", "t.test/w1")
    cp.write_text(note + forged)
    with pytest.raises(evstore.EvstoreError) as exc:
        one = Path(policy(1, w1)).read_text()
        evstore.verify_log_tiles(str(tmp_path / "tiles"), vkey, 3, policy=one)
    assert exc.value.code == "witness.quorum"
