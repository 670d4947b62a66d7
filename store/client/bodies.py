"""The body of a remote put of a seekable stream, read a second time and checked.

:meth:`~evstore.client.remote.RemoteStore.put` hashes a seekable stream first (the digest
is the request's ``expect`` and its ``Content-Length``), then sends it from a second read.
A file that changed in between (written, appended to, truncated) would send other bytes,
more or fewer than declared: the HTTP library then failed with its own untyped protocol
error, or the server refused a mismatch. The second read here sends exactly the size first
read and checks the BLAKE3 of what it sent, raising ``input.changed`` before the last piece
leaves, so the server never receives a whole body and stores nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

import blake3 as _blake3

from ..core.digests import Digest
from ..core.errors import error

__all__ = ["checked_body"]


def checked_body(fh: IO[bytes], start: int, digest: Digest, piece: int) -> Iterator[bytes]:
    """The ``digest.size`` bytes of ``fh`` from offset ``start``, ``piece`` bytes at a time.

    Raises:
        InputError: ``input.changed`` (before the last piece) when the stream now ends early
            or holds other bytes than those that gave ``digest``; ``input.unreadable`` when
            it cannot be read again (an OSError).
    """
    name = getattr(fh, "name", None)
    what = f"the file {name}" if isinstance(name, str) else "the input stream"

    def changed(how: str) -> Exception:
        return error(
            "input.changed",
            f"{what} changed while it was being sent ({how}); nothing was stored: "
            "put it again once it is no longer being written",
        )

    b3 = _blake3.blake3()
    left = digest.size
    try:
        fh.seek(start)
        while left > 0:
            chunk = fh.read(min(piece, left))
            if not chunk:
                raise changed(f"it ended {left} bytes early")
            b3.update(chunk)
            left -= len(chunk)
            if left <= 0 and b3.hexdigest() != digest.blake3:
                raise changed("its bytes differ from those first read")
            yield chunk
    except OSError as exc:
        raise error(
            "input.unreadable", f"cannot read {what} again: {exc.strerror or exc}"
        ) from None
