"""The server signs log checkpoints on a schedule (issue 13): `evstore serve --log-key`."""

from __future__ import annotations

import time

import pytest
from serverkit import make_tokens, start_process

import evstore


def _checkpoint_size(client) -> int:
    r = client.get("/v1/log")
    assert r.status_code == 200, r.text
    checkpoint = r.json().get("checkpoint")
    return -1 if checkpoint is None else int(checkpoint["size"])


def test_the_server_signs_a_checkpoint_of_what_it_ingested(store_url, tmp_path):
    key = tmp_path / "log.key"
    with evstore.open(store_url) as store:
        store.log.init_key(str(key))
    tokens = make_tokens(store_url)
    server = start_process(
        [
            "--store",
            store_url,
            "serve",
            "--no-access-log",
            "--log-key",
            str(key),
            "--checkpoint-every",
            "0.2",
        ],
        tmp_path,
    )
    server.tokens = tokens
    try:
        with server.client("ingest") as c:
            body = {"documents": [{"name": "a.json", "document": {"scheduled": 1}}]}
            assert c.post("/v1/ingest", json=body).status_code == 200
            deadline = time.monotonic() + 30
            size = -1
            while time.monotonic() < deadline:
                size = _checkpoint_size(c)
                with evstore.open(store_url) as store:
                    logged = store.log.status()["size"]
                if logged > 0 and size == logged:
                    break
                time.sleep(0.1)
            assert size == logged and size > 0, (size, logged)
    finally:
        assert server.stop() == 0
    # What the server signed verifies with the store's verifier key, offline.
    with evstore.open(store_url) as store:
        status = store.log.status()
    assert status["checkpoint"]["size"] == status["size"]


def test_a_store_without_a_key_is_served_and_left_unsigned(store_url, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    with evstore.open(f"sqlite:///{other / 's.db'}", create=True) as elsewhere:
        elsewhere.log.init_key(str(other / "log.key"))  # a key of another store
    tokens = make_tokens(store_url)
    server = start_process(
        [
            "--store",
            store_url,
            "serve",
            "--log-key",
            str(other / "log.key"),
            "--checkpoint-every",
            "0.1",
        ],
        tmp_path,
    )
    server.tokens = tokens
    try:
        with server.client("ingest") as c:
            body = {"documents": [{"name": "a.json", "document": {"unsigned": 1}}]}
            assert c.post("/v1/ingest", json=body).status_code == 200
            time.sleep(1.0)  # several rounds
            assert _checkpoint_size(c) == -1
    finally:
        assert server.stop() == 0
    text = server.log.read_text()
    assert text.count("not signed") == 1  # said once, not every round
    assert "Traceback" not in text


def test_checkpoint_every_must_be_positive(store_url):
    with pytest.raises(evstore.InputError) as exc:
        evstore.create_app({None: store_url}, log_key="k", checkpoint_every=0)
    assert exc.value.code == "input.invalid"


def test_signing_in_process_for_two_named_stores(store_url, tmp_path):
    """The same schedule on uvicorn in a thread (coverage sees it): one key signs the store
    it belongs to; the other named store, with no key, is skipped and keeps serving."""
    from serverkit import start_thread

    key = tmp_path / "log.key"
    with evstore.open(store_url) as store:
        store.log.init_key(str(key))
        store.ingest({"in_process": 1})
    bare = f"sqlite:///{tmp_path / 'bare.db'}"
    evstore.open(bare, create=True).close()
    server = start_thread(
        {"acme": store_url, "bare": bare},
        public_read=True,
        log_key=str(key),
        checkpoint_every=0.1,
    )
    try:
        import httpx

        deadline = time.monotonic() + 30
        with httpx.Client(base_url=server.base, timeout=30) as c:
            while time.monotonic() < deadline and _checkpoint_size_at(c, "/acme") < 1:
                time.sleep(0.1)
            assert _checkpoint_size_at(c, "/acme") >= 1
            assert _checkpoint_size_at(c, "/bare") == -1
    finally:
        server.stop()


def _checkpoint_size_at(client, prefix: str) -> int:
    r = client.get(f"{prefix}/v1/log")
    assert r.status_code == 200, r.text
    checkpoint = r.json().get("checkpoint")
    return -1 if checkpoint is None else int(checkpoint["size"])
