"""``verify-proof --tiles`` reads at most a tile's worth from a hostile source (attack4).

A tiles URL or directory is anyone's: a server answering without end, or a ``checkpoint``
that is a huge file (or /dev/zero), was read whole into memory. Nothing a verifier reads
there (a checkpoint, a hash tile, an entry bundle) is over 256 entries of 65,535 bytes.
"""

from __future__ import annotations

import http.server
import threading

import pytest

import evstore
from evstore.log.tiles import FETCH_MAX, fetcher
from evstore.tlog.checkpoint import Signer

VKEY = Signer.generate("evstore.log/attack4").verifier.vkey()


class _Endless(http.server.BaseHTTPRequestHandler):
    sent = 0
    limit = 4 * FETCH_MAX  # the test's own bound: the server stops after this many bytes

    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        block = b"x" * (1 << 16)
        try:
            while type(self).sent < self.limit:
                self.wfile.write(block)
                type(self).sent += len(block)
        except OSError:
            pass  # the client stopped reading

    def log_message(self, *args: object) -> None:
        pass


def test_an_endless_tiles_server_is_refused_after_a_bounded_read():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Endless)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/tiles"
        with pytest.raises(evstore.EvstoreError) as caught:
            fetcher(url, timeout=10)("checkpoint")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert caught.value.code == "tiles.malformed"
    assert _Endless.sent < _Endless.limit  # the reader stopped before the server did


def test_an_oversized_checkpoint_file_is_refused_without_reading_it(tmp_path):
    with (tmp_path / "checkpoint").open("wb") as fh:
        fh.truncate(64 << 20)  # sparse: no 64 MiB on disk
    with pytest.raises(evstore.EvstoreError) as caught:
        evstore.verify_log_tiles(str(tmp_path), VKEY, 0)
    assert caught.value.code == "tiles.malformed"
    assert "checkpoint" in caught.value.message


def test_a_file_within_the_bound_is_read_whole(tmp_path):
    (tmp_path / "tile").mkdir()
    (tmp_path / "tile" / "x").write_bytes(b"y" * FETCH_MAX)
    assert fetcher(str(tmp_path))("tile/x") == b"y" * FETCH_MAX
