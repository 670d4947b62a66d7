"""``evstore check`` for the tamper-evident log: recompute the tree, compare what is stored.

The entries are read in index order: each must be present (indices dense from 0), well
formed (store/objects/log_entries.py ``parse_entry``), and its leaf hash is recomputed. From the
leaves every complete subtree is recomputed, level by level, and compared with each stored
``log_nodes`` row (a changed hash, a missing row and a row that should not exist are each
named by level and index). Every stored checkpoint must verify under the stored verifier key
and carry the root the entries give at its size. Memory: one level of hashes at a time.

Faults (CorruptionError, ``details["address"]`` is ``"log"`` or the entry's object):
``check.log-entry``, ``check.log-node``, ``check.log-checkpoint``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.errors import EvstoreError, InputError, error
from ..db.tables import log_checkpoints, log_entries, log_keys, log_nodes
from ..objects.log_entries import parse_entry
from ..tlog import merkle
from ..tlog.checkpoint import CheckpointError, parse_vkey, verify_checkpoint

__all__ = ["check_log"]

_PAGE = 5000


def _entry_faults(conn: Connection, leaves: list[bytes]) -> Iterator[EvstoreError]:
    """Stream the entries into ``leaves`` (leaf hashes by index), yielding their faults."""
    last = -1
    while True:
        rows = conn.execute(
            sa.select(log_entries.c.idx, log_entries.c.address, log_entries.c.entry)
            .where(log_entries.c.idx > last)
            .order_by(log_entries.c.idx)
            .limit(_PAGE)
        ).all()
        if not rows:
            return
        for r in rows:
            idx, data = int(r.idx), bytes(r.entry)
            if idx != len(leaves):
                yield error(
                    "check.log-entry",
                    f"log entries {len(leaves)}..{idx - 1} are missing",
                    address="log",
                    index=len(leaves),
                )
                while len(leaves) < idx:  # keep indices aligned; the tree cannot match
                    leaves.append(bytes(merkle.HASH_SIZE))
            try:
                entry = parse_entry(data)
                if entry["address"] != "blake3:" + r.address:
                    raise error("log.entry-malformed", "names another object than its row")
            except InputError as err:
                yield error(
                    "check.log-entry",
                    f"log entry {idx}: {err.message}",
                    address="blake3:" + str(r.address),
                    index=idx,
                )
            leaves.append(merkle.leaf_hash(data))
        last = int(rows[-1].idx)


def _node_faults(conn: Connection, level: int, hashes: list[bytes]) -> Iterator[EvstoreError]:
    """Compare the stored level ``level`` with the recomputed ``hashes``."""
    seen = 0
    last = -1
    while True:
        rows = conn.execute(
            sa.select(log_nodes.c.idx, log_nodes.c.hash)
            .where(log_nodes.c.level == level, log_nodes.c.idx > last)
            .order_by(log_nodes.c.idx)
            .limit(_PAGE)
        ).all()
        if not rows:
            break
        for r in rows:
            idx = int(r.idx)
            if idx < len(hashes) and bytes(r.hash) == hashes[idx]:  # the common case first
                seen += 1
                continue
            where: dict[str, Any] = {"address": "log", "level": level, "index": idx}
            if idx >= len(hashes):
                yield error(
                    "check.log-node", f"log subtree ({level}, {idx}) should not exist", **where
                )
            elif bytes(r.hash) != hashes[idx]:
                yield error(
                    "check.log-node",
                    f"log subtree ({level}, {idx}) differs from the one its entries give",
                    **where,
                )
            seen += idx < len(hashes)
        last = int(rows[-1].idx)
    if seen < len(hashes):
        yield error(
            "check.log-node",
            f"{len(hashes) - seen} subtree(s) of level {level} are not stored",
            address="log",
            level=level,
        )


def _roots(leaves: list[bytes], sizes: list[int]) -> dict[int, bytes]:
    """The root at each of ``sizes`` (ascending), streaming the leaves once."""
    tree = merkle.CompactTree()
    out: dict[int, bytes] = {}
    want = iter(sorted(s for s in sizes if s <= len(leaves)))
    nxt = next(want, None)
    while nxt == 0:
        out[0] = merkle.EMPTY_ROOT
        nxt = next(want, None)
    for leaf in leaves:
        tree.append_leaf_hash(leaf)
        while nxt is not None and tree.size == nxt:
            out[nxt] = tree.root()
            nxt = next(want, None)
    return out


def _checkpoint_faults(conn: Connection, leaves: list[bytes]) -> Iterator[EvstoreError]:
    rows = conn.execute(
        sa.select(log_checkpoints.c.size, log_checkpoints.c.note).order_by(log_checkpoints.c.size)
    ).all()
    keys = conn.execute(
        sa.select(log_keys.c.vkey).order_by(log_keys.c.added_at.desc(), log_keys.c.vkey)
    ).all()
    if not rows:
        return
    roots = _roots(leaves, [int(r.size) for r in rows])

    def fault(size: int, why: str) -> EvstoreError:
        return error("check.log-checkpoint", f"checkpoint {size}: {why}", address="log", size=size)

    if not keys:
        yield fault(int(rows[-1].size), "the log has checkpoints but no verifier key")
        return
    try:
        verifier = parse_vkey(keys[0].vkey)
    except CheckpointError as err:
        yield fault(int(rows[-1].size), f"the stored verifier key is malformed: {err.message}")
        return
    for r in rows:
        size = int(r.size)
        try:
            cp = verify_checkpoint(r.note, verifier)
        except CheckpointError as err:
            yield fault(size, f"does not verify ({err.code}: {err.message})")
            continue
        if cp.size != size:
            yield fault(size, f"is stored as size {size} but signs size {cp.size}")
        elif size not in roots:
            yield fault(size, f"is beyond the log's {len(leaves)} entries")
        elif cp.root_hash != roots[size]:
            yield fault(size, "signs another root than the entries give")


def check_log(conn: Connection) -> Iterator[EvstoreError]:
    """Every fault of the log on ``conn`` (one read snapshot); see the module docstring."""
    leaves: list[bytes] = []
    yield from _entry_faults(conn, leaves)
    level, hashes = 0, leaves
    while True:
        yield from _node_faults(conn, level, hashes)
        if len(hashes) < 2:
            extra: Any = conn.execute(
                sa.select(sa.func.count()).where(log_nodes.c.level > level)
            ).scalar()
            if extra:
                yield error(
                    "check.log-node",
                    f"{extra} subtree(s) above level {level} should not exist",
                    address="log",
                    level=level + 1,
                )
            break
        hashes = [merkle.node_hash(hashes[i], hashes[i + 1]) for i in range(0, len(hashes) - 1, 2)]
        level += 1
    yield from _checkpoint_faults(conn, leaves)
