"""Audit pages (issue 15): served size and time of the large pages, against reading their data.

Usage::

    python bench/pages.py --backend sqlite|postgresql [--repeat 5]

Workload (one fresh store): a 500-item answer evidence package (bench/packages.py's
generator), and a fragment at the end of a 10 MB source. Each page is fetched in process
through FastAPI's TestClient (no network), ``repeat`` times; the median time and the served
bytes are printed. The ceiling is what any page of that object must at least do: read and
verify the object's bytes and parse them (``store.load``; for the fragment page also
``store.get`` of the source). Ratio = ceiling s / page s.

Measures and prints; asserts nothing (tests/pages/test_pages.py asserts the served sizes).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "pages"))

from _common import RESULTS_DIR, fresh_store, machine_info, median
from pages_helpers import big_package

import evstore

__all__ = ["main"]


def _time(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    from fastapi import FastAPI

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient

    from evstore.pages import create_router

    with fresh_store(args.backend, "pages") as fresh, evstore.open(fresh.url) as store:
        package = store.ingest(json.dumps(big_package(500)).encode()).results[0].digest.address
        source = (b"lorem ipsum dolor sit amet " * 400_000)[: 10 * 1024 * 1024]
        start = len(source) - 26
        frag = {
            "document_id": "big",
            "fragment_id": "f",
            "start_offset": start,
            "end_offset": len(source),
            "quote_sha256": hashlib.sha256(source[start:]).hexdigest(),
        }
        fragment = (
            store.fragments.ingest(json.dumps(frag).encode(), sources=[("big", "f", source)])
            .results[0]
            .digest.address
        )
        src = evstore.edges_from(store, fragment)[0]["dst"]
        app = FastAPI()
        app.include_router(create_router(store, public_read=True))
        client = TestClient(app)
        cases = {
            "package page (500 items, 50 shown)": (
                f"/ui/package/{package}",
                lambda: store.load(package),
            ),
            "artifact page of it (verify now, JSON tree)": (
                f"/ui/artifact/{package}",
                lambda: store.load(package),
            ),
            "fragment page over a 10 MB source": (
                f"/ui/fragment/{fragment}",
                lambda: (store.load(fragment), store.get(src)),
            ),
            "home": ("/ui/", lambda: store.stat(package)),
        }
        rows = []
        for name, (url, ceiling) in cases.items():
            client.get(url)  # warm: templates compiled, connections pooled
            ours, response = _time(lambda url=url: client.get(url), args.repeat)
            raw, _ = _time(ceiling, args.repeat)
            size = len(response.content)  # type: ignore[attr-defined]
            rows.append({"page": name, "s": ours, "ceiling_s": raw, "bytes": size})
            print(
                f"{name:48s} {ours * 1000:8.1f} ms  ceiling {raw * 1000:7.1f} ms  "
                f"ratio {raw / ours:5.2f}  {size:>8,} bytes served"
            )
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        out = {"machine": machine_info(args.backend), "rows": rows}
        path = RESULTS_DIR / f"pages-{args.backend}-{stamp}.json"
        path.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
