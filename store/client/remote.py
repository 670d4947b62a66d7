"""A store served over HTTP (API v1, docs/http.md), with the methods of a local :class:`Store`.

``evstore.open("http://127.0.0.1:8080/acme", token=...)`` returns a :class:`RemoteStore`. It
implements :class:`evstore.StoreProtocol` (store/protocol.py) as :class:`evstore.Store` does:
the same arguments, the same result types (store/core/results.py) and the same typed errors
(rebuilt from the server's problem documents), so a program or the CLI uses either alike.

The client trusts nothing the server says about bytes: every object it receives is hashed
and compared with the ref it asked for (BLAKE3 or SHA-256, as the ref says), whatever the
``ETag`` or ``Repr-Digest`` headers claim; a mismatch is ``remote.digest`` and the bytes are
discarded. A put sends the digest it computed (``?expect=``) and checks the one the server
reports. Refs are parsed before anything is sent, so a malformed ref fails as it does
locally (``ref.syntax``), without a request.

What only makes sense beside the database (a transaction) raises ``remote.unsupported``.
"""

from __future__ import annotations

import base64
import contextlib
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO, overload

import httpx

from ..core.canonical import dumps, loads
from ..core.cursors import cursor_key, listing_cursor
from ..core.digests import Digest, Hasher, digest_bytes, read_again_checked
from ..core.documents import as_documents
from ..core.errors import EvstoreError, error
from ..core.refs import ContentRef, parse_ref, parse_refs
from ..core.results import ArtifactInfo, ArtifactResult, Document, IngestReport, PutResult, Warning_
from .admin import RemoteAdmin
from .archives import RemoteArchives
from .http import DEFAULT_TIMEOUT, Http, RetryPolicy, rebuild_error, unsupported
from .redirects import check_promised, get_object
from .retention import RemoteRetention, root_params
from .shapes import forms_digest, warning_dicts

if TYPE_CHECKING:
    from .. import StoreProtocol
    from .check import RemoteCheckRun
    from .contracts import (
        RemoteContexts,
        RemoteFragments,
        RemoteManifests,
        RemotePackages,
        RemoteRuns,
    )

__all__ = ["PAGE", "RemoteStore", "unsupported"]

#: Items asked for per ``ls`` page, and refs per ``missing`` request.
PAGE = 1000
#: A body read from a stream that cannot rewind is spooled to disk beyond this many bytes.
_SPOOL_MEMORY = 8 << 20
_CHUNK = 1 << 20


class _PendingDigest:
    """The digest of a blob being streamed: the size the server announced until the last
    chunk is verified, then the digest computed from the bytes (``get -o`` reads the size
    for its progress bar before the bytes, the address after them).
    """  # noqa: D205

    def __init__(self, announced: int) -> None:
        self._announced = announced
        self._digest: Digest | None = None

    def resolve(self, digest: Digest) -> None:
        self._digest = digest

    def _final(self) -> Digest:
        if self._digest is None:
            raise RuntimeError("the digest is known once every chunk was read and verified")
        return self._digest

    @property
    def size(self) -> int:
        return self._announced if self._digest is None else self._digest.size

    @property
    def blake3(self) -> str:
        return self._final().blake3

    @property
    def sha256(self) -> str:
        return self._final().sha256

    @property
    def address(self) -> str:
        return self._final().address

    @property
    def sha256_b64u(self) -> str:
        return self._final().sha256_b64u

    def forms(self) -> dict[str, str | int]:
        return self._final().forms()


def _object_path(ref: str, suffix: str = "") -> str:
    return "v1/objects/" + urllib.parse.quote(ref, safe=":") + suffix


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _chunked(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class RemoteStore(RemoteAdmin, RemoteArchives):
    """A store served by ``evstore serve``: the API of :class:`evstore.Store` over HTTP.

    Settings, tokens and the log come from :class:`~evstore.client.admin.RemoteAdmin`,
    archives from :class:`~evstore.client.archives.RemoteArchives`.

    Args:
        url: ``http(s)://HOST:PORT[/NAME]``.
        token: a bearer token (``read`` for reads, ``ingest`` for writes); never shown.
        timeout: seconds to connect, and to wait for each read or write.
        policy: the retry policy (:class:`~evstore.client.http.RetryPolicy`).
        transport: an httpx transport (tests).
        sleep: the wait between retries (tests).
    """

    #: A remote store is never created by opening it.
    created = False
    #: No local file.
    path: Path | None = None

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        policy: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.http = Http(
            url, token=token, timeout=timeout, policy=policy, transport=transport, sleep=sleep
        )
        self._closed = False
        self._warned: dict[str, list[dict[str, str]]] = {}

    # -- lifecycle ------------------------------------------------------------------------
    def close(self) -> None:
        """Close the connections (the store refuses every call afterwards)."""
        self.http.close()
        self._closed = True

    def __enter__(self) -> RemoteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        """The server URL (no token, no user information)."""
        return self.http.url

    def _live(self) -> None:
        if self._closed:
            raise RuntimeError("this RemoteStore is closed")

    def info(self) -> dict[str, Any]:
        """``GET /v1``: ``{"store", "evstore", "backend", "public_read"}``."""
        self._live()
        out: dict[str, Any] = self.http.json("GET", "v1")
        return out

    # -- verification ---------------------------------------------------------------------
    def _verify(self, ref: ContentRef, digest: Digest) -> None:
        """Refuse bytes that do not hash to ``ref`` (``remote.digest``)."""
        got = digest.blake3 if ref.algorithm == "blake3" else digest.sha256
        if got != ref.hex:
            raise error(
                "remote.digest",
                f"{self.url}: the {digest.size} bytes received for {ref.text} hash to "
                f"{digest.address} (sha256:{digest.sha256}), not to the ref; discarded",
                ref=ref.text,
                url=self.url,
            )

    def _fetch(self, ref: ContentRef, sink: Callable[[bytes], Any]) -> Digest:
        """GET an object into ``sink`` chunk by chunk; its verified digest."""
        path = _object_path(ref.text)
        resp, promised = get_object(self.http, path)  # from the bucket when redirected
        h = Hasher()
        for chunk in self.http.iter_bytes(resp, "GET", path):
            h.submit(chunk)  # hashed by workers while the next chunk is received
            sink(chunk)
        digest = h.digest()
        self._verify(ref, digest)
        check_promised(self.http, ref.text, digest, promised)
        return digest

    # -- blobs ----------------------------------------------------------------------------
    def put(self, data: bytes | BinaryIO) -> PutResult:
        """Store bytes or a binary stream (``PUT /v1/objects?expect=ADDRESS``).

        The digest is computed here first; the server must report the same one
        (``remote.digest`` otherwise). A stream that cannot rewind is spooled to a temporary
        file (memory: 8 MiB), so the request can be resent. Raises as :meth:`Store.put`, and
        ``input.changed`` when a seekable stream changed between its hash and its send.
        """
        self._live()
        if isinstance(data, (bytes, bytearray, memoryview)):
            raw = bytes(data)
            return self._put(digest_bytes(raw), lambda: raw)
        if not hasattr(data, "read"):  # neither bytes nor a stream, as Store.put refuses
            kind = type(data).__name__
            raise error("input.invalid", f"put takes bytes or a binary stream, not a {kind}")
        seekable = False
        with contextlib.suppress(AttributeError, OSError, ValueError):
            seekable = bool(data.seekable())  # type: ignore[union-attr]
        if seekable:
            return self._put_seekable(data)
        with tempfile.SpooledTemporaryFile(max_size=_SPOOL_MEMORY) as spool:
            while chunk := data.read(_CHUNK):
                spool.write(chunk)
            spool.seek(0)
            return self._put_seekable(spool)

    def _put_seekable(self, fh: IO[bytes]) -> PutResult:
        start = fh.tell()
        h = Hasher()
        while chunk := fh.read(_CHUNK):
            h.submit(chunk)  # hashed by workers while the next chunk is read

        digest = h.digest()  # the body sends these bytes again, checked: input.changed
        return self._put(
            digest, lambda: read_again_checked(fh, start, digest, _CHUNK, doing="sent")
        )

    def _put(self, digest: Digest, body: Callable[[], Any]) -> PutResult:
        resp = self.http.request(
            "PUT",
            "v1/objects",
            idempotent=True,
            params={"expect": digest.address, **root_params()},
            body=body,
            headers={
                "Content-Type": "application/octet-stream",
                "Content-Length": str(digest.size),
            },
        )
        try:
            out = resp.json()
            claimed = forms_digest(out)
        except (ValueError, KeyError, TypeError, AttributeError):
            raise self.http.protocol("PUT v1/objects: the answer is not a put result") from None
        if claimed != digest:
            raise error(
                "remote.digest",
                f"{self.url}: the server reports {claimed.address} ({claimed.size} bytes) for "
                f"the bytes sent as {digest.address} ({digest.size} bytes)",
                url=self.url,
            )
        return PutResult(digest, bool(out.get("new", resp.status_code == 201)))

    @overload
    def put_many(
        self,
        items: Iterable[Any],
        *,
        batch: int | None = None,
        on_batch: Callable[[int, int], None] | None = None,
        progress: Callable[[int], None] | None = None,
        results: None = None,
    ) -> list[PutResult]: ...

    @overload
    def put_many(
        self,
        items: Iterable[Any],
        *,
        batch: int | None = None,
        on_batch: Callable[[int, int], None] | None = None,
        progress: Callable[[int], None] | None = None,
        results: Callable[[PutResult], object],
    ) -> int: ...

    def put_many(
        self,
        items: Iterable[Any],
        *,
        batch: int | None = None,
        on_batch: Callable[[int, int], None] | None = None,
        progress: Callable[[int], None] | None = None,
        results: Callable[[PutResult], object] | None = None,
    ) -> list[PutResult] | int:
        """Store many blobs in one request, all or nothing (``POST /v1/objects/batch``).

        ``items`` and ``results`` as :meth:`Store.put_many`; one transaction on the server
        (or one per ``batch``, with the library's batch semantics). store/client/bulk.py.

        Raises:
            InputError: ``input.unreadable``, ``input.invalid``; the server's errors.
        """
        self._live()
        from .bulk import put_many as put

        out = put(self.http, items, batch=batch, on_batch=on_batch, progress=progress, sink=results)
        return out if results is None else len(out)

    def get(self, ref: str) -> bytes:
        """The exact bytes a content ref names, verified here against the ref.

        Raises:
            RefSyntaxError (before any request); NotFound ``not-found.blob``;
            CorruptionError (the server's ``corruption.*``, or ``remote.digest``).
        """
        self._live()
        parsed = parse_ref(ref)
        buf = bytearray()
        self._fetch(parsed, buf.extend)
        return bytes(buf)

    @contextlib.contextmanager
    def open_blob(
        self, ref: str, *, verify_first: bool = True
    ) -> Iterator[tuple[Any, Iterator[bytes]]]:
        """Stream a blob: ``with store.open_blob(ref) as (digest, chunks): ...``.

        ``verify_first`` True: the whole answer is received (into a temporary file beyond
        8 MiB) and verified before the first chunk. False: chunks as received; after the last
        one a mismatch raises ``remote.digest``, so the caller MUST discard what it got (as
        ``get -o`` does); until then ``digest.size`` is the announced length.
        """
        self._live()
        parsed = parse_ref(ref)
        if verify_first:
            with tempfile.SpooledTemporaryFile(max_size=_SPOOL_MEMORY) as spool:
                digest = self._fetch(parsed, spool.write)
                spool.seek(0)
                yield digest, iter(lambda: spool.read(_CHUNK), b"")
            return
        path = _object_path(parsed.text)
        resp, promised = get_object(self.http, path)
        try:
            announced = int(resp.headers.get("Content-Length", "0"))
        except ValueError:
            announced = 0
        pending = _PendingDigest(announced)

        def chunks() -> Iterator[bytes]:
            h = Hasher()
            for chunk in self.http.iter_bytes(resp, "GET", path):
                h.submit(chunk)  # hashed by workers while the caller uses it
                yield chunk
            digest = h.digest()
            self._verify(parsed, digest)
            check_promised(self.http, parsed.text, digest, promised)
            pending.resolve(digest)

        try:
            yield pending, chunks()
        finally:
            resp.close()

    def stat(self, ref: str, *, verify: bool = False) -> dict[str, Any]:
        """Facts about a stored blob, as :meth:`Store.stat` (``verify``: the server re-hashes).

        The answer must describe the blob the ref names (``remote.digest`` otherwise).
        """
        self._live()
        parsed = parse_ref(ref)
        out: dict[str, Any] = self.http.json(
            "GET", _object_path(parsed.text, "/stat"), params={"verify": "1"} if verify else None
        )
        try:
            digest = forms_digest(out)
        except (KeyError, TypeError, ValueError):
            raise self.http.protocol(f"stat {ref}: the answer is not a stat") from None
        got = digest.blake3 if parsed.algorithm == "blake3" else digest.sha256
        if got != parsed.hex:
            raise error(
                "remote.digest",
                f"{self.url}: the stat received for {ref} describes {digest.address}",
                ref=ref,
                url=self.url,
            )
        return out

    def has(self, refs: Iterable[str]) -> list[str]:
        """The refs (as given) that name no stored blob (``POST /v1/missing``, 1000 a request).

        Raises:
            RefSyntaxError: ``ref.syntax`` on a malformed ref (nothing is sent).
            InputError: ``input.invalid`` for a bare ``str`` (pass ``[ref]``).
        """
        self._live()
        parsed = parse_refs(refs)
        missing: set[str] = set()
        for chunk in _chunked(dict.fromkeys(p.text for p in parsed), PAGE):
            out = self.http.json("POST", "v1/missing", json={"refs": chunk})
            answer = out.get("missing") if isinstance(out, dict) else None
            if not isinstance(answer, list) or not set(answer) <= set(chunk):
                raise self.http.protocol("POST v1/missing: the answer names refs not asked for")
            missing.update(answer)
        return [p.text for p in parsed if p.text in missing]

    # -- artifacts ------------------------------------------------------------------------
    def _ingest_body(
        self, docs: list[tuple[Document, Any]], options: dict[str, Any] | None, supplied: Any
    ) -> dict[str, Any]:
        """The JSON body of ``POST /v1/ingest`` / ``validate`` (docs/http.md#ingest)."""
        opts = dict(options or {})
        sources = opts.pop("sources", None) or []
        content = [bytes(b) for b in supplied]
        for _, _, b in sources:  # the CLI supplies source bytes twice: once as sources
            with contextlib.suppress(ValueError):
                content.remove(bytes(b))
        body: dict[str, Any] = {
            "documents": [{"name": d.name, "kind": d.kind, "document": v} for d, v in docs],
            "content": [_b64(b) for b in content],
            "sources": [
                {"document_id": d, "fragment_id": f, "data": _b64(bytes(b))} for d, f, b in sources
            ],
        }
        scope = opts.pop("scope", None)
        if scope is not None:
            body["scope"] = dict(scope)
        if opts.get("source_document") is not None:
            body["source_document"] = opts.pop("source_document")
        body.update(root_params())  # the root of evstore.rooting (issue 12)
        if opts:
            raise error("input.invalid", f"options {sorted(opts)} are not sent over HTTP")
        return body

    @staticmethod
    def _parse(docs: list[Document]) -> tuple[list[tuple[Document, Any]], list[EvstoreError]]:
        """Read each document with the strict reader, here (as the local store does first).

        Returns ``(documents and their values, JSON-form faults)``; each fault names its
        document as ``path``. The values keep ``10.0`` as written (number tokens), so the
        server judges the same tokens.
        """
        good: list[tuple[Document, Any]] = []
        bad: list[EvstoreError] = []
        for d in docs:
            try:
                good.append((d, loads(bytes(d.data), number_tokens=True)))
            except EvstoreError as err:
                err.path = d.name
                bad.append(err)
        return good, bad

    def _report(self, out: Any, docs: list[Document]) -> IngestReport:
        """The :class:`IngestReport` of a report answer (``results`` digests completed)."""
        if not isinstance(out, dict) or not isinstance(out.get("artifacts"), list):
            raise self.http.protocol("the answer is not an ingest report")
        known: dict[str, Digest] = {}
        for d in docs:
            with contextlib.suppress(EvstoreError, ValueError, TypeError):
                digest = digest_bytes(dumps(loads(d.data)))
                known[digest.address] = digest
        results = []
        for a in out["artifacts"]:
            a = dict(a)
            address = str(a.pop("address"))
            kind = str(a.pop("kind"))
            new = bool(a.pop("new"))
            warns = tuple(Warning_.from_dict(w) for w in a.pop("warnings", None) or [])
            found = known.get(address)
            # An artifact the input holds inside another (a batch, a bundle): ask its stat.
            digest = forms_digest(self.stat(address)) if found is None else found
            if a.get("size") == digest.size:
                del a["size"]  # else a kind's own "size" (e.g. a source's content size)
            results.append(ArtifactResult(digest, kind, new, warns, a))
        faults = [rebuild_error(f) for f in out.get("faults") or []]
        return IngestReport(results, faults, int(out.get("documents", len(docs))))

    def ingest(
        self,
        docs: Any,
        *,
        options: dict[str, Any] | None = None,
        supplied: Sequence[bytes] = (),
        batch: int | None = None,
        on_batch: Callable[[int, int], None] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> IngestReport:
        """Validate and store documents on the server (``POST /v1/ingest``), all or nothing.

        ``docs`` and the options as :meth:`Store.ingest`. With ``batch``, one request (one
        transaction on the server) per N documents; a failing batch leaves the earlier ones
        committed and its error says so (``details.committed_batches``).
        """
        self._live()
        if batch is not None and batch < 1:
            raise error("input.invalid", f"batch size must be at least 1, not {batch}")
        chunks = _chunked(as_documents(docs), batch) if batch else iter([list(as_documents(docs))])
        total = IngestReport()
        done = 0
        for n, chunk in enumerate(chunks):
            try:
                parsed, bad = self._parse(chunk)
                if bad:
                    raise bad[0]
                out = self.http.json(
                    "POST",
                    "v1/ingest",
                    idempotent=False,
                    json=self._ingest_body(parsed, options, supplied),
                )
            except EvstoreError as err:
                if batch is not None and n:
                    err.details.update(batch=batch, committed_batches=n, committed_items=done)
                    err.message += f" (batches committed before this one: {n}, {done} items)"
                    err.args = (err.message,)
                raise
            report = self._report(out, chunk)
            total.results.extend(report.results)
            total.documents += report.documents
            done += len(chunk)
            if progress is not None:
                progress(done)
            if batch is not None and on_batch is not None:
                on_batch(n + 1, done)
        return total

    def validate(
        self,
        docs: Any,
        *,
        options: dict[str, Any] | None = None,
        supplied: Sequence[bytes] = (),
    ) -> IngestReport:
        """Every check of :meth:`ingest`, all faults listed, nothing written (``POST
        /v1/validate``).
        """  # noqa: D205
        self._live()
        chunk = list(as_documents(docs))
        parsed, bad = self._parse(chunk)
        if bad and not parsed:  # nothing left to send
            return IngestReport([], list(bad), len(chunk))
        resp = self.http.request(
            "POST",
            "v1/validate",
            idempotent=True,
            json=self._ingest_body(parsed, options, supplied),
            ok=(200, 422),
        )
        try:
            out = resp.json()
        except ValueError:
            raise self.http.protocol("POST v1/validate: the answer is not JSON") from None
        if resp.status_code == 422:  # faults: a problem carrying the whole report
            if not isinstance(out, dict) or not isinstance(out.get("report"), dict):
                raise self.http.problem(resp, "POST", "v1/validate")
            out = out["report"]
        report = self._report(out, chunk)
        if bad:  # as locally: JSON-form faults first; unused bytes only when nothing failed
            kept = [f for f in report.faults if f.code != "input.unused-content"]
            report.faults = [*bad, *kept]
            report.documents += len(bad)
        return report

    def find(self, name: str, value: str, kind: str | None = None) -> list[ArtifactInfo]:
        """Artifacts whose lookup attribute ``name`` equals ``value`` (``GET /v1/find``).

        Raises as :meth:`Store.find`; nothing found is an empty list.
        """
        self._live()
        params = {"name": name, "value": value}
        if kind is not None:
            params["kind"] = kind
        try:
            out = self.http.json("GET", "v1/find", params=params)
        except EvstoreError as err:
            if err.code == "not-found.artifact":
                return []
            raise
        rows = out.get("artifacts") if isinstance(out, dict) else None
        if not isinstance(rows, list):
            raise self.http.protocol("GET v1/find: the answer holds no artifacts list")
        for r in rows:
            self._warned[str(r["address"])] = warning_dicts(r.get("warnings"))
        return [ArtifactInfo.from_dict(r) for r in rows]

    def ls(
        self, kind: str | None = None, *, attr: tuple[str, str] | None = None
    ) -> list[ArtifactInfo]:
        """Stored artifacts, oldest first (``GET /v1/artifacts``; with ``attr``, ``find``)."""
        self._live()
        if attr is not None:
            return self.find(attr[0], attr[1], kind)
        out = self.http.json("GET", "v1/artifacts", params={"kind": kind} if kind else None)
        rows = out.get("artifacts") if isinstance(out, dict) else None
        if not isinstance(rows, list):
            raise self.http.protocol("GET v1/artifacts: the answer holds no artifacts list")
        return [ArtifactInfo.from_dict(r) for r in rows]

    def _pages(self, params: dict[str, Any], limit: int | None) -> Iterator[dict[str, Any]]:
        """Every item of ``GET /v1/ls`` with ``params``, page by page (at most ``limit``)."""
        left = limit
        after = params.pop("after", None)
        while left is None or left > 0:
            ask = PAGE if left is None else min(PAGE, left)
            page_params = {**params, "limit": ask}
            if after is not None:
                page_params["after"] = after
            out = self.http.json("GET", "v1/ls", params=page_params)
            items = out.get("items") if isinstance(out, dict) else None
            if not isinstance(items, list) or len(items) > ask:
                raise self.http.protocol("GET v1/ls: the answer is not a page")
            yield from items
            if left is not None:
                left -= len(items)
            nxt = out.get("next")
            if nxt is None or not items:
                return
            if nxt == after:
                raise self.http.protocol("GET v1/ls: the cursor does not advance")
            after = nxt

    def iter_artifacts(
        self,
        kind: str | None = None,
        *,
        attr: tuple[str, str] | None = None,
        after: str | None = None,
        limit: int | None = None,
    ) -> Iterator[ArtifactInfo]:
        """Artifacts in key order (address, then kind), paged as :meth:`Store.iter_artifacts`."""
        self._live()
        if attr is not None:
            # input.invalid for a malformed cursor before any request, as a local store does
            key = cursor_key(after) if after is not None else None
            rows = sorted(self.find(attr[0], attr[1], kind), key=lambda a: (a.address, a.kind))
            if key is not None:
                rows = [a for a in rows if cursor_key(listing_cursor(a.address, a.kind)) > key]
            return iter(rows if limit is None else rows[:limit])
        params: dict[str, Any] = {"after": after}
        if kind is not None:
            params["kind"] = kind
        return (ArtifactInfo.from_dict(d) for d in self._pages(params, limit))

    def iter_blobs(
        self, *, after: str | None = None, limit: int | None = None
    ) -> Iterator[dict[str, Any]]:
        """Every blob by address: ``{"address", "sha256", "size"}``, as :meth:`Store.iter_blobs`."""
        self._live()
        return (
            {"address": d["address"], "sha256": d["sha256"], "size": d["size"]}
            for d in self._pages({"blobs": "1", "after": after}, limit)
        )

    def warnings(self, ref: str) -> list[dict[str, str]]:
        """Warnings recorded with the artifact at ``ref`` (``GET /v1/artifacts/{ref}``)."""
        self._live()
        parsed = parse_ref(ref)
        if parsed.algorithm == "blake3" and parsed.text in self._warned:
            return list(self._warned[parsed.text])
        try:
            out = self.http.json("GET", "v1/artifacts/" + urllib.parse.quote(ref, safe=":"))
        except EvstoreError as err:
            if err.code == "not-found.artifact":
                return []
            raise
        return warning_dicts(out.get("warnings"))

    def load(self, ref: str) -> Any:
        """The parsed JSON value of a stored artifact (bytes verified first)."""
        return loads(self.get(ref))

    # -- what needs the database ----------------------------------------------------------
    if not TYPE_CHECKING:  # hidden from mypy, which would let it stand for any member

        def __getattr__(self, name: str) -> Any:
            """Any other :class:`Store` attribute: ``remote.unsupported`` naming it."""
            if name.startswith("_"):
                raise AttributeError(name)
            raise unsupported(name)

    def check(
        self,
        progress: Callable[[int, int], None] | None = None,
        *,
        sample: float | None = None,
        seed: int = 0,
        kinds: Sequence[str] = (),
        since: Any = None,
        jobs: int = 1,
        record: bool = True,
        warnings: list[dict[str, str]] | None = None,
    ) -> RemoteCheckRun:
        """Re-verify the store on the server (admin), faults streamed back as found: a
        :class:`~evstore.client.check.RemoteCheckRun` (options as :meth:`Store.check`).
        """  # noqa: D205
        self._live()
        from .check import RemoteCheckRun

        run = RemoteCheckRun(
            self.http,
            progress,
            sample=sample,
            seed=seed,
            kinds=kinds,
            since=since,
            jobs=jobs,
            record=record,
            warnings=warnings,
        )
        self._last_check = run
        return run

    def recorded_warnings(self) -> list[dict[str, str]]:
        """The warnings recorded at ingest, as the last :meth:`check` received them."""
        run = getattr(self, "_last_check", None)
        if run is None:
            raise unsupported("check")
        return list(run.recorded_warnings)

    def transaction(self, work: Any, **kw: Any) -> Any:
        """``remote.unsupported``: no transaction spans requests."""
        raise unsupported("transaction")

    def reading(self) -> Any:
        """``remote.unsupported``: no read snapshot spans requests."""
        raise unsupported("transaction")

    # -- contract namespaces (store/client/contracts.py, imported on first use) ------------
    @property
    def fragments(self) -> RemoteFragments:
        """Fragment operations over HTTP (:class:`evstore.protocol.FragmentsProtocol`)."""
        self._live()
        from .contracts import RemoteFragments

        return RemoteFragments(self)

    @property
    def manifests(self) -> RemoteManifests:
        """Manifest reads over HTTP (:class:`evstore.protocol.ManifestsProtocol`)."""
        self._live()
        from .contracts import RemoteManifests

        return RemoteManifests(self)

    @property
    def packages(self) -> RemotePackages:
        """Package reads over HTTP (:class:`evstore.protocol.PackagesProtocol`)."""
        self._live()
        from .contracts import RemotePackages

        return RemotePackages(self)

    @property
    def contexts(self) -> RemoteContexts:
        """Evidence-context reads over HTTP (:class:`evstore.protocol.ContextsProtocol`)."""
        self._live()
        from .contracts import RemoteContexts

        return RemoteContexts(self)

    @property
    def retention(self) -> RemoteRetention:
        """Roots and gc over HTTP (store/client/retention.py); audits stay local."""
        self._live()
        return RemoteRetention(self)

    @property
    def runs(self) -> RemoteRuns:
        """Run records and lineage over HTTP (:class:`evstore.protocol.RunsProtocol`)."""
        self._live()
        from .contracts import RemoteRuns

        return RemoteRuns(self)


if TYPE_CHECKING:

    def _conforms(store: RemoteStore) -> StoreProtocol:  # mypy: RemoteStore is a StoreProtocol
        return store
