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
    from .archive import export_archive, import_archive, verify_archive
    from .archive_layout import Limits as ArchiveLimits
    from .artifacts import ArtifactInfo, ArtifactResult, Document, IngestReport
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
    from .fragment_rules import scope_from_parts as fragment_scope
    from .kinds import check_kind, known_kinds
    from .log import LogOps
    from .log import verify_proof as verify_log_proof
    from .manifest_rules import manifest_address
    from .package_context import context_size as package_context_size
    from .package_rules import normalize_uuid
    from .refs import ContentRef, parse_ref

#: Public name -> the module (under evstore) that defines it, or "module:attribute" where the
#: public name differs from the module's own.
_SOURCES: dict[str, str] = {
    "ArchiveLimits": "archive_layout:Limits",
    "ArtifactInfo": "artifacts",
    "ArtifactResult": "artifacts",
    "BindingConflict": "errors",
    "ContentRef": "refs",
    "ContractError": "errors",
    "CorruptionError": "errors",
    "Digest": "digests",
    "Document": "artifacts",
    "EvstoreError": "errors",
    "Faults": "errors",
    "IngestReport": "artifacts",
    "InputError": "errors",
    "JSONFormError": "errors",
    "LogOps": "log",
    "NotFound": "errors",
    "PutResult": "blobs",
    "RefSyntaxError": "errors",
    "Store": "api",
    "StoreStateError": "errors",
    "check_kind": "kinds",
    "digest_bytes": "digests",
    "dumps": "canonical",
    "error": "errors",
    "export_archive": "archive",
    "fragment_scope": "fragment_rules:scope_from_parts",
    "import_archive": "archive",
    "init": "api",
    "known_kinds": "kinds",
    "loads": "canonical",
    "manifest_address": "manifest_rules",
    "migrate": "api",
    "normalize_uuid": "package_rules",
    "open": "api",
    "package_context_size": "package_context:context_size",
    "parse_ref": "refs",
    "verify_archive": "archive",
    "verify_log_proof": "log:verify_proof",
}

__all__ = [
    "ArchiveLimits",
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
    "LogOps",
    "NotFound",
    "PutResult",
    "RefSyntaxError",
    "Store",
    "StoreStateError",
    "check_kind",
    "digest_bytes",
    "dumps",
    "error",
    "export_archive",
    "fragment_scope",
    "import_archive",
    "init",
    "known_kinds",
    "loads",
    "manifest_address",
    "migrate",
    "normalize_uuid",
    "open",
    "package_context_size",
    "parse_ref",
    "verify_archive",
    "verify_log_proof",
]


def __getattr__(name: str) -> Any:
    """Load a public name on first use (PEP 562)."""
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module 'evstore' has no attribute {name!r}")
    module, _, attr = source.partition(":")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
