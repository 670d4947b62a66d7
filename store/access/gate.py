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

:func:`gated_read_loop` runs the same statement awaited on the server's event loop
(store/db/loopread.py: no worker thread, the hop that cost more than the read) and reads
inline bytes on the loop only up to :data:`LOOP_BYTES_MAX`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ..core.digests import digest_bytes
from ..core.errors import CorruptionError, RefSyntaxError
from ..core.refs import parse_ref
from ..db.loopread import LOOP_CONNECTIONS, LoopReads
from ..db.rawread import FALLBACK, point_row
from ..objects.blobs import as_bytes, compare_digest, row_from
from .tokens import SCOPE_SQL, SCOPES, live_scope, token_hash

if TYPE_CHECKING:
    from ..facade.api import Store

__all__ = [
    "GatedRead",
    "LOOP_BYTES_MAX",
    "gated_read",
    "gated_read_loop",
    "open_loop_reads",
    "token_scope_loop",
]

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
#: The largest inline object whose bytes :func:`gated_read_loop` reads and verifies on the
#: event loop (bytes): hashing 64 KiB twice costs ~100 us; larger ones take a worker thread.
LOOP_BYTES_MAX = 64 << 10
#: On the event loop: the inline bytes of objects up to LOOP_BYTES_MAX only.
_WITH_SMALL_DATA = _SQL.format(
    data=f"CASE WHEN b.chunk_set IS NULL AND b.size <= {LOOP_BYTES_MAX} THEN b.data END"
)


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
    asked = _Asked(token, ref, want_bytes, None)
    return asked.answer(point_row(store.transactions, asked.sql, asked.params))


async def gated_read_loop(reads: LoopReads, token: str, ref: str, *, want_bytes: bool) -> GatedRead:
    """:func:`gated_read` awaited on the event loop, with no worker thread.

    ``reads`` is the store's :func:`open_loop_reads`. The same statement and the same
    decisions, except that inline bytes come back only up to :data:`LOOP_BYTES_MAX` bytes
    (hashing more would hold the loop): for a larger object ``data`` is None and the
    caller reads the bytes by its general path (``Store.get``).

    Raises:
        StoreStateError: ``store.replaced`` (the SQLite file is not the one opened).
    """
    asked = _Asked(token, ref, want_bytes, LOOP_BYTES_MAX)
    return asked.answer(await reads.row(asked.sql, asked.params))


async def token_scope_loop(reads: LoopReads, token: str) -> GatedRead:
    """A token's scope as :func:`~evstore.access.tokens.token_scope` decides it, awaited on
    the event loop (``reads``: :func:`open_loop_reads`): the same statement, no worker thread.

    Returns:
        A :class:`GatedRead` with ``scope`` (None: absent, malformed, unknown or revoked)
        and ``answered`` (False when the statement could not run: then ask ``token_scope``,
        whose worker-thread path reports the database's error).

    Raises:
        StoreStateError: ``store.replaced`` (the SQLite file is not the one opened).
    """  # noqa: D205
    digest = token_hash(token)
    if digest is None:
        return GatedRead(None, True)
    row = await reads.row(SCOPE_SQL, (digest,))
    if row is FALLBACK:
        return GatedRead(None, False)
    return GatedRead(live_scope(row), True)


def open_loop_reads(store: Store, connections: int = LOOP_CONNECTIONS) -> LoopReads:
    """Point reads of ``store`` awaited on the running event loop, for
    :func:`gated_read_loop` and :func:`~evstore.access.tokens.token_scope_loop`
    (store/db/loopread.py). Made and closed (``await reads.aclose()``) on one loop.

    Args:
        store: an open (local) store.
        connections: PostgreSQL connections at most (SQLite uses one).
    """  # noqa: D205
    return store.transactions.loop_reads(connections)


class _Asked:
    """One gated read: its statement and how its row is answered."""

    def __init__(self, token: str, ref: str, want_bytes: bool, bytes_max: int | None) -> None:
        self.digest = token_hash(token)
        try:
            parsed = parse_ref(ref)
        except RefSyntaxError:
            parsed = None
        ok = parsed is not None and parsed.algorithm == "blake3"
        self.address = parsed.hex if ok and parsed is not None else None
        self.want_bytes = want_bytes
        self.bytes_max = bytes_max
        if not want_bytes:
            self.sql = _WITHOUT_DATA
        else:
            self.sql = _WITH_DATA if bytes_max is None else _WITH_SMALL_DATA
        self.params = (self.digest, self.address)

    def answer(self, row: Any) -> GatedRead:
        if row is FALLBACK or row is None:
            return GatedRead(None, False)
        scope_text, revoked_at, sha256, size, chunk_set, artifact, data = row
        scope = None
        if self.digest is not None and scope_text in SCOPES and revoked_at is None:
            scope = str(scope_text)
        address = self.address
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
        if not self.want_bytes or blob.chunk_set is not None:
            return GatedRead(scope, True, head)
        if data is None and self.bytes_max is not None and blob.digest.size > self.bytes_max:
            return GatedRead(scope, True, head)  # not read on the loop: the general path
        try:
            got = b"" if data is None else as_bytes(data, address)
        except CorruptionError as err:
            return GatedRead(scope, True, head, fault=err)
        mismatch = compare_digest(blob, digest_bytes(got))
        if mismatch is not None:
            return GatedRead(scope, True, head, fault=mismatch)
        return GatedRead(scope, True, head, got)
