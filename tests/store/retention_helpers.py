"""Helpers shared by the retention, gc and audit tests (both backends)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import sqlalchemy as sa

import evstore
from evstore import Document

REPO = Path(__file__).resolve().parents[2]
MANIFEST = (REPO / "examples" / "manifests" / "manifest.json").read_bytes()
CONTENT = (REPO / "examples" / "manifests" / "rendered-evidence.md").read_bytes()
CONTENT_ADDRESS = evstore.digest_bytes(CONTENT).address


def manifest_doc() -> Document:
    """The example manifest: its edge ``content`` refers to :data:`CONTENT`."""
    return Document(MANIFEST, name="manifest.json")


def dangling_edges(store: evstore.Store) -> int:
    """Edges whose source or target is not a stored blob (must always be 0)."""
    with store.db.engine.connect() as conn:
        return int(
            conn.execute(
                sa.text(
                    "SELECT count(*) FROM edges e WHERE NOT EXISTS (SELECT 1 FROM blobs b"
                    " WHERE b.address = e.dst) OR NOT EXISTS (SELECT 1 FROM blobs b"
                    " WHERE b.address = e.src)"
                )
            ).scalar_one()
        )


def stored(store: evstore.Store) -> set[str]:
    """Every stored blob's address (``blake3:...``)."""
    return {b["address"] for b in store.iter_blobs()}


def advance(seconds: float) -> None:
    """Move the retention clock (every store of this process) forward."""
    from evstore.objects.leases import CLOCK

    CLOCK.offset += dt.timedelta(seconds=seconds)


def reset_clock() -> None:
    from evstore.objects.leases import CLOCK

    CLOCK.offset = dt.timedelta(0)


def make_manifest(content: bytes, tag: str) -> bytes:
    """A variant of the example manifest naming ``content`` and query ``tag`` (self-address
    recomputed): many distinct manifests that share a small pool of contents."""
    import json

    from evstore.core.digests import sha256_b64u

    doc = json.loads(MANIFEST)
    digest = "sha256:" + sha256_b64u(content)
    doc["query/id"] = f"query:{tag}"
    doc["content/ref"] = "object-store:" + digest
    doc["content/digest"] = digest
    doc["content/size-bytes"] = len(content)
    doc.pop("manifest/ref")
    doc["manifest/ref"] = evstore.manifest_address(json.dumps(doc).encode())["computed"]
    return json.dumps(doc).encode()
