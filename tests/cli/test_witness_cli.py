"""The witness commands: witness init-key, witness status, log cosign, serve --witness-key."""

from __future__ import annotations

import json

from click.testing import CliRunner

import evstore
from evstore.cli.main import cli
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

    # no policy: nothing asked; a witness down: listed under failed, exit 0
    r = _run("--store", store_url, "--json", "log", "cosign")
    assert r.exit_code == 0 and json.loads(r.output)["witnesses"] == 0
    policy = f"log {vkey}\nwitness {w.name} {w.key.vkey()} http://127.0.0.1:9\n"
    assert _run("--store", store_url, "config", "log.witness_policy", policy).exit_code == 0
    r = _run("--store", store_url, "log", "cosign", "--timeout", "2")
    assert r.exit_code == 0 and "failed: cli.test/w: unreachable" in r.output, r.output
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
