"""The pages over damaged, warned and huge objects (issue 23): every page answers, names the
damage, verifies what it shows, and reads large objects in bounded memory.

On both backends (the ``store`` fixture). Memory is measured with tracemalloc around one
request, as a ratio of the object's size (no timing).
"""

from __future__ import annotations

import hashlib
import json
import tracemalloc

from pages_helpers import TOKEN, client, ingest_examples
from tamperkit import add_warning, flip_byte

import evstore


def _peak(fn):
    """``fn()``'s result and the peak of Python memory allocated while it ran (bytes)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _asgi_get(app, path: str) -> dict:
    """GET ``path`` from the ASGI ``app`` directly, keeping no byte of the body: its status,
    headers, length and SHA-256 (a test client would hold the whole body in memory).
    """
    import asyncio

    got: dict = {"n": 0, "sha": hashlib.sha256()}
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"testserver"), (b"authorization", f"Bearer {TOKEN}".encode())],
        "client": ("127.0.0.1", 1),
        "server": ("testserver", 80),
    }

    sent = []

    async def receive():
        if not sent:  # the request once; then no disconnect until the answer is done
            sent.append(1)
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()

    async def send(message):
        if message["type"] == "http.response.start":
            got["status"] = message["status"]
            got["headers"] = {k.decode(): v.decode() for k, v in message["headers"]}
        elif message["type"] == "http.response.body":
            got["n"] += len(message.get("body", b""))
            got["sha"].update(message.get("body", b""))

    asyncio.run(app(scope, receive, send))
    return got


def test_the_sign_in_page_and_sign_out_redirect_answer(store):
    c = client(store, token=None)
    r = c.get("/ui/signin", params={"next": "/ui/kind/fragment"})
    assert r.status_code == 200 and 'name="token"' in r.text
    assert 'name="next" value="/ui/kind/fragment"' in r.text
    out = c.post("/ui/signout", headers={"Sec-Fetch-Site": "same-origin"}, follow_redirects=True)
    assert out.status_code == 200 and out.url.path == "/ui/signin"


def test_an_artifact_with_recorded_warnings_shows_them(store):
    ids = ingest_examples(store)
    add_warning(store, ids["manifest"], "manifest.phase-unverifiable", "<b>accepted</b>", "/phase")
    c = client(store)
    for url in (f"/ui/artifact/{ids['manifest']}", f"/ui/manifest/{ids['manifest']}"):
        r = c.get(url)
        assert r.status_code == 200, url
    r = c.get(f"/ui/artifact/{ids['manifest']}")
    assert '<strong class="code">manifest.phase-unverifiable</strong> at <code>/phase</code>' in (
        r.text
    )
    assert "&lt;b&gt;accepted&lt;/b&gt;" in r.text


def test_verify_now_of_a_run_names_each_damaged_member_of_its_closure(store):
    ids = ingest_examples(store)
    c = client(store)
    run = ids["run"]
    r = c.get(f"/ui/artifact/{run}")
    assert "<strong>Pass</strong>" in r.text
    assert "<strong>Pass</strong>" in c.get(f"/ui/run/{run}").text
    # Damage one file of the bundle, two edges below the run record.
    tree = store.load(run)
    entry = tree["files"]["evidence-context.json"]
    flip_byte(store, entry["raw"])
    r = c.get(f"/ui/artifact/{run}")
    assert r.status_code == 200
    assert "<strong>Fail</strong>" in r.text and "<strong>Pass</strong>" not in r.text
    damaged = r.text[r.text.index('<ul class="faults damaged">') :]
    assert entry["raw"] in damaged.split("</ul>")[0]
    assert "corruption." in damaged.split("</ul>")[0]
    page = c.get(f"/ui/run/{run}")
    assert page.status_code == 200 and "<strong>Fail</strong>" in page.text
    row = next(li for li in page.text.split("<li") if f"/ui/blob/{entry['raw']}" in li)
    assert 'class="damaged"' in row and "damaged: corruption." in row
    others = [li for li in page.text.split("<li") if 'class="damaged"' in li]
    assert all(entry["raw"] in li or "evidence-context" in li for li in others)


def test_a_corrupt_fragment_and_a_corrupt_source_are_pages_naming_the_damage(store):
    ids = ingest_examples(store)
    c = client(store)
    frag = ids["fragment"]
    source = evstore.edges_from(store, frag)[0]["dst"]
    flip_byte(store, source)
    r = c.get(f"/ui/fragment/{frag}")
    assert r.status_code == 200 and "Damaged source" in r.text and source in r.text
    assert '<strong class="code">corruption.digest</strong>' in r.text
    assert '<mark id="hl"' not in r.text  # no unverified byte is shown
    r = c.get(f"/ui/blob/{source}")
    assert r.status_code == 200 and "does not verify now" in r.text
    flip_byte(store, frag, at=3)
    for url in (f"/ui/fragment/{frag}", f"/ui/artifact/{frag}", f"/ui/artifact/{frag}/json"):
        r = c.get(url)
        assert r.status_code == 200, url
        assert "corruption.digest" in r.text and frag in r.text, url
    assert c.get(f"/ui/raw/{frag}").status_code == 500  # no bytes: they do not verify


def test_huge_blob_pages_and_raw_bytes_are_read_in_bounded_memory(store):
    size = 24 << 20
    data = bytes(range(256)) * (size // 256)
    address = store.put(data).digest.address
    c = client(store)
    got, peak = _peak(lambda: _asgi_get(c.app, f"/ui/raw/{address}"))
    assert got["status"] == 200 and got["n"] == size
    assert got["sha"].hexdigest() == hashlib.sha256(data).hexdigest()
    assert got["headers"]["content-length"] == str(size)
    assert got["headers"]["content-disposition"] == "attachment"
    assert peak < size // 3, peak  # chunks, never the whole blob
    r, peak = _peak(lambda: c.get(f"/ui/blob/{address}", params={"offset": 20 << 20}))
    assert r.status_code == 200 and "Bytes 20,971,520–" in r.text
    assert peak < size // 3, peak
    r, peak = _peak(lambda: c.get(f"/ui/artifact/{address}"))
    assert r.status_code == 200 and "<strong>Pass</strong>" in r.text
    assert peak < size // 3, peak


def test_a_huge_document_is_cut_with_a_note_and_a_link_to_its_bytes(store):
    doc = {"items": [{"id": i, "text": "x" * 200} for i in range(30000)]}
    raw = json.dumps(doc).encode()
    assert len(raw) > 5 << 20
    address = store.ingest(raw).results[0].digest.address
    c = client(store)
    r, peak = _peak(lambda: c.get(f"/ui/artifact/{address}"))
    assert r.status_code == 200 and "<strong>Pass</strong>" in r.text
    assert "Not drawn: this document is" in r.text and f'href="/ui/raw/{address}"' in r.text
    assert '<ul class="json root">' not in r.text
    r = c.get(f"/ui/artifact/{address}/json", params={"at": "/items"})
    assert r.status_code == 200 and "Not drawn" in r.text
    assert peak < 20 * len(raw), peak
    # A kind page of a huge document says what it does not draw, too.
    units = [
        {
            "id": i,
            "kind": "segment",
            "text": "y" * 200,
            "ref": {"source_id": "big", "start_unit_id": i, "end_unit_id": i},
        }
        for i in range(30000)
    ]
    big = evstore.Document(json.dumps(units).encode(), kind="source-document")
    ref = store.ingest(big).results[0].digest.address
    r = c.get(f"/ui/context/{ref}")
    assert r.status_code == 200 and "Not drawn" in r.text and f"/ui/raw/{ref}" in r.text


def test_a_context_page_names_a_damaged_source_document(store):
    ids = ingest_examples(store)
    c = client(store)
    url = f"/ui/context/{ids['context']}"
    params = {"cite": "31:31 33:33", "window": 1}
    assert "Damaged source document" not in c.get(url, params=params).text
    flip_byte(store, ids["source_document"], at=4)
    r = c.get(url, params=params)
    assert r.status_code == 200 and "Damaged source document" in r.text
    assert ids["source_document"] in r.text and "corruption.digest" in r.text


def test_an_envelope_citing_a_huge_package_says_it_is_not_drawn(store, monkeypatch):
    ids = ingest_examples(store)
    c = client(store)
    url = f"/ui/envelope/{ids['envelope']}"
    assert "is shown without" not in c.get(url).text
    from evstore.pages import contract_views

    envelope = store.stat(ids["envelope"])["size"]
    package = store.stat(ids["package"])["size"]
    assert package > envelope
    monkeypatch.setattr(contract_views, "DOC_MAX", envelope)  # the package is now "huge"
    r = c.get(url)
    assert r.status_code == 200 and "these pages parse: the claims are shown" in r.text
    assert f"The cited package is {package:,} bytes" in r.text
    assert "<mark>" not in r.text  # no cited item drawn


def test_a_manifest_names_its_damaged_rendered_content_instead_of_calling_it_not_stored(store):
    ids = ingest_examples(store)
    c = client(store)
    manifest = ids["manifest"]
    content = json.loads(store.get(manifest))["content/ref"]
    r = c.get(f"/ui/manifest/{manifest}")
    assert r.status_code == 200 and "The content blob" in r.text
    flip_byte(store, content, at=2)
    r = c.get(f"/ui/manifest/{manifest}")
    assert r.status_code == 200
    assert "not stored" not in r.text  # a changed byte is damage, never absence
    assert "Damaged" in r.text and "corruption.digest" in r.text


def test_search_finds_a_damaged_object_and_its_page_names_the_damage(store):
    """Search looks refs up by their index row, not a re-hash: a damaged stored object is still
    found (its page says what is wrong) instead of reading as absent.
    """
    ids = ingest_examples(store)
    c = client(store)
    fragment = ids["fragment"]
    flip_byte(store, fragment, at=1)
    r = c.get("/ui/search", params={"q": fragment}, follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == f"/ui/fragment/{fragment}"
    page = c.get(r.headers["location"])
    assert page.status_code == 200 and "corruption." in page.text
    gone = "blake3:" + "0" * 64
    assert c.get("/ui/search", params={"q": gone}, follow_redirects=False).status_code == 404
