"""The toy contract's pure rules: detection and validation, no store.

``validate`` is what ``archive verify`` runs with no store (the record's ``rules``).
"""

from __future__ import annotations

from typing import Any

from evstore.core.errors import Faults

KIND = "toy-note"
CONTRACT_VERSION = "note/v1"


def detect(doc: Any) -> str | None:
    """``toy-note`` for an object whose ``toy`` member starts ``note/`` (near misses too)."""
    if isinstance(doc, dict) and str(doc.get("toy", "")).startswith("note/"):
        return KIND
    return None


def validate(doc: Any, settings: Any = None, *, kind: str | None = None) -> Faults:
    """Every fault of a note, in order: version, text, count.

    ``count`` must be a JSON integer token: ``10.0`` is refused, which the rules can only see
    when the store reads numbers as written (the record's ``number_tokens``).
    """
    faults = Faults()
    if not isinstance(doc, dict):
        faults.add("toy.shape", "a note is a JSON object", "")
        return faults
    if doc.get("toy") != CONTRACT_VERSION:
        faults.add("toy.version", f"toy must be {CONTRACT_VERSION!r}", "/toy")
    if not isinstance(doc.get("text"), str):
        faults.add("toy.shape", "text must be a string", "/text")
    count = doc.get("count", 0)
    if not isinstance(count, int) or isinstance(count, bool):
        faults.add("toy.shape", "count must be an integer token", "/count")
    return faults
