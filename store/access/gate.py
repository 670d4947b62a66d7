"""A token's scope and an object's facts in one statement: the HTTP GET's hot path (issue 29).

Serving ``GET P/v1/objects/{ref}`` used to cost three point reads (the token, the object's
head, the bytes), each its own hop to a worker thread. :func:`gated_read` answers all three
with one statement on this thread's point-read connection (store/db/rawread.py): the token
row by the SHA-256 of its text and the blob row by its address, each ``LEFT JOIN``-ed to one
constant row, so a missing one is NULLs, never a missing answer. Nothing is cached: every
call reads the token's row as committed now, so a revocation holds from the next request
on, exactly as :func:`~evstore.access.tokens.token_scope` (which decides the same way).

The bytes come back only for an object stored inline (in its ``blobs`` row) and asked for;
they are verified here (size, BLAKE3, the recorded SHA-256) exactly as ``Store.get``
verifies them. Anything else (a ref that is not ``blake3:``, a chunked or external object, a
database error) leaves the part not answered as None and the caller takes the general
paths, which raise the typed errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ..core.digests import digest_bytes
from ..core.errors import CorruptionError, RefSyntaxError
from ..core.refs import parse_ref
from ..db.rawread import FALLBACK, point_row
from ..objects.blobs import as_bytes, compare_digest, row_from
from .tokens import SCOPES, token_hash

if TYPE_CHECKING:
    from ..facade.api import Store

__all__ = ["GatedRead", "gated_read"]

_SQL = (
    "SELECT t.scope, t.revoked_at, b.sha256, b.size, b.chunk_set,"
    " EXISTS (SELECT 1 FROM artifacts a WHERE a.address = b.address), {data}"
    " FROM (SELECT 1 AS one) o"
    " LEFT JOIN tokens t ON t.secret_sha256 = ?"
    " LEFT JOIN blobs b ON b.address = ?"
)
#: With the inline bytes (``data`` is NULL for a chunked or external blob), and without.
_WITH_DATA = _SQL.format(data="CASE WHEN b.chunk_set IS NULL THEN b.data END")
_WITHOUT_DATA = _SQL.format(data="NULL")


class _Row(NamedTuple):
    address: str
    sha256: str
    size: Any
    chunk_set: Any


@dataclass(frozen=True)
class GatedRead:
    """What :func:`gated_read` found.

    Attributes:
        scope: the live token's scope (``read``, ``ingest``, ``admin``), None when the
            token is absent, malformed, unknown or revoked (or the statement could not run:
            then ``answered`` is False too).
        answered: False when the statement could not run; the caller asks the general
            paths (``token_scope``, ``object_head``, ``Store.get``) for everything.
        head: ``object_head``'s dict (``address``, ``sha256``, ``size`` in bytes,
            ``artifact``), None when the ref is not ``blake3:`` or names no stored blob.
        data: the verified bytes of an inline object when ``want_bytes``, else None.
        fault: the CorruptionError its bytes or row raised (then ``data`` is None): the
            caller raises it once the token was admitted, so a refused request learns
            nothing about the object.
    """

    scope: str | None
    answered: bool
    head: dict[str, Any] | None = None
    data: bytes | None = None
    fault: CorruptionError | None = None


def gated_read(store: Store, token: str, ref: str, *, want_bytes: bool) -> GatedRead:
    """The scope of ``token`` and the head (and inline bytes) of ``ref``, one statement.

    Args:
        store: an open (local) store.
        token: the bearer token's text ("" when none was sent).
        ref: the content ref of the request (any text: only a well-formed ``blake3:`` ref
            is looked up; others are left to the general path, which raises ``ref.syntax``).
        want_bytes: return the inline bytes too, verified (False for a conditional GET).

    A row edited outside evstore or inline bytes that fail verification are returned as
    ``fault`` (CorruptionError, ``corruption.*``), never raised here.

    Raises:
        StoreStateError: ``store.replaced`` (the SQLite file is not the one opened).
    """
    digest = token_hash(token)
    try:
        parsed = parse_ref(ref)
    except RefSyntaxError:
        parsed = None
    address = parsed.hex if parsed is not None and parsed.algorithm == "blake3" else None
    sql = _WITH_DATA if want_bytes else _WITHOUT_DATA
    row = point_row(store.transactions, sql, (digest, address))
    if row is FALLBACK or row is None:
        return GatedRead(None, False)
    scope_text, revoked_at, sha256, size, chunk_set, artifact, data = row
    scope = None
    if digest is not None and scope_text in SCOPES and revoked_at is None:
        scope = str(scope_text)
    if address is None or sha256 is None:
        return GatedRead(scope, True)
    try:
        blob = row_from(_Row(address, sha256, size, chunk_set))
    except CorruptionError as err:
        return GatedRead(scope, True, fault=err)
    head = {
        "address": "blake3:" + address,
        "sha256": "sha256:" + blob.digest.sha256,
        "size": blob.digest.size,
        "artifact": bool(artifact),
    }
    if not want_bytes or blob.chunk_set is not None:
        return GatedRead(scope, True, head)
    try:
        got = b"" if data is None else as_bytes(data, address)
    except CorruptionError as err:
        return GatedRead(scope, True, head, fault=err)
    mismatch = compare_digest(blob, digest_bytes(got))
    if mismatch is not None:
        return GatedRead(scope, True, head, fault=mismatch)
    return GatedRead(scope, True, head, got)
