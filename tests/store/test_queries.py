"""The queries every front end shares (store/facade/queries.py): find with warnings, pages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import evstore
from evstore.core.cursors import cursor_key, listing_cursor

EX = Path(__file__).resolve().parents[2] / "examples"


def _json_docs(store: evstore.Store, n: int) -> None:
    store.ingest([evstore.Document(json.dumps({"note": i}).encode()) for i in range(n)])


def _pages(store: evstore.Store, limit: int, **where) -> list[tuple[list[dict], str | None]]:
    out: list[tuple[list[dict], str | None]] = []
    after = None
    for _ in range(100):  # bounded: far more pages than any listing here has
        page = evstore.list_page(store, after=after, limit=limit, **where)
        items = list(page)
        out.append((items, page.next))
        if page.next is None:
            return out
        after = page.next
    raise AssertionError("the pages never end")


def test_pages_cover_every_item_once_in_key_order(store):
    _json_docs(store, 7)
    whole = [a.to_dict() for a in store.iter_artifacts()]
    keys = [(a["address"], a["kind"]) for a in whole]
    assert keys == sorted(keys) and len(keys) == 7
    pages = _pages(store, 3)
    assert [len(items) for items, _ in pages] == [3, 3, 1]
    assert [i for items, _ in pages for i in items] == whole
    for items, nxt in pages[:-1]:
        assert nxt == listing_cursor(items[-1]["address"], items[-1]["kind"])
    assert pages[-1][1] is None
    blobs = _pages(store, 4, blobs=True)
    every = list(store.iter_blobs())
    assert [b for items, _ in blobs for b in items] == every
    assert blobs[0][1] == every[3]["address"] and blobs[-1][1] is None


def test_a_page_that_ends_exactly_at_the_limit_has_no_next(store):
    _json_docs(store, 4)
    page = evstore.list_page(store, limit=4)
    assert len(list(page)) == 4 and page.next is None
    page = evstore.list_page(store)  # no limit: every item, never a next cursor
    assert len(list(page)) == 4 and page.next is None


def test_a_page_refuses_what_a_listing_refuses(store):
    with pytest.raises(evstore.InputError) as exc:
        evstore.list_page(store, kind="no-such-kind", limit=1)
    assert exc.value.code == "kind.unknown"
    with pytest.raises(evstore.InputError) as exc:
        list(evstore.list_page(store, after="blake3:nothex", limit=1))
    assert exc.value.code == "input.invalid" and exc.value.details == {"cursor": "blake3:nothex"}
    with pytest.raises(ValueError):
        evstore.list_page(store, blobs=True, kind="json")
    with pytest.raises(ValueError):
        evstore.list_page(store, limit=0)


def test_find_with_warnings_normalizes_a_package_id_and_says_not_found(store):
    store.ingest(iter(sorted((EX / "packages").glob("*.json"))))
    pid = json.loads((EX / "packages" / "01-package-launch.json").read_text())["id"]
    rows = evstore.find_with_warnings(store, "package_id", pid.upper())
    assert {r["kind"] for r in rows} == {"package", "envelope"}
    assert rows == [a.to_dict() for a in store.find("package_id", pid.lower())]
    with pytest.raises(evstore.NotFound) as exc:
        evstore.find_with_warnings(store, "key", "no-such-key")
    assert exc.value.code == "not-found.artifact"
    assert exc.value.message == "no artifact with key = 'no-such-key'"
    with pytest.raises(evstore.InputError) as exc:
        evstore.find_with_warnings(store, "key", "k", kind="no-such-kind")
    assert exc.value.code == "kind.unknown"


class _Warned:
    """A stand-in store: what find_with_warnings reads of one (find, warnings)."""

    def __init__(self, infos, warned):
        self.infos, self.warned = infos, warned

    def find(self, name, value, kind=None):
        return list(self.infos)

    def warnings(self, address):
        return self.warned.get(address, [])


def test_find_with_warnings_adds_each_artifacts_warnings_only_when_it_has_some():
    a = evstore.ArtifactInfo("blake3:" + "a" * 64, "manifest", "v1", "2026-01-01T00:00:00Z", 9)
    b = evstore.ArtifactInfo("blake3:" + "b" * 64, "manifest", "v1", "2026-01-01T00:00:00Z", 8)
    w = [{"code": "manifest.content-missing", "message": "m", "pointer": "/content~1ref"}]
    rows = evstore.find_with_warnings(_Warned([a, b], {b.address: w}), "manifest_ref", "x")
    assert rows == [a.to_dict(), {**b.to_dict(), "warnings": w}]


def test_cursor_keys_order_items_as_the_listing_does():
    low, high = "blake3:" + "1" * 64, "blake3:" + "2" * 64
    assert cursor_key(low) == ("1" * 64, "")
    assert cursor_key(listing_cursor(low, "json")) == ("1" * 64, "json")
    ordered = [low, listing_cursor(low, "json"), listing_cursor(low, "manifest"), high]
    assert sorted(ordered, key=cursor_key) == ordered
    for bad in ("", "blake3:", "sha256:" + "1" * 64, low.upper(), low[:-1]):
        with pytest.raises(evstore.InputError):
            cursor_key(bad)
