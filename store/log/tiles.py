"""The log as C2SP tlog-tiles: served, exported to a directory, and verified from tiles alone.

Tiles are read from the same rows the proofs use: a level-``L`` tile's hashes are the stored
complete subtrees ``log_nodes (8 * L, N * 256 + i)``, an entry bundle's entries the rows of
``log_entries`` (store/tlog/tiles.py has the format). A tile is served only within the latest
signed checkpoint: a full tile when all its 256 hashes lie within it (immutable), a partial
tile of width ``W`` when its ``W`` hashes do (for the latest size or any earlier one).

:func:`export_tiles` writes ``checkpoint`` and ``tile/...`` under a directory for static
hosting, incrementally (a full tile already there is kept; files appear by rename, the
checkpoint last, so a reader never sees a checkpoint whose tiles are missing).
:func:`verify_tiles_inclusion` needs no store: it fetches from a URL prefix or a directory.
"""

from __future__ import annotations

import base64
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.digests import digest_bytes
from ..core.errors import error
from ..db.tables import log_checkpoints, log_entries, log_nodes
from ..db.transactions import Transactions
from ..objects.log_entries import parse_entry
from ..tlog import merkle
from ..tlog.checkpoint import Verifier, parse_vkey, verify_checkpoint
from ..tlog.cosignature import Policy
from ..tlog.tiles import (
    MAX_ENTRY,
    TILE_HEIGHT,
    TILE_WIDTH,
    TileRef,
    TileTree,
    bundle_entries,
    parse_bundle,
    parse_tile_path,
    tiles_for_size,
)

__all__ = [
    "FETCH_MAX",
    "content_matches",
    "export_tiles",
    "fetcher",
    "latest_note",
    "policy_cosigners",
    "read_tile",
    "verify_tiles_inclusion",
]


def _latest_row(conn: Connection) -> Any:
    return conn.execute(
        sa.select(log_checkpoints.c.size, log_checkpoints.c.note)
        .order_by(log_checkpoints.c.size.desc())
        .limit(1)
    ).first()


def latest_note(tx: Transactions) -> str:
    """The latest signed checkpoint's note (``<prefix>/checkpoint``).

    Raises:
        NotFound: ``log.no-checkpoint``.
    """
    with tx.read() as conn:
        row = _latest_row(conn)
    if row is None:
        raise error("log.no-checkpoint", "no signed checkpoint yet")
    return str(row.note)


def _tile_bytes(conn: Connection, ref: TileRef) -> bytes:
    first = ref.index * TILE_WIDTH
    if ref.level is None:
        rows = conn.execute(
            sa.select(log_entries.c.idx, log_entries.c.entry)
            .where(log_entries.c.idx >= first, log_entries.c.idx < first + ref.width)
            .order_by(log_entries.c.idx)
        ).all()
        data = [bytes(r.entry) for r in rows]
    else:
        rows = conn.execute(
            sa.select(log_nodes.c.idx, log_nodes.c.hash)
            .where(
                log_nodes.c.level == ref.level * TILE_HEIGHT,
                log_nodes.c.idx >= first,
                log_nodes.c.idx < first + ref.width,
            )
            .order_by(log_nodes.c.idx)
        ).all()
        data = [bytes(r.hash) for r in rows]
    if [int(r.idx) for r in rows] != list(range(first, first + ref.width)):
        raise error(
            "corruption.log",
            f"the log lacks rows of {ref.path()}",
            level=ref.level,
            index=ref.index,
        )
    return bundle_entries(data) if ref.level is None else b"".join(data)


def _within(ref: TileRef, size: int) -> bool:
    """Whether the tile's hashes (or entries) all lie within a tree of ``size``."""
    level = 0 if ref.level is None else ref.level
    return (ref.index * TILE_WIDTH + ref.width) << (TILE_HEIGHT * level) <= size


def read_tile(tx: Transactions, path: str) -> tuple[bytes, bool]:
    """The bytes of resource ``tile/...`` and whether it is a full (immutable) tile.

    Raises:
        InputError: ``tiles.malformed``. NotFound: ``tiles.missing`` (beyond the latest
            signed checkpoint, or before the first). CorruptionError: ``corruption.log``.
    """
    ref = parse_tile_path(path)
    with tx.read() as conn:
        row = _latest_row(conn)
        size = 0 if row is None else int(row.size)
        if not _within(ref, size):
            raise error(
                "tiles.missing",
                f"{path} is not within the latest signed checkpoint (size {size})",
                path=path,
                size=size,
            )
        return _tile_bytes(conn, ref), ref.full


#: Exported files are public (for static hosting): readable by a web server's own user.
_FILE_MODE = 0o644


def _write_atomic(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            os.fchmod(f.fileno(), _FILE_MODE)  # mkstemp made it 0600
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def export_tiles(tx: Transactions, directory: str | os.PathLike[str]) -> dict[str, Any]:
    """Write the log's tiles at the latest signed checkpoint under ``directory``.

    Incremental: a full tile (or bundle) already present with its length is not written
    again; partial tiles of the current size are written when missing; then
    ``checkpoint`` is replaced. Every file appears by an atomic rename, so an export killed
    at any point leaves whole files only, and the next export completes it. Files are
    written with mode 0644 (public data, read by a web server running as another user).

    Returns:
        ``{"size": the checkpoint's size, "written": files written, "kept": full tiles
        already there, "directory"}``.

    Raises:
        NotFound: ``log.no-checkpoint``. CorruptionError: ``corruption.log``.
    """
    root = Path(directory)
    with tx.read() as conn:
        row = _latest_row(conn)
        if row is None:
            raise error("log.no-checkpoint", "no signed checkpoint to export")
        size, note = int(row.size), str(row.note)
        written = kept = 0
        for ref in tiles_for_size(size):
            target = root / ref.path()
            if ref.full and ref.level is not None and target.is_file():
                if target.stat().st_size == TILE_WIDTH * merkle.HASH_SIZE:
                    kept += 1
                    continue
            if ref.full and ref.level is None and target.is_file():
                kept += 1  # a full bundle never changes once written whole (by rename)
                continue
            if not ref.full and target.is_file():
                continue  # this size's partial tile, already written
            _write_atomic(target, _tile_bytes(conn, ref))
            written += 1
    _write_atomic(root / "checkpoint", note.encode("utf-8"))
    return {"size": size, "written": written + 1, "kept": kept, "directory": str(root)}


#: The most bytes one fetched file may hold: an entry bundle of 256 entries of 65,535 bytes
#: each with its 2-byte length (a checkpoint or a hash tile is far smaller).
FETCH_MAX = TILE_WIDTH * (2 + MAX_ENTRY)


def _too_large(where: str) -> Exception:
    return error(
        "tiles.malformed",
        f"{where} is over {FETCH_MAX} bytes, more than any checkpoint, tile or entry bundle",
        limit=FETCH_MAX,
    )


def fetcher(source: str, timeout: float = 30.0) -> Callable[[str], bytes]:
    """``fetch(path)`` for a tiles URL prefix (``http(s)://...``) or a directory.

    At most :data:`FETCH_MAX` bytes of a file are read (a hostile source may answer without
    end); ``timeout`` (seconds) bounds each network wait.

    Raises (from ``fetch``): NotFound ``tiles.missing`` (no such file, an HTTP error, the
    server unreachable); InputError ``tiles.malformed`` (a file over FETCH_MAX bytes).
    """
    if source.startswith(("http://", "https://")):
        base = source.rstrip("/") + "/"

        def get(path: str) -> bytes:
            try:
                with urllib.request.urlopen(base + path, timeout=timeout) as r:
                    data = bytes(r.read(FETCH_MAX + 1))
            except (urllib.error.URLError, OSError) as exc:
                raise error("tiles.missing", f"cannot fetch {base + path}: {exc}") from None
            if len(data) > FETCH_MAX:
                raise _too_large(base + path)
            return data

        return get
    folder = Path(source)

    def read(path: str) -> bytes:
        try:
            with (folder / path).open("rb") as fh:
                data = fh.read(FETCH_MAX + 1)
        except OSError as exc:
            raise error("tiles.missing", f"cannot read {folder / path}: {exc.strerror}") from None
        if len(data) > FETCH_MAX:
            raise _too_large(str(folder / path))
        return data

    return read


def content_matches(entry: dict[str, Any], content: bytes) -> None:
    """Raise ``log.content-mismatch`` unless ``entry`` names exactly ``content``
    (BLAKE3 address, SHA-256 and size).
    """  # noqa: D205
    dg = digest_bytes(content)
    if (entry["address"], entry["sha256"], entry["size"]) != (
        dg.address,
        "sha256:" + dg.sha256,
        dg.size,
    ):
        raise error(
            "log.content-mismatch",
            f"the content is {dg.address} ({dg.size} bytes), the entry names {entry['address']}",
            content=dg.address,
            entry=entry["address"],
        )


def verify_tiles_inclusion(
    source: str | Callable[[str], bytes],
    vkey: str,
    index: int,
    content: bytes | None = None,
    *,
    policy: str | None = None,
) -> dict[str, Any]:
    """Verify entry ``index`` of a tiled log from its tiles alone (no store).

    Fetches ``checkpoint`` and checks its signature by ``vkey``, rebuilds the root at its
    size from the tiles (it must be the signed root), reads the entry from its bundle
    (its leaf hash must be the level-0 tile's), and verifies the RFC 9162 2.1.3.2 inclusion
    proof computed from the tiles; with ``content``, that the entry names exactly those
    bytes; with ``policy``, that the fetched checkpoint carries cosignatures of at least
    the policy's quorum of witnesses (checked before any tile is fetched).

    Args:
        source: a URL prefix, a directory (``evstore log tiles export``), or a fetch callable.
        vkey: the log's verifier key.
        index: the entry's index.
        content: the object's bytes, optionally.
        policy: a witness policy text (store/tlog/cosignature.py ``Policy``), optionally.

    Returns:
        As :func:`evstore.log.ops.verify_proof` for an inclusion proof, plus ``"tiles": True``
        (and with a policy ``"cosigned"``: ``{witness name: timestamp}``).

    Raises:
        CheckpointError (``checkpoint.*``); InputError ``tiles.malformed``, ``log.range``,
        ``tlog-proof.inclusion`` (a root, leaf or path that does not verify),
        ``log.entry-malformed``, ``log.content-mismatch``, ``witness.policy``,
        ``witness.key``, ``witness.quorum``; NotFound ``tiles.missing``.
    """
    fetch = fetcher(source) if isinstance(source, str) else source
    verifier = parse_vkey(vkey)
    note = fetch("checkpoint").decode("utf-8", "replace")
    cp = verify_checkpoint(note, verifier)
    cosigned = None if policy is None else policy_cosigners(policy, verifier, note)
    if type(index) is not int or not 0 <= index < cp.size:
        raise error("log.range", f"entry {index} is not in the checkpoint of size {cp.size}")
    tree = TileTree(cp.size, fetch)
    if merkle.root(cp.size, tree) != cp.root_hash:
        raise error("tlog-proof.inclusion", "the tiles do not give the signed root")
    n = index // TILE_WIDTH
    width = min(TILE_WIDTH, cp.size - n * TILE_WIDTH)
    bundle = parse_bundle(fetch(TileRef(None, n, width).path()))
    if len(bundle) != width:
        raise error("tiles.malformed", f"entry bundle {n} has {len(bundle)} entries, not {width}")
    data = bundle[index % TILE_WIDTH]
    leaf = merkle.leaf_hash(data)
    proof = merkle.inclusion_proof(index, cp.size, tree)
    if tree.subtree_hash(0, index) != leaf or not merkle.verify_inclusion(
        leaf, index, cp.size, proof, cp.root_hash
    ):
        raise error("tlog-proof.inclusion", f"entry {index} does not verify against the tiles")
    entry = parse_entry(data)
    if content is not None:
        content_matches(entry, content)
    return {
        "type": "inclusion",
        "index": index,
        "size": cp.size,
        "root": base64.b64encode(cp.root_hash).decode("ascii"),
        "origin": cp.origin,
        "entry": entry,
        "content": content is not None,
        "tiles": True,
        **({} if cosigned is None else {"cosigned": cosigned}),
    }


def policy_cosigners(policy_text: str, verifier: Verifier, note: str) -> dict[str, int]:
    """The verified cosigners of the signed ``note`` under a witness policy text.

    Returns:
        ``{witness name: cosignature timestamp (POSIX seconds)}``, at least the quorum.

    Raises:
        InputError: ``witness.policy`` (the text does not parse, or names another log key
            than ``verifier``'s), ``witness.key``, ``witness.quorum`` (too few cosigned).
    """
    policy = Policy.parse(policy_text)
    if policy.log.vkey() != verifier.vkey():
        raise error("witness.policy", "the policy names another log key than --key")
    return policy.check(note)
