"""The manifest reads any store runs: written against :class:`evstore.StoreProtocol`.

:class:`PortableManifestOps` calls only the protocol's ``find``, ``load`` and ``get``; a
local Store's ``store.manifests``
(:class:`~evstore.contracts.manifests.store.ManifestOps`) and the HTTP client's namespace
(store/client/contracts.py) both inherit it. The module imports no database, so the client
loads it without SQLAlchemy.
"""

from __future__ import annotations

from typing import Any

from ...core.errors import error
from ...core.results import ArtifactInfo
from .rules import FIND_ATTR, KIND

__all__ = ["PortableManifestOps"]


class PortableManifestOps:
    """The manifest reads written against :class:`evstore.StoreProtocol` alone.

    They call only the protocol's ``find``, ``load`` and ``get`` (each verifying the bytes it
    returns), so they run unchanged on any store: :class:`ManifestOps` (a local Store's
    ``store.manifests``) and the HTTP client's namespace (store/client/contracts.py) both
    inherit them.
    """

    def __init__(self, store: Any) -> None:
        self.store = store

    def find(self, manifest_ref: str) -> list[ArtifactInfo]:
        """Stored manifests with this ``manifest/ref``, as ArtifactInfo, oldest first."""
        found: list[ArtifactInfo] = self.store.find(FIND_ATTR, manifest_ref, kind=KIND)
        return found

    def load(self, manifest_ref: str) -> dict[str, Any]:
        """The stored manifest with this ``manifest/ref``, parsed.

        Raises:
            NotFound: ``not-found.artifact`` when no manifest has that ref.
        """
        found = self.find(manifest_ref)
        if not found:
            raise error(
                "not-found.artifact",
                f"no manifest with manifest/ref {manifest_ref!r}",
                manifest_ref=manifest_ref,
            )
        loaded: dict[str, Any] = self.store.load(found[0].address)
        return loaded

    def content(self, manifest_ref: str) -> bytes:
        """The rendered content of the stored manifest with this ``manifest/ref``, verified.

        Raises:
            NotFound: ``not-found.artifact`` (no such manifest) or ``not-found.blob``.
            CorruptionError: the stored bytes do not match their address.
        """
        data: bytes = self.store.get(self.load(manifest_ref)["content/ref"])
        return data
