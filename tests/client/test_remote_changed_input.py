"""A remote put of a file that changes between the client's hash and its send (attack7).

The client hashes a seekable stream, then sends it again as the body (``expect`` and
``Content-Length`` from the first read). A file appended to or truncated in between made
the HTTP library fail untyped (h11's LocalProtocolError); other bytes of the same size
reached the server as a digest mismatch. Now the bytes first read are sent, checked: a
file appended to stores what was hashed (as a local put does), a truncated or rewritten
one is ``input.changed`` with nothing stored.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

import evstore
from evstore.db.tables import blobs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
from serverkit import make_tokens, start_thread


@pytest.fixture
def served_store(store_url):
    token = make_tokens(store_url)["ingest"]
    server = start_thread({None: store_url})
    try:
        yield server.base, token
    finally:
        server.stop()


def _addresses(url: str) -> set[str]:
    with evstore.open(url) as st, st.db.engine.connect() as conn:
        return {r[0] for r in conn.execute(sa.select(blobs.c.address))}


@pytest.mark.parametrize("change", ["appended", "truncated", "other bytes"])
def test_a_file_changed_before_it_is_sent_stores_nothing(
    store_url, served_store, tmp_path, monkeypatch, change
):
    base, token = served_store
    data = os.urandom(3 << 20)
    path = tmp_path / "moving"
    path.write_bytes(data)
    before = _addresses(store_url)
    with evstore.open(base, token=token) as remote:
        cls = type(remote)
        real = cls._put

        def changing(self, digest, body):  # another program writes the file meanwhile
            with open(path, "r+b") as w:
                if change == "appended":
                    w.seek(0, os.SEEK_END)
                    w.write(b"more")
                elif change == "truncated":
                    w.truncate(1 << 20)
                else:
                    w.seek(len(data) // 2)
                    w.write(bytes([data[len(data) // 2] ^ 1]))
            return real(self, digest, body)

        monkeypatch.setattr(cls, "_put", changing)
        with open(path, "rb") as f:
            if change == "appended":  # the bytes hashed are the bytes sent and stored
                res = remote.put(f)
            else:
                with pytest.raises(evstore.EvstoreError) as info:
                    remote.put(f)
    if change == "appended":
        assert res.digest == evstore.digest_bytes(data)
        assert _addresses(store_url) == before | {res.digest.blake3}
        return
    assert info.value.code == "input.changed", info.value
    assert _addresses(store_url) == before


def test_a_file_sent_unchanged_is_stored(store_url, served_store, tmp_path):
    base, token = served_store
    data = os.urandom(3 << 20)
    path = tmp_path / "still"
    path.write_bytes(b"head" + data)
    with evstore.open(base, token=token) as remote, open(path, "rb") as f:
        f.seek(4)
        res = remote.put(f)
    assert res.digest == evstore.digest_bytes(data)
    with evstore.open(store_url) as st:
        assert st.get(res.digest.address) == data
