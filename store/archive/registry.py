"""What the OCI distribution routes serve: retention roots as repositories (docs/registry.md).

A retention root named ``R`` is the repository ``R``. Each object it holds is a tag, its
BLAKE3 hex; ``latest`` is the entry retained most recently. The manifest of a tag is the
root's closure manifest exactly as ``archive export`` writes it (store/archive/ops.py), byte
for byte, so a closure pulled over the network and one exported to a file have one digest.

Everything here reads one snapshot of the store (``Store.transactions.read``) and holds
index rows and manifests only, never an object's bytes.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ..core.canonical import loads_canonical
from ..core.digests import digest_bytes
from ..core.errors import EvstoreError, NotFound, error
from ..db.rawread import FALLBACK, point_row
from ..db.tables import artifacts, blobs, edges, retention_history, roots
from ..objects.leases import check_root_name, rooting
from .layout import (
    ANN_ADDRESS,
    ANN_KIND,
    ANN_ROLE,
    ANN_ROOT,
    ARTIFACT_TYPE,
    BLOB_DIR,
    EMPTY_CONFIG,
    EMPTY_CONFIG_DIGEST,
    INDEX_FILE,
    LAYOUT_FILE,
    MANIFEST_MEDIA_TYPE,
    index_bytes,
    layout_bytes,
)
from .ops import closure_manifest, import_archive

if TYPE_CHECKING:
    from ..facade.api import Store

__all__ = [
    "LATEST",
    "OciRepository",
    "REFERRERS_MAX",
    "check_repository",
    "open_repository",
    "push_manifest",
]

#: The tag of the entry a root retained most recently.
LATEST = "latest"
#: Retention events looked at for the tag latest (the newest still held wins).
_HISTORY_LOOK = 1000
#: The most referrers one answer lists.
REFERRERS_MAX = 1000

_HEX64 = re.compile(r"[0-9a-f]{64}")
#: A tag as the distribution spec allows it (``[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}``).
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")


def check_repository(name: str) -> str:
    """``name`` if it can be a repository: a root name with no ``..``, ``.`` or empty segment.

    Raises:
        InputError: ``registry.name`` (the OCI ``NAME_INVALID``).
    """
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts) or ".." in name:
        raise error(
            "registry.name",
            f"{name!r} is no repository name: a '..', '.' or empty segment",
            name=name,
        )
    try:
        check_root_name(name)
    except Exception:
        raise error(
            "registry.name",
            f"{name!r} is no repository name: 1-128 letters, digits and . _ : @ / + -",
            name=name,
        ) from None
    return name


class OciRepository:
    """One retention root seen as an OCI repository (open it with :func:`open_repository`).

    Attributes:
        store: the open store it reads.
        name: the root's name.
        entries: the BLAKE3 hex of every object it holds, sorted (read on first use).
        latest: the entry retained most recently (BLAKE3 hex; read on first use).
    """

    #: The media type of every manifest a repository serves (an OCI image manifest).
    MANIFEST_MEDIA_TYPE = MANIFEST_MEDIA_TYPE
    #: :func:`check_repository`: a name that can be a repository, or ``registry.name``.
    check_name = staticmethod(check_repository)

    def __init__(self, store: Store, name: str) -> None:
        self.store = store
        self.name = name

    @functools.cached_property
    def entries(self) -> tuple[str, ...]:
        """The BLAKE3 hex of every object the root holds, sorted."""
        with self.store.transactions.read() as conn:
            q = (
                sa.select(blobs.c.address)
                .join(roots, roots.c.blob == blobs.c.id)
                .where(roots.c.name == self.name)
            )
            return tuple(sorted(r.address for r in conn.execute(q)))

    @functools.cached_property
    def latest(self) -> str:
        """The entry retained most recently (by the retention history; else the last)."""
        held = self.entries
        with self.store.transactions.read() as conn:
            last = conn.execute(
                sa.select(retention_history.c.address)
                .where(
                    retention_history.c.root == self.name,
                    retention_history.c.action == "retain",
                )
                .order_by(retention_history.c.id.desc())
                .limit(_HISTORY_LOOK)
            ).all()
        keep = set(held)
        found = next((r.address for r in last if r.address in keep), None)
        return found if found is not None else held[-1]

    def tags(self) -> list[str]:
        """Every tag, sorted: each entry's BLAKE3 hex and ``latest``."""
        return sorted([*self.entries, LATEST])

    def tags_page(self, n: int | None, last: str | None) -> tuple[list[str], bool]:
        """The tags after ``last`` (all when None), at most ``n`` (all when None), sorted;
        and whether more follow.

        Raises:
            InputError: ``http.request`` (``n`` below 0).
        """  # noqa: D205
        if n is not None and n < 0:
            raise error("http.request", "n is a number of tags, 0 or more", parameter="n")
        rest = [t for t in self.tags() if last is None or t > last]
        if n is None:
            return rest, False
        return rest[:n], len(rest) > n

    def _entry(self, tag: str) -> str | None:
        if tag == LATEST:
            return self.latest
        return tag if _HEX64.fullmatch(tag) and tag in self.entries else None

    def manifest(self, reference: str) -> tuple[bytes, str]:
        """The closure manifest a tag or ``sha256:`` digest names: (bytes, SHA-256 hex).

        A tag's manifest is the one ``archive export`` writes for its entry; a digest is
        looked for among the manifests of every entry.

        Raises:
            NotFound: ``registry.manifest-unknown`` (the OCI ``MANIFEST_UNKNOWN``).
            CorruptionError: an object read on the closure walk does not match its address.
        """
        wanted: list[str] = []
        if reference.startswith("sha256:"):
            if _HEX64.fullmatch(reference[7:]):
                wanted = [self.latest, *(a for a in self.entries if a != self.latest)]
        elif _TAG.fullmatch(reference):
            tagged = self._entry(reference)
            wanted = [] if tagged is None else [tagged]
        for address in wanted:
            with self.store.transactions.read() as conn:
                data = closure_manifest(conn, "blake3:" + address)
            sha = digest_bytes(data).sha256
            if not reference.startswith("sha256:") or sha == reference[7:]:
                return data, sha
        raise error(
            "registry.manifest-unknown",
            f"the repository {self.name!r} has no manifest {reference!r}",
            name=self.name,
            reference=reference,
        )

    def extra_blob(self, digest: str) -> bytes | None:
        """A blob the store need not hold as an object: the empty config ``{}`` every
        closure names, or one of this repository's closure manifests; else None.
        """  # noqa: D205
        if digest == EMPTY_CONFIG_DIGEST:
            return EMPTY_CONFIG
        try:
            return self.manifest(digest)[0]
        except EvstoreError as err:
            if err.code != "registry.manifest-unknown":
                raise
            return None

    def referrers(self, digest: str, artifact_type: str | None = None) -> bytes:
        """``GET /v2/NAME/referrers/DIGEST``: an OCI image index of what refers to an object.

        The subject is a stored object by ``sha256:<hex>`` (or one of this repository's
        closure manifests: its root). Each object with an edge to it is listed as the
        descriptor of its closure manifest, annotated with its address, kinds and the edge's
        role; ``artifact_type`` keeps those of that ``artifactType`` (every closure manifest
        is ``application/vnd.evstore.closure.v1``). At most :data:`REFERRERS_MAX` referrers,
        by address. An unknown subject has none (an empty index, as the spec asks).

        Raises:
            RefSyntaxError: ``ref.syntax`` (not ``sha256:<64 hex>``).
        """
        if not digest.startswith("sha256:") or not _HEX64.fullmatch(digest[7:]):
            raise error("ref.syntax", f"{digest!r} is no sha256:<64 hex> digest", digest=digest)
        with self.store.transactions.read() as conn:
            found = conn.execute(
                sa.select(blobs.c.address).where(blobs.c.sha256 == digest[7:]).limit(1)
            ).scalar()
        subject = found if isinstance(found, str) else None
        if subject is None:
            for address in self.entries:
                if self.manifest(address)[1] == digest[7:]:
                    subject = address
                    break
        entries: list[dict[str, Any]] = []
        if subject is not None and artifact_type in (None, ARTIFACT_TYPE):
            entries = self._referrer_entries(subject)
        return index_bytes(entries)

    def _referrer_entries(self, subject: str) -> list[dict[str, Any]]:
        with self.store.transactions.read() as conn:
            rows = conn.execute(
                sa.select(edges.c.src, edges.c.role)
                .where(edges.c.dst == subject)
                .order_by(edges.c.src, edges.c.role)
                .limit(REFERRERS_MAX * 4)
            ).all()
            roles: dict[str, list[str]] = {}
            for src, role in rows:
                roles.setdefault(src, []).append(role)
            sources = sorted(roles)[:REFERRERS_MAX]
            kinds: dict[str, list[str]] = {}
            for a, k in conn.execute(
                sa.select(artifacts.c.address, artifacts.c.kind).where(
                    artifacts.c.address.in_(sources)
                )
            ):
                kinds.setdefault(a, []).append(k)
            out = []
            for src in sources:
                data = closure_manifest(conn, "blake3:" + src)
                out.append(
                    {
                        "mediaType": MANIFEST_MEDIA_TYPE,
                        "artifactType": ARTIFACT_TYPE,
                        "digest": "sha256:" + digest_bytes(data).sha256,
                        "size": len(data),
                        "annotations": {
                            ANN_ADDRESS: "blake3:" + src,
                            ANN_KIND: ",".join(sorted(kinds.get(src, []))) or "blob",
                            ANN_ROLE: ",".join(roles[src]),
                        },
                    }
                )
        return out


def open_repository(store: Store, name: str) -> OciRepository:
    """The repository of the root ``name``.

    Raises:
        InputError: ``registry.name``. NotFound: ``not-found.root`` (the root holds nothing:
        the OCI ``NAME_UNKNOWN``).
    """
    check_repository(name)
    # one statement, no transaction: every blob request of a pull or a push asks this
    tx = store.transactions
    held = point_row(tx, "SELECT blob FROM roots WHERE name = ? LIMIT 1", (name,))
    if held is FALLBACK:  # the general path, inside the error boundary
        with tx.read() as conn:
            held = conn.execute(
                sa.select(roots.c.blob).where(roots.c.name == name).limit(1)
            ).scalar()
    if held is None:
        raise error("not-found.root", f"no root named {name!r} holds anything", root=name)
    return OciRepository(store, name)


# --------------------------------------------------------------------------- push

#: What a pushed manifest may be (an OCI image manifest; an index or a Docker schema is not
#: an evstore closure).
_PUSHABLE = (MANIFEST_MEDIA_TYPE,)


def _descriptors(doc: Any) -> list[str]:
    """The SHA-256 hex of the config and every layer a pushed manifest names.

    Raises:
        InputError: ``registry.manifest-invalid`` (not an OCI image manifest, or a descriptor
        without a ``sha256:<64 hex>`` digest).
    """
    if (
        not isinstance(doc, dict)
        or doc.get("schemaVersion") != 2
        or doc.get("mediaType", MANIFEST_MEDIA_TYPE) not in _PUSHABLE
        or not isinstance(doc.get("layers"), list)
        or not isinstance(doc.get("config"), dict)
    ):
        raise error(
            "registry.manifest-invalid",
            "a pushed manifest is an OCI image manifest (schemaVersion 2, config, layers) of "
            "an evstore closure",
        )
    out: list[str] = []
    for i, desc in enumerate([doc["config"], *doc["layers"]]):
        digest = desc.get("digest") if isinstance(desc, dict) else None
        if not isinstance(digest, str) or not _HEX64.fullmatch(digest.removeprefix("sha256:")):
            pointer = "/config" if i == 0 else f"/layers/{i - 1}"
            raise error(
                "registry.manifest-invalid",
                "a descriptor needs a digest sha256:<64 hex>",
                pointer + "/digest",
            )
        if digest.startswith("sha256:"):
            out.append(digest[7:])
    return out


def _write_layout(
    store: Store,
    data: bytes,
    names: list[str],
    spooled: Callable[[str], str | None],
    out: str,
) -> list[str]:
    """Write the pushed manifest and every blob it names as an OCI layout in ``out``.

    A blob comes from the upload spool (``spooled(sha256 hex)`` -> a file path) or else from
    the store (an object already stored); returns the digests found in neither.
    """
    blob_dir = os.path.join(out, BLOB_DIR)
    os.makedirs(blob_dir)
    sha = digest_bytes(data).sha256
    entry = {"mediaType": MANIFEST_MEDIA_TYPE, "digest": "sha256:" + sha, "size": len(data)}
    with open(os.path.join(out, LAYOUT_FILE), "wb") as fh:
        fh.write(layout_bytes())
    with open(os.path.join(out, INDEX_FILE), "wb") as fh:
        fh.write(index_bytes([entry]))
    with open(os.path.join(blob_dir, sha), "wb") as fh:
        fh.write(data)
    missing: list[str] = []
    for name in dict.fromkeys(names):
        target = os.path.join(blob_dir, name)
        if os.path.exists(target):
            continue
        if "sha256:" + name == EMPTY_CONFIG_DIGEST:
            with open(target, "wb") as fh:
                fh.write(EMPTY_CONFIG)
            continue
        path = spooled(name)
        if path is not None:
            shutil.copyfile(path, target)
            continue
        try:
            with store.open_blob("sha256:" + name) as (_digest, chunks), open(target, "wb") as fh:
                for chunk in chunks:
                    fh.write(chunk)
        except NotFound:
            missing.append("sha256:" + name)
    return missing


def push_manifest(
    store: Store,
    name: str,
    reference: str,
    data: bytes,
    spooled: Callable[[str], str | None],
    *,
    actor: str = "local",
) -> dict[str, Any]:
    """Import a pushed closure manifest and its blobs; its root joins the root ``name``.

    docs/registry.md#push.

    The manifest and its blobs are laid out as an OCI layout and imported with every check of
    ``archive import`` (digests, closure complete, each kind's rules and bindings, one
    transaction); then the root object is retained under ``name`` (the tag ``latest``).

    Args:
        store: the open store.
        name: the repository (root) name.
        reference: the tag or ``sha256:`` digest the client pushed to: the digest of
            ``data``, the root's BLAKE3 hex, or ``latest``.
        data: the manifest's bytes.
        spooled: the path of an uploaded blob by SHA-256 hex, or None.
        actor: who pushes (recorded in the retention history).

    Returns:
        ``{"digest": "sha256:<hex>", "root": "blake3:<hex>", "import": {...}}``.

    Raises:
        InputError: ``registry.name``; ``registry.manifest-invalid`` (not a closure manifest,
            or a digest reference other than the body's); ``registry.tag`` (a tag that is
            neither ``latest`` nor the root's BLAKE3 hex); ``registry.tag-immutable``
            (``latest`` of a repository whose latest is another manifest); NotFound:
            ``registry.blob-unknown`` (a
            named blob neither uploaded nor stored). Any fault of ``archive import``
            (``archive.*``, the kinds' codes), with ``details.faults``. Nothing is kept then.
    """
    check_repository(name)
    sha = digest_bytes(data).sha256
    if reference.startswith("sha256:") and reference[7:] != sha:
        raise error(
            "registry.manifest-invalid",
            f"the manifest's digest is sha256:{sha}, not the {reference} it was pushed to",
            reference=reference,
        )
    try:
        doc, canonical = loads_canonical(data)
    except EvstoreError as err:
        raise error(
            "registry.manifest-invalid", f"the manifest is not JSON: {err.message}"
        ) from None
    if canonical != data:
        # A client that re-serialises the manifest (oras' SDK sends json.dumps of it) pushes
        # by tag: the closure manifest is its canonical form, as export writes it. Pushed by
        # digest, the bytes are what the digest names and must be canonical already.
        if reference.startswith("sha256:"):
            raise error(
                "registry.manifest-invalid",
                "a manifest pushed by digest is in its canonical form (RFC 8785), as "
                "archive export writes it",
                reference=reference,
            )
        data, sha = canonical, digest_bytes(canonical).sha256
    names = _descriptors(doc)
    ann = doc.get("annotations")
    root = ann.get(ANN_ROOT) if isinstance(ann, dict) else None
    if not isinstance(root, str) or not root.startswith("blake3:"):
        raise error(
            "registry.manifest-invalid",
            "a closure manifest names its root (annotation dev.evstore.root)",
            "/annotations",
        )
    _check_tag(store, name, reference, root, sha)
    with tempfile.TemporaryDirectory(prefix="evstore-push-") as tmp:
        out = os.path.join(tmp, "layout")
        missing = _write_layout(store, data, names, spooled, out)
        if missing:
            raise error(
                "registry.blob-unknown",
                f"the manifest names {missing[0]}, which was neither uploaded nor stored",
                digest=missing[0],
                missing=missing,
            )
        with rooting(name, actor):
            report = import_archive(store, out)
    store.retention.retain([root], name, actor=actor)
    return {"digest": "sha256:" + sha, "root": root, "import": report.to_dict()}


def _check_tag(store: Store, name: str, reference: str, root: str, sha: str) -> None:
    """Refuse a tag that cannot name this manifest (tags are immutable)."""
    if reference.startswith("sha256:") or reference == root[7:]:
        return
    if reference != LATEST:
        raise error(
            "registry.tag",
            f"push to the tag latest, to the root's BLAKE3 hex {root[7:]} or to the "
            f"manifest's digest, not {reference!r}",
            reference=reference,
        )
    try:
        repo = open_repository(store, name)
    except EvstoreError as err:
        if err.code != "not-found.root":
            raise
        return
    current, current_sha = repo.manifest(LATEST)
    if current_sha != sha:
        raise error(
            "registry.tag-immutable",
            f"the tag latest of {name!r} names sha256:{current_sha}; tags are immutable: push "
            "to the root's BLAKE3 hex or the manifest's digest",
            reference=reference,
            current="sha256:" + current_sha,
        )
