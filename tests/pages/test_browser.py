"""The audit pages in a real browser against a real ``evstore serve`` process (issue 15).

Debian's chromium (``/usr/bin/chromium``) driven by Playwright for Python, headless, never a
browser that Playwright downloads; axe-core (pinned, as bundled by axe-playwright-python)
checks accessibility. The server listens on 127.0.0.1 on a free port; nothing else is
reached (the browser runs with background networking off, and every request it makes is
checked to go to that server).

Skips where chromium or Playwright is missing; with ``EVSTORE_REQUIRE_TOOLS=1`` (CI) it fails
instead. Screenshots of every page type go to a temporary folder, and to docs/screenshots/
when ``EVSTORE_SCREENSHOTS=1`` (how the committed ones were made, on SQLite).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from pages_helpers import ROOT, ingest_examples, ingest_hostile

import evstore
from evstore.db.tables import blobs

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
EVSTORE = str(Path(sys.executable).with_name("evstore"))
SHOTS = ROOT / "docs" / "screenshots"


def _require_tools() -> None:
    missing = []
    if not Path(CHROMIUM).exists():
        missing.append(f"{CHROMIUM} (apt-get install chromium)")
    try:
        import axe_playwright_python  # noqa: F401
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        missing.append(f"{exc.name} (pip install '.[test]')")
    if missing:
        msg = "the browser test needs " + ", ".join(missing)
        if os.environ.get("EVSTORE_REQUIRE_TOOLS", "") not in ("", "0"):
            pytest.fail(msg)
        pytest.skip(msg)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cli(url: str, *args: str) -> str:
    r = subprocess.run(
        [EVSTORE, "--store", url, *args], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture
def served(store_url, tmp_path):
    """A store with the examples, hostile evidence and the shared fixtures, served by a real
    ``evstore serve`` on 127.0.0.1; yields (base URL, read token, ids, store)."""
    _require_tools()
    store = evstore.open(store_url)
    ids = ingest_examples(store)
    hostile = ingest_hostile(store)
    ids["hostile_fragment"] = hostile["fragment"]
    shared = ROOT.parent / "shared" / "fixtures" / "templiqx" / "examples" / "crm3" / "evals"
    if shared.is_dir():  # the public templiqx fixture, ingested by the CLI as a user would
        inputs = json.loads((shared / "bli-61-request.json").read_text())["inputs"]
        src = tmp_path / "bli61.txt"
        src.write_bytes(inputs["document_text"].encode())
        out = _cli(
            store_url,
            "--json",
            "ingest",
            str(shared / "bli-61-output.json"),
            "--source",
            "SYN-DOC-0001",
            "clause-2",
            str(src),
        )
        ids["shared_batch"] = json.loads(out)["artifacts"][0]["address"]
    elif os.environ.get("EVSTORE_REQUIRE_SHARED", "") not in ("", "0"):
        pytest.fail(f"{shared} is missing")
    token = json.loads(_cli(store_url, "--json", "token", "create", "--scope", "read"))["token"]
    port = _free_port()
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(
        [EVSTORE, "--store", store_url, "serve", "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        import httpx

        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(base + "/v1", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < deadline, "evstore serve did not start in 30 s"
            time.sleep(0.2)
        yield base, token, ids, store
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        store.close()


def _console(message, problems: list[str]) -> None:
    """Keep console errors and warnings but the HTTP statuses the test provokes itself
    (the sign-in page's 401, a search that finds nothing)."""
    if message.type in ("error", "warning") and not message.text.startswith(
        "Failed to load resource: the server responded with a status of"
    ):
        problems.append(message.text)


def _serious(page) -> list[str]:
    """axe-core's serious and critical violations on the page, as readable lines."""
    from axe_playwright_python.sync_playwright import Axe

    result = Axe().run(page)
    bad = []
    for v in result.response["violations"]:
        if v.get("impact") in ("serious", "critical"):
            targets = [n.get("target") for n in v.get("nodes", [])][:3]
            bad.append(f"{v['id']} ({v['impact']}): {v['help']} at {targets}")
    return bad


def _shoot(page, name: str, folder: Path) -> Path:
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return path


def test_every_page_in_chromium(served, backend, tmp_path):
    from playwright.sync_api import sync_playwright

    base, token, ids, store = served
    shots = tmp_path / "shots"
    shots.mkdir()
    pages = {
        "home": "/ui/",
        "search": "/ui/search?q=EX-DOC-0001",
        "artifact": f"/ui/artifact/{ids['manifest']}",
        "fragment": f"/ui/fragment/{ids['fragment']}",
        "fragment-hostile": f"/ui/fragment/{ids['hostile_fragment']}",
        "manifest": f"/ui/manifest/{ids['manifest']}",
        "package": f"/ui/package/{ids['package']}",
        "envelope": f"/ui/envelope/{ids['envelope']}",
        "context": f"/ui/context/{ids['context']}?cite=31%3A31+33%3A33&window=1",
        "source-document": f"/ui/context/{ids['source_document']}",
        "run": f"/ui/run/{ids['run']}",
        "blob": f"/ui/blob/{ids['clause']}",
        "kind": "/ui/kind/fragment",
    }
    if "shared_batch" in ids:
        pages["shared-fragment-batch"] = f"/ui/artifact/{ids['shared_batch']}"
    if hasattr(type(store), "retention"):  # retention and audit (issue 12) in this evstore
        store.retention.retain([ids["run"], ids["package"], ids["manifest"]], "review-42")
        run = store.retention.audit(["review-42"])
        pages["roots"] = "/ui/roots"
        pages["root"] = "/ui/roots/review-42"
        pages["audits"] = "/ui/audits"
        pages["audit"] = f"/ui/audits/{run.id}"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            ctx = browser.new_context(viewport={"width": 1200, "height": 900})
            page = ctx.new_page()
            requests: list[str] = []
            problems: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.on("console", lambda m: _console(m, problems))
            page.on("pageerror", lambda e: problems.append(str(e)))
            _sign_in(page, base, token, shots)
            for name, url in pages.items():
                response = page.goto(base + url)
                assert response is not None and response.status == 200, (name, response)
                assert page.locator("main h1").count() == 1, name
                bad = _serious(page)
                assert bad == [], (name, bad)
                _shoot(page, name, shots)
            _check_highlights(page, base, ids, store)
            _follow_links_across_kinds(page, base, ids)
            _keyboard(page, base)
            _verify_now_flips(page, base, ids, store, shots)
            assert problems == [], problems  # no CSP violation, no script error
            assert all(u.startswith(base + "/") for u in requests), requests
            _without_javascript(browser, base, token, ids)
        finally:
            browser.close()
    if backend == "sqlite" and os.environ.get("EVSTORE_SCREENSHOTS", "") not in ("", "0"):
        SHOTS.mkdir(parents=True, exist_ok=True)
        for png in shots.glob("*.png"):
            shutil.copy(png, SHOTS / png.name)
    expected = {*pages, "signin", "verify-fail"}
    assert {p.stem for p in shots.glob("*.png")} == expected


def _sign_in(page, base: str, token: str, shots: Path) -> None:
    response = page.goto(base + "/ui/kind/fragment")
    assert response is not None and response.status == 401
    assert page.get_by_label("Token").count() == 1
    assert _serious(page) == []
    _shoot(page, "signin", shots)
    page.get_by_label("Token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(base + "/ui/kind/fragment")
    cookie = next(c for c in page.context.cookies() if c["name"] == "evstore_ui")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/ui"
    assert page.evaluate("document.cookie") == ""  # HttpOnly: no script can read it


def _check_highlights(page, base: str, ids: dict, store) -> None:
    """Each fragment's <mark> holds exactly its quoted bytes, as the browser reads the DOM."""
    frags = [a.address for a in store.iter_artifacts("fragment")]
    assert len(frags) >= 6
    for address in frags:
        page.goto(f"{base}/ui/fragment/{address}")
        doc = store.load(address)
        mark = page.locator("mark#hl")
        assert mark.count() == 1, address
        assert mark.text_content().encode("utf-8") == store.fragments.quote(address)
        assert mark.get_attribute("data-start") == str(doc["start_offset"])
        assert mark.get_attribute("data-end") == str(doc["end_offset"])
    # The bidi override of the hostile source is isolated and labelled with its code point.
    page.goto(f"{base}/ui/fragment/{ids['hostile_fragment']}")
    assert page.locator("script").count() == 1  # ours only: the evidence's <script> is text
    assert page.locator('span.ctl[data-cp="U+202E"]').count() >= 1
    # The envelope's quotes are marked inside the cited items.
    page.goto(f"{base}/ui/envelope/{ids['envelope']}")
    env = store.load(ids["envelope"])
    quotes = {c["quote"] for cl in env["claims"] for c in cl.get("citations", []) if "quote" in c}
    shown = set(page.locator("blockquote.item-text mark").all_text_contents())
    assert quotes <= shown


def _follow_links_across_kinds(page, base: str, ids: dict) -> None:
    """run -> fragment -> its source blob -> back; package -> envelope; search box -> page."""
    page.goto(f"{base}/ui/run/{ids['run']}")
    page.get_by_role("link", name="fragment", exact=True).first.click()
    assert "/ui/fragment/" in page.url and page.locator("mark#hl").count() == 1
    page.locator("#source + p a").first.click()
    assert "/ui/blob/" in page.url and page.locator("h1").inner_text().startswith("Blob")
    page.goto(f"{base}/ui/package/{ids['package']}")
    page.get_by_role("link", name=ids["envelope"]).first.click()
    assert page.url.endswith(f"/ui/envelope/{ids['envelope']}")
    page.get_by_role("link", name="ev:board:b-014").first.click()
    assert "/ui/package/" in page.url and "#item-" in page.url
    page.get_by_label("Find").fill("corpus-evidence-manifest:sha256:" + "x" * 3)
    page.get_by_label("Find").press("Enter")
    page.wait_for_load_state()
    assert "Nothing stored matches" in page.content()
    page.get_by_label("Find").fill(ids["manifest"])
    page.get_by_label("Find").press("Enter")
    page.wait_for_url(f"{base}/ui/manifest/{ids['manifest']}")


def _keyboard(page, base: str) -> None:
    """The first Tab reaches the skip link; following it moves focus to the main content."""
    page.goto(f"{base}/ui/")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"


def _verify_now_flips(page, base: str, ids: dict, store, shots: Path) -> None:
    page.goto(f"{base}/ui/artifact/{ids['manifest']}")
    assert page.locator("p.pass strong").inner_text() == "Pass"
    address = ids["manifest"].removeprefix("blake3:")
    with store.db.engine.begin() as conn:
        data = conn.execute(sa.select(blobs.c.data).where(blobs.c.address == address)).scalar()
        bad = bytes(data[:5]) + bytes([data[5] ^ 0x20]) + bytes(data[6:])
        conn.execute(sa.update(blobs).where(blobs.c.address == address).values(data=bad))
    page.reload()
    assert page.locator("p.fail strong").inner_text() == "Fail"
    assert "corruption.digest" in page.locator("ul.faults").inner_text()
    _shoot(page, "verify-fail", shots)


def _without_javascript(browser, base: str, token: str, ids: dict) -> None:
    ctx = browser.new_context(
        java_script_enabled=False, extra_http_headers={"Authorization": f"Bearer {token}"}
    )
    try:
        page = ctx.new_page()
        page.goto(f"{base}/ui/package/{ids['package']}")
        assert page.locator("ol.items li.item").count() >= 1
        assert page.locator("button.copy").first.is_hidden()  # copy buttons need the script
        page.locator("details summary").first.click()  # <details> opens without script
        assert page.locator("details[open]").count() >= 1
    finally:
        ctx.close()


def test_damaged_warned_and_huge_objects_in_chromium(served, backend, tmp_path):
    """Every page kind over objects with recorded warnings, over huge ones and over damaged
    ones (issue 23): each answers 200 with one h1, passes axe, and names what it shows."""
    from playwright.sync_api import sync_playwright
    from tamperkit import add_warning, flip_byte

    base, token, ids, store = served
    shots = tmp_path / "shots"
    shots.mkdir()
    add_warning(
        store, ids["manifest"], "manifest.phase-unverifiable", "accepted <b>x</b>", "/phase"
    )
    huge_doc = json.dumps({"items": [{"id": i, "text": "z" * 200} for i in range(25000)]})
    doc = store.ingest(huge_doc.encode()).results[0].digest.address
    blob = store.put(bytes(range(256)) * (48 << 12)).digest.address  # 12 MiB, chunked
    run_tree = store.load(ids["run"])
    bundle_file = run_tree["files"]["evidence-context.json"]["raw"]
    source = evstore.edges_from(store, ids["fragment"])[0]["dst"]
    package = evstore.edges_from(store, ids["envelope"])
    package = next(e["dst"] for e in package if e["role"] == "package")
    # Pages before the damage: warned and huge objects.
    before = {
        "warned-artifact": (f"/ui/artifact/{ids['manifest']}", "manifest.phase-unverifiable"),
        "warned-manifest": (f"/ui/manifest/{ids['manifest']}", "Items"),
        "huge-document": (f"/ui/artifact/{doc}", "Not drawn"),
        "huge-document-json": (f"/ui/artifact/{doc}/json?at=/items", "Not drawn"),
        "huge-blob": (f"/ui/blob/{blob}?offset=8388608", "Bytes 8,388,608"),
        "huge-blob-artifact": (f"/ui/artifact/{blob}", "Pass"),
    }
    after = {
        "damaged-run": (f"/ui/run/{ids['run']}", bundle_file),
        "damaged-run-verify": (f"/ui/artifact/{ids['run']}", bundle_file),
        "damaged-source-fragment": (f"/ui/fragment/{ids['fragment']}", "Damaged source"),
        "damaged-source-blob": (f"/ui/blob/{source}", "does not verify now"),
        "damaged-package": (f"/ui/package/{package}", "corruption.digest"),
        "damaged-package-envelope": (f"/ui/envelope/{ids['envelope']}", "Damaged package"),
        "damaged-context": (f"/ui/context/{ids['context']}", "corruption.digest"),
        "damaged-manifest": (f"/ui/manifest/{ids['manifest']}", "corruption.digest"),
        "damaged-manifest-json": (f"/ui/artifact/{ids['manifest']}/json", "corruption.digest"),
        "damaged-blob": (f"/ui/blob/{blob}", "does not verify now"),
    }
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            ctx = browser.new_context(
                viewport={"width": 1200, "height": 900},
                extra_http_headers={"Authorization": f"Bearer {token}"},
            )
            page = ctx.new_page()
            problems: list[str] = []
            page.on("console", lambda m: _console(m, problems))
            page.on("pageerror", lambda e: problems.append(str(e)))

            def visit(pages: dict[str, tuple[str, str]]) -> None:
                for name, (url, named) in pages.items():
                    response = page.goto(base + url)
                    assert response is not None and response.status == 200, (name, response)
                    assert page.locator("main h1").count() == 1, name
                    assert named in page.locator("main").inner_text(), (name, named)
                    assert _serious(page) == [], name
                    _shoot(page, name, shots)

            visit(before)
            for ref in (bundle_file, source, package, ids["context"], ids["manifest"], blob):
                flip_byte(store, ref, at=5)
            visit(after)
            # The damage is named where it is: the run's damaged file is marked.
            page.goto(f"{base}/ui/run/{ids['run']}")
            assert page.locator("li.damaged").count() >= 1
            assert "Fail" in page.locator("#verify ~ p").first.inner_text()
            assert problems == [], problems
        finally:
            browser.close()
    assert {p.stem for p in shots.glob("*.png")} == {*before, *after}
