r"""Witnesses, both ways (issue 26, C2SP tlog-witness and tlog-cosignature; docs/log.md).

*The store as a witness* (:func:`add_checkpoint`): ``POST P/add-checkpoint`` of another
log's checkpoint. The logs followed are the ``witness.logs`` setting (their verifier keys;
a key's name is the log's origin). One transaction reads the latest checkpoint cosigned for
the origin from ``witness_logs``, decides (:func:`evstore.tlog.cosignature.witness_decision`:
signature, old size, consistency proof, a fork at the same size) and replaces the row; the
cosignature is made only after that commit, so the witness has persisted what it cosigns
before it answers, and two requests cannot roll it back (PostgreSQL: the advisory lock
:data:`WITNESS_LOCK`; SQLite: the one writer).

*The log asking its witnesses* (:func:`ask_witnesses`): the ``log.witness_policy`` setting
names them (a policy text, :class:`~evstore.tlog.cosignature.Policy`, each witness with its
submission URL). For the latest signed checkpoint, each witness whose valid cosignature it
does not carry yet is sent an add-checkpoint with a consistency proof from the size that
witness last cosigned (the largest checkpoint carrying its cosignature, else 0). A 409
``text/x.tlog.size`` answer names the size the witness holds: the request is sent again
from there (at most :data:`MAX_ATTEMPTS` times). A verified cosignature line is appended to
the stored note (``log_checkpoints.note``), so ``/checkpoint``, proofs and archives carry it.
Every other outcome (unreachable, a refusal, a malformed answer) is reported, not raised:
the checkpoint stays signed, with fewer cosignatures, and the next round asks again.
"""

from __future__ import annotations

import datetime as _dt
import time
import urllib.error
import urllib.request
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.errors import EvstoreError, error
from ..core.settings import setting
from ..core.times import utc_text
from ..db.settings import load_settings
from ..db.tables import log_checkpoints, log_keys, witness_logs
from ..db.transactions import Transactions
from ..objects.log_entries import consistency_at
from ..tlog.checkpoint import parse_vkey
from ..tlog.cosignature import (
    Cosigner,
    CosignerKey,
    Policy,
    format_add_checkpoint,
    parse_add_checkpoint,
    parse_cosignature_lines,
    verified_cosigners,
    witness_decision,
)

__all__ = [
    "MAX_ATTEMPTS",
    "SIZE_MEDIA_TYPE",
    "WITNESS_LOCK",
    "add_checkpoint",
    "ask_witnesses",
    "check_witness_setting",
    "witnessed",
]

#: PostgreSQL advisory lock held by an add-checkpoint transaction (one at a time).
WITNESS_LOCK = 7403012514
#: Content-Type of a 409 answer naming the witness's size (c2sp.org/tlog-witness).
SIZE_MEDIA_TYPE = "text/x.tlog.size"
#: Requests per witness and round: the first, then retries from a size a 409 named.
MAX_ATTEMPTS = 3
#: Checkpoints searched (newest first) for a witness's last cosignature.
_SCAN = 64
_DASH = "\u2014 "


def _followed(conn: Connection) -> dict[str, Any]:
    logs = {}
    for vkey in setting(load_settings(conn), "witness.logs"):
        verifier = parse_vkey(vkey)
        logs[verifier.name] = verifier
    return logs


def add_checkpoint(tx: Transactions, cosigner: Cosigner, body: bytes) -> dict[str, Any]:
    """Witness one add-checkpoint request (c2sp.org/tlog-witness): record, then cosign.

    Args:
        tx: the witness store's transactions.
        cosigner: the witness key (``evstore witness init-key``).
        body: the request body (``old <size>``, proof lines, a blank line, the checkpoint).

    Returns:
        ``{"origin", "size", "cosignature": the line with its newline}``.

    Raises:
        InputError: ``witness.request`` (400), ``witness.old-size`` (400),
            ``witness.unsigned`` (403), ``witness.conflict`` (409; ``details["size"]`` the
            size held when the old size is not it), ``witness.inconsistent`` (422),
            ``checkpoint.key`` (a malformed ``witness.logs`` key).
        NotFound: ``witness.unknown-log`` (404). Nothing is recorded on any error.
    """
    old_size, proof, note = parse_add_checkpoint(body)

    def work(conn: Connection) -> dict[str, Any]:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({WITNESS_LOCK})")
        logs = _followed(conn)
        origin = note.split("\n", 1)[0]
        row = conn.execute(
            sa.select(witness_logs.c.size, witness_logs.c.root).where(
                witness_logs.c.origin == origin
            )
        ).first()
        latest = None if row is None else (int(row.size), bytes(row.root))
        checkpoint = witness_decision(logs, latest, old_size, proof, note)
        values = {
            "vkey": logs[checkpoint.origin].vkey(),
            "size": checkpoint.size,
            "root": checkpoint.root_hash,
            "note": note,
            "cosigned_at": _dt.datetime.now(_dt.UTC),
        }
        if row is None:
            conn.execute(sa.insert(witness_logs), {"origin": checkpoint.origin, **values})
        else:
            conn.execute(
                sa.update(witness_logs).where(witness_logs.c.origin == checkpoint.origin),
                values,
            )
        return {"origin": checkpoint.origin, "size": checkpoint.size}

    done = tx.run_transaction(work)
    # Persisted first (the spec's MUST): a crash here loses a cosignature, never the state.
    done["cosignature"] = cosigner.cosign(note, max(1, int(time.time())))
    return done


def check_witness_setting(name: str, value: Any) -> None:
    """Refuse a value of ``log.witness_policy`` or ``witness.logs`` that could never work,
    when it is set rather than at the next signing round or request (other names: nothing).

    Raises:
        InputError: ``witness.policy``, ``witness.key``, ``checkpoint.key`` (the policy text
            or a key does not parse; a witness URL that is not absolute http(s)), or
            ``config.value`` (``witness.logs`` names one log origin twice: only one key
            could be followed).
    """  # noqa: D205
    if name == "log.witness_policy" and value.strip():
        Policy.parse(value)
    elif name == "witness.logs":
        seen: dict[str, str] = {}
        for vkey in value:
            origin = parse_vkey(vkey).name
            if origin in seen:
                raise error(
                    "config.value",
                    f"witness.logs names the log {origin!r} twice; one key a log",
                    "/" + str(value.index(vkey)),
                )
            seen[origin] = vkey


def witnessed(tx: Transactions) -> list[dict[str, Any]]:
    """The logs this store witnesses: ``[{"origin", "vkey", "size", "cosigned_at"}]``."""
    with tx.read() as conn:
        rows = conn.execute(sa.select(witness_logs).order_by(witness_logs.c.origin)).all()
    return [
        {
            "origin": r.origin,
            "vkey": r.vkey,
            "size": int(r.size),
            "cosigned_at": utc_text(r.cosigned_at),
        }
        for r in rows
    ]


def _last_cosigned(conn: Connection, key: CosignerKey) -> int:
    """The size of the newest checkpoint carrying ``key``'s valid cosignature, else 0."""
    rows = conn.execute(
        sa.select(log_checkpoints.c.size, log_checkpoints.c.note)
        .order_by(log_checkpoints.c.size.desc())
        .limit(_SCAN)
    ).all()
    for row in rows:
        if f"\n{_DASH}{key.name} " in row.note and verified_cosigners(row.note, [key]):
            return int(row.size)
    return 0


def _post(url: str, body: bytes, timeout_s: float) -> tuple[int, str, bytes]:
    """``(status, content type, body)`` of one POST; OSError when unreachable."""
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "text/plain; charset=utf-8"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            return answer.status, answer.headers.get("Content-Type", ""), answer.read(65536)
    except urllib.error.HTTPError as refused:
        with refused:
            return refused.code, refused.headers.get("Content-Type", ""), refused.read(65536)


def _merge(tx: Transactions, size: int, line: str) -> None:
    """Append a verified cosignature line to the stored checkpoint at ``size``.

    Only appended: the log's own signature and other witnesses' lines stay as they are
    (a verifier ignores lines of keys it does not know, signed-note).
    """

    def work(conn: Connection) -> None:
        note = conn.execute(
            sa.select(log_checkpoints.c.note).where(log_checkpoints.c.size == size)
        ).scalar_one()
        if line in note.split("\n\n", 1)[-1]:
            return  # another server's round stored it already
        merged = note.rstrip("\n") + "\n" + line
        conn.execute(
            sa.update(log_checkpoints).where(log_checkpoints.c.size == size), {"note": merged}
        )

    tx.run_transaction(work)


def _ask_one(
    tx: Transactions, key: CosignerKey, url: str, size: int, note: str, timeout_s: float
) -> str:
    """Ask one witness; the cosignature line it gave, verified. Raises EvstoreError or OSError."""
    with tx.read() as conn:
        old = _last_cosigned(conn, key)
    endpoint = url.rstrip("/") + "/add-checkpoint"
    for _ in range(MAX_ATTEMPTS):
        with tx.read() as conn:
            proof = consistency_at(conn, old, size) if 0 < old < size else []
        status, media, answer = _post(endpoint, format_add_checkpoint(old, proof, note), timeout_s)
        if status == 200:
            lines = parse_cosignature_lines(answer)
            for line in lines:
                if verified_cosigners(note.rstrip("\n") + "\n" + line, [key]):
                    return line
            raise error("witness.response", f"{key.name} answered no valid cosignature")
        held = answer.decode("ascii", "replace").strip()
        if status == 409 and media.split(";")[0].strip() == SIZE_MEDIA_TYPE and held.isdigit():
            if int(held) > size:
                raise error(
                    "witness.conflict",
                    f"{key.name} holds a checkpoint of size {held}, larger than this log's "
                    f"{size}: the log lost entries or was forked",
                    size=int(held),
                )
            if int(held) == old:
                break
            old = int(held)
            continue
        raise error(
            "witness.response",
            f"{key.name} refused the checkpoint of size {size}: HTTP {status} {held[:200]}",
            status=status,
        )
    raise error("witness.conflict", f"{key.name} kept answering 409 from size {old}", size=old)


def ask_witnesses(tx: Transactions, timeout_s: float = 5.0) -> dict[str, Any]:
    """Ask the policy's witnesses to cosign the latest checkpoint (the module docstring).

    Args:
        tx: the log's store.
        timeout_s: seconds each HTTP request may take (connect and read).

    Returns:
        ``{"size": checkpoint size or None, "cosigned": [names newly cosigned], "present":
        [names already there], "failed": {name: message}, "quorum": N, "witnesses": M}``.

    Raises:
        InputError: ``witness.policy`` (a policy that does not parse, or names another log
            key), ``witness.key``. A witness's failure is never raised: see ``failed``.
    """
    with tx.read() as conn:
        text = setting(load_settings(conn), "log.witness_policy")
        row = conn.execute(
            sa.select(log_checkpoints.c.size, log_checkpoints.c.note)
            .order_by(log_checkpoints.c.size.desc())
            .limit(1)
        ).first()
        vkey = conn.execute(
            sa.select(log_keys.c.vkey).order_by(log_keys.c.added_at.desc()).limit(1)
        ).scalar()
    out: dict[str, Any] = {"size": None, "cosigned": [], "present": [], "failed": {}}
    if not text.strip():
        return {**out, "quorum": 0, "witnesses": 0}
    policy = Policy.parse(text)
    out.update(quorum=policy.quorum, witnesses=len(policy.witnesses))
    if vkey is not None and policy.log.vkey() != vkey:
        raise error("witness.policy", "log.witness_policy names another log key than the log's")
    if row is None:
        return out
    size, note = int(row.size), str(row.note)
    out["size"] = size
    for key in policy.witnesses:
        if verified_cosigners(note, [key]):
            out["present"].append(key.name)
            continue
        url = policy.urls.get(key.name)
        if url is None:
            out["failed"][key.name] = "no submission URL in the policy"
            continue
        try:
            line = _ask_one(tx, key, url, size, note, timeout_s)
        except EvstoreError as err:
            out["failed"][key.name] = f"{err.code}: {err.message}"
            continue
        except OSError as err:  # unreachable, refused, timed out: asked again next round
            out["failed"][key.name] = f"unreachable: {err}"
            continue
        _merge(tx, size, line)
        out["cosigned"].append(key.name)
    return out
