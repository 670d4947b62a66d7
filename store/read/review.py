"""Read-side questions a reviewer asks of one stored object (the audit pages, issue 15).

Each function takes an open :class:`~evstore.facade.api.Store` and reads one consistent snapshot
(``store.reading()``); none writes, records or caches anything:

- :func:`verify_now`: re-hash one blob and re-run its artifacts' contract audits, the same
  steps ``evstore check`` takes for that object (store/check/checker.py), shown and not recorded;
- :func:`kind_counts`: how many artifacts of each kind, and the blobs' count and bytes;
- :func:`edges_from`: the edges an artifact wrote (role, target, the target's kinds);
- :func:`bindings_of_fragment`: the scope and revision bindings a fragment's identity holds.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from ..check.checker import audit_bytes
from ..contracts.fragments.bindings import (
    NS_REV_CONTENT,
    NS_REV_DOC,
    NS_SCOPE,
    revision_content_key,
)
from ..contracts.fragments.rules import (
    REVISION_KEYS_SETTING,
    identity_key,
    revision_checksums,
)
from ..core.errors import EvstoreError
from ..core.settings import setting
from ..db.tables import artifacts, blobs
from ..objects import blobs as _blobs
from ..objects.artifacts import artifact_kinds
from ..objects.lineage import resolve

__all__ = ["bindings_of_fragment", "edges_from", "kind_counts", "verify_now"]


def verify_now(store: Any, ref: str) -> dict[str, Any]:
    """Re-verify one stored object now: bytes re-hashed, each artifact's audit re-run.

    The steps are those of ``evstore check`` for one address (size, BLAKE3 and the SHA-256
    index; then canonical form and the kind's ``audit``, contract rules and bindings), on one
    read snapshot; nothing is recorded (the ``verified`` table is left as it is).

    Args:
        store: an open Store.
        ref: a content ref in any accepted form.

    Returns:
        ``{"address": "blake3:…", "ok": bool, "kinds": [kind, ...], "faults": [error dicts
        (``EvstoreError.to_dict``) with ``code``, ``message``, ``rule``, ``pointer``,
        ``details``], "warnings": [{"code", "message", "pointer", "address"}]}``.

    Raises:
        RefSyntaxError: ``ref.syntax``. NotFound: ``not-found.blob``.
    """
    with store.reading() as txn:
        row = resolve(txn.conn, ref)
        address = row.digest.blake3
        kinds = [k for k, _, _ in artifact_kinds(txn.conn, address)]
        faults: list[EvstoreError] = []
        warnings: list[dict[str, str]] = []
        err = _blobs.verify_stored(txn.conn, row)
        if err is not None:
            err.details.setdefault("address", "blake3:" + address)
            faults.append(err)
        elif kinds:  # a plain blob has no audit: its bytes are not read a second time
            try:
                data = txn.read_blob(row)
            except EvstoreError as exc:  # changed between the two reads: report, never raise
                faults.append(exc)
            else:
                for kind in kinds:
                    faults.extend(audit_bytes(txn, address, kind, data, warnings))
    return {
        "address": "blake3:" + address,
        "ok": not faults,
        "kinds": kinds,
        "faults": [f.to_dict() for f in faults],
        "warnings": warnings,
    }


def kind_counts(store: Any) -> dict[str, Any]:
    """Counts for a store's overview page.

    Returns:
        ``{"kinds": {kind: artifacts of that kind}, "artifacts": total artifact rows,
        "blobs": blob count, "bytes": total blob size in bytes}`` (kinds sorted by name).
    """
    with store.reading() as txn:
        rows = txn.conn.execute(
            sa.select(artifacts.c.kind, sa.func.count()).group_by(artifacts.c.kind)
        ).all()
        n, size = txn.conn.execute(
            sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(blobs.c.size), 0))
        ).one()
    kinds = {str(k): int(c) for k, c in sorted(rows, key=lambda r: str(r[0]))}
    return {"kinds": kinds, "artifacts": sum(kinds.values()), "blobs": int(n), "bytes": int(size)}


def edges_from(store: Any, ref: str) -> list[dict[str, Any]]:
    """The edges the object at ``ref`` wrote, in (role, target) order.

    Returns:
        ``[{"role", "dst": "blake3:…", "kinds": [artifact kinds of the target; empty for a
        plain blob]}]``; empty for a blob that is no artifact.

    Raises:
        RefSyntaxError: ``ref.syntax``. NotFound: ``not-found.blob``.
    """
    with store.reading() as txn:
        address = resolve(txn.conn, ref).digest.blake3
        out = []
        for role, dst in sorted(txn.edges_from(address)):
            kinds = [k for k, _, _ in artifact_kinds(txn.conn, dst)]
            out.append({"role": role, "dst": "blake3:" + dst, "kinds": kinds})
    return out


def bindings_of_fragment(store: Any, fragment: dict[str, Any]) -> dict[str, Any]:
    """The bindings a stored fragment's identity and revisions hold (templiqx v1alpha1).

    Args:
        store: an open Store.
        fragment: the parsed fragment document.

    Returns:
        ``{"scope": the scope bound to the fragment's identity (a dict) or None,
        "revisions": [{"key": extension key pointer, "checksum", "document_id": bound
        document or None, "content_sha256": bound content version or None}]}``.
        A fragment whose shape no longer reads (damage ``evstore check`` reports) gives
        ``{"scope": None, "revisions": [], "error": error dict}``.
    """
    from ..core.canonical import loads

    with store.reading() as txn:
        try:
            ident = identity_key(fragment)
            keys = tuple(setting(txn.settings, REVISION_KEYS_SETTING) or ())
            found = revision_checksums(fragment, keys) if keys else []
        except EvstoreError as exc:
            return {"scope": None, "revisions": [], "error": exc.to_dict()}
        scope = txn.binding(NS_SCOPE, ident)
        revisions = []
        for pointer, checksum in found:
            content_key = revision_content_key(checksum, str(fragment["fragment_id"]))
            revisions.append(
                {
                    "key": pointer,
                    "checksum": checksum,
                    "document_id": txn.binding(NS_REV_DOC, checksum),
                    "content_sha256": txn.binding(NS_REV_CONTENT, content_key),
                }
            )
    return {"scope": None if scope is None else loads(scope.encode()), "revisions": revisions}
