"""JSON answers of HTTP API v1 read back into the library's values (store/core/results.py)."""

from __future__ import annotations

from typing import Any

from ..core.digests import Digest

__all__ = ["forms_digest", "warning_dicts"]


def warning_dicts(items: Any) -> list[dict[str, str]]:
    """Warnings as ``{"code", "message", "pointer"}`` dicts (extra members dropped)."""
    return [
        {"code": str(w["code"]), "message": str(w["message"]), "pointer": str(w["pointer"])}
        for w in items or []
    ]


def forms_digest(d: dict[str, Any]) -> Digest:
    """The :class:`Digest` of a JSON answer carrying ``address``, ``sha256`` and ``size``.

    Raises:
        KeyError, TypeError, ValueError: a member is missing or malformed.
    """
    return Digest(
        str(d["address"]).removeprefix("blake3:"),
        str(d["sha256"]).removeprefix("sha256:"),
        int(d["size"]),
    )
