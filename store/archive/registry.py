"""What the OCI distribution routes serve: retention roots as repositories (docs/registry.md).

A retention root named ``R`` is the repository ``R``. Each object it holds is a tag, its
BLAKE3 hex; ``latest`` is the entry retained most recently. The manifest of a tag is the
root's closure manifest exactly as ``archive export`` writes it (store/archive/ops.py), byte
for byte, so a closure pulled over the network and one exported to a file have one digest.

Everything here reads one snapshot of the store (``Store.transactions.read``) and holds
index rows and manifests only, never an object's bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlalchemy as sa

from ..core.digests import digest_bytes
from ..core.errors import EvstoreError, error
from ..db.tables import retention_history, roots
from ..objects.leases import check_root_name
from .layout import EMPTY_CONFIG, EMPTY_CONFIG_DIGEST, MANIFEST_MEDIA_TYPE
from .ops import closure_manifest

if TYPE_CHECKING:
    from ..facade.api import Store

__all__ = ["LATEST", "OciRepository", "check_repository", "open_repository"]

#: The tag of the entry a root retained most recently.
LATEST = "latest"

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


@dataclass(frozen=True)
class OciRepository:
    """One retention root seen as an OCI repository (open it with :func:`open_repository`).

    Attributes:
        store: the open store it reads.
        name: the root's name.
        entries: the BLAKE3 hex of every object it holds, sorted.
        latest: the entry retained most recently (BLAKE3 hex).
    """

    #: The media type of every manifest a repository serves (an OCI image manifest).
    MANIFEST_MEDIA_TYPE = MANIFEST_MEDIA_TYPE

    store: Store
    name: str
    entries: tuple[str, ...]
    latest: str

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


def open_repository(store: Store, name: str) -> OciRepository:
    """The repository of the root ``name``.

    Raises:
        InputError: ``registry.name``. NotFound: ``not-found.root`` (the root holds nothing:
        the OCI ``NAME_UNKNOWN``).
    """
    check_repository(name)
    with store.transactions.read() as conn:
        held = sorted(
            r.address for r in conn.execute(sa.select(roots.c.address).where(roots.c.name == name))
        )
        if not held:
            raise error("not-found.root", f"no root named {name!r} holds anything", root=name)
        held_now = (
            sa.select(roots.c.address)
            .where(roots.c.name == name, roots.c.address == retention_history.c.address)
            .exists()
        )
        last = conn.execute(
            sa.select(retention_history.c.address)
            .where(
                retention_history.c.root == name,
                retention_history.c.action == "retain",
                held_now,
            )
            .order_by(retention_history.c.id.desc())
            .limit(1)
        ).scalar()
    latest = last if isinstance(last, str) else held[-1]
    return OciRepository(store, name, tuple(held), latest)
