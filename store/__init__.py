"""evstore: a content-addressed store for evidence artifacts.

    >>> import evstore
    >>> with evstore.open("sqlite:///evstore.db", create=True) as store:
    ...     put = store.put(b"hello")
    ...     store.get(put.digest.address)
    b'hello'

The public surface is this module: :func:`open`, :class:`Store`, the value types and the
error tree (see evstore.errors). Everything else is internal.
"""

from .api import Document, IngestReport, Store, open
from .artifacts import ArtifactInfo, ArtifactResult
from .blobs import PutResult
from .digests import Digest
from .errors import (
    BindingConflict,
    ContractError,
    CorruptionError,
    EvstoreError,
    InputError,
    JSONFormError,
    NotFound,
    RefSyntaxError,
    StoreStateError,
)
from .refs import ContentRef, parse_ref

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
    "IngestReport",
    "InputError",
    "JSONFormError",
    "NotFound",
    "PutResult",
    "RefSyntaxError",
    "Store",
    "StoreStateError",
    "open",
    "parse_ref",
]
