r"""``put_many`` of a remote store: many objects in one request, one transaction (issue 28).

Every item is hashed here first (a stream that cannot rewind is spooled to a temporary file,
so the request can be resent), then all are sent as one streamed body to ``POST
/v1/objects/batch`` (store/server/bulk_routes.py): per item ``SIZE blake3:<hex>\n`` and its
bytes, read again from the file or stream as the body goes out, so memory holds one chunk
whatever the number of items. The server checks every part against its address before it
stores anything, then stores all of them in one transaction (or one per ``batch``): all or
nothing, as locally. Each answer must report the digest sent (``remote.digest`` otherwise).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..core.digests import Digest, Hasher, digest_bytes
from ..core.errors import error
from ..core.results import PutResult
from .retention import root_params
from .shapes import forms_digest

if TYPE_CHECKING:
    from .http import Http

__all__ = ["put_many"]

_CHUNK = 1 << 20
_SPOOL_MEMORY = 8 << 20


def _hash_file(fh: IO[bytes]) -> Digest:
    h = Hasher()
    while chunk := fh.read(_CHUNK):
        h.update(chunk)
    return h.digest()


def _unreadable(item: Any, exc: OSError) -> Exception:
    return error(
        "input.unreadable",
        f"cannot read {os.fspath(item)}: {exc.strerror}",
        path=os.fspath(item),
    )


def _prepare(
    items: Iterable[Any], stack: contextlib.ExitStack
) -> list[tuple[Digest, Callable[[], Iterator[bytes]]]]:
    """``(digest, chunks)`` per item, in order; ``chunks()`` reads the item's bytes again."""
    out: list[tuple[Digest, Callable[[], Iterator[bytes]]]] = []
    for i, item in enumerate(items):
        if isinstance(item, (bytes, bytearray, memoryview)):
            raw = bytes(item)
            out.append((digest_bytes(raw), lambda raw=raw: iter([raw])))  # type: ignore[misc]
        elif isinstance(item, os.PathLike):
            path = Path(item)
            try:
                with path.open("rb") as opened:
                    digest = _hash_file(opened)
            except OSError as exc:
                raise _unreadable(item, exc) from None
            out.append((digest, lambda path=path: _file_chunks(path)))  # type: ignore[misc]
        elif hasattr(item, "read"):
            fh: IO[bytes] = item
            seekable = False
            with contextlib.suppress(AttributeError, OSError, ValueError):
                seekable = bool(fh.seekable())
            if not seekable:
                spool: IO[bytes] = stack.enter_context(
                    tempfile.SpooledTemporaryFile(max_size=_SPOOL_MEMORY)
                )
                while chunk := fh.read(_CHUNK):
                    spool.write(chunk)
                spool.seek(0)
                fh = spool
            start = fh.tell()
            digest = _hash_file(fh)
            out.append((digest, lambda fh=fh, start=start: _stream_chunks(fh, start)))  # type: ignore[misc]
        else:
            raise error(
                "input.invalid",
                f"item {i} is a {type(item).__name__}: put_many takes bytes, paths or "
                "binary streams",
                item=i,
            )
    return out


def _file_chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            yield chunk


def _stream_chunks(fh: IO[bytes], start: int) -> Iterator[bytes]:
    fh.seek(start)
    while chunk := fh.read(_CHUNK):
        yield chunk


def _body(prepared: list[tuple[Digest, Callable[[], Iterator[bytes]]]]) -> Iterator[bytes]:
    """The request body: small items gathered into chunks of about 1 MiB."""
    buf = bytearray()
    for digest, chunks in prepared:
        buf += f"{digest.size} {digest.address}\n".encode("ascii")
        sent = 0
        for chunk in chunks():
            sent += len(chunk)
            buf += chunk
            if len(buf) >= _CHUNK:
                yield bytes(buf)
                buf.clear()
        if sent != digest.size:  # the file changed since it was hashed
            raise error(
                "input.unreadable",
                f"an item changed while it was sent ({sent} bytes, hashed {digest.size})",
            )
    if buf:
        yield bytes(buf)


def put_many(
    http: Http,
    items: Iterable[Any],
    *,
    batch: int | None = None,
    on_batch: Callable[[int, int], None] | None = None,
    progress: Callable[[int], None] | None = None,
    sink: Callable[[PutResult], object] | None = None,
) -> list[PutResult]:
    """Store many blobs in one request (see :meth:`evstore.Store.put_many`).

    With ``sink``, each result is handed to it in order (with ``batch``: a batch's results,
    then ``on_batch`` for it, as locally).

    Raises:
        InputError: ``input.unreadable``, ``input.invalid``; the server's errors
        (``put.digest-mismatch``, ``http.too-large``, ...; with ``batch`` the failing batch's
        ``details.committed_batches``); ``remote.digest``.
    """
    if batch is not None and batch < 1:
        raise error("input.invalid", f"batch size must be at least 1, not {batch}")
    with contextlib.ExitStack() as stack:
        prepared = _prepare(items, stack)
        if not prepared:
            return []
        params: dict[str, Any] = dict(root_params())
        if batch is not None:
            params["batch"] = str(batch)
        out = http.json(
            "POST",
            "v1/objects/batch",
            idempotent=True,  # content-addressed: storing twice stores nothing new
            params=params,
            body=lambda: _body(prepared),
            headers={"Content-Type": "application/x-evstore-objects"},
        )
    rows = out.get("results") if isinstance(out, dict) else None
    if not isinstance(rows, list) or len(rows) != len(prepared):
        raise http.protocol("POST v1/objects/batch: the answer is not one result per object")
    results = []
    for (digest, _), row in zip(prepared, rows, strict=True):
        try:
            claimed = forms_digest(row)
        except (KeyError, TypeError, ValueError):
            raise http.protocol("POST v1/objects/batch: a result is not a put result") from None
        if claimed != digest:
            raise error(
                "remote.digest",
                f"{http.url}: the server reports {claimed.address} for the bytes sent as "
                f"{digest.address}",
                url=http.url,
            )
        results.append(PutResult(digest, bool(row.get("new"))))
    if progress is not None:
        progress(len(results))
    step = batch or len(results) or 1
    for n in range(step, len(results) + step, step):
        if sink is not None:
            for res in results[n - step : n]:
                sink(res)
        if batch is not None and on_batch is not None:
            on_batch(n // batch, min(n, len(results)))
    return results
