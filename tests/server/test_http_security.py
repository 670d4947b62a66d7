"""Hostile requests: path and ref injection, bodies over the limit, slow clients, bad tars."""

from __future__ import annotations

import http.client
import io
import json
import socket
import tarfile
import time

import httpx
from serverkit import start_process

import evstore


def _code(r) -> str:
    assert r.headers["content-type"] == "application/problem+json", r.text
    return r.json()["code"]


def _raw(served, path: str) -> tuple[int, str, bytes]:
    """GET ``path`` exactly as written (no client-side normalization of dot segments)."""
    host, port = served.base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.putrequest("GET", path, skip_accept_encoding=True)
        conn.putheader("Authorization", f"Bearer {served.tokens['admin']}")
        conn.endheaders()
        r = conn.getresponse()
        return r.status, r.getheader("content-type") or "", r.read()
    finally:
        conn.close()


def test_path_and_ref_injection(served_any):
    served = served_any
    with served.client() as c:
        c.put("/v1/objects", content=b"x")
        for raw in (
            "/v1/objects/..",
            "/v1/objects/../../etc/passwd",
            "/v1/../v1/objects/x",
            "/v1/objects/%2e%2e/%2e%2e/v1",
            "/v1/objects/..",
            "/v1/objects/..%2F..%2Fetc%2Fpasswd",
            "/v1/objects/blake3:%2E%2E",
            "/v1/objects/%00",
            "/v1/objects/blake3%3A" + "0" * 63 + "%00",
            "/v1/objects/" + "a" * 4000,
            "/v1/objects/sha256:" + "A" * 64,
            "/v1/refs/%2e%2e%2fv1",
            "/v1/closure/blake3:..%5C..",
            "/v1/artifacts/%ff%fe",
        ):
            status, ctype, body = _raw(served, raw)
            assert status in (400, 404), (raw, status)
            assert ctype == "application/problem+json", raw
            assert json.loads(body)["code"] in ("ref.syntax", "http.route"), raw
        r = c.get("/v1/objects/..%2Fstat")
        assert r.status_code in (400, 404) and r.headers["content-type"].startswith(
            "application/problem+json"
        )
        r = c.get("/v1/../v1/objects/" + "blake3:" + "0" * 64)
        assert r.status_code == 404
        r = c.post("/v1/missing", json={"refs": ["blake3:" + "0" * 64 + "\x00"]})
        assert r.status_code == 400 and _code(r) == "ref.syntax"
        r = c.get("/v1/find", params={"name": "key", "value": "a\x00b"})
        assert r.status_code == 400
        r = c.get("/v1/ls", params={"after": "../../x"})
        assert r.status_code == 400 and _code(r) == "input.invalid"


def test_bodies_over_the_limit_are_refused_before_buffering(store_url, tmp_path, snapshot):
    from serverkit import make_tokens

    tokens = make_tokens(store_url)
    server = start_process(
        [
            "--store",
            store_url,
            "serve",
            "--no-access-log",
            "--max-object-bytes",
            "1000",
            "--max-json-bytes",
            "500",
        ],
        tmp_path,
    )
    server.tokens = tokens
    with evstore.open(store_url) as store:
        before = snapshot(store)
    try:
        with server.client() as c:
            r = c.put("/v1/objects", content=b"x" * 1001)
            assert r.status_code == 413 and _code(r) == "http.too-large"

            def chunks():
                for _ in range(20):
                    yield b"y" * 100

            r = c.put("/v1/objects", content=chunks())  # chunked: no Content-Length
            assert r.status_code == 413 and _code(r) == "http.too-large"
            big = {"documents": [{"document": {"k": "v" * 600}}]}
            r = c.post("/v1/ingest", json=big)
            assert r.status_code == 413 and r.json()["details"]["limit"] == 500
            ok = c.put("/v1/objects", content=b"x" * 1000)
            assert ok.status_code == 201
        with evstore.open(store_url) as store:
            after = snapshot(store)
        # The one accepted put wrote its blob, its root and lease, and its log entry; the
        # refused requests wrote nothing anywhere.
        put_rows = ("blobs", "roots", "leases", "log_entries", "log_nodes", "log_queue")
        assert {k: v for k, v in after.items() if k not in put_rows} == {
            k: v for k, v in before.items() if k not in put_rows
        }
        assert len(after["roots"]) == len(before["roots"]) + 1
        assert len(after["blobs"]) == len(before["blobs"]) + 1
    finally:
        assert server.stop() == 0


def test_a_slow_client_does_not_block_others(served):
    # Slowloris: connections that send a request line and headers a byte at a time (bounded).
    slow = []
    try:
        for _ in range(8):
            s = socket.create_connection(("127.0.0.1", int(served.base.rsplit(":", 1)[1])))
            s.sendall(b"GET /v1 HTTP/1.1\r\nHost: x\r\n")
            slow.append(s)
        with served.client() as c:
            address = c.put("/v1/objects", content=b"fast").json()["address"]
            for i in range(20):
                for s in slow:
                    s.sendall(b"X")  # one byte of a header, never finished
                r = c.get(f"/v1/objects/{address}")
                assert r.status_code == 200 and r.content == b"fast", i
        # A slow upload (body trickling in) does not hold the others up either.
        body_sock = socket.create_connection(("127.0.0.1", int(served.base.rsplit(":", 1)[1])))
        slow.append(body_sock)
        body_sock.sendall(
            b"PUT /v1/objects HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n"
            + f"Authorization: Bearer {served.tokens['ingest']}\r\n\r\n".encode()
        )
        with served.client() as c:
            started = time.monotonic()
            for _ in range(10):
                body_sock.sendall(b"z")
                assert c.get("/v1/ls", params={"blobs": 1}).status_code == 200
            assert time.monotonic() - started < 60  # a bound, not a timing assertion
    finally:
        for s in slow:
            s.close()


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for info, data in members:
            if data is not None:
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
            else:
                t.addfile(info)
    return buf.getvalue()


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def _link(name: str, target: str, kind: bytes) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


def _bundle() -> list[tuple[tarfile.TarInfo, bytes]]:
    data = b"some evidence bytes\n"
    index = {
        "notes": {
            "artifact_kind": "notes",
            "logical_file": "notes.txt",
            "media_type": "text/plain",
            "schema_id": "none",
            "schema_name": "none",
            "schema_version": "1",
        }
    }
    return [_file("run/index.json", json.dumps(index).encode()), _file("run/notes.txt", data)]


def test_hostile_bundle_tars_are_refused_and_nothing_is_written(served_any, store_url, snapshot):
    served = served_any
    with evstore.open(store_url) as store:
        before = snapshot(store)
    hostile = {
        "dotdot": [*_bundle(), _file("run/../escape.txt", b"x")],
        "absolute": [*_bundle(), _file("/tmp/evstore-escape.txt", b"x")],
        "symlink": [*_bundle(), _link("run/evil", "/etc/passwd", tarfile.SYMTYPE)],
        "hardlink": [*_bundle(), _link("run/hard", "/etc/passwd", tarfile.LNKTYPE)],
        "fifo": [*_bundle(), (tarfile.TarInfo("run/fifo"), None)],
        "twice": [*_bundle(), _file("run/index.json", b"{}")],
    }
    hostile["fifo"][-1][0].type = tarfile.FIFOTYPE
    headers = {"Content-Type": "application/x-tar"}
    with served.client("ingest") as c:
        for why, members in hostile.items():
            r = c.post("/v1/bundles", content=_tar(members), headers=headers)
            assert r.status_code == 422, (why, r.text)
            assert _code(r) == "bundle.archive-unsafe", why
        r = c.post("/v1/bundles", content=b"not a tar at all" * 100, headers=headers)
        assert r.status_code == 400 and _code(r) == "bundle.archive-malformed"
        r = c.post("/v1/bundles", content=_tar([_file("a.txt", b"x")]), headers=headers)
        assert _code(r) == "bundle.archive-malformed"
        long_name = [*_bundle(), _file("run/" + "n" * 300, b"x")]  # past NAME_MAX: 400, no 500
        r = c.post("/v1/bundles", content=_tar(long_name), headers=headers)
        assert r.status_code == 400 and _code(r) == "bundle.archive-malformed", r.text
    with evstore.open(store_url) as store:
        assert snapshot(store) == before


def test_a_bundle_tar_ingests_like_ingest_bundle(served_any, store_url):
    served = served_any
    with served.client("ingest") as c:
        r = c.post("/v1/bundles", content=_tar(_bundle()))
        assert r.status_code == 200, r.text
        report = r.json()
        assert report["ok"] is True and report["run"]["new"] is True
        assert set(report["files"]) == {"notes.txt"}
        again = c.post("/v1/bundles", content=_tar(_bundle()[::-1]))
        assert again.json()["run"]["address"] == report["run"]["address"]
        assert again.json()["run"]["new"] is False
        flat = [(tarfile.TarInfo(i.name.removeprefix("run/")), d) for i, d in _bundle()]
        assert c.post("/v1/bundles", content=_tar(flat)).json()["run"]["new"] is False


def test_unknown_clients_get_problem_json_for_malformed_http(served):
    with httpx.Client(base_url=served.base, timeout=30) as c:
        r = c.get("/v1/objects/x", headers={"Authorization": "Bearer"})
        assert r.status_code == 401


def test_limits_in_process_and_503_when_busy(store_url, monkeypatch):
    # The same guard as above, on uvicorn in a thread (coverage), and its in-flight limit.
    import threading

    from serverkit import make_tokens, start_thread

    from evstore.facade.api import Store

    held, release = threading.Event(), threading.Event()
    plain_has = Store.has
    marker = "blake3:" + "e" * 64

    def has(self, refs):  # a request that is being worked on holds the one place
        if marker in refs:
            held.set()
            release.wait(60)
        return plain_has(self, refs)

    monkeypatch.setattr(Store, "has", has)
    tokens = make_tokens(store_url)
    limits = evstore.ServerLimits(object_bytes=1000, json_bytes=500, in_flight=1, page=5)
    server = start_thread({None: store_url}, limits=limits)
    server.tokens = tokens
    port = int(server.base.rsplit(":", 1)[1])
    worker = None
    try:
        with server.client() as c:
            assert _code(c.put("/v1/objects", content=b"x" * 1001)) == "http.too-large"
            chunked = c.put("/v1/objects", content=iter([b"y" * 600, b"y" * 600]))
            assert chunked.status_code == 413
            assert _code(c.get("/v1/ls", params={"limit": 6})) == "http.request"
            many = c.post("/v1/missing", json={"refs": ["blake3:" + "0" * 64] * 10_001})
            assert many.status_code == 413  # over the JSON limit before the count is looked at
            # A request waiting for the rest of its body holds no place (issue 23) ...
            waiting = socket.create_connection(("127.0.0.1", port))
            waiting.sendall(
                b"PUT /v1/objects HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
                + f"Authorization: Bearer {tokens['ingest']}\r\n\r\nabc".encode()
            )
            try:
                statuses = []
                for _ in range(100):  # once it waits for its body (bounded: 5 s)
                    statuses.append(c.get("/v1").status_code)
                    if statuses[-1] == 200:
                        break
                    time.sleep(0.05)
                assert statuses[-1] == 200, statuses
            finally:
                waiting.close()

            # ... one being worked on does: the next request is 503 http.busy.
            def holder() -> None:
                with server.client("read") as mine:
                    mine.post("/v1/missing", json={"refs": [marker]})

            worker = threading.Thread(target=holder)
            worker.start()
            assert held.wait(30)
            busy = c.get("/v1")
            assert busy.status_code == 503
            assert busy.headers["retry-after"] == "1"
            assert _code(busy) == "http.busy"
            release.set()
            worker.join(30)
            for _ in range(100):
                if c.get("/v1").status_code == 200:
                    break
                time.sleep(0.05)
            assert c.get("/v1").status_code == 200
    finally:
        release.set()
        if worker is not None:
            worker.join(30)
        server.stop()


def test_a_repeated_scalar_parameter_or_authorization_header_is_refused(served):
    """Read one way silently, each would be ambiguous: 400 http.request, naming it."""
    with served.client() as c:
        c.put("/v1/objects", content=b"one")
        assert c.get("/v1/ls", params={"limit": "1"}).status_code == 200
        r = c.get("/v1/ls", params=[("limit", "1"), ("limit", "2")])
        assert r.status_code == 400 and _code(r) == "http.request"
        assert r.json()["details"]["parameter"] == "limit"
        # A parameter the route takes as a list may repeat (the excerpt's cited ranges).
        r = c.get(
            "/v1/contexts/blake3:" + "0" * 64 + "/excerpt",
            params=[("range", "1:1"), ("range", "2:2")],
        )
        assert r.status_code == 404 and _code(r) != "http.request"
    admin = served.tokens["admin"]
    with httpx.Client(base_url=served.base, timeout=30) as c:
        twice = [("Authorization", f"Bearer {admin}"), ("Authorization", f"Bearer {admin}")]
        r = c.get("/v1/ls", headers=httpx.Headers(twice))
        assert r.status_code == 400 and _code(r) == "http.request"
        assert c.get("/v1/ls", headers={"Authorization": f"Bearer {admin}"}).is_success


def test_an_unknown_query_parameter_or_body_member_is_refused_on_the_api(served):
    """A misspelt ``expect`` must not turn the digest check off without a word."""
    with served.client() as c:
        r = c.put("/v1/objects", params={"expct": "sha256:" + "0" * 64}, content=b"typo")
        assert r.status_code == 400 and _code(r) == "http.request"
        assert r.json()["details"]["parameter"] == "expct"
        assert c.post("/v1/missing", json={"refs": []}).json() == {"missing": []}
        r = c.post("/v1/missing", json={"refs": [], "x": 1})
        assert r.status_code == 400 and r.json()["pointer"] == "/x"
        r = c.post("/v1/tokens", json={"scoep": "read"})
        assert r.status_code == 400 and r.json()["pointer"] == "/scoep"
        # Nothing was stored by the refused put.
        r = c.put("/v1/objects", params={"expect": "sha256:" + "0" * 64}, content=b"typo")
        assert r.status_code == 422
        # A refused time points at the body's until, whichever rule refused it.
        address = c.put("/v1/objects", content=b"held").json()["address"]
        for until in ("2000-01-01T00:00:00Z", "\u0663d", "9999-12-31T23:59:59-01:00"):
            r = c.post("/v1/roots/held/retain", json={"refs": [address], "until": until})
            assert r.status_code == 400 and _code(r) == "input.invalid", until
            assert r.json()["pointer"] == "/until" and r.json()["details"]["until"] == until
        assert "held" not in [x["root"] for x in c.get("/v1/roots").json()["roots"]]
