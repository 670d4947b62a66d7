"""Witnesses over HTTP (issue 26): `evstore serve --witness-key` and the log asking its policy.

Two real `evstore serve` processes on 127.0.0.1 witness each other's logs; a log whose
witness holds a size it does not know retries from the size a 409 names; a witness that is
down stops neither integration nor signing, and once back it cosigns from the size it last
cosigned. Every wait is bounded.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from serverkit import start_process, start_thread

import evstore
from evstore.cli.main import cli
from evstore.tlog import merkle
from evstore.tlog.checkpoint import Checkpoint, Signer, sign_checkpoint
from evstore.tlog.cosignature import Cosigner, format_add_checkpoint, verified_cosigners

WAIT_S = 60


def _setup(url: str, tmp: Path, name: str) -> dict:
    """A store with a log key, one entry, and a witness key file."""
    tmp.mkdir(parents=True, exist_ok=True)
    with evstore.open(url) as store:
        store.log.init_key(tmp / "log.key", origin=f"{name}.test/log")
        store.put(b"first bytes of " + name.encode())
        vkey = store.log.key()
    w = Cosigner.generate(f"{name}.test/witness")
    w.write_private_key(tmp / "witness.key")
    return {"url": url, "vkey": vkey, "log_key": tmp / "log.key", "w": w, "dir": tmp}


def _serve(side: dict, tmp: Path, every: str = "0.3"):
    args = ["--store", side["url"], "serve", "--no-access-log", "--public-read"]
    args += ["--log-key", str(side["log_key"]), "--checkpoint-every", every]
    return start_process([*args, "--witness-key", str(side["dir"] / "witness.key")], tmp)


def _policy(log_vkey: str, witnesses: list[tuple[Cosigner, str | None]], quorum: int) -> str:
    lines = [f"log {log_vkey}"]
    for w, url in witnesses:
        lines.append(f"witness {w.name} {w.key.vkey()}" + (f" {url}" if url else ""))
    return "\n".join([*lines, f"quorum {quorum}"]) + "\n"


def _wait_cosigned(base: str, w: Cosigner, min_size: int = 1) -> str:
    """The served /checkpoint once it carries ``w``'s valid cosignature at >= min_size."""
    deadline = time.monotonic() + WAIT_S
    note = ""
    while time.monotonic() < deadline:
        r = httpx.get(base + "/checkpoint", timeout=10)
        if r.status_code == 200:
            note = r.text
            if int(note.split("\n")[1]) >= min_size and verified_cosigners(note, [w.key]):
                return note
        time.sleep(0.2)
    raise AssertionError(f"never cosigned by {w.name}: {note!r}")


def _code(fn) -> str | None:
    try:
        fn()
    except evstore.EvstoreError as err:
        return err.code
    return None


def test_two_stores_witness_each_other(backend, request, tmp_path, fresh_store_url):
    a = _setup(fresh_store_url(backend, request, _mk(tmp_path / "a")), tmp_path / "a", "a")
    b = _setup(fresh_store_url(backend, request, _mk(tmp_path / "b")), tmp_path / "b", "b")
    for me, other in ((a, b), (b, a)):
        with evstore.open(me["url"]) as store:
            store.set_config("witness.logs", [other["vkey"]])
    server_a, server_b = _serve(a, tmp_path), _serve(b, tmp_path)
    try:
        for me, other, server in ((a, b, server_b), (b, a, server_a)):
            policy = _policy(me["vkey"], [(other["w"], server.base)], 1)
            with evstore.open(me["url"]) as store:
                store.set_config("log.witness_policy", policy)
            me["policy"] = policy
        note_a = _wait_cosigned(server_a.base, b["w"])
        note_b = _wait_cosigned(server_b.base, a["w"])
        # each witness keeps the other's latest checkpoint
        with evstore.open(b["url"]) as store:
            held = {r["origin"]: r["size"] for r in store.log.witnessed()}
        assert held["a.test/log"] >= int(note_a.split("\n")[1])

        # a proof of A's entry verifies under A's policy (quorum 1: B's cosignature) ...
        with evstore.open(a["url"]) as store:
            text = store.log.prove(evstore.digest_bytes(b"first bytes of a").address)["text"]
        r = evstore.verify_log_proof(text, a["vkey"], policy=a["policy"])
        assert set(r["cosigned"]) == {"b.test/witness"}
        # ... not under one that needs two, nor one trusting a witness that did not cosign
        extra = Cosigner.generate("c.test/witness")
        two = _policy(a["vkey"], [(b["w"], None), (extra, None)], 2)
        assert _code(lambda: evstore.verify_log_proof(text, a["vkey"], policy=two)) == (
            "witness.quorum"
        )
        wrong = _policy(a["vkey"], [(a["w"], None)], 1)
        assert _code(lambda: evstore.verify_log_proof(text, a["vkey"], policy=wrong)) == (
            "witness.quorum"
        )
        # ... and from A's served tiles alone (the checkpoint there carries B's cosignature)
        r = evstore.verify_log_tiles(server_a.base, a["vkey"], 0, policy=a["policy"])
        assert r["tiles"] and set(r["cosigned"]) == {"b.test/witness"}
        assert _code(lambda: evstore.verify_log_tiles(server_a.base, a["vkey"], 0, policy=two)) == (
            "witness.quorum"
        )
        assert verified_cosigners(note_b, [a["w"].key])

        # B down: A goes on integrating and signing, without B's cosignature
        assert server_b.stop() == 0
        cosigned_size = int(note_a.split("\n")[1])
        with evstore.open(a["url"]) as store:
            store.put(b"written while the witness is down")
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            latest = httpx.get(server_a.base + "/checkpoint", timeout=10).text
            if int(latest.split("\n")[1]) > cosigned_size:
                break
            time.sleep(0.2)
        assert int(latest.split("\n")[1]) > cosigned_size
        assert not verified_cosigners(latest, [b["w"].key])
        # B back (another port): A asks again, with a proof from the size B last cosigned
        server_b = _serve(b, tmp_path)
        with evstore.open(a["url"]) as store:
            store.set_config("log.witness_policy", _policy(a["vkey"], [(b["w"], server_b.base)], 1))
        again = _wait_cosigned(server_a.base, b["w"], cosigned_size + 1)
        with evstore.open(b["url"]) as store:
            held = {r["origin"]: r["size"] for r in store.log.witnessed()}
        assert held["a.test/log"] >= int(again.split("\n")[1]) > cosigned_size
    finally:
        server_a.stop()
        server_b.stop()
    # the cosigned checkpoint goes into an archive exported with proofs
    with evstore.open(a["url"]) as store:
        ref = evstore.digest_bytes(b"first bytes of a").address
        evstore.export_archive(store, [ref], tmp_path / "a.tar", with_proofs=True)
    assert _archive_has_cosigned_checkpoint(tmp_path / "a.tar", b["w"])


def _mk(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _archive_has_cosigned_checkpoint(
    tar: Path, w: Cosigner, origin: bytes = b"a.test/log\n"
) -> bool:
    import tarfile

    with tarfile.open(tar) as t:
        for member in t.getmembers():
            if not member.isfile():
                continue
            data = t.extractfile(member).read()  # type: ignore[union-attr]
            if data.startswith(origin):
                return bool(verified_cosigners(data.decode(), [w.key]))
    return False


def test_the_log_retries_from_the_size_a_409_names(
    store_url, backend, request, tmp_path, evstore_fresh
):
    w = Cosigner.generate("w.test/witness")
    w.write_private_key(tmp_path / "w.key")
    w_url = evstore_fresh(backend, request, tmp_path / "w")
    with evstore.open(store_url) as log:
        log.log.init_key(tmp_path / "log.key", origin="l.test/log")
        log.put_many([b"entry %d" % i for i in range(5)])
        ref = evstore.digest_bytes(b"entry 3").address
        signed = log.log.checkpoint(tmp_path / "log.key")
        vkey = log.log.key()
    with evstore.open(w_url) as witness:
        witness.set_config("witness.logs", [vkey])
        # the witness already cosigned size 5, but the log did not keep that cosignature
        witness.log.witness_add_checkpoint(w, format_add_checkpoint(0, [], signed["note"]))
    server = start_thread({None: w_url}, witness_key=str(tmp_path / "w.key"))
    try:
        with evstore.open(store_url) as log:
            log.set_config("log.witness_policy", _policy(vkey, [(w, server.base)], 1))
            first = log.log.ask_witnesses()  # old 0 -> 409 "5" -> again from 5
            assert first["cosigned"] == ["w.test/witness"] and first["failed"] == {}
            assert log.log.ask_witnesses()["present"] == ["w.test/witness"]  # not asked again
            r = CliRunner().invoke(cli, ["--store", store_url, "--json", "log", "cosign"])
            assert r.exit_code == 0, r.output  # the quorum (1) is met: exit 0
            assert json.loads(r.output)["present"] == ["w.test/witness"]
            log.put_many([b"later %d" % i for i in range(7)])
            log.log.checkpoint(tmp_path / "log.key")
            second = log.log.ask_witnesses()  # old 5 with a proof 5 -> 12
            assert second["size"] == 12 and second["cosigned"] == ["w.test/witness"]
            note = log.log.latest()["note"]
            assert verified_cosigners(note, [w.key])
            assert evstore.verify_log_proof(
                log.log.prove(index=7)["text"], vkey, policy=_policy(vkey, [(w, None)], 1)
            )
        # a 409 on the wire is text/x.tlog.size, exactly
        r = httpx.post(
            server.base + "/add-checkpoint", content=format_add_checkpoint(0, [], signed["note"])
        )
        assert (r.status_code, r.headers["content-type"], r.text) == (
            409,
            "text/x.tlog.size",
            "12\n",
        )
        # a fork at the size held: 409 problem, nothing recorded
        fork = merkle.MemoryTree([b"other %d" % i for i in range(12)])
        signer = _log_signer(tmp_path / "log.key")
        note = sign_checkpoint(Checkpoint("l.test/log", 12, fork.root()), signer)
        r = httpx.post(server.base + "/add-checkpoint", content=format_add_checkpoint(12, [], note))
        assert r.status_code == 409 and r.json()["code"] == "witness.conflict"
        r = httpx.post(server.base + "/add-checkpoint", content=b"nonsense")
        assert r.status_code == 400 and r.json()["code"] == "witness.request"
    finally:
        server.stop()
    with evstore.open(w_url) as witness:
        assert [x["size"] for x in witness.log.witnessed()] == [12]
    # an archive with proofs carries the cosigned checkpoint, and still verifies
    with evstore.open(store_url) as log:
        evstore.export_archive(log, [ref], tmp_path / "l.tar", with_proofs=True)
    assert _archive_has_cosigned_checkpoint(tmp_path / "l.tar", w, b"l.test/log\n")
    assert evstore.verify_archive(tmp_path / "l.tar", key=vkey).ok


def test_a_witness_down_or_refusing_is_reported_not_raised(store, tmp_path):
    store.log.init_key(tmp_path / "log.key")
    vkey = store.log.key()
    w = Cosigner.generate("w.test/down")
    store.put(b"x")
    store.log.checkpoint(tmp_path / "log.key")
    store.set_config("log.witness_policy", _policy(vkey, [(w, "http://127.0.0.1:9")], 1))
    r = store.log.ask_witnesses(timeout_s=2)
    assert r["cosigned"] == [] and r["failed"]["w.test/down"].startswith("unreachable")
    assert _code(lambda: store.set_config("log.witness_policy", "nonsense\n")) == "witness.policy"
    other = Signer.generate("other.test/log").verifier.vkey()  # a policy of another log
    store.set_config("log.witness_policy", _policy(other, [(w, "http://127.0.0.1:9")], 1))
    assert _code(store.log.ask_witnesses) == "witness.policy"


def _log_signer(path: Path) -> Signer:
    from evstore.tlog.checkpoint import read_private_key

    return read_private_key(path)


@pytest.fixture
def evstore_fresh(fresh_store_url):
    def make(backend, request, directory: Path) -> str:
        return fresh_store_url(backend, request, _mk(directory))

    return make


def test_a_server_without_witness_key_is_no_witness(store_url):
    server = start_thread({None: store_url}, public_read=True)
    try:
        r = httpx.post(server.base + "/add-checkpoint", content=b"old 0\n\nx\n1\n")
        assert r.status_code == 404 and r.json()["code"] == "witness.disabled"
    finally:
        server.stop()


def test_an_add_checkpoint_body_over_64_kib_is_refused_while_it_arrives(store_url, tmp_path):
    """No token is needed, so the Guard refuses the body at 64 KiB as it comes (413), instead
    of the route reading the server's general JSON limit into memory first.
    """
    w = Cosigner.generate("w.test/big")
    w.write_private_key(tmp_path / "w.key")
    server = start_thread({None: store_url}, witness_key=str(tmp_path / "w.key"))
    try:

        def body():
            yield b"old 0\n"
            for _ in range(64):  # 64 x 4 KiB: the whole body is never needed to refuse it
                yield b"A" * 4096

        r = httpx.post(server.base + "/add-checkpoint", content=body(), timeout=60)
        assert r.status_code == 413 and r.json()["code"] == "http.too-large", r.text
        ok = httpx.post(server.base + "/add-checkpoint", content=b"old 0\n\nx\n", timeout=60)
        assert ok.status_code == 400 and ok.json()["code"] == "witness.request"
    finally:
        server.stop()


def test_a_refusing_witness_is_reported_and_the_checkpoint_stays_signed(
    store_url, backend, request, tmp_path, evstore_fresh
):
    w = Cosigner.generate("w.test/refuses")
    w.write_private_key(tmp_path / "w.key")
    w_url = evstore_fresh(backend, request, tmp_path / "w")  # follows no log
    with evstore.open(store_url) as log:
        log.log.init_key(tmp_path / "log.key", origin="r.test/log")
        log.put(b"refused bytes")
        signed = log.log.checkpoint(tmp_path / "log.key")
        vkey = log.log.key()
    server = start_thread({None: w_url}, witness_key=str(tmp_path / "w.key"))
    try:
        with evstore.open(store_url) as log:
            log.set_config("log.witness_policy", _policy(vkey, [(w, server.base)], 1))
            r = log.log.ask_witnesses()
            assert r["cosigned"] == [] and "HTTP 404" in r["failed"]["w.test/refuses"]
            assert log.log.latest()["note"] == signed["note"]  # signed, no cosignature
    finally:
        server.stop()
