"""Log proofs in an archive (``archive export --with-proofs``, ``archive verify --key``).

With proofs, each root's manifest lists, after its members, three more kinds of layer
(docs/archive.md#proofs):

    application/vnd.evstore.checkpoint.v1      the signed checkpoint (C2SP tlog-checkpoint)
    application/vnd.evstore.verifier-key.v1    the log's verifier key (C2SP signed-note)
    application/vnd.evstore.tlog-proof.v1      one per member (annotation dev.evstore.proves:
                                               its address): a C2SP tlog-proof whose extra
                                               line is the member's log entry (docs/log.md)

Every proof is computed at the same checkpoint, in the export's read snapshot: the latest
signed one. Verifying with a key checks, per member, the checkpoint's signature by that key,
the RFC 9162 inclusion of the entry, and that the entry names exactly the member's bytes
(:func:`evstore.log.ops.verify_proof`); the checkpoint each proof carries must be the archive's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.errors import EvstoreError, error
from ..db.tables import log_checkpoints, log_entries, log_keys
from ..objects.log_entries import entries_naming, inclusion_at
from ..tlog.checkpoint import TlogProof, format_tlog_proof

__all__ = [
    "ANN_PROVES",
    "MEDIA_CHECKPOINT",
    "MEDIA_PROOF",
    "MEDIA_VKEY",
    "PROOF_MEDIA",
    "ProofLayers",
    "collect_proofs",
    "proof_faults",
]

MEDIA_CHECKPOINT = "application/vnd.evstore.checkpoint.v1"
MEDIA_VKEY = "application/vnd.evstore.verifier-key.v1"
MEDIA_PROOF = "application/vnd.evstore.tlog-proof.v1"
#: Every media type of a proof layer (never a member: not imported, not in the closure).
PROOF_MEDIA = frozenset({MEDIA_CHECKPOINT, MEDIA_VKEY, MEDIA_PROOF})
ANN_PROVES = "dev.evstore.proves"


def collect_proofs(conn: Connection, addresses: list[str]) -> tuple[bytes, bytes, dict[str, bytes]]:
    """``(checkpoint note, verifier key, {address: tlog-proof})`` at the latest checkpoint.

    Each address (``blake3:<hex>``) is proven by its latest entry within the checkpoint.

    Raises:
        NotFound: ``log.no-checkpoint`` (sign one: ``evstore log checkpoint``),
            ``log.not-logged`` (an object logged after the latest checkpoint).
        StoreStateError: ``log.no-key``.
    """
    row = conn.execute(
        sa.select(log_checkpoints.c.size, log_checkpoints.c.note)
        .order_by(log_checkpoints.c.size.desc())
        .limit(1)
    ).first()
    if row is None:
        raise error("log.no-checkpoint", "no signed checkpoint: run `evstore log checkpoint`")
    vkey = conn.execute(
        sa.select(log_keys.c.vkey).order_by(log_keys.c.added_at.desc(), log_keys.c.vkey).limit(1)
    ).scalar()
    if vkey is None:
        raise error("log.no-key", "the log has no verifier key: run `evstore log init-key`")
    size = int(row.size)
    proofs: dict[str, bytes] = {}
    for address in addresses:
        found = conn.execute(
            sa.select(log_entries.c.idx, log_entries.c.entry)
            .where(*entries_naming(address.removeprefix("blake3:")))
            .where(log_entries.c.idx < size)
            .order_by(log_entries.c.idx.desc())
            .limit(1)
        ).first()
        if found is None:
            raise error(
                "log.not-logged",
                f"{address} has no entry in the checkpoint of size {size}; sign a newer "
                "checkpoint (`evstore log checkpoint`) and export again",
                ref=address,
            )
        index = int(found.idx)
        hashes = inclusion_at(conn, index, size)
        proof = TlogProof(index, tuple(hashes), row.note, bytes(found.entry))
        proofs[address] = format_tlog_proof(proof).encode("utf-8")
    return row.note.encode("utf-8"), (vkey + "\n").encode("utf-8"), proofs


@dataclass
class ProofLayers:
    """The proof layers of one manifest (each a blob's SHA-256 hex).

    Attributes:
        checkpoint, vkey: the checkpoint and verifier-key layers (one each when valid).
        proofs: the tlog-proof layers by the member address they prove.
    """

    checkpoint: list[str] = field(default_factory=list)
    vkey: list[str] = field(default_factory=list)
    proofs: dict[str, str] = field(default_factory=dict)

    def add(self, media: str, hexpart: str, annotations: dict[str, Any]) -> bool:
        """Record one layer; False when a proof names no address."""
        if media == MEDIA_CHECKPOINT:
            self.checkpoint.append(hexpart)
        elif media == MEDIA_VKEY:
            self.vkey.append(hexpart)
        else:
            proves = annotations.get(ANN_PROVES)
            if not isinstance(proves, str):
                return False
            self.proofs[proves] = hexpart
        return True

    def __bool__(self) -> bool:
        return bool(self.checkpoint or self.vkey or self.proofs)


def proof_faults(
    layers: ProofLayers,
    members: dict[str, str],
    read: Any,
    key: str | None,
    path: str,
) -> list[EvstoreError]:
    """Every fault of one manifest's proofs.

    Args:
        layers: the manifest's proof layers.
        members: member address -> blob sha256 hex.
        read: ``read(sha256 hex) -> bytes`` of a blob of the archive.
        key: the verifier key to trust (text); None: the archive's own key (a consistency
            check only: anyone can make a key; the CLI says so).
        path: the manifest's file, for the faults.
    """
    from ..log.ops import verify_proof

    faults: list[EvstoreError] = []
    if len(layers.checkpoint) != 1 or len(layers.vkey) != 1:
        return [
            error(
                "archive.layout",
                "a manifest with proofs lists exactly one checkpoint and one verifier key",
                path=path,
            )
        ]
    note = read(layers.checkpoint[0]).decode("utf-8", "replace")
    vkey = key if key is not None else read(layers.vkey[0]).decode("utf-8", "replace").strip()
    for address in sorted(set(members) | set(layers.proofs)):
        hexpart = layers.proofs.get(address)
        if hexpart is None or address not in members:
            faults.append(
                error(
                    "archive.layout",
                    f"{address}: every member has one proof and every proof a member",
                    path=path,
                )
            )
            continue
        text = read(hexpart)
        where = f"blobs/sha256/{hexpart}"
        try:
            verify_proof(text, vkey, read(members[address]))
        except EvstoreError as err:
            err.path = where
            err.details.setdefault("address", address)
            faults.append(err)
            continue
        if not text.decode("utf-8").endswith("\n\n" + note):
            faults.append(
                error(
                    "archive.layout",
                    "the proof was computed at another checkpoint than the archive's",
                    path=where,
                )
            )
    return faults
