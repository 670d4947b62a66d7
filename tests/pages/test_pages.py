"""The audit pages (issue 15) over HTTP, in process, on both backends.

Every page type, links across kinds, escaping of hostile evidence, exact byte highlights,
verify-now flipping to a typed corruption fault, paging of large artifacts, sign-in, and
that no GET changes the store.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import warnings
from html.parser import HTMLParser

import pytest
import sqlalchemy as sa
from pages_helpers import (
    HOSTILE,
    TOKEN,
    big_package,
    client,
    ingest_examples,
    ingest_hostile,
)

import evstore
from evstore.db.tables import blobs

MARK = re.compile(r"<mark\b([^>]*)>(.*?)</mark>", re.S)
TAG = re.compile(r"<[^>]+>")
HREF = re.compile(r'href="([^"]*)"')


def marks(page: str) -> list[tuple[str, str]]:
    """``(attributes, text)`` of every <mark>, the text unescaped with the tags removed."""
    return [(a, html.unescape(TAG.sub("", t))) for a, t in MARK.findall(page)]


def links(page: str) -> list[str]:
    return [html.unescape(h) for h in HREF.findall(page)]


class _Tags(HTMLParser):
    """Every start tag of a page with its attributes, as a browser's tokenizer reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def unsafe_markup(page: str) -> list[str]:
    """What a page must never hold: handler attributes, inline or foreign scripts, script
    URLs in links or forms, elements that load anything from elsewhere."""
    parser = _Tags()
    parser.feed(page)
    bad = []
    for tag, attrs in parser.tags:
        for name, value in attrs.items():
            if name.startswith("on"):
                bad.append(f"<{tag} {name}>")
            if name in ("href", "src", "action") and value is not None:
                v = value.strip().lower()
                if v.startswith(("javascript:", "data:", "vbscript:")) or "//" in v.split("?")[0]:
                    bad.append(f"<{tag} {name}={value[:40]}>")
        if tag == "script" and not (attrs.get("src") or "").endswith("/static/pages.js"):
            bad.append("<script> without our src")
        if tag in ("img", "iframe", "object", "embed", "svg", "math", "textarea", "style"):
            bad.append(f"<{tag}>")
    return bad


def test_every_page_type_renders_and_links_resolve(store):
    ids = ingest_examples(store)
    c = client(store)
    pages = {
        "/ui/": "Store overview",
        f"/ui/fragment/{ids['fragment']}": "Fragment",
        f"/ui/manifest/{ids['manifest']}": "Manifest",
        f"/ui/package/{ids['package']}": "Answer evidence package",
        f"/ui/envelope/{ids['envelope']}": "Answer envelope",
        f"/ui/context/{ids['context']}": "Evidence context",
        f"/ui/context/{ids['source_document']}": "Source document",
        f"/ui/run/{ids['run']}": "Run record",
        f"/ui/artifact/{ids['json']}": "Artifact",
        f"/ui/blob/{ids['clause']}": "Blob",
        "/ui/kind/fragment": "Artifacts of kind",
    }
    seen: set[str] = set()
    for url, heading in pages.items():
        r = c.get(url)
        assert r.status_code == 200, (url, r.text[:500])
        assert re.search(rf"<h1>{heading}", r.text), url
        assert r.headers["content-security-policy"].startswith("default-src 'none'")
        assert "'unsafe-inline'" not in r.headers["content-security-policy"]
        assert r.headers["cache-control"] == "no-store"
        # No inline script: every <script> has a src of ours, and no on* handler attribute.
        assert unsafe_markup(r.text) == [], url
        assert '<main id="main"' in r.text and '<a class="skip" href="#main">' in r.text
        seen.update(u.split("#")[0] for u in links(r.text) if u.startswith("/ui/"))
    # Follow every link the pages give, across kinds: each answers without a server error,
    # and each object link lands on a page (redirects followed).
    assert any(u.startswith("/ui/fragment/") for u in seen)
    assert any(u.startswith("/ui/package/") for u in seen)
    assert any(u.startswith("/ui/blob/") for u in seen)
    for url in sorted(seen)[:300]:
        r = c.get(url)
        assert r.status_code == 200, (url, r.status_code, r.text[:300])


def test_fragment_highlight_is_exactly_the_quoted_bytes(store):
    ingest_examples(store)
    c = client(store)
    frags = list(store.iter_artifacts("fragment"))
    assert len(frags) == 5
    for info in frags:
        doc = store.load(info.address)
        r = c.get(f"/ui/fragment/{info.address}")
        assert r.status_code == 200
        ((attrs, text),) = marks(r.text)
        quote = store.fragments.quote(info.address)
        assert text.encode("utf-8") == quote  # multi-byte characters included
        assert f'data-start="{doc["start_offset"]}"' in attrs
        assert f'data-end="{doc["end_offset"]}"' in attrs
        assert "verified: the highlighted bytes hash to it" in r.text
    # The example with 2-, 3- and 4-byte characters is among them.
    quotes = [store.fragments.quote(i.address) for i in frags]
    assert any(len(q) != len(q.decode()) for q in quotes)


def test_envelope_quotes_are_marked_in_the_cited_item(store):
    ids = ingest_examples(store)
    c = client(store)
    env = store.load(ids["envelope"])
    cited = [
        x["quote"] for claim in env["claims"] for x in claim.get("citations", []) if "quote" in x
    ]
    assert cited
    for url in (f"/ui/envelope/{ids['envelope']}", f"/ui/package/{ids['package']}"):
        r = c.get(url)
        found = [t for _, t in marks(r.text)]
        for q in cited:
            assert q in found, (url, q)


def test_verify_now_flips_to_a_typed_corruption_fault(store, snapshot):
    ids = ingest_examples(store)
    c = client(store)
    url = f"/ui/artifact/{ids['manifest']}"
    r = c.get(url)
    assert "<strong>Pass</strong>" in r.text and "corruption." not in r.text
    before = snapshot(store)
    c.get(url)
    assert snapshot(store) == before  # verify now records nothing
    address = ids["manifest"].removeprefix("blake3:")
    with store.db.engine.begin() as conn:
        data = conn.execute(sa.select(blobs.c.data).where(blobs.c.address == address)).scalar()
        bad = bytes(data[:10]) + bytes([data[10] ^ 0x01]) + bytes(data[11:])
        conn.execute(sa.update(blobs).where(blobs.c.address == address).values(data=bad))
    r = c.get(url)
    assert r.status_code == 200
    assert "<strong>Fail</strong>" in r.text
    assert '<strong class="code">corruption.digest</strong>' in r.text
    assert "Not shown: the stored bytes did not verify." in r.text
    # The kind page reads the bytes verified: it still answers, with the damage named and
    # the recorded facts, never a bare error page (issue 23).
    r = c.get(f"/ui/manifest/{ids['manifest']}")
    assert r.status_code == 200 and "<strong>Damaged</strong>" in r.text
    assert '<strong class="code">corruption.digest</strong>' in r.text
    assert ids["manifest"] in r.text


def test_verify_now_shows_contract_faults_with_pointers(store):
    # A stored fragment whose source version was replaced under it: the audit's fault shows.
    ingest_examples(store)
    c = client(store)
    info = store.iter_artifacts("fragment").__next__()
    r = c.get(f"/ui/artifact/{info.address}")
    assert "<strong>Pass</strong>" in r.text
    src = evstore.edges_from(store, info.address)[0]["dst"].removeprefix("blake3:")
    with store.db.engine.begin() as conn:
        conn.execute(sa.update(blobs).where(blobs.c.address == src).values(data=b"x" * 198))
    r = c.get(f"/ui/artifact/{info.address}")
    assert "<strong>Fail</strong>" in r.text
    assert re.search(r'<strong class="code">[a-z-]+\.[a-z0-9-]+</strong> at <code>', r.text)


def test_hostile_evidence_is_escaped_everywhere(store):
    h = ingest_hostile(store)
    c = client(store)
    for url in (
        f"/ui/fragment/{h['fragment']}",
        f"/ui/artifact/{h['fragment']}",
        f"/ui/artifact/{h['json']}",
        f"/ui/context/{h['source']}",
        f"/ui/search?q={HOSTILE}",
        "/ui/search?q=%22%3E%3Cscript%3Ealert(1)%3C/script%3E",
        f"/ui/blob/{h['source']}",
        "/ui/kind/fragment",
    ):
        r = c.get(url)
        assert r.status_code in (200, 404), url
        page = r.text
        assert "<script>alert" not in page, url
        assert "<img src=x" not in page, url
        assert '"><script>' not in page, url
        assert unsafe_markup(page) == [], url
        # Bidi overrides are isolated in a marked span, never loose in the page.
        assert "\u202e" not in TAG.sub("", re.sub(r'<span class="ctl"[^>]*>.</span>', "", page))
    r = c.get(f"/ui/fragment/{h['fragment']}")
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in r.text
    assert '<span class="ctl" data-cp="U+202E"' in r.text
    ((_, text),) = marks(r.text)
    assert text.encode() == h["text"][h["frag"]["start_offset"] : h["frag"]["end_offset"]]
    # The 1 MB line is paged: the window around the range, not the whole source.
    assert len(r.content) < 64 * 1024
    nxt = c.get(f"/ui/fragment/{h['fragment']}?offset=70000")
    assert nxt.status_code == 200 and 65536 < len(nxt.content) < 200 * 1024
    # A 200,000-character JSON string is cut on the page and says so.
    r = c.get(f"/ui/artifact/{h['json']}")
    assert "more characters not shown" in r.text and len(r.content) < 64 * 1024


def test_large_package_and_source_are_paged(store):
    doc = big_package(500)
    address = store.ingest(json.dumps(doc).encode()).results[0].digest.address
    c = client(store)
    r = c.get(f"/ui/package/{address}")
    assert r.status_code == 200
    assert r.text.count('class="item"') == 50
    assert len(r.content) < 300 * 1024, len(r.content)
    last = c.get(f"/ui/package/{address}?offset=450")
    assert last.text.count('class="item"') == 50 and "ev:" in last.text
    assert f"#{500}" in last.text and 'rel="next"' not in last.text
    art = c.get(f"/ui/artifact/{address}")
    assert art.status_code == 200 and len(art.content) < 600 * 1024, len(art.content)
    assert "/json?at=%2Fitems&amp;offset=100" in art.text or "open /items/" in art.text
    # A 10 MB source with a fragment at its end: the page stays small.
    source = (b"lorem ipsum \xc3\xa9t\xc3\xa9 " * 600_000)[: 10 * 1024 * 1024]
    source = source[: len(source.decode("utf-8", "ignore").encode())]
    start = len(source) - 30
    start = len(source[:start].decode("utf-8", "ignore").encode())
    frag = {
        "document_id": "big",
        "fragment_id": "f",
        "start_offset": start,
        "end_offset": len(source),
        "quote_sha256": hashlib.sha256(source[start:]).hexdigest(),
    }
    res = store.fragments.ingest(json.dumps(frag).encode(), sources=[("big", "f", source)])
    fa = res.results[0].digest.address
    r = c.get(f"/ui/fragment/{fa}")
    assert r.status_code == 200 and len(r.content) < 64 * 1024
    ((_, text),) = marks(r.text)
    assert text.encode() == source[start:]
    blob = evstore.edges_from(store, fa)[0]["dst"]
    r = c.get(f"/ui/blob/{blob}?offset=5000000")
    assert r.status_code == 200 and len(r.content) < 200 * 1024


def test_context_page_marks_cited_and_window_units(store):
    ids = ingest_examples(store)
    c = client(store)
    r = c.get(f"/ui/context/{ids['context']}?cite=31:31+33:33&window=1")
    assert r.status_code == 200
    rows = re.findall(r'<tr class="(cited|window)"><td>(\d+)</td>', r.text)
    assert rows == [
        ("window", "12"),
        ("cited", "31"),
        ("window", "32"),
        ("window", "7"),
        ("cited", "33"),
        ("window", "50"),
    ]
    assert "is byte for byte the stored one" in r.text
    r = c.get(f"/ui/context/{ids['context']}?cite=31:31&window=1")
    assert "The recomputed excerpt differs from the stored one" in r.text
    r = c.get(f"/ui/context/{ids['context']}?cite=nonsense")
    assert r.status_code == 400 and "input.invalid" in r.text
    r = c.get(f"/ui/context/{ids['context']}")
    assert "No citation is recorded with this excerpt" in r.text


def test_run_page_links_every_file(store):
    ids = ingest_examples(store)
    c = client(store)
    tree = store.load(ids["run"])
    r = c.get(f"/ui/run/{ids['run']}")
    got = set(links(r.text))
    for entry in tree["files"].values():
        assert f"/ui/blob/{entry['raw']}" in got
        if "artifact" in entry:
            assert any(u.endswith("/" + entry["artifact"]) for u in got)
    assert "checked" in r.text


@pytest.mark.parametrize(
    "form",
    ["address", "sha256", "sha256_b64u", "object_store", "bare_hex"],
)
def test_search_takes_every_content_ref_form(store, form):
    ids = ingest_examples(store)
    c = client(store)
    stat = store.stat(ids["manifest"])
    q = stat["sha256"].removeprefix("sha256:") if form == "bare_hex" else stat[form]
    r = c.get("/ui/search", params={"q": q}, follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == f"/ui/manifest/{ids['manifest']}"


def test_search_takes_contract_identifiers(store):
    ids = ingest_examples(store)
    c = client(store)
    manifest = store.load(ids["manifest"])
    frag = store.load(ids["fragment"])
    tree = store.load(ids["run"])
    cases = {
        manifest["manifest/ref"]: f"/ui/manifest/{ids['manifest']}",
        "sha256:" + frag["quote_sha256"].upper(): f"/ui/fragment/{ids['fragment']}",
        tree["index"]["raw"]: f"/ui/run/{ids['run']}",
        ids["run"]: f"/ui/run/{ids['run']}",
    }
    for q, target in cases.items():
        r = c.get("/ui/search", params={"q": q}, follow_redirects=False)
        assert r.status_code == 303, q
        assert r.headers["location"] == target, q
    # A package id (any case) lists each package with that id and its envelope.
    r = c.get("/ui/search", params={"q": "7D3E9F10-2A4B-4C6D-8E0F-1A2B3C4D5E6F"})
    assert r.status_code == 200 and f"/ui/package/{ids['package']}" in r.text
    assert f"/ui/envelope/{ids['envelope']}" in r.text
    r = c.get("/ui/search", params={"q": "EX-DOC-0001"})
    assert r.text.count("/ui/fragment/") >= 4
    r = c.get("/ui/search", params={"q": "session-alpha"}, follow_redirects=False)
    assert r.status_code == 200 and f"/ui/context/{ids['source_document']}" in r.text
    r = c.get("/ui/search", params={"q": "nothing-like-this"})
    assert r.status_code == 404 and "Nothing stored matches" in r.text


def test_sign_in_with_a_token_sets_a_strict_cookie(store):
    ingest_examples(store)
    c = client(store, token=None)
    r = c.get("/ui/kind/fragment")
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    assert 'name="next" value="/ui/kind/fragment"' in r.text
    assert c.get("/ui/", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert c.get("/ui/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    # A cross-site form post is refused and sets nothing.
    r = c.post(
        "/ui/signin",
        data={"token": TOKEN, "next": "/ui/"},
        headers={"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
        follow_redirects=False,
    )
    assert r.status_code == 403 and "set-cookie" not in r.headers
    r = c.post("/ui/signin", data={"token": "wrong"}, follow_redirects=False)
    assert r.status_code == 401 and "set-cookie" not in r.headers
    r = c.post(
        "/ui/signin",
        data={"token": TOKEN, "next": "//evil.example/x"},
        headers={"Origin": "http://testserver"},
        follow_redirects=False,
    )
    assert r.status_code == 303 and r.headers["location"] == "/ui/"
    for outside in ("/ui/../v1/ls", "/ui/./../../x", "/ui/%2e%2e/v1", "/ui/..%2f..%2fv1"):
        r = c.post(  # dot segments a browser resolves out of the pages
            "/ui/signin",
            data={"token": TOKEN, "next": outside},
            headers={"Origin": "http://testserver"},
            follow_redirects=False,
        )
        assert r.status_code == 303 and r.headers["location"] == "/ui/", outside
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
    assert c.get("/ui/kind/fragment").status_code == 200  # the cookie now signs in
    r = c.post("/ui/signout", headers={"Sec-Fetch-Site": "same-origin"}, follow_redirects=False)
    assert r.status_code == 303 and 'evstore_ui=""' in r.headers["set-cookie"]
    c.cookies.clear()
    assert c.get("/ui/").status_code == 401
    assert client(store, token=None, public_read=True).get("/ui/").status_code == 200


def test_pages_under_a_named_store_prefix(store):
    ids = ingest_examples(store)
    c = client(store, prefix="/acme")
    r = c.get(f"/acme/ui/fragment/{ids['fragment']}")
    assert r.status_code == 200
    assert 'href="/acme/ui/static/pages.css"' in r.text
    assert f'href="/acme/ui/artifact/{ids["fragment"]}"' in r.text
    r = c.get("/acme/ui/search", params={"q": ids["run"]}, follow_redirects=False)
    assert r.headers["location"] == f"/acme/ui/run/{ids['run']}"
    assert c.get("/ui/").status_code == 404


def test_no_get_changes_the_store(store, snapshot):
    ids = ingest_examples(store)
    c = client(store)
    before = snapshot(store)
    for kind, ref in ids.items():
        assert c.get(f"/ui/object/{ref}").status_code == 200, kind
        c.get(f"/ui/artifact/{ref}")
    c.get("/ui/")
    assert snapshot(store) == before
    # Unsafe methods on the pages are not routes.
    assert c.post(f"/ui/artifact/{ids['run']}").status_code == 405


#: The reviewer page of each kind (docs/pages.md); None: the generic artifact page.
KIND_PAGE = {
    "fragment": "fragment",
    "manifest": "manifest",
    "package": "package",
    "envelope": "envelope",
    "evidence-context": "context",
    "source-document": "context",
    "run": "run",
    "request": None,
    "json": None,
    "fragment-batch": None,
    "fragment-source": None,
}


def test_each_kind_opens_on_its_own_page_and_the_artifact_page_links_it(store):
    ids = ingest_examples(store)
    c = client(store)
    seen = set()
    for ref in ids.values():
        address = store.stat(ref)["address"]
        kinds = [a["kind"] for a in store.stat(ref)["artifacts"]]
        if not kinds:
            continue
        pages = [KIND_PAGE[k] for k in kinds if KIND_PAGE[k] is not None]
        want = f"/ui/{pages[0]}/{address}" if pages else f"/ui/artifact/{address}"
        r = c.get(f"/ui/object/{ref}", follow_redirects=False)
        assert (r.status_code, r.headers["location"]) == (303, want), kinds
        page = c.get(f"/ui/artifact/{ref}").text
        for kind in kinds:
            seen.add(kind)
            linked = f"the {kind} page</a>" in page
            assert linked == (KIND_PAGE[kind] is not None), kind
    assert {"fragment", "manifest", "run", "json", "evidence-context"} <= seen
    assert all(evstore.kind_page(k) == p for k, p in KIND_PAGE.items())


def test_static_files_and_errors(store):
    c = client(store)
    css = c.get("/ui/static/pages.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert "http" not in css.text.replace("https://", "")  # nothing fetched from elsewhere
    assert c.get("/ui/static/pages.js").headers["content-type"].startswith("text/javascript")
    assert c.get("/ui/static/../router.py").status_code == 404
    assert c.get("/ui/static/other.js").status_code == 404
    r = c.get("/ui/artifact/blake3:XYZ")
    assert r.status_code == 400 and "<h1>ref.syntax</h1>" in r.text
    r = c.get("/ui/artifact/blake3:" + "0" * 64)
    assert r.status_code == 404 and "<h1>not-found.blob</h1>" in r.text
    r = c.get("/ui/raw/blake3:" + "0" * 64)
    assert r.status_code == 404
    put = store.put(b"<html><script>alert(1)</script>")
    r = c.get(f"/ui/raw/{put.digest.address}")
    assert r.content == b"<html><script>alert(1)</script>"
    assert r.headers["content-disposition"] == "attachment"
    assert r.headers["content-type"] == "application/octet-stream"
    r = c.get(f"/ui/fragment/{put.digest.address}")
    assert r.status_code == 400 and "is not stored as a fragment" in r.text


def test_the_server_serves_the_pages_with_its_tokens(store_url):
    # The pages inside evstore.create_app: a named store's prefix, its own tokens.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient

    with evstore.open(store_url) as s:
        ids = ingest_examples(s)
        token = evstore.create_token(s, "read")["token"]
    app = evstore.create_app({"acme": store_url})
    with TestClient(app) as c:
        r = c.get("/acme/ui/")
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
        assert c.get("/acme/ui/", headers={"Authorization": "Bearer evst_x_y"}).status_code == 401
        r = c.post(
            "/acme/ui/signin",
            data={"token": token, "next": f"/acme/ui/run/{ids['run']}"},
            headers={"Sec-Fetch-Site": "same-origin"},
            follow_redirects=False,
        )
        assert r.status_code == 303 and r.headers["location"] == f"/acme/ui/run/{ids['run']}"
        assert "Path=/acme/ui" in r.headers["set-cookie"]
        r = c.get(f"/acme/ui/run/{ids['run']}")
        assert r.status_code == 200 and 'href="/acme/ui/static/pages.css"' in r.text
        assert c.get("/acme/ui/static/pages.css").status_code == 200
    public = evstore.create_app({None: store_url}, public_read=True)
    with TestClient(public) as c:
        r = c.get(f"/ui/fragment/{ids['fragment']}")
        assert r.status_code == 200 and '<mark id="hl"' in r.text


def test_json_subtrees_blob_bytes_and_kind_lists_are_paged(store):
    ids = ingest_examples(store)
    c = client(store)
    doc = big_package(250)
    address = store.ingest(json.dumps(doc).encode()).results[0].digest.address
    r = c.get(f"/ui/artifact/{address}/json", params={"at": "/items", "offset": 100})
    assert r.status_code == 200
    assert ">100</span>: " in r.text and ">199</span>: " in r.text and ">200</span>: " not in r.text
    assert "previous 100 items" in r.text and "next items from 200 of 250" in r.text
    # RFC 6901 escapes: a member name with "/" (the manifest's content/ref).
    r = c.get(f"/ui/artifact/{ids['manifest']}/json", params={"at": "/content~1ref"})
    assert r.status_code == 200 and "object-store:sha256:" in r.text
    for bad in ("/nope", "items", "/items/x"):
        r = c.get(f"/ui/artifact/{ids['manifest']}/json", params={"at": bad})
        assert r.status_code == 400 and "<h1>input.invalid</h1>" in r.text
    # A blob that is not UTF-8 is shown as a hex dump.
    put = store.put(bytes(range(256)) * 40)
    r = c.get(f"/ui/blob/{put.digest.address}")
    assert r.status_code == 200 and "00000000  00 01 02 03" in r.text
    # 150 more JSON artifacts: the kind list pages by cursor, 100 a page, nothing repeated.
    store.ingest(iter([json.dumps({"n": i}).encode() for i in range(150)]))
    first = c.get("/ui/kind/json")
    nxt = re.search(r'<a rel="next" href="([^"]+)">', first.text)
    assert first.text.count("<tr><td>") == 100 and nxt
    second = c.get(html.unescape(nxt.group(1)))
    assert second.text.count("<tr><td>") == 51 and 'rel="next"' not in second.text
    seen = re.findall(r'<tr><td><a href="[^"]+">(blake3:[0-9a-f]+)</a>', first.text + second.text)
    assert len(seen) == len(set(seen)) == 151


def test_roots_audits_and_log_are_shown_where_the_store_keeps_them(store):
    ids = ingest_examples(store)
    c = client(store)
    home = c.get("/ui/").text
    if not hasattr(type(store), "retention"):
        assert "This store keeps no retention roots yet" in home
        assert "This store keeps no audit records yet" in home
        for url in ("/ui/roots", "/ui/roots/default", "/ui/audits", "/ui/audits/1"):
            r = c.get(url)
            assert r.status_code == 404 and "this store keeps no retention yet" in r.text
    else:
        store.retention.retain([ids["run"], ids["package"]], "review-42")
        run = store.retention.audit(["review-42"])
        home = c.get("/ui/").text
        assert 'href="/ui/roots/review-42"' in home and f'href="/ui/audits/{run.id}"' in home
        r = c.get("/ui/roots/review-42")
        assert r.status_code == 200 and f'href="/ui/run/{ids["run"]}"' in r.text
        closure = store.runs.closure(ids["run"])
        assert f"<td>{len(closure.items)}</td>" in r.text
        r = c.get(f"/ui/audits/{run.id}")
        assert r.status_code == 200 and run.verdict in r.text
        r = c.get("/ui/roots")
        objects = {
            i["address"] for a in (ids["run"], ids["package"]) for i in store.runs.closure(a).items
        }
        assert r.status_code == 200 and f"{len(objects):,} objects" in r.text
        assert c.get("/ui/audits").status_code == 200
        assert c.get("/ui/audits/999999").status_code == 404
    if not hasattr(type(store), "log"):
        assert "This store keeps no log yet" in home
    else:
        status = store.log.status()
        assert f"{status['size']:,} entries" in home


class _Failing:
    """A stand-in store whose ``stat`` raises one error (what the object page reads first)."""

    def __init__(self, err):
        self.err = err

    def stat(self, ref):
        raise self.err


def test_an_error_page_has_the_status_the_api_gives_the_same_error():
    from evstore.core.errors import CODES
    from evstore.server.problems import status_of

    seen = {}
    for code in sorted(CODES):
        err = evstore.error(code, f"the {code} fault")
        r = client(_Failing(err)).get("/ui/object/blake3:" + "0" * 64)
        assert r.status_code == status_of(err), code
        assert f"<h1>{code}</h1>" in r.text
        seen[code] = r.status_code
    # The pages once had their own table: every store.* code was 503, and a code outside the
    # family prefixes (http.busy, audit.missing, http.route) fell through to 400.
    assert seen["store.missing"] == seen["store.schema-behind"] == 500
    assert seen["store.busy"] == seen["http.busy"] == 503
    assert seen["audit.missing"] == seen["corruption.digest"] == 500
    assert seen["http.route"] == seen["not-found.blob"] == 404
    assert seen["manifest.schema"] == 422 and seen["manifest.ref-rebound"] == 409
