"""The fragment operations any store runs: written against :class:`evstore.StoreProtocol`.

:class:`PortableFragmentOps` calls only the protocol's ``ingest`` and ``find``; a local
Store's ``store.fragments`` (:class:`~evstore.contracts.fragments.store.FragmentOps`) and the
HTTP client's namespace (store/client/contracts.py) both inherit it. The module imports no
database, so the client loads it without SQLAlchemy.
"""

from __future__ import annotations

from typing import Any

from ...core.results import ArtifactInfo, ArtifactResult, Document
from .rules import FRAGMENT_KIND, SOURCE_KIND, source_record

__all__ = ["PortableFragmentOps"]


class PortableFragmentOps:
    """The fragment operations written against :class:`evstore.StoreProtocol` alone.

    They call only the protocol's ``ingest`` and ``find``, so they run unchanged on any store:
    :class:`FragmentOps` (a local Store's ``store.fragments``) and the HTTP client's namespace
    (store/client/contracts.py) both inherit them, and a remote ``ingest_source`` sends the very
    record a local one stores.
    """

    def __init__(self, store: Any) -> None:
        self.store = store

    def ingest_source(
        self,
        data: bytes,
        document_id: str,
        fragment_id: str,
        revision_checksum: str | None = None,
        *,
        name: str = "-",
    ) -> ArtifactResult:
        """Register the exact bytes a pair's offsets are measured over, as a content version.

        Args:
            data: the raw content bytes (stored exactly: no decoding or normalisation).
            document_id: the fragment's document_id.
            fragment_id: the fragment's fragment_id.
            revision_checksum: optional 64 lowercase hex revision checksum to bind.
            name: where the bytes came from, for error messages.

        Returns:
            The ``fragment-source`` record's :class:`ArtifactResult` (info: content_sha256,
            size, revision_checksum).

        Raises:
            FragmentError: ``fragment.shape``, ``fragment.revision-format``,
                ``fragment.source-encoding``. FragmentBindingError:
                ``fragment.revision-mismatch``.
        """
        raw = bytes(data)
        record = source_record(raw, document_id, fragment_id, revision_checksum)
        report = self.store.ingest([Document(record, name=name, kind=SOURCE_KIND)], supplied=[raw])
        result: ArtifactResult = report.results[0]
        return result

    def find(self, quote_sha256: str) -> list[ArtifactInfo]:
        """Stored fragments whose quote_sha256 is ``quote_sha256`` (oldest first)."""
        return list(self.store.find("quote_sha256", quote_sha256, kind=FRAGMENT_KIND))
