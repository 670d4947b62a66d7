"""The contract namespaces of a :class:`~evstore.client.remote.RemoteStore`.

Each class implements its namespace protocol of :class:`evstore.StoreProtocol`
(store/protocol.py) and returns the library's result types (store/core/results.py). The
operations written against the protocol alone are the library's own, inherited
(:class:`~evstore.contracts.fragments.store.PortableFragmentOps`: ``ingest_source``, ``find``;
:class:`~evstore.contracts.manifests.store.PortableManifestOps`: ``find``, ``load``,
``content``); the others call the contract routes of docs/http.md and check what they can
against bytes verified here:

* ``fragments.quote``: the quoted bytes must hash to the fragment's ``quote_sha256`` (the
  fragment itself is fetched by its ref and verified) and span its offsets.
* ``manifests.content``: the manifest is found by its ``manifest/ref``, fetched and verified
  by address, and its ``content/ref`` fetched and verified by digest: no trust in the server.
* ``packages.export``: the wrapped package must hash to the wrapper's address, and to the
  ref asked for.
* ``contexts.excerpt_bytes``: the canonical bytes are made here from the units received and
  must hash to the address the server computed.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import urllib.parse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .. import PortableFragmentOps, PortableManifestOps
from ..core.canonical import dumps, loads
from ..core.digests import Digest, digest_bytes
from ..core.errors import EvstoreError, error
from ..core.refs import parse_ref
from ..core.results import ArtifactInfo, ArtifactResult, Closure, Excerpt, RunReport
from .http import unsupported
from .retention import root_params

__all__ = [
    "RemoteContexts",
    "RemoteFragments",
    "RemoteManifests",
    "RemotePackages",
    "RemoteRuns",
]


def _seg(ref: str) -> str:
    return urllib.parse.quote(ref, safe=":")


def _mismatch(store: Any, what: str, **details: Any) -> EvstoreError:
    return error("remote.digest", f"{store.url}: {what}; discarded", url=store.url, **details)


class _Namespace:
    """A contract namespace of a remote store; what it lacks is ``remote.unsupported``."""

    area = ""

    def __init__(self, store: Any) -> None:
        self.store = store

    if not TYPE_CHECKING:  # hidden from mypy, which would let it stand for any member

        def __getattr__(self, name: str) -> Any:
            if name.startswith("_"):
                raise AttributeError(name)
            raise unsupported(f"{self.area}.{name}")


class RemoteFragments(_Namespace, PortableFragmentOps):
    """``store.fragments`` of a remote store.

    ``ingest_source`` (the library's record, ingested on the server with the bytes supplied:
    one transaction there) and ``find`` are inherited; quote, by_document and sources call
    the fragment routes.
    """

    area = "fragments"

    def quote(self, ref: str) -> bytes:
        """The exact quoted bytes of a stored fragment (``GET /v1/fragments/{ref}/quote``).

        Raises as the local ``fragments.quote``; ``remote.digest`` when the bytes do not
        hash to the fragment's quote_sha256 or do not span its offsets.
        """
        parse_ref(ref)
        data = self.store.http.request(
            "GET", f"v1/fragments/{_seg(ref)}/quote", idempotent=True
        ).content
        frag = self.store.load(ref)
        try:
            want = str(frag["quote_sha256"])
            span = int(frag["end_offset"]) - int(frag["start_offset"])
        except (KeyError, TypeError, ValueError):
            raise self.store.http.protocol(f"{ref} is not a fragment") from None
        if hashlib.sha256(data).hexdigest() != want or len(data) != span:
            raise _mismatch(self.store, f"the quote received for {ref} is not its quote", ref=ref)
        return data

    def by_document(self, document_id: str) -> list[ArtifactInfo]:
        """Stored fragments of one document_id, oldest first (``GET /v1/fragments``)."""
        out = self.store.http.json("GET", "v1/fragments", params={"document_id": document_id})
        return [ArtifactInfo.from_dict(r) for r in out["fragments"]]

    def sources(self, document_id: str, fragment_id: str) -> list[ArtifactInfo]:
        """The ``fragment-source`` records of a pair (``GET /v1/fragment-sources``)."""
        out = self.store.http.json(
            "GET",
            "v1/fragment-sources",
            params={"document_id": document_id, "fragment_id": fragment_id},
        )
        return [ArtifactInfo.from_dict(r) for r in out["sources"]]


class RemoteManifests(_Namespace, PortableManifestOps):
    """``store.manifests`` of a remote store: find, load, content, all inherited.

    ``content`` finds the manifest by its ``manifest/ref``, fetches it and verifies it by
    address, then fetches its ``content/ref`` and verifies it by digest: no trust in the
    server.
    """

    area = "manifests"


class RemotePackages(_Namespace):
    """``store.packages`` of a remote store: export."""

    area = "packages"

    def export(self, ref: str) -> bytes:
        """A stored package with its observations (``GET /v1/packages/{ref}/export``).

        The wrapper is canonical JSON whose ``package`` must hash to its ``address`` (and to
        ``ref`` when ``ref`` is a content ref; a package id must be the package's ``id``).
        """
        data = self.store.http.request(
            "GET", f"v1/packages/{_seg(ref)}/export", idempotent=True
        ).content
        try:
            wrapper = loads(data)
            package = wrapper["package"]
            digest = digest_bytes(dumps(package))
            address = str(wrapper["address"])
        except (EvstoreError, KeyError, TypeError):
            raise self.store.http.protocol(f"the export of {ref} is not an export") from None
        fits = digest.address == address
        if ":" in ref:
            parsed = parse_ref(ref)
            fits = fits and parsed.hex == (
                digest.blake3 if parsed.algorithm == "blake3" else digest.sha256
            )
        elif isinstance(package, dict):
            fits = fits and str(package.get("id", "")).lower() == ref.strip().lower()
        if not fits:
            raise _mismatch(self.store, f"the package exported for {ref} is not it", ref=ref)
        return data


class RemoteContexts(_Namespace):
    """``store.contexts`` of a remote store: excerpt, excerpt_bytes."""

    area = "contexts"

    def excerpt(
        self, source_ref: str, ranges: Sequence[tuple[int, int]], window: int
    ) -> list[dict[str, Any]]:
        """The units selected from a stored source document (notarius v1 selection rule)."""
        return self.excerpt_bytes(source_ref, ranges, window).units

    def excerpt_bytes(
        self, source_ref: str, ranges: Sequence[tuple[int, int]], window: int
    ) -> Excerpt:
        """``GET /v1/contexts/{ref}/excerpt?range=S:E&window=N``; the bytes made here."""
        parse_ref(source_ref)
        params = [("range", f"{a}:{b}") for a, b in ranges] + [("window", str(window))]
        out = self.store.http.json("GET", f"v1/contexts/{_seg(source_ref)}/excerpt", params=params)
        units = out.get("excerpt") if isinstance(out, dict) else None
        if not isinstance(units, list):
            raise self.store.http.protocol("the answer is not an excerpt")
        data = dumps(units)
        digest = digest_bytes(data)
        if digest.address != out.get("address"):
            raise _mismatch(self.store, f"the excerpt of {source_ref} is not its address")
        return Excerpt(units, data, digest)


def _bundle_tar(directory: str) -> bytes:
    """The bundle directory as an uncompressed tar (regular files and folders, relative)."""
    # the local reader's first two refusals, word for word (the server would name its copy)
    if not os.path.isdir(directory):
        raise error("bundle.unreadable", f"{os.fspath(directory)!r} is not a directory")
    if not os.path.isfile(os.path.join(directory, "index.json")):
        raise error("bundle.index-missing", f"no index.json in {os.fspath(directory)!r}")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for root, dirs, files in os.walk(directory):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(root, name)
                tar.add(full, arcname=os.path.relpath(full, directory), recursive=False)
    return buf.getvalue()


class RemoteRuns(_Namespace):
    """``store.runs`` of a remote store: runs, refs, closure, ingest_bundle."""

    area = "runs"

    def runs(self) -> list[dict[str, Any]]:
        """Every run record, oldest first (``GET /v1/runs``)."""
        out: list[dict[str, Any]] = self.store.http.json("GET", "v1/runs")["runs"]
        return out

    def refs(self, ref: str, *, transitive: bool = False) -> list[dict[str, Any]]:
        """The artifacts that refer to ``ref`` (``GET /v1/refs/{ref}[?all=1]``)."""
        parse_ref(ref)
        out = self.store.http.json(
            "GET", f"v1/refs/{_seg(ref)}", params={"all": "1"} if transitive else None
        )
        rows: list[dict[str, Any]] = out["refs"]
        return rows

    def closure(self, ref: str) -> Closure:
        """Everything ``ref`` needs, verified by the server (``GET /v1/closure/{ref}``)."""
        parse_ref(ref)
        out = self.store.http.json("GET", f"v1/closure/{_seg(ref)}")
        try:
            return Closure.from_dict(out)
        except (KeyError, TypeError, ValueError, AttributeError):
            raise self.store.http.protocol(f"closure {ref}: the answer is not a closure") from None

    def ingest_bundle(
        self,
        directory: str | os.PathLike[str],
        *,
        source_document: str | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> RunReport:
        """Send the bundle DIRECTORY as a tar (``POST /v1/bundles``); one transaction there."""
        params = {"source_document": source_document} if source_document else {}
        params.update(root_params())
        out = self.store.http.json(
            "POST",
            "v1/bundles",
            idempotent=False,
            params=params,
            body=lambda: _bundle_tar(os.fspath(directory)),
            headers={"Content-Type": "application/x-tar"},
        )
        run = dict(out["run"])
        digest = Digest(str(run.pop("address")).removeprefix("blake3:"), "", int(run.pop("size")))
        stat = self.store.stat(digest.address)
        digest = Digest(digest.blake3, str(stat["sha256"]).removeprefix("sha256:"), digest.size)
        record = ArtifactResult(digest, str(run.pop("kind")), bool(run.pop("new")), (), run)
        return RunReport(record, dict(out["files"]), dict(out["record"]))
