"""Run bundles sent as tar archives: received to a spool file, unpacked with no escape.

Only a plain (uncompressed) POSIX tar is taken. Every member must be a regular file or a
directory with a relative name of plain segments: an absolute name, a ``..`` or ``.``
segment, a backslash, a NUL, a symbolic or hard link, a device or FIFO refuses the whole
archive (``bundle.archive-unsafe``, 422) before anything is written to the store. The
bundle is the archive's root when it holds ``index.json``, else its one top directory.
"""

from __future__ import annotations

import os
import tarfile
import tempfile
from pathlib import Path
from typing import IO, Any

from fastapi import Request

from .. import EvstoreError, error

__all__ = ["MAX_MEMBERS", "receive_tar", "unpack_bundle"]

#: The most members one archive may have.
MAX_MEMBERS = 100_000
_SPOOL = 8 << 20


async def receive_tar(request: Request) -> IO[bytes]:
    """The request body in a spooled temporary file (the guard bounds its size)."""
    spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=_SPOOL)
    try:
        async for chunk in request.stream():
            spool.write(chunk)
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool


def _unsafe(name: str, why: str) -> EvstoreError:
    return error(
        "bundle.archive-unsafe", f"archive member {name!r} {why}; nothing was stored", member=name
    )


def _check(member: tarfile.TarInfo) -> None:
    name = member.name
    if not (member.isfile() or member.isdir()):
        raise _unsafe(name, "is a link, device or FIFO (only files and directories)")
    if "\x00" in name or "\\" in name:
        raise _unsafe(name, "has a NUL or a backslash")
    if name.startswith("/") or os.path.isabs(name):
        raise _unsafe(name, "is an absolute path")
    parts = [p for p in name.rstrip("/").split("/")]
    if any(p in ("", ".", "..") for p in parts):
        raise _unsafe(name, "has an empty, '.' or '..' segment")


def unpack_bundle(spool: IO[bytes], into: str, limit: int) -> str:
    """Check every member of the archive, then unpack it under ``into``.

    Returns:
        The bundle directory (``into`` or its one top directory).

    Raises:
        InputError: ``bundle.archive-malformed`` (not a plain tar, no ``index.json``).
        ContractError: ``bundle.archive-unsafe`` (see the module docstring; also more than
            :data:`MAX_MEMBERS` members or more than ``limit`` bytes in all).
    """
    try:
        archive = tarfile.open(fileobj=spool, mode="r:")
    except (tarfile.TarError, OSError) as exc:
        raise error(
            "bundle.archive-malformed", f"the body is not a plain tar archive ({exc})"
        ) from None
    with archive:
        members: list[tarfile.TarInfo] = []
        total = 0
        try:
            # Member by member, each checked as it is read: reading stops at the first
            # member past the count or size limit or the first unsafe one (an archive of
            # 200,000 empty members is refused after MAX_MEMBERS + 1 headers, not listed).
            while (m := archive.next()) is not None:
                if len(members) >= MAX_MEMBERS:
                    raise _unsafe(m.name, f"is past {MAX_MEMBERS} members")
                _check(m)
                total += m.size
                if total > limit:
                    raise _unsafe(m.name, f"takes the archive past {limit} bytes")
                members.append(m)
        except (tarfile.TarError, OSError) as exc:
            raise error(
                "bundle.archive-malformed", f"the tar archive cannot be read ({exc})"
            ) from None
        names = {m.name.rstrip("/") for m in members}
        tops = {n.split("/", 1)[0] for n in names}
        root = Path(into)
        if "index.json" not in names:
            top = next(iter(tops)) if len(tops) == 1 else None
            if top is None or f"{top}/index.json" not in names:
                raise error(
                    "bundle.archive-malformed",
                    "the archive holds no index.json at its root or in one top directory",
                )
            root = root / top
        names_seen: set[str] = set()
        for m in members:  # one entry twice: which copy counts would be a guess
            if m.name.rstrip("/") in names_seen and not m.isdir():
                raise _unsafe(m.name, "appears twice in the archive")
            names_seen.add(m.name.rstrip("/"))
        extract: Any = archive.extractall
        try:
            extract(into, members=members, filter="data")
        except (tarfile.TarError, OSError) as exc:  # a name too long for the file system...
            raise error(
                "bundle.archive-malformed", f"the tar archive cannot be unpacked ({exc})"
            ) from None
    return str(root)
