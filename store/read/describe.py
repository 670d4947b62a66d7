"""One artifact described for readers: digests, kinds, warnings, edges out and referrers in.

The HTTP server's ``GET P/v1/artifacts/{ref}`` answers with :func:`describe_artifact`
(docs/http.md); it reads one snapshot and never touches the artifact's bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ..backends.base import blob_key
from ..backends.spec import open_backend, parse_spec
from ..core.errors import error
from ..core.refs import parse_ref
from ..core.times import utc_text
from ..db.rawread import FALLBACK, point_row
from ..db.tables import edges
from ..objects.artifacts import artifact_kinds, warnings_of
from ..objects.lineage import referrers, resolve

if TYPE_CHECKING:
    from ..facade.api import Store

__all__ = ["describe_artifact", "object_head", "presign_object"]


def describe_artifact(store: Store, ref: str) -> dict[str, Any]:
    """The metadata of the artifact ``ref`` names (any content-ref form).

    Returns:
        ``{"address", "sha256", "size" (bytes), "kinds": [{"kind", "contract_version",
        "accepted_at"}], "warnings": [{"code", "message", "pointer"}], "edges": [{"role",
        "dst"}], "referrers": [{"role", "src", "kind"}]}``; edges and referrers in
        (role, address) order, addresses as ``blake3:<hex>``.

    Raises:
        RefSyntaxError: ``ref.syntax``. NotFound: ``not-found.blob`` (no such bytes),
            ``not-found.artifact`` (bytes stored, but as no artifact kind).
    """
    with store.reading() as txn:
        conn = txn.conn
        row = resolve(conn, ref)
        address = row.digest.blake3
        kinds = artifact_kinds(conn, address)
        if not kinds:
            raise error(
                "not-found.artifact",
                f"{ref} names a stored blob that is no artifact",
                ref=ref,
            )
        out_edges = conn.execute(
            sa.select(edges.c.role, edges.c.dst)
            .where(edges.c.src == address)
            .order_by(edges.c.role, edges.c.dst)
        ).all()
        refs = referrers(conn, ref)
        return {
            "address": row.digest.address,
            "sha256": "sha256:" + row.digest.sha256,
            "size": row.digest.size,
            "kinds": [
                {"kind": k, "contract_version": v, "accepted_at": utc_text(t)} for k, v, t in kinds
            ],
            "warnings": [w.to_dict() for w in warnings_of(conn, address)],
            "edges": [{"role": role, "dst": "blake3:" + dst} for role, dst in out_edges],
            "referrers": [
                {"role": r["role"], "src": r["address"], "kind": kind}
                for r in refs
                for kind in r["kinds"]
            ],
        }


def object_head(store: Store, ref: str) -> dict[str, Any]:
    """The facts an HTTP answer about an object needs, without reading its bytes.

    Returns ``{"address", "sha256", "size", "artifact"}`` (size in bytes; ``artifact``: the
    bytes are stored as at least one kind).

    A ``blake3:`` ref is answered by one statement without a transaction (the server's hot
    path); other forms, and any database error, go through :meth:`Store.stat`. Nothing here
    reads or verifies the bytes.

    Raises:
        RefSyntaxError: ``ref.syntax``. NotFound: ``not-found.blob``.
    """
    parsed = parse_ref(ref)
    if parsed.algorithm == "blake3":
        row = point_row(
            store.transactions,
            "SELECT b.sha256, b.size, EXISTS (SELECT 1 FROM artifacts a"
            " WHERE a.address = b.address) FROM blobs b WHERE b.address = ?",
            (parsed.hex,),
        )
        if row is not None and row is not FALLBACK:
            return {
                "address": "blake3:" + parsed.hex,
                "sha256": "sha256:" + str(row[0]),
                "size": int(row[1]),
                "artifact": bool(row[2]),
            }
    stat = store.stat(ref)
    return {
        "address": stat["address"],
        "sha256": stat["sha256"],
        "size": stat["size"],
        "artifact": bool(stat["artifacts"]),
    }


def presign_object(store: Store, address: str, seconds: int) -> str | None:
    """A short-lived URL of the bucket that GETs the bytes of the blob ``address``, or None.

    None when the blob's bytes are not in an S3 backend (in the database, in a directory,
    or no such row): the caller then serves the bytes itself. The URL is signed for
    ``seconds`` with this process's S3 credentials; no request is made, nothing is
    verified here: whoever follows the URL verifies what it receives against ``address``
    and the SHA-256 (the evstore client does; docs/http.md#redirects-to-the-bucket).

    Args:
        store: the open store.
        address: ``blake3:<64 hex>``.
        seconds: how long the URL is valid.

    Raises:
        StoreStateError: ``blobs.credentials``, ``blobs.backend`` (the URL cannot be signed).
    """
    parsed = parse_ref(address)
    if parsed.algorithm != "blake3":
        return None
    row = point_row(
        store.transactions, "SELECT stored_in FROM blobs WHERE address = ?", (parsed.hex,)
    )
    if row is None or row is FALLBACK or row[0] is None:
        return None
    spec = str(row[0])
    if parse_spec(spec).kind != "s3":
        return None
    backend = open_backend(spec)
    sign = getattr(backend, "presign_get", None)
    return None if sign is None else str(sign(blob_key(parsed.hex), seconds))
