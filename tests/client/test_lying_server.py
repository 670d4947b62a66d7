"""The real `evstore` command against servers that lie or break (a stdlib HTTP server on
127.0.0.1): wrong bytes, a wrong digest header, a truncated body, a 500 without a body,
503 forever. Each is a typed error, exit 1, no traceback, and `get -o` leaves no file."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import blake3
import pytest
from clientkit import ev

DATA = b"the bytes that were stored\n"
ADDRESS = "blake3:" + blake3.blake3(DATA).hexdigest()
SHA = "sha256:" + hashlib.sha256(DATA).hexdigest()


class Liar(BaseHTTPRequestHandler):
    mode = "wrong-bytes"
    seen: list[str] = []

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):
        self.seen.append(self.path)
        mode = self.server.mode  # type: ignore[attr-defined]
        if mode == "wrong-bytes":
            body = b"other bytes, same length!!!\n"
            self.send_response(200)
            self.send_header("ETag", f'"{ADDRESS}"')
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif mode == "truncated":
            self.send_response(200)
            self.send_header("Content-Length", str(len(DATA)))
            self.end_headers()
            self.wfile.write(DATA[:7])
            self.wfile.flush()
            self.close_connection = True
        elif mode == "500":
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif mode == "busy":
            body = json.dumps({"code": "store.busy", "detail": "busy"}).encode()
            self.send_response(503)
            self.send_header("Retry-After", "0")
            self.send_header("Content-Type", "application/problem+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)


@pytest.fixture
def liar():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Liar)
    server.mode = "wrong-bytes"  # type: ignore[attr-defined]
    Liar.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def _url(server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


@pytest.mark.parametrize("ref", [ADDRESS, SHA])
def test_wrong_bytes_with_the_right_etag_are_refused_and_no_file_is_kept(liar, tmp_path, ref):
    out_file = tmp_path / "out.txt"
    got = ev("--store", _url(liar), "--json", "get", ref, "-o", str(out_file), token="tkn")
    assert got.returncode == 1
    err = json.loads(got.stdout)["error"]
    assert err["code"] == "remote.digest" and err["details"]["ref"] == ref
    assert not out_file.exists() and list(tmp_path.iterdir()) == []
    got = ev("--store", _url(liar), "get", ref, token="tkn")
    assert got.returncode == 1 and got.stdout == b""  # nothing printed before verification
    assert b"remote.digest" in got.stderr and b"Traceback" not in got.stderr


def test_a_truncated_body_is_remote_protocol_and_no_file(liar, tmp_path):
    liar.mode = "truncated"
    out_file = tmp_path / "out.txt"
    got = ev("--store", _url(liar), "--json", "get", ADDRESS, "-o", str(out_file))
    assert got.returncode == 1
    assert json.loads(got.stdout)["error"]["code"] == "remote.protocol"
    assert list(tmp_path.iterdir()) == []


def test_a_500_without_a_body_is_remote_protocol(liar):
    liar.mode = "500"
    got = ev("--store", _url(liar), "--json", "stat", ADDRESS)
    assert got.returncode == 1
    err = json.loads(got.stdout)["error"]
    assert err["code"] == "remote.protocol" and err["details"]["status"] == 500
    assert len(Liar.seen) == 1  # a 500 is an answer: not retried


def test_busy_forever_is_retried_a_bounded_number_of_times(liar):
    liar.mode = "busy"
    got = ev("--store", _url(liar) + "/acme", "--json", "get", ADDRESS)
    assert got.returncode == 1
    err = json.loads(got.stdout)["error"]
    assert err["code"] == "remote.busy" and err["details"]["url"] == _url(liar) + "/acme"
    assert len(Liar.seen) == 5 and all(p.startswith("/acme/v1/objects/") for p in Liar.seen)
