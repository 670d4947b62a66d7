"""evstore: a content-addressed store for evidence artifacts.

    >>> import evstore
    >>> with evstore.open("sqlite:///evstore.db", create=True) as store:
    ...     put = store.put(b"hello")
    ...     store.get(put.digest.address)
    b'hello'

The public surface is this module: :func:`open`, :class:`Store`, the schema commands
(:func:`init`, :func:`migrate`), the value types, the kind and JSON helpers the CLI uses,
and the error tree (see evstore.errors). Everything else is internal.

Names load lazily (PEP 562): ``import evstore`` imports nothing else, and each name imports
its module on first use, so a command pays only for what it touches.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import Store, init, migrate, open
    from .artifacts import ArtifactInfo, ArtifactResult
    from .blobs import PutResult
    from .canonical import dumps, loads
    from .digests import Digest, digest_bytes
    from .errors import (
        BindingConflict,
        ContractError,
        CorruptionError,
        EvstoreError,
        Faults,
        InputError,
        JSONFormError,
        NotFound,
        RefSyntaxError,
        StoreStateError,
        error,
    )
    from .ingest import Document, IngestReport
    from .kinds import check_kind, known_kinds
    from .refs import ContentRef, parse_ref

#: Public name -> the module (under evstore) that defines it.
_SOURCES: dict[str, str] = {
    "ArtifactInfo": "artifacts",
    "ArtifactResult": "artifacts",
    "BindingConflict": "errors",
    "ContentRef": "refs",
    "ContractError": "errors",
    "CorruptionError": "errors",
    "Digest": "digests",
    "Document": "ingest",
    "EvstoreError": "errors",
    "Faults": "errors",
    "IngestReport": "ingest",
    "InputError": "errors",
    "JSONFormError": "errors",
    "NotFound": "errors",
    "PutResult": "blobs",
    "RefSyntaxError": "errors",
    "Store": "api",
    "StoreStateError": "errors",
    "check_kind": "kinds",
    "digest_bytes": "digests",
    "dumps": "canonical",
    "error": "errors",
    "init": "api",
    "known_kinds": "kinds",
    "loads": "canonical",
    "migrate": "api",
    "open": "api",
    "parse_ref": "refs",
}

__all__ = [
    "ArtifactInfo",
    "ArtifactResult",
    "BindingConflict",
    "ContentRef",
    "ContractError",
    "CorruptionError",
    "Digest",
    "Document",
    "EvstoreError",
    "Faults",
    "IngestReport",
    "InputError",
    "JSONFormError",
    "NotFound",
    "PutResult",
    "RefSyntaxError",
    "Store",
    "StoreStateError",
    "check_kind",
    "digest_bytes",
    "dumps",
    "error",
    "init",
    "known_kinds",
    "loads",
    "migrate",
    "open",
    "parse_ref",
]


def __getattr__(name: str) -> Any:
    """Load a public name on first use (PEP 562)."""
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module 'evstore' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{source}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
