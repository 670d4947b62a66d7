"""The tamper-evident log as users see it: keys, checkpoints, entries and proofs.

``store.log`` is a :class:`LogOps`. Entries are appended by every accepted write
(store/objects/log_entries.py); this module signs checkpoints (C2SP signed notes, Ed25519 via
``cryptography``, store/tlog/checkpoint.py) and serves inclusion and consistency proofs (RFC 9162
section 2.1, store/tlog/merkle.py), each *together with the signed checkpoint it was computed at,
read in one snapshot*. :func:`verify_proof` checks a proof file with no store at all.

Proof files (docs/log.md#proof-files):

* inclusion: the C2SP tlog-proof text (``c2sp.org/tlog-proof@v1``) whose ``extra`` line holds
  the entry's bytes;
* consistency: a JSON object ``{"format": "evstore.dev/tlog-consistency@v1", "old_size",
  "old_root", "new_size", "proof": [base64 hashes], "checkpoint": signed note at new_size,
  "old_checkpoint": signed note at old_size or null}``.

The private key never enters the database: it is a 0600 file made by :meth:`LogOps.init_key`
whose path the caller passes (the CLI reads it from ``--key``, ``EVSTORE_LOG_KEY`` or the
``log.key_file`` setting).
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import json
import os
import secrets
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.errors import InputError, error
from ..core.refs import parse_ref
from ..core.times import utc_text
from ..db.tables import blobs, log_checkpoints, log_entries, log_keys, log_queue
from ..db.transactions import Transactions
from ..objects.log_entries import (
    LOG_LOCK,
    consistency_at,
    entries_naming,
    inclusion_at,
    log_size,
    parse_entry,
    root_at,
)
from ..tlog import merkle
from ..tlog.checkpoint import (
    Checkpoint,
    CheckpointError,
    Signer,
    TlogProof,
    Verifier,
    format_tlog_proof,
    parse_tlog_proof,
    parse_vkey,
    read_private_key,
    sign_checkpoint,
    verify_checkpoint,
    verify_tlog_proof,
)
from .integrate import DEFAULT_LIMIT, integrate_round, pending_count
from .tiles import content_matches, export_tiles, policy_cosigners, read_tile
from .witness import add_checkpoint, ask_witnesses, witnessed

__all__ = ["CONSISTENCY_FORMAT", "LogOps", "load_signer", "verify_proof"]

#: The ``format`` member of a consistency proof file.
CONSISTENCY_FORMAT = "evstore.dev/tlog-consistency@v1"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _verifier(conn: Connection) -> Verifier | None:
    row = conn.execute(
        sa.select(log_keys.c.vkey).order_by(log_keys.c.added_at.desc(), log_keys.c.vkey).limit(1)
    ).first()
    return None if row is None else parse_vkey(row.vkey)


#: The largest index or size a query may name (a 64-bit signed integer on both backends).
_MAX_SIZE = (1 << 63) - 1


def _bounded(**values: Any) -> None:
    """``log.range`` for an index or size no database column can hold (beyond 2**63 - 1)."""
    for name, value in values.items():
        if value is not None and (type(value) is not int or not 0 <= value <= _MAX_SIZE):
            raise error("log.range", f"{name} {value!r} is not a size of any log", **{name: value})


def _latest(conn: Connection, size: int | None = None) -> Any:
    _bounded(size=size)
    q = sa.select(log_checkpoints.c.size, log_checkpoints.c.note, log_checkpoints.c.signed_at)
    if size is None:
        q = q.order_by(log_checkpoints.c.size.desc()).limit(1)
    else:
        q = q.where(log_checkpoints.c.size == size)
    return conn.execute(q).first()


def _checkpoint_dict(row: Any, verifier: Verifier | None) -> dict[str, Any]:
    out: dict[str, Any] = {"size": int(row.size), "note": row.note}
    if verifier is not None:
        try:
            cp = verify_checkpoint(row.note, verifier)
        except CheckpointError as err:  # stored damage, not the caller's input
            raise error(
                "check.log-checkpoint",
                f"the stored checkpoint {int(row.size)} does not verify: {err.message}",
                address="log",
                size=int(row.size),
            ) from None
        out["root"] = _b64(cp.root_hash)
        out["origin"] = cp.origin
    out["signed_at"] = utc_text(row.signed_at)
    return out


def _entry_or_none(data: bytes) -> dict[str, Any] | None:
    """The entry object, or None for stored bytes that are no entry (``check`` names them)."""
    try:
        return parse_entry(data)
    except InputError:
        return None


def _key_path(path: str | os.PathLike[str] | None) -> str:
    if path is None or not os.fspath(path):
        raise error(
            "log.key-file",
            "no private key file: pass one, set EVSTORE_LOG_KEY or the log.key_file setting",
        )
    return os.fspath(path)


def load_signer(key_path: str | os.PathLike[str] | None) -> Signer:
    """The signer of an Ed25519 private key file (``evstore log init-key``).

    ``evstore serve --log-key`` reads the key with this before it listens, so a key it
    could never sign with fails the command instead of a server that never signs.

    Raises:
        InputError: ``log.key-file`` (no path, or the file cannot be read: missing,
            unreadable), ``checkpoint.key`` (malformed, or readable by others).
    """
    path = _key_path(key_path)
    try:
        return read_private_key(path)
    except OSError as exc:
        raise error("log.key-file", f"cannot read {path}: {exc.strerror}", path=path) from None


class LogOps:
    """The log of one :class:`~evstore.facade.api.Store` (``store.log``)."""

    def __init__(self, store: Any) -> None:
        self._tx = store.transactions  # a closed Store refuses its namespaces too

    # -- keys -----------------------------------------------------------------------------
    def check_key(self, key_path: str | os.PathLike[str] | None) -> None:
        """Read the private key file :meth:`checkpoint` would sign with, signing nothing.

        Raises:
            InputError: ``log.key-file``, ``checkpoint.key`` (as :func:`load_signer`).
        """
        load_signer(key_path)

    def init_key(self, path: str | os.PathLike[str], origin: str | None = None) -> dict[str, Any]:
        """Make the log's Ed25519 key: a new 0600 private key file, its verifier key stored.

        Args:
            path: the private key file to create (never overwritten).
            origin: the log's origin line and key name (default ``evstore.log/<16 hex>``,
                random, so two stores never share one).

        Returns:
            ``{"vkey": verifier key, "path": the file, "origin": origin}``.

        Raises:
            StoreStateError: ``log.key-exists`` (the store has a key already; nothing written).
            InputError: ``log.key-file`` (the file exists or cannot be created),
                ``checkpoint.key`` (an origin that cannot be a key name).
        """
        path = _key_path(path)
        signer = Signer.generate(origin or f"evstore.log/{secrets.token_hex(8)}")
        with self._tx.read() as conn:
            existing = _verifier(conn)
        if existing is not None:
            raise error("log.key-exists", f"the log has a key already: {existing.vkey()}")
        try:
            signer.write_private_key(path)
        except OSError as exc:
            raise error(
                "log.key-file", f"cannot create {path}: {exc.strerror}", path=path
            ) from None
        vkey = signer.verifier.vkey()

        def register(conn: Connection) -> None:
            if _verifier(conn) is not None:
                raise error("log.key-exists", "the log got a key meanwhile")
            now = _dt.datetime.now(_dt.UTC)
            conn.execute(sa.insert(log_keys), {"vkey": vkey, "added_at": now})

        try:
            self._tx.run_transaction(register)
        except BaseException:
            os.unlink(path)
            raise
        return {"vkey": vkey, "path": path, "origin": signer.name}

    def key(self) -> str:
        """The log's verifier key ``<origin>+<key ID>+<base64 key>`` (c2sp.org/signed-note).

        Raises:
            StoreStateError: ``log.no-key``.
        """
        with self._tx.read() as conn:
            verifier = _verifier(conn)
        if verifier is None:
            raise error("log.no-key", "the log has no key yet: run `evstore log init-key`")
        return verifier.vkey()

    # -- checkpoints ----------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """The log now: ``{"size": entries in the tree, "pending": entries queued for the
        integrator, "root": base64 MTH, "vkey": str|None, "checkpoint": the latest signed
        checkpoint (size, root, origin, note, signed_at) or None}``, from one snapshot.
        """  # noqa: D205
        with self._tx.read() as conn:
            size = log_size(conn)
            verifier = _verifier(conn)
            row = _latest(conn)
            return {
                "size": size,
                "pending": pending_count(conn),
                "root": _b64(root_at(conn, size)),
                "vkey": None if verifier is None else verifier.vkey(),
                "checkpoint": None if row is None else _checkpoint_dict(row, verifier),
            }

    def integrate(
        self,
        key_path: str | os.PathLike[str] | None = None,
        *,
        limit: int = DEFAULT_LIMIT,
        max_rounds: int = 10_000,
    ) -> dict[str, Any]:
        """Give every queued entry its index and add it to the tree; then sign, given a key.

        Rounds of at most about ``limit`` entries, one transaction each
        (store/log/integrate.py), until the queue is empty or ``max_rounds`` ran. One
        integrator runs at a time across processes (the log's lock); a crash loses no
        entry and the next call completes the work (docs/log.md, "Sequencing and
        integration").

        Args:
            key_path: the log's private key file: after integrating, sign a checkpoint
                (:meth:`checkpoint`); None signs nothing.
            limit: entries per round (>= 1).
            max_rounds: the most rounds this call runs (>= 1).

        Returns:
            ``{"integrated": entries added, "size": the tree size, "pending": entries still
            queued when the last round committed, "checkpoint": as :meth:`checkpoint` or
            None}``.

        Raises:
            As :meth:`checkpoint` (with a key); CorruptionError: ``corruption.log``.
        """
        signer = None if key_path is None else load_signer(key_path)
        total, size = 0, 0
        for _ in range(max(1, max_rounds)):
            done = self._tx.run_transaction(lambda conn: integrate_round(conn, limit))
            total += int(done["integrated"])
            size = int(done["size"])
            if not done["integrated"]:
                break
        with self._tx.read() as conn:
            pending = pending_count(conn)
        signed = None
        if signer is not None:
            signed = self._tx.run_transaction(lambda conn: _sign(conn, signer))
            size = max(size, int(signed["size"]))
        return {"integrated": total, "size": size, "pending": pending, "checkpoint": signed}

    def checkpoint(self, key_path: str | os.PathLike[str] | None) -> dict[str, Any]:
        """Integrate the queued entries, then sign a checkpoint of the tree if it extends the last.

        The queue is integrated first (:meth:`integrate`), so every write acknowledged
        before the call is in the tree signed. The new tree must be consistent with the
        previous checkpoint (an RFC 9162 2.1.4
        consistency proof computed from the stored subtrees and verified against the
        previous signed root) before anything is signed. When the log has not grown the
        previous checkpoint is returned (``"new": False``).

        Returns:
            ``{"size", "root" (base64), "origin", "note", "signed_at", "new": bool}``.

        Raises:
            InputError: ``log.key-file``, ``checkpoint.key`` (an exposed or malformed key
                file), ``log.key-mismatch``. StoreStateError: ``log.no-key``.
            CorruptionError: ``log.inconsistent`` (nothing signed), ``check.log-checkpoint``
                (the previous checkpoint does not verify), ``corruption.log``.
        """
        signer = load_signer(key_path)
        self.integrate()
        return self._tx.run_transaction(lambda conn: _sign(conn, signer))  # type: ignore[no-any-return]

    def latest(self) -> dict[str, Any] | None:
        """The latest signed checkpoint (as in :meth:`status`), or None."""
        return self.status()["checkpoint"]  # type: ignore[no-any-return]

    # -- witnesses (C2SP tlog-witness, store/log/witness.py) ---------------------------------
    def ask_witnesses(self, timeout_s: float = 5.0) -> dict[str, Any]:
        """Ask the ``log.witness_policy`` witnesses to cosign the latest checkpoint.

        Verified cosignatures are kept with the checkpoint (its stored note); a witness
        that is down or refuses is reported in ``failed``, never raised.

        Returns:
            ``{"size", "cosigned", "present", "failed": {name: message}, "quorum",
            "witnesses"}`` (evstore.log.witness.ask_witnesses).

        Raises:
            InputError: ``witness.policy``, ``witness.key`` (the policy setting is wrong).
        """
        return ask_witnesses(self._tx, timeout_s)

    def witness_add_checkpoint(self, cosigner: Any, body: bytes) -> dict[str, Any]:
        """As a witness, answer one C2SP tlog-witness add-checkpoint request body.

        Args:
            cosigner: the witness key (:func:`evstore.read_cosigner_key`).
            body: the request body.

        Returns:
            ``{"origin", "size", "cosignature"}`` (the line, with its newline).

        Raises:
            InputError, NotFound: the ``witness.*`` refusals of
                evstore.log.witness.add_checkpoint; nothing is recorded then.
        """
        return add_checkpoint(self._tx, cosigner, body)

    def witnessed(self) -> list[dict[str, Any]]:
        """The logs this store witnessed: ``[{"origin", "vkey", "size", "cosigned_at"}]``."""
        return witnessed(self._tx)

    # -- tiles (C2SP tlog-tiles, store/log/tiles.py) ---------------------------------------
    def tile(self, path: str) -> tuple[bytes, bool]:
        """Resource ``tile/...`` at the latest checkpoint and whether it is full (immutable).

        Raises:
            InputError: ``tiles.malformed``. NotFound: ``tiles.missing``.
        """
        return read_tile(self._tx, path)

    def export_tiles(self, directory: str | os.PathLike[str]) -> dict[str, Any]:
        """Write ``checkpoint`` and the tiles under ``directory``, incrementally.

        Returns ``{"size", "written", "kept", "directory"}``; raises NotFound
        ``log.no-checkpoint`` (see :func:`evstore.log.tiles.export_tiles`).
        """
        return export_tiles(self._tx, directory)

    # -- entries --------------------------------------------------------------------------
    def entries(self, start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
        """Entries ``start .. end - 1`` (``end`` default: the log's size), oldest first.

        Returns:
            ``{"index", "entry" (the parsed object), "bytes" (base64 of the entry bytes),
            "leaf_hash" (base64)}`` per entry.

        Raises:
            InputError: ``log.range`` (negative, or ``start > end``).
        """
        if start < 0 or (end is not None and not start <= end):
            raise error("log.range", f"no entries {start}..{end}", start=start, end=end)
        _bounded(start=start, end=end)
        with self._tx.read() as conn:
            q = sa.select(log_entries.c.idx, log_entries.c.entry).where(log_entries.c.idx >= start)
            if end is not None:
                q = q.where(log_entries.c.idx < end)
            rows = conn.execute(q.order_by(log_entries.c.idx)).all()
        return [
            {
                "index": int(r.idx),
                "entry": _entry_or_none(bytes(r.entry)),
                "bytes": _b64(bytes(r.entry)),
                "leaf_hash": _b64(merkle.leaf_hash(bytes(r.entry))),
            }
            for r in rows
        ]

    # -- proofs ---------------------------------------------------------------------------
    def prove(self, ref: str | None = None, *, index: int | None = None) -> dict[str, Any]:
        """An inclusion proof of an entry in the latest signed checkpoint, as a tlog-proof.

        Args:
            ref: a content ref: its latest entry within the checkpoint is proven.
            index: prove this entry instead (with ``ref``, it must name the ref's object).

        Returns:
            ``{"index", "size", "entry" (parsed), "proof" (base64 hashes), "checkpoint"
            (the signed note), "text" (the tlog-proof file)}``: proof and checkpoint come
            from one read snapshot.

        Raises:
            RefSyntaxError; InputError: ``input.invalid`` (neither given), ``log.range``;
            NotFound: ``log.no-checkpoint``, ``log.not-logged``.
        """
        if ref is None and index is None:
            raise error("input.invalid", "prove takes a content ref or an entry index")
        address = _address_of(self._tx, ref) if ref is not None else None
        with self._tx.read() as conn:
            row = _latest(conn)
            if row is None:
                raise error(
                    "log.no-checkpoint", "no signed checkpoint: run `evstore log checkpoint`"
                )
            size = int(row.size)
            index = _entry_index(conn, ref, address, index, size)
            entry = bytes(
                conn.execute(
                    sa.select(log_entries.c.entry).where(log_entries.c.idx == index)
                ).scalar_one()
            )
            hashes = inclusion_at(conn, index, size)
        proof = TlogProof(index, tuple(hashes), row.note, entry)
        return {
            "index": index,
            "size": size,
            "entry": _entry_or_none(entry),
            "proof": [_b64(h) for h in hashes],
            "checkpoint": row.note,
            "text": format_tlog_proof(proof),
        }

    def prove_consistency(self, old_size: int, new_size: int | None = None) -> dict[str, Any]:
        """A consistency proof from tree ``old_size`` to the signed checkpoint at ``new_size``.

        Args:
            old_size: any earlier size, ``0 <= old_size <= new_size``.
            new_size: the size of a signed checkpoint (default: the latest).

        Returns:
            The proof file object (module docstring) plus ``"text"``, its JSON text; the
            old root and both checkpoints come from the same read snapshot.

        Raises:
            InputError: ``log.range``. NotFound: ``log.no-checkpoint``.
        """
        with self._tx.read() as conn:
            row = _latest(conn, new_size)
            if row is None:
                what = "" if new_size is None else f" at size {new_size}"
                raise error("log.no-checkpoint", f"no signed checkpoint{what}", size=new_size)
            size = int(row.size)
            if type(old_size) is not int or not 0 <= old_size <= size:
                raise error(
                    "log.range",
                    f"no consistency proof from {old_size} to {size}",
                    old_size=old_size,
                    new_size=size,
                )
            proof = consistency_at(conn, old_size, size)
            old_root = root_at(conn, old_size)
            old_row = _latest(conn, old_size)
        out: dict[str, Any] = {
            "format": CONSISTENCY_FORMAT,
            "old_size": old_size,
            "old_root": _b64(old_root),
            "new_size": size,
            "proof": [_b64(h) for h in proof],
            "checkpoint": row.note,
            "old_checkpoint": None if old_row is None else old_row.note,
        }
        out["text"] = json.dumps(out, indent=2, sort_keys=True) + "\n"
        return out


def _address_of(tx: Transactions, ref: str) -> str:
    parsed = parse_ref(ref)
    if parsed.algorithm == "blake3":
        return parsed.hex
    with tx.read() as conn:
        row = conn.execute(
            sa.select(blobs.c.address).where(blobs.c.sha256 == parsed.hex).limit(1)
        ).first()
    if row is None:
        raise error("log.not-logged", f"no stored object for {ref}; prove it by --index", ref=ref)
    return str(row.address)


def _entry_index(
    conn: Connection, ref: str | None, address: str | None, index: int | None, size: int
) -> int:
    if index is not None:
        if type(index) is not int or not 0 <= index < size:
            raise error(
                "log.range",
                f"entry {index} is not in the checkpoint of size {size}",
                index=index,
                size=size,
            )
        if address is not None:
            got = conn.execute(
                sa.select(log_entries.c.address).where(log_entries.c.idx == index)
            ).scalar()
            if got != address:
                raise error(
                    "log.not-logged", f"entry {index} does not name {ref}", ref=ref, index=index
                )
        return index
    found = conn.execute(
        sa.select(sa.func.max(log_entries.c.idx)).where(
            *entries_naming(str(address)), log_entries.c.idx < size
        )
    ).scalar()
    if found is None:
        later = conn.execute(
            sa.select(log_entries.c.idx).where(*entries_naming(str(address))).limit(1)
        ).first()
        hint = "; sign a newer checkpoint first" if later is not None else ""
        if later is None and _queued(conn, str(address)):
            raise error(
                "log.not-integrated",
                f"the entry for {ref} is logged but not in the tree yet: run"
                " `evstore log integrate` (or `evstore log checkpoint`)",
                ref=ref,
            )
        raise error(
            "log.not-logged", f"no entry for {ref} in the checkpoint of size {size}{hint}", ref=ref
        )
    return int(found)


def _queued(conn: Connection, address: str) -> bool:
    """Whether an entry naming ``address`` waits in the integrator's queue."""
    return (
        conn.execute(
            sa.select(log_queue.c.batch).where(log_queue.c.address == address).limit(1)
        ).first()
        is not None
    )


def _sign(conn: Connection, signer: Signer) -> dict[str, Any]:
    """The body of :meth:`LogOps.checkpoint`, in one write transaction."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({LOG_LOCK})")
    verifier = _verifier(conn)
    if verifier is None:
        raise error("log.no-key", "the log has no key yet: run `evstore log init-key`")
    if signer.verifier.vkey() != verifier.vkey():
        raise error("log.key-mismatch", f"the key file is not the log's key {verifier.vkey()}")
    size = log_size(conn)
    new_root = root_at(conn, size)
    prev = _latest(conn)
    if prev is not None:
        try:
            old = verify_checkpoint(prev.note, verifier)
        except CheckpointError as err:
            raise error(
                "check.log-checkpoint",
                f"the previous checkpoint does not verify: {err.message}",
                size=int(prev.size),
            ) from None
        if old.size == size and old.root_hash == new_root:
            return {**_checkpoint_dict(prev, verifier), "new": False}
        proof = consistency_at(conn, old.size, size) if old.size <= size else []
        if not merkle.verify_consistency(old.size, size, old.root_hash, new_root, proof):
            raise error(
                "log.inconsistent",
                f"the log of size {size} does not extend the checkpoint of size {old.size}",
                old_size=old.size,
                new_size=size,
            )
    note = sign_checkpoint(Checkpoint(verifier.name, size, new_root), signer)
    now = _dt.datetime.now(_dt.UTC)
    conn.execute(sa.insert(log_checkpoints), {"size": size, "note": note, "signed_at": now})
    return {
        "size": size,
        "root": _b64(new_root),
        "origin": verifier.name,
        "note": note,
        "signed_at": utc_text(now),
        "new": True,
    }


def _b64decode(text: Any, what: str) -> bytes:
    try:
        raw = base64.b64decode(str(text).encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error, ValueError):
        raise error("log.proof-malformed", f"{what} is not base64") from None
    return raw


def verify_proof(
    text: str | bytes,
    vkey: str,
    content: bytes | None = None,
    *,
    policy: str | None = None,
) -> dict[str, Any]:
    """Verify a proof file made by ``evstore prove``; needs no store (docs/log.md).

    An inclusion proof (tlog-proof): the checkpoint's signature by ``vkey`` and origin, the
    RFC 9162 2.1.3.2 inclusion of the entry bytes it carries, the entry's format, and with
    ``content`` that the entry names exactly those bytes (address, SHA-256, size). A
    consistency proof (JSON): the signature of the new checkpoint (and the old one when the
    file carries it), then RFC 9162 2.1.4.2 from the old root to the new.

    Args:
        text: the proof file.
        vkey: the log's verifier key (``evstore log key``).
        content: the object's bytes (inclusion proofs only).
        policy: a witness policy text (store/tlog/cosignature.py ``Policy``): the checkpoint
            must also carry cosignatures of at least its quorum of witnesses.

    Returns:
        ``{"type": "inclusion", "index", "size", "root", "origin", "entry", "content":
        bool}`` or ``{"type": "consistency", "old_size", "old_root", "new_size", "new_root",
        "origin", "old_root_signed": bool}`` (roots base64).

    Raises:
        CheckpointError (``checkpoint.*``, ``tlog-proof.*``), InputError
        (``log.proof-malformed``, ``log.entry-malformed``, ``log.consistency``,
        ``log.content-mismatch``, ``input.invalid``, ``witness.policy``, ``witness.key``,
        ``witness.quorum``). With a policy the result has ``"cosigned"``: ``{witness name:
        timestamp}``.
    """
    verifier = parse_vkey(vkey)
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise error("log.proof-malformed", "a proof file is UTF-8 text") from None
    if text.startswith("{"):
        if content is not None:
            raise error("input.invalid", "--content applies to inclusion proofs only")
        out = _verify_consistency_file(text, verifier)
        if policy is not None:
            out["cosigned"] = policy_cosigners(policy, verifier, json.loads(text)["checkpoint"])
        return out
    proof = parse_tlog_proof(text)
    if proof.extra is None:
        raise error("log.proof-malformed", "the tlog-proof carries no log entry (extra line)")
    cp = verify_tlog_proof(proof, merkle.leaf_hash(proof.extra), verifier)
    cosigned = None if policy is None else policy_cosigners(policy, verifier, proof.checkpoint)
    entry = parse_entry(proof.extra)
    if content is not None:
        content_matches(entry, content)
    return {
        "type": "inclusion",
        "index": proof.index,
        "size": cp.size,
        "root": _b64(cp.root_hash),
        "origin": cp.origin,
        "entry": entry,
        "content": content is not None,
        **({} if cosigned is None else {"cosigned": cosigned}),
    }


def _verify_consistency_file(text: str, verifier: Verifier) -> dict[str, Any]:
    from ..core.canonical import (
        loads,  # the strict reader: no duplicate keys, NaN or big numbers
    )

    try:
        doc = loads(text)
    except InputError as err:
        raise error(
            "log.proof-malformed", f"the consistency proof is not strict JSON ({err.message})"
        ) from None
    keys = {"format", "old_size", "old_root", "new_size", "proof", "checkpoint", "old_checkpoint"}
    if not isinstance(doc, dict) or set(doc) != keys or doc["format"] != CONSISTENCY_FORMAT:
        raise error("log.proof-malformed", f"a consistency proof is a {CONSISTENCY_FORMAT} object")
    if not isinstance(doc["proof"], list) or not isinstance(doc["checkpoint"], str):
        raise error("log.proof-malformed", "proof is a list of base64 hashes, checkpoint a note")
    if any(type(doc[k]) is not int or doc[k] < 0 for k in ("old_size", "new_size")):
        raise error("log.proof-malformed", "old_size and new_size are non-negative integers")
    cp = verify_checkpoint(doc["checkpoint"], verifier)
    old_size, old_root = doc["old_size"], _b64decode(doc["old_root"], "old_root")
    signed = False
    if doc["old_checkpoint"] is not None:
        old = verify_checkpoint(str(doc["old_checkpoint"]), verifier)
        if (old.size, old.root_hash) != (old_size, old_root):
            raise error("log.consistency", "old_size/old_root differ from the old checkpoint")
        signed = True
    hashes: Sequence[bytes] = [_b64decode(h, "a proof hash") for h in doc["proof"]]
    if doc["new_size"] != cp.size or not merkle.verify_consistency(
        old_size, cp.size, old_root, cp.root_hash, hashes
    ):
        raise error(
            "log.consistency",
            f"the proof does not show the tree of size {old_size!r} is a prefix of the"
            f" checkpoint of size {cp.size}",
        )
    return {
        "type": "consistency",
        "old_size": old_size,
        "old_root": _b64(old_root),
        "new_size": cp.size,
        "new_root": _b64(cp.root_hash),
        "origin": cp.origin,
        "old_root_signed": signed,
    }
