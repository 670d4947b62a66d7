"""Stored bytes over HTTP are never a page of this origin; any ``Range`` header is answered
(issue 23): nosniff on every answer, attachment and a sandbox CSP on stored bytes, and a
``Range`` of non-ASCII digits or of thousands of digits a 416 problem instead of a 500.
"""

from __future__ import annotations

import http.client
import json

import pytest

#: Bytes a browser would render as a page (and run) if it were served inline.
PAGE = b"<!doctype html><html><script>document.title='ran'</script><svg onload=alert(1)>"


def _send(served, method: str, path: str, headers: dict[str, bytes]) -> http.client.HTTPResponse:
    """``method path`` with header values sent as the raw bytes given (no client re-encoding)."""
    host, port = served.base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    conn.putrequest(method, path, skip_accept_encoding=True)
    conn.putheader("Authorization", f"Bearer {served.tokens['read']}")
    for name, value in headers.items():
        conn.putheader(name, value)
    conn.endheaders()
    r = conn.getresponse()
    r.body = r.read()  # type: ignore[attr-defined]
    conn.close()
    return r


def test_stored_bytes_are_attachments_with_nosniff_and_a_sandbox(served):
    with served.client() as c:
        address = c.put("/v1/objects", content=PAGE).json()["address"]
        body = {"documents": [{"name": "a.json", "kind": None, "document": {"a": "<b>x</b>"}}]}
        doc = c.post("/v1/ingest", json=body)
        assert doc.status_code in (200, 201), doc.text
    refs = [address, doc.json()["artifacts"][0]["address"]]
    with served.client("read") as c:
        for ref in refs:
            for method, rng in (("GET", None), ("HEAD", None), ("GET", "bytes=0-3")):
                headers = {"Range": rng} if rng else {}
                r = c.request(method, f"/v1/objects/{ref}", headers=headers)
                assert r.status_code in (200, 206), (ref, method, r.text)
                assert r.headers["x-content-type-options"] == "nosniff"
                assert r.headers["content-disposition"] == "attachment"
                assert r.headers["content-security-policy"] == "sandbox"
        # Every other answer carries nosniff too: a problem, another route, a 404 route.
        for path in (
            "/v1",
            f"/v1/objects/blake3:{'0' * 64}",
            "/v1/nowhere",
            f"/v1/objects/{address}/stat",
        ):
            assert c.get(path).headers["x-content-type-options"] == "nosniff", path


@pytest.mark.parametrize(
    "spec",
    [b"bytes=\xb2-", b"bytes=0-\xb2", b"bytes=\xb9-\xb3", b"bytes=" + b"9" * 4301 + b"-"],
    ids=["superscript-two", "last-superscript", "superscripts-both", "first-4301-digits"],
)
def test_a_range_of_odd_digits_is_a_416_problem(served, spec):
    with served.client() as c:
        address = c.put("/v1/objects", content=b"0123456789").json()["address"]
    for method in ("GET", "HEAD"):
        r = _send(served, method, f"/v1/objects/{address}", {"Range": spec})
        assert r.status == 416, (method, spec[:20], r.status, r.body[:200])
        assert r.getheader("content-range") == "bytes */10"
        assert r.getheader("x-content-type-options") == "nosniff"
        if method == "GET":
            assert r.getheader("content-type") == "application/problem+json"
            fault = json.loads(r.body)
            assert fault["code"] == "http.range"
            # the note on digits only where the header has other than ASCII
            assert ("ASCII digits" in fault["detail"]) == (not spec.isascii())


def test_a_range_with_thousands_of_digits_is_read_without_a_500(served):
    with served.client() as c:
        address = c.put("/v1/objects", content=b"0123456789").json()["address"]
    huge = b"9" * 5000
    for spec, want in ((b"bytes=2-" + huge, b"23456789"), (b"bytes=-" + huge, b"0123456789")):
        for method in ("GET", "HEAD"):
            r = _send(served, method, f"/v1/objects/{address}", {"Range": spec})
            assert r.status == 206, (method, r.status, r.body[:200])
            assert r.getheader("content-length") == str(len(want))
            if method == "GET":
                assert r.body == want
