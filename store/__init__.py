"""evstore: a content-addressed store for evidence artifacts.

    >>> import evstore
    >>> with evstore.open("sqlite:///evstore.db", create=True) as store:
    ...     put = store.put(b"hello")
    ...     store.get(put.digest.address)
    b'hello'

The public surface is this module: :func:`open`, :class:`Store`, :class:`StoreProtocol`
(what a local Store and a RemoteStore both do), the schema commands (:func:`init`,
:func:`migrate`), the value and result types, the kind and JSON helpers the CLI uses, and
the error tree (see evstore.core.errors). Everything else is internal.

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
    from .access.gate import (
        GatedRead,
        gated_read,
        gated_read_loop,
        open_loop_reads,
        token_scope_loop,
    )
    from .access.tokens import (
        create_session,
        create_token,
        list_tokens,
        revoke_token,
        session_scope,
        token_scope,
    )
    from .archive.layout import Limits as ArchiveLimits
    from .archive.ops import export_archive, import_archive, verify_archive
    from .archive.registry import OciRepository
    from .archive.registry import open_repository as open_oci_repository
    from .archive.registry import push_manifest as push_oci_manifest
    from .backends.credentials import S3Credentials, configure_s3, s3_credentials
    from .contracts.fragments.portable import PortableFragmentOps
    from .contracts.fragments.rules import scope_from_parts as fragment_scope
    from .contracts.manifests.portable import PortableManifestOps
    from .contracts.manifests.rules import manifest_address
    from .contracts.packages.rules import normalize_uuid
    from .contracts.packages.rules_context import context_size as package_context_size
    from .core.canonical import dumps, loads
    from .core.digests import Digest, digest_bytes
    from .core.errors import (
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
        http_status,
    )
    from .core.refs import ContentRef, parse_ref
    from .core.results import (
        ArtifactInfo,
        ArtifactResult,
        AuditRun,
        Closure,
        Document,
        Excerpt,
        GcReport,
        IngestReport,
        PutResult,
        RunReport,
    )
    from .core.roots import current_root, rooting
    from .db.revisions import head_revision
    from .facade.api import Store
    from .facade.queries import ListPage, find_with_warnings, list_page
    from .log.ops import LogOps
    from .log.ops import verify_proof as verify_log_proof
    from .log.tiles import verify_tiles_inclusion as verify_log_tiles
    from .objects.kinds import check_kind, kind_page, known_kinds
    from .protocol import StoreProtocol
    from .read.describe import describe_artifact, object_head, presign_object
    from .read.review import bindings_of_fragment, edges_from, kind_counts, verify_now
    from .tlog.cosignature import Cosigner, read_cosigner_key

# open, init and migrate (store/connect.py) and RemoteStore (store/client/) are not imported
# for type checkers here: the client imports evstore's public names, and an import back
# would make a cycle. They are typed where they are defined.

#: Public name -> the module (under evstore) that defines it, or "module:attribute" where the
#: public name differs from the module's own.
_SOURCES: dict[str, str] = {
    "ArchiveLimits": "archive.layout:Limits",
    "ArtifactInfo": "core.results",
    "ArtifactResult": "core.results",
    "AuditRun": "core.results",
    "BindingConflict": "core.errors",
    "Closure": "core.results",
    "Cosigner": "tlog.cosignature",
    "ContentRef": "core.refs",
    "ContractError": "core.errors",
    "CorruptionError": "core.errors",
    "Digest": "core.digests",
    "Document": "core.results",
    "EvstoreError": "core.errors",
    "Excerpt": "core.results",
    "Faults": "core.errors",
    "GatedRead": "access.gate",
    "GcReport": "core.results",
    "IngestReport": "core.results",
    "InputError": "core.errors",
    "JSONFormError": "core.errors",
    "ListPage": "facade.queries",
    "LogOps": "log.ops",
    "NotFound": "core.errors",
    "OciRepository": "archive.registry",
    "PortableFragmentOps": "contracts.fragments.portable",
    "PortableManifestOps": "contracts.manifests.portable",
    "PutResult": "core.results",
    "RefSyntaxError": "core.errors",
    "RemoteStore": "client",
    "RunReport": "core.results",
    "S3Credentials": "backends.credentials",
    "ServerLimits": "server.limits:Limits",
    "Store": "facade.api",
    "StoreProtocol": "protocol",
    "StoreStateError": "core.errors",
    "bindings_of_fragment": "read.review",
    "check_kind": "objects.kinds",
    "configure_s3": "backends.credentials",
    "create_app": "server.app",
    "create_session": "access.tokens",
    "create_token": "access.tokens",
    "current_root": "core.roots",
    "describe_artifact": "read.describe",
    "digest_bytes": "core.digests",
    "dumps": "core.canonical",
    "edges_from": "read.review",
    "error": "core.errors",
    "export_archive": "archive.ops",
    "find_with_warnings": "facade.queries",
    "fragment_scope": "contracts.fragments.rules:scope_from_parts",
    "gated_read": "access.gate",
    "gated_read_loop": "access.gate",
    "head_revision": "db.revisions",
    "http_status": "core.errors",
    "import_archive": "archive.ops",
    "init": "connect",
    "kind_counts": "read.review",
    "kind_page": "objects.kinds",
    "known_kinds": "objects.kinds",
    "list_page": "facade.queries",
    "list_tokens": "access.tokens",
    "loads": "core.canonical",
    "manifest_address": "contracts.manifests.rules",
    "migrate": "connect",
    "normalize_uuid": "contracts.packages.rules",
    "object_head": "read.describe",
    "open": "connect",
    "open_loop_reads": "access.gate",
    "open_oci_repository": "archive.registry:open_repository",
    "package_context_size": "contracts.packages.rules_context:context_size",
    "parse_ref": "core.refs",
    "presign_object": "read.describe",
    "push_oci_manifest": "archive.registry:push_manifest",
    "read_cosigner_key": "tlog.cosignature",
    "revoke_token": "access.tokens",
    "rooting": "core.roots",
    "s3_credentials": "backends.credentials",
    "serve": "server.run",
    "session_scope": "access.tokens",
    "token_scope": "access.tokens",
    "token_scope_loop": "access.gate",
    "verify_archive": "archive.ops",
    "verify_log_proof": "log.ops:verify_proof",
    "verify_log_tiles": "log.tiles:verify_tiles_inclusion",
    "verify_now": "read.review",
}

__all__ = [
    "ArchiveLimits",
    "ArtifactInfo",
    "ArtifactResult",
    "AuditRun",
    "BindingConflict",
    "Closure",
    "ContentRef",
    "ContractError",
    "CorruptionError",
    "Cosigner",
    "Digest",
    "Document",
    "EvstoreError",
    "Excerpt",
    "Faults",
    "GatedRead",
    "GcReport",
    "IngestReport",
    "InputError",
    "JSONFormError",
    "ListPage",
    "LogOps",
    "NotFound",
    "OciRepository",
    "PortableFragmentOps",
    "PortableManifestOps",
    "PutResult",
    "RefSyntaxError",
    "RemoteStore",
    "RunReport",
    "S3Credentials",
    "ServerLimits",
    "Store",
    "StoreProtocol",
    "StoreStateError",
    "bindings_of_fragment",
    "check_kind",
    "configure_s3",
    "create_app",
    "create_session",
    "create_token",
    "current_root",
    "describe_artifact",
    "digest_bytes",
    "dumps",
    "edges_from",
    "error",
    "export_archive",
    "find_with_warnings",
    "fragment_scope",
    "gated_read",
    "gated_read_loop",
    "head_revision",
    "http_status",
    "import_archive",
    "init",
    "kind_counts",
    "kind_page",
    "known_kinds",
    "list_page",
    "list_tokens",
    "loads",
    "manifest_address",
    "migrate",
    "normalize_uuid",
    "object_head",
    "open",
    "open_loop_reads",
    "open_oci_repository",
    "package_context_size",
    "parse_ref",
    "presign_object",
    "push_oci_manifest",
    "read_cosigner_key",
    "revoke_token",
    "rooting",
    "s3_credentials",
    "serve",
    "session_scope",
    "token_scope",
    "token_scope_loop",
    "verify_archive",
    "verify_log_proof",
    "verify_log_tiles",
    "verify_now",
]


#: The first folder of a public name's module -> the extra its dependencies come from
#: (evstore.core.extras): without it, loading the name is ``install.extra-missing``.
_EXTRA_OF = {"server": "server", "client": "client"}


def __getattr__(name: str) -> Any:
    """Load a public name on first use (PEP 562).

    Raises:
        AttributeError: no such public name.
        StoreStateError: ``install.extra-missing`` for a name whose extra (server, client)
            is not installed.
    """
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module 'evstore' has no attribute {name!r}")
    module, _, attr = source.partition(":")
    extra = _EXTRA_OF.get(module.split(".")[0])
    if extra is not None:
        from .core.extras import require

        require(extra)
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
