"""JSON answers of HTTP API v1 turned back into the value types of a local store."""

from __future__ import annotations

from typing import Any

from .. import ArtifactInfo
from ..core.digests import Digest

__all__ = ["RemoteWarning", "artifact_info", "forms_digest", "warning_dicts"]


class RemoteWarning:
    """A warning recorded with an artifact, as the server reported it (code, message, pointer)."""

    __slots__ = ("code", "message", "pointer")

    def __init__(self, code: str, message: str, pointer: str = "") -> None:
        self.code = code
        self.message = message
        self.pointer = pointer

    def to_dict(self) -> dict[str, str]:
        """JSON-ready form (as the local store's)."""
        return {"code": self.code, "message": self.message, "pointer": self.pointer}


def artifact_info(d: dict[str, Any]) -> ArtifactInfo:
    """The :class:`~evstore.ArtifactInfo` of an artifact listed by the server."""
    size = d.get("size")
    return ArtifactInfo(
        str(d["address"]),
        str(d["kind"]),
        str(d.get("contract_version", "")),
        str(d.get("accepted_at", "")),
        None if size is None else int(size),
        d.get("damage"),
    )


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
