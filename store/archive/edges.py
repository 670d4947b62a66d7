"""The edges an artifact's bytes call for, derived without a store (``archive verify``).

An archive member's ``dev.evstore.edges`` annotation is a claim. Each kind writes its edges
from the document itself (docs/kinds.md#edge-roles), so the claim is re-derived from the bytes
and compared, never trusted:

=====================  =========================================================================
kind                   edges its bytes call for
=====================  =========================================================================
fragment-batch         ``fragment`` to each fragment of ``evidence`` (the BLAKE3 of its canonical
                       form): required
fragment               ``source`` to the content version it was verified against: required, to
                       the blob of a ``fragment-source`` record of the same document and
                       fragment listed in the manifest (and the one ``content_sha256`` names)
fragment-source        ``source`` to the blob whose SHA-256 is ``content_sha256``: required
manifest               ``content`` to the blob whose SHA-256 ``content/digest`` gives: required
envelope               ``package`` to the listed package whose id is ``package_id``: required
run                    ``index``, ``file`` and ``artifact`` to what the record names: required
evidence-context       ``source-document`` to a listed source document: optional (present only
                       when the context was checked against one)
json                   ``mentions`` to a blob the document names by a content ref: optional (only
                       blobs stored when it was ingested got one)
package, request,      none
source-document
=====================  =========================================================================

A required edge whose target the manifest does not list is ``archive.closure-incomplete``;
an annotation that lacks a required edge, or records an edge the bytes do not call for, is
``archive.edges-mismatch``. Facts are derived once per member (:func:`member_facts`), only for
members that passed their kind's rules; :func:`edge_faults` compares one manifest's members.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..contracts.fragments.rules import extract_evidence
from ..contracts.manifests.rules import content_expectations
from ..contracts.packages.rules import normalize_uuid
from ..contracts.runs.rules import record_edges
from ..core.canonical import dumps
from ..core.digests import digest_bytes
from ..core.errors import EvstoreError, InputError, error
from ..core.refs import parse_ref

__all__ = ["Facts", "Need", "build_fault", "edge_faults", "member_facts"]


@dataclass(frozen=True)
class Need:
    """One required edge: its ``role`` and how its target is found in the manifest.

    ``how`` is ``address`` (``value`` a BLAKE3 hex), ``sha256`` (``value`` a SHA-256 hex),
    ``package`` (``value`` a normalised package id) or ``version`` (``value`` the tuple
    ``(document_id, fragment_id, content_sha256 or None)``: the blob of a listed
    ``fragment-source`` record of that pair, the one ``content_sha256`` names when given).
    ``what`` names the target in messages.
    """

    role: str
    how: str
    value: Any
    what: str


@dataclass
class Facts:
    """What one artifact member's bytes say about edges (see the module docstring).

    Attributes:
        needs: the required edges.
        sources: True when ``source-document`` edges to listed source documents are allowed.
        mentions: BLAKE3 and SHA-256 hex the document names (``mentions`` edges allowed to
            the listed members with those digests); None when the kind writes none.
        package_id: a package's normalised id (what an envelope's edge is resolved by).
        version: a ``fragment-source`` record's ``(document_id, fragment_id,
            content_sha256)``.
    """

    needs: list[Need] = field(default_factory=list)
    sources: bool = False
    mentions: tuple[frozenset[str], frozenset[str]] | None = None
    package_id: str | None = None
    version: tuple[str, str, str] | None = None


def _refs(doc: Any) -> tuple[frozenset[str], frozenset[str]]:
    """The BLAKE3 and SHA-256 hex of every content ref among the document's strings.

    The same strings ``json`` ingest looks at (evstore.objects.kinds): ``:`` in them and
    50 to 99 characters long.
    """
    b3: set[str] = set()
    sha: set[str] = set()
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str) and ":" in node and 50 <= len(node) < 100:
            try:
                ref = parse_ref(node)
            except InputError:
                continue
            (b3 if ref.algorithm == "blake3" else sha).add(ref.hex)
    return frozenset(b3), frozenset(sha)


def _fragment(doc: Any, facts: Facts) -> None:
    pinned = doc.get("content_sha256")
    key = (doc["document_id"], doc["fragment_id"], pinned)
    facts.needs.append(Need("source", "version", key, "its content version"))


def _batch(doc: Any, facts: Facts) -> None:
    for pointer, frag in extract_evidence(doc):
        address = digest_bytes(dumps(frag)).blake3
        facts.needs.append(Need("fragment", "address", address, f"the fragment at {pointer}"))


def _source(doc: Any, facts: Facts) -> None:
    sha = doc["content_sha256"]
    facts.version = (doc["document_id"], doc["fragment_id"], sha)
    facts.needs.append(Need("source", "sha256", sha, f"the source bytes sha256:{sha}"))


def _manifest(doc: Any, facts: Facts) -> None:
    sha = content_expectations(doc)["sha256"]
    facts.needs.append(Need("content", "sha256", sha, f"the content sha256:{sha}"))


def _package(doc: Any, facts: Facts) -> None:
    if isinstance(doc.get("id"), str):
        facts.package_id = normalize_uuid(doc["id"])


def _envelope(doc: Any, facts: Facts) -> None:
    pid = normalize_uuid(doc["package_id"])
    facts.needs.append(Need("package", "package", pid, f"the package {pid}"))


def _run(doc: Any, facts: Facts) -> None:
    for role, ref in record_edges(doc):
        facts.needs.append(Need(role, "address", ref.removeprefix("blake3:"), ref))


def _context(doc: Any, facts: Facts) -> None:
    facts.sources = True


def _json(doc: Any, facts: Facts) -> None:
    facts.mentions = _refs(doc)


_DERIVE: dict[str, Callable[[Any, Facts], None]] = {
    "fragment": _fragment,
    "fragment-batch": _batch,
    "fragment-source": _source,
    "manifest": _manifest,
    "package": _package,
    "envelope": _envelope,
    "run": _run,
    "evidence-context": _context,
    "json": _json,
}


def member_facts(kinds: Sequence[str], doc: Any) -> Facts:
    """The edge facts of an artifact member stored as ``kinds``, from its parsed document.

    Call it only for a document that passed every kind's store-free rules (the fields read
    are then present and well formed).

    Raises:
        EvstoreError: a rule a kind's derivation re-checks (e.g. ``content/digest``).
    """
    facts = Facts()
    for kind in kinds:
        derive = _DERIVE.get(kind)
        if derive is not None:
            derive(doc, facts)
    return facts


@dataclass
class _Listed:
    """The members of one manifest, indexed for resolving required edges."""

    address: dict[str, tuple[str, ...]]  # BLAKE3 hex -> kinds
    sha256: dict[str, str]  # SHA-256 hex -> BLAKE3 hex
    packages: dict[str, set[str]] = field(default_factory=dict)
    versions: dict[tuple[str, str], set[str]] = field(default_factory=dict)

    def candidates(self, need: Need) -> set[str]:
        """The BLAKE3 hex of the listed members that ``need`` may lead to."""
        if need.how == "address":
            return {need.value} if need.value in self.address else set()
        if need.how == "sha256":
            found = self.sha256.get(need.value)
            return {found} if found is not None else set()
        if need.how == "package":
            return set(self.packages.get(need.value, ()))
        document_id, fragment_id, pinned = need.value
        shas = self.versions.get((document_id, fragment_id), set())
        if pinned is not None:
            shas = shas & {pinned}
        return {self.sha256[s] for s in shas if s in self.sha256}


Fault = Callable[[str, str, int, dict[str, Any]], EvstoreError]


def edge_faults(
    members: Sequence[tuple[str, str, tuple[str, ...], frozenset[tuple[str, str]]]],
    facts: Mapping[str, Facts],
    fault: Fault,
) -> list[EvstoreError]:
    """Compare each member's claimed edges with those its bytes call for.

    Args:
        members: one manifest's members, in layer order: ``(BLAKE3 hex, SHA-256 hex, kinds,
            claimed edges as (role, BLAKE3 hex))``.
        facts: :class:`Facts` by BLAKE3 hex (members without any are not compared: their
            rule faults are reported elsewhere).
        fault: ``fault(code, message, layer index, details)`` builds one error.

    Returns:
        ``archive.closure-incomplete`` for a required edge whose target is not listed (unless
        the claimed edges already lead outside the manifest with that role, reported by the
        closure check), then ``archive.edges-mismatch`` for each edge missing from or added
        to the annotation.
    """
    listed = _Listed({a: k for a, _, k, _ in members}, {s: a for a, s, _, _ in members})
    for address, _, _, _ in members:
        f = facts.get(address)
        if f is not None and f.package_id is not None:
            listed.packages.setdefault(f.package_id, set()).add(address)
        if f is not None and f.version is not None:
            d, frag, sha = f.version
            listed.versions.setdefault((d, frag), set()).add(sha)
    out: list[EvstoreError] = []
    for i, (address, _, _, claimed) in enumerate(members):
        f = facts.get(address)
        if f is None:
            continue
        derived: set[tuple[str, str]] = set()
        for need in f.needs:
            found = listed.candidates(need)
            chosen = sorted(d for r, d in claimed if r == need.role and d in found)
            if chosen:
                derived.add((need.role, chosen[0]))
            elif len(found) == 1:
                derived.add((need.role, found.pop()))
            elif not found:
                if not any(r == need.role and d not in listed.address for r, d in claimed):
                    out.append(
                        fault(
                            "archive.closure-incomplete",
                            f"blake3:{address} calls for a {need.role} edge to {need.what},"
                            " which the manifest does not list",
                            i,
                            {"role": need.role},
                        )
                    )
            else:
                out.append(_mismatch(fault, address, i, need.role, None, "lacks"))
        allowed = derived | set(_optional(f, claimed, listed))
        for role, dst in sorted(derived - claimed):
            out.append(_mismatch(fault, address, i, role, dst, "lacks"))
        for role, dst in sorted(claimed - allowed):
            if dst in listed.address:  # an edge leading outside: the closure check's fault
                out.append(_mismatch(fault, address, i, role, dst, "adds"))
    return out


def _optional(
    f: Facts, claimed: Iterable[tuple[str, str]], listed: _Listed
) -> Iterable[tuple[str, str]]:
    """The claimed edges the kind may or may not have written (allowed as claimed)."""
    for role, dst in claimed:
        kinds = listed.address.get(dst)
        if kinds is None:
            continue
        if role == "source-document" and f.sources and "source-document" in kinds:
            yield role, dst
        elif role == "mentions" and f.mentions is not None:
            b3, sha = f.mentions
            if dst in b3 or any(listed.sha256.get(s) == dst for s in sha):
                yield role, dst


def _mismatch(
    fault: Fault, address: str, i: int, role: str, dst: str | None, how: str
) -> EvstoreError:
    if how == "lacks":
        target = f" to blake3:{dst}" if dst is not None else ""
        message = (
            f"the edges annotation of blake3:{address} lacks the {role} edge{target} that its"
            " bytes call for"
        )
    else:
        message = (
            f"the edges annotation of blake3:{address} records a {role} edge to blake3:{dst}"
            " that its bytes do not call for"
        )
    details: dict[str, Any] = {"role": role}
    if dst is not None:
        details["target"] = "blake3:" + dst
    return fault("archive.edges-mismatch", message, i, details)


def build_fault(path: str) -> Fault:
    """A :data:`Fault` builder pointing into the manifest at ``path`` (``/layers/N``)."""

    def make(code: str, message: str, i: int, details: dict[str, Any]) -> EvstoreError:
        return error(code, message, f"/layers/{i}", path=path, **details)

    return make
