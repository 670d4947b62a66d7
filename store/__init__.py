"""evstore: a content-addressed store for evidence artifacts.

    >>> import evstore
    >>> with evstore.open("sqlite:///evstore.db", create=True) as store:
    ...     put = store.put(b"hello")
    ...     store.get(put.digest.address)
    b'hello'

The public surface is this module: :func:`open`, :class:`Store`, the schema commands
(:func:`init`, :func:`migrate`), the value types, the kind and JSON helpers the CLI uses,
and the error tree (see evstore.errors). Everything else is internal.

The HTTP server's names (:func:`create_app`, :func:`serve`, ``ServerLimits``) come from the
evstore.server package, a layer above this one that imports this module: they are left out
of the ``TYPE_CHECKING`` imports below so that no import cycle exists, even for the checker.

Names load lazily (PEP 562): ``import evstore`` imports nothing else, and each name imports
its module on first use, so a command pays only for what it touches.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import Store
    from .archive import export_archive, import_archive, verify_archive
    from .archive_layout import Limits as ArchiveLimits
    from .artifacts import ArtifactInfo, ArtifactResult, Document, IngestReport
    from .blobs import PutResult
    from .canonical import dumps, loads
    from .describe import describe_artifact, object_head
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
    from .leases import current_root, rooting
    from .log import LogOps
    from .log import verify_proof as verify_log_proof
    from .manifest_rules import manifest_address
    from .package_context import context_size as package_context_size
    from .package_rules import normalize_uuid
    from .refs import ContentRef, parse_ref
    from .review import bindings_of_fragment, edges_from, kind_counts, verify_now
    from .tokens import create_token, list_tokens, revoke_token, token_scope

# open, init and migrate (store/connect.py) and RemoteStore (store/client/) are not imported
# for type checkers here: the client imports evstore's public names, and an import back
# would make a cycle. They are typed where they are defined.

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
    "RemoteStore": "client",
    "ServerLimits": "server.limits:Limits",
    "Store": "api",
    "StoreStateError": "errors",
    "bindings_of_fragment": "review",
    "check_kind": "kinds",
    "create_app": "server.app",
    "create_token": "tokens",
    "current_root": "leases",
    "describe_artifact": "describe",
    "digest_bytes": "digests",
    "dumps": "canonical",
    "edges_from": "review",
    "error": "errors",
    "export_archive": "archive",
    "fragment_scope": "fragment_rules:scope_from_parts",
    "import_archive": "archive",
    "init": "connect",
    "kind_counts": "review",
    "known_kinds": "kinds",
    "list_tokens": "tokens",
    "loads": "canonical",
    "manifest_address": "manifest_rules",
    "migrate": "connect",
    "normalize_uuid": "package_rules",
    "object_head": "describe",
    "open": "connect",
    "package_context_size": "package_context:context_size",
    "parse_ref": "refs",
    "revoke_token": "tokens",
    "rooting": "leases",
    "serve": "server.run",
    "token_scope": "tokens",
    "verify_archive": "archive",
    "verify_log_proof": "log:verify_proof",
    "verify_now": "review",
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
    "RemoteStore",
    "ServerLimits",
    "Store",
    "StoreStateError",
    "bindings_of_fragment",
    "check_kind",
    "create_app",
    "create_token",
    "current_root",
    "describe_artifact",
    "digest_bytes",
    "dumps",
    "edges_from",
    "error",
    "export_archive",
    "fragment_scope",
    "import_archive",
    "init",
    "kind_counts",
    "known_kinds",
    "list_tokens",
    "loads",
    "manifest_address",
    "migrate",
    "normalize_uuid",
    "object_head",
    "open",
    "package_context_size",
    "parse_ref",
    "revoke_token",
    "rooting",
    "serve",
    "token_scope",
    "verify_archive",
    "verify_log_proof",
    "verify_now",
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
