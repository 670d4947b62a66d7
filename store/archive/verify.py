"""Offline verification of an archive: no store, every check that needs none.

:func:`verify_source` reads a listed :class:`~evstore.archive.layout.Source` and returns an
:class:`Checked` holding every fault, each naming the file (``path``) and, inside a JSON
file, the place (``pointer``):

1. the entries themselves (links, unsafe paths, duplicates, bombs: store/archive/layout.py);
2. ``oci-layout`` and ``index.json`` present and well formed, nothing else beside ``blobs/``
   (no other file or directory, empty ones included), every blob named by a 64-hex SHA-256,
   no manifest, index or root listed twice (``archive.layout``), and every JSON file of the
   layout (``oci-layout``, indexes, manifests) in its canonical form
   (``archive.not-canonical``);
3. every blob's SHA-256 equals its name (``archive.digest-mismatch``);
4. every descriptor (index entry, config, member) names a present blob
   (``archive.missing-blob``) of the declared size (``archive.size-mismatch``), and each
   member's BLAKE3 address annotation is the BLAKE3 of its bytes (``archive.address-mismatch``);
5. each root's closure is complete: every edge a member records leads to a member of the same
   manifest (``archive.closure-incomplete``), every member is reached from the root, and the
   edges form no cycle (``archive.cycle``; content-addressed objects cannot);
6. every artifact member is canonical JSON (``archive.not-canonical``, or the strict reader's
   ``json.*``) and passes its kind's store-free contract rules: the pure ``validate`` of the
   rules module its kind registry record names (store/contracts/<name>/rules.py), with the
   default settings (an import: the receiving store's);
7. each member's edges annotation equals the edges its bytes call for (store/archive/edges.py):
   a required edge whose target is not listed is ``archive.closure-incomplete``, an edge
   missing from the annotation or not called for is ``archive.edges-mismatch``; the
   annotation is used only once it agrees;
8. with proofs (``export --with-proofs``), every member's inclusion proof at the archive's
   one checkpoint, under the key given or else the archive's own (store/archive/proofs.py).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.canonical import loads, loads_canonical
from ..core.digests import Digest, Hasher
from ..core.errors import EvstoreError, error, join_pointer
from .edges import Facts, build_fault, edge_faults, member_facts
from .layout import (
    ANN_ADDRESS,
    ANN_EDGES,
    ANN_KIND,
    ANN_ROLE,
    ANN_ROOT,
    BLOB_DIR,
    INDEX_FILE,
    INDEX_MEDIA_TYPE,
    LAYOUT_FILE,
    LAYOUT_VERSION,
    MANIFEST_MEDIA_TYPE,
    MEDIA_ARTIFACT,
    MEDIA_BLOB,
    FaultList,
    Limits,
    Source,
    blob_name,
)
from .proofs import PROOF_MEDIA, ProofLayers, proof_faults

__all__ = ["Checked", "Member", "Root", "verify_source"]

_HEX64 = re.compile(r"[0-9a-f]{64}")


def _found(faults: list[EvstoreError]) -> int:
    """Faults found so far, those a full :class:`FaultList` only counted included."""
    return len(faults) + (faults.cut if isinstance(faults, FaultList) else 0)


_ADDRESS = re.compile(r"blake3:[0-9a-f]{64}")


@dataclass(frozen=True)
class Member:
    """One object of a root's closure, as its manifest describes it.

    Attributes:
        address: ``blake3:<hex>``. sha256: 64 hex. size: bytes.
        kinds: the artifact kinds it is stored as (empty for a plain blob).
        role: the edge role that reached it (``root`` for the root).
        edges: its recorded edges ``(role, blake3:<hex>)``.
    """

    address: str
    sha256: str
    size: int
    kinds: tuple[str, ...]
    role: str
    edges: tuple[tuple[str, str], ...]


@dataclass
class Root:
    """One exported root: its address, kinds, manifest digest and members (root first)."""

    address: str
    kind: str
    manifest: str
    members: list[Member] = field(default_factory=list)
    proofs: ProofLayers = field(default_factory=ProofLayers)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "address": self.address,
            "kind": self.kind,
            "manifest": "sha256:" + self.manifest,
            "objects": len(self.members),
        }


@dataclass
class Checked:
    """The outcome of an offline verification.

    Attributes:
        where: the archive path. roots: the roots found. members: every member by address.
        digests: every blob file's digest, by SHA-256 hex. faults: every fault found, at
        most :data:`~evstore.archive.layout.MAX_FAULTS` and then one saying how many more.
    """

    where: str
    roots: list[Root] = field(default_factory=list)
    members: dict[str, Member] = field(default_factory=dict)
    digests: dict[str, Digest] = field(default_factory=dict)
    faults: list[EvstoreError] = field(default_factory=FaultList)
    #: ``absent``, ``verified`` (with the key given), ``self-consistent`` (checked with the
    #: archive's own key: anyone can make a key, so this proves nothing about the log) or
    #: ``failed`` (a proof fault is among ``faults``).
    proofs: str = "absent"

    @property
    def ok(self) -> bool:
        """True when no fault was found."""
        return not self.faults

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``ok``, ``archive``, ``roots``, ``objects``, ``bytes``, ``faults``."""
        return {
            "ok": self.ok,
            "archive": self.where,
            "roots": [r.to_dict() for r in self.roots],
            "objects": len(self.members),
            "bytes": sum(m.size for m in self.members.values()),
            "proofs": self.proofs,
            "faults": [f.to_dict() for f in self.faults],
        }


class _Run:
    """State of one verification (the source, the limits, the faults so far)."""

    def __init__(
        self, src: Source, limits: Limits, settings: Mapping[str, Any] | None = None
    ) -> None:
        self.src = src
        self.limits = limits
        self.settings = settings
        self.facts: dict[str, Facts] = {}  # edge facts of the members that passed their rules
        self.out = Checked(src.where, faults=src.faults)  # one capped list (FaultList)
        self.referenced: set[str] = set()
        self.listed: set[str] = set()  # manifests and indexes named by any index
        self.root_addresses: set[str] = set()

    def fault(self, code: str, message: str, path: str, pointer: str = "", **kw: Any) -> None:
        faults = self.out.faults
        if isinstance(faults, FaultList) and faults.full:
            faults.skip(code)  # counted, not built
            return
        faults.append(error(code, message, pointer, path=path, **kw))

    def json_file(self, name: str, *, canonical: bool = True) -> Any:
        """A JSON file of the layout, parsed strictly, or None (fault recorded).

        ``canonical=False`` (``oci-layout`` and the indexes, which other OCI tools rewrite in
        their own spelling) accepts any strict JSON text; its values are checked all the same.
        """
        size = self.src.files.get(name)
        if size is None:
            self.fault("archive.layout", f"the archive has no {name}", name)
            return None
        if size > self.limits.max_json:
            self.fault(
                "archive.too-large",
                f"{name} is {size} bytes, over the limit of {self.limits.max_json}",
                name,
                limit=self.limits.max_json,
            )
            return None
        return self.json_bytes(self.src.read(name), name, canonical=canonical)

    def json_bytes(self, data: bytes, name: str, *, canonical: bool = True) -> Any:
        """``data`` (the file ``name``) parsed strictly, or None; not canonical: a fault.

        Every JSON file of an archive is written in its RFC 8785 form (docs/archive.md): any
        other spelling (``753.0`` for a size, spaces, another member order) is refused with
        ``archive.not-canonical``, though its value is still checked.
        """
        try:
            value, form = loads_canonical(data)
        except EvstoreError as err:
            err.path = name
            self.out.faults.append(err)
            return None
        if canonical and form != data:
            self.fault("archive.not-canonical", f"{name} is not in its canonical form", name)
        return value

    def stray_dirs(self) -> None:
        """Fault every directory inside ``blobs/`` but ``blobs/sha256`` (empty ones included).

        An empty directory outside ``blobs/`` (an OCI tool's work area, e.g. ``ingest``) is
        left alone: it holds no byte; a file in any other place is refused by
        :meth:`hash_blobs`.
        """
        allowed = {BLOB_DIR.rstrip("/"), BLOB_DIR.split("/", 1)[0]}
        used = {f.rsplit("/", i)[0] for f in self.src.files for i in range(1, f.count("/") + 1)}
        for name in sorted(self.src.dirs - allowed):
            if not name.startswith(BLOB_DIR.split("/", 1)[0] + "/") and name not in used:
                continue
            self.fault(
                "archive.layout",
                f"unexpected directory {name} (only blobs/sha256/ holds the blobs)",
                name,
            )

    def hash_blobs(self) -> None:
        for name in sorted(self.src.files):
            if name in (LAYOUT_FILE, INDEX_FILE):
                continue
            hexpart = name.removeprefix(BLOB_DIR)
            if not name.startswith(BLOB_DIR) or not _HEX64.fullmatch(hexpart):
                self.fault(
                    "archive.layout",
                    f"unexpected entry {name} (only oci-layout, index.json and "
                    "blobs/sha256/<64 hex> belong to the layout)",
                    name,
                )
                continue
            h = Hasher()
            for chunk in self.src.chunks(name):
                h.update(chunk)
            got = h.digest()
            if got.sha256 != hexpart:
                self.fault(
                    "archive.digest-mismatch",
                    f"the bytes of {name} have SHA-256 {got.sha256}, not their name",
                    name,
                    sha256=got.sha256,
                )
                continue
            self.out.digests[hexpart] = got

    def descriptor(self, desc: Any, path: str, pointer: str) -> str | None:
        """The SHA-256 hex of a descriptor whose blob is present with its size, or None."""
        if not isinstance(desc, dict):
            self.fault("archive.layout", "a descriptor is not an object", path, pointer)
            return None
        digest, size = desc.get("digest"), desc.get("size")
        if (
            not isinstance(digest, str)
            or not digest.startswith("sha256:")
            or not _HEX64.fullmatch(digest[7:])
            or type(size) is not int
            or not isinstance(desc.get("mediaType"), str)
        ):
            self.fault(
                "archive.layout",
                "a descriptor needs mediaType, digest sha256:<64 hex> and an integer size",
                path,
                pointer,
            )
            return None
        hexpart = digest[7:]
        self.referenced.add(hexpart)
        found = self.out.digests.get(hexpart)
        if found is None:
            self.fault(
                "archive.missing-blob",
                f"the descriptor names {digest}, which the archive does not hold",
                path,
                pointer,
                digest=digest,
            )
            return None
        if found.size != size:
            self.fault(
                "archive.size-mismatch",
                f"the descriptor says {size} bytes; {blob_name(hexpart)} has {found.size}",
                path,
                join_pointer(pointer, "size"),
                declared=size,
                actual=found.size,
            )
            return None
        return hexpart


def _kinds(text: Any) -> tuple[str, ...] | None:
    from ..objects.kinds import known_kinds

    if not isinstance(text, str):
        return None
    if text == "blob":
        return ()
    kinds = tuple(text.split(","))
    if list(kinds) != sorted(set(kinds)) or not set(kinds) <= set(known_kinds()):
        return None
    return kinds


def _edges(text: Any) -> tuple[tuple[str, str], ...] | None:
    if text is None:
        return ()
    try:
        value = loads(text) if isinstance(text, str) else None
    except EvstoreError:
        return None
    if not isinstance(value, list) or not all(
        isinstance(e, list)
        and len(e) == 2
        and isinstance(e[0], str)
        and isinstance(e[1], str)
        and _ADDRESS.fullmatch(e[1])
        for e in value
    ):
        return None
    return tuple((e[0], e[1]) for e in value)


def _member(run: _Run, layer: Any, path: str, pointer: str) -> Member | None:
    hexpart = run.descriptor(layer, path, pointer)
    if hexpart is None:
        return None
    ann = layer.get("annotations")
    ann = ann if isinstance(ann, dict) else {}
    address, kinds = ann.get(ANN_ADDRESS), _kinds(ann.get(ANN_KIND))
    edges, role = _edges(ann.get(ANN_EDGES)), ann.get(ANN_ROLE)
    media = MEDIA_ARTIFACT if kinds else MEDIA_BLOB
    if (
        not isinstance(address, str)
        or not _ADDRESS.fullmatch(address)
        or kinds is None
        or edges is None
        or not isinstance(role, str)
        or layer["mediaType"] != media
    ):
        run.fault(
            "archive.layout",
            "a member needs the annotations dev.evstore.address (blake3:<hex>), "
            "dev.evstore.kind (known kinds or blob), dev.evstore.role and a well-formed "
            f"dev.evstore.edges, and media type {media}",
            path,
            join_pointer(pointer, "annotations"),
        )
        return None
    digest = run.out.digests[hexpart]
    if digest.address != address:
        run.fault(
            "archive.address-mismatch",
            f"the member's bytes have BLAKE3 {digest.address}, not its annotation {address}",
            path,
            join_pointer(pointer, "annotations", ANN_ADDRESS),
            blob=blob_name(hexpart),
        )
        return None
    return Member(address, hexpart, digest.size, kinds, role, edges)


def _closure_faults(run: _Run, root: Root, path: str) -> None:
    """Every edge inside the manifest, every member reached from the root."""
    by_address = {m.address: m for m in root.members}
    for i, m in enumerate(root.members):
        for role, dst in m.edges:
            if dst not in by_address:
                run.fault(
                    "archive.closure-incomplete",
                    f"{m.address} has a {role} edge to {dst}, which the manifest does not list",
                    path,
                    f"/layers/{i}",
                    missing=dst,
                )
    reached = {root.address}
    stack = [root.address]
    while stack:
        for _, target in by_address[stack.pop()].edges:
            if target in by_address and target not in reached:
                reached.add(target)
                stack.append(target)
    for i, m in enumerate(root.members):
        # A content-version record is listed with the fragment whose source it registered.
        companion = "fragment-source" in m.kinds and all(d in reached for _, d in m.edges)
        if m.address not in reached and not companion:
            run.fault(
                "archive.layout",
                f"{m.address} is listed but not reached from the root by any edge",
                path,
                f"/layers/{i}",
            )


def _manifest(run: _Run, entry: dict[str, Any], hexpart: str, pointer: str) -> None:
    path = blob_name(hexpart)
    if run.out.digests[hexpart].size > run.limits.max_json:
        run.fault("archive.too-large", "the manifest is over the JSON size limit", path)
        return
    doc = run.json_bytes(run.src.read(path), path)
    if doc is None:
        return
    if not isinstance(doc, dict) or doc.get("schemaVersion") != 2:
        run.fault("archive.layout", "a manifest is not an OCI image manifest", path)
        return
    config = doc.get("config")
    if run.descriptor(config, path, "/config") is None:
        return
    layers = doc.get("layers")
    ann = doc.get("annotations")
    ann = ann if isinstance(ann, dict) else {}
    address = ann.get(ANN_ROOT)
    entry_ann = entry.get("annotations")
    want = entry_ann.get(ANN_ADDRESS, address) if isinstance(entry_ann, dict) else address
    # An index entry written by another OCI tool (skopeo, oras) lacks evstore's annotations:
    # the root is then the manifest's own claim, checked against its first member's bytes.
    if (
        not isinstance(layers, list)
        or not layers
        or not isinstance(address, str)
        or address != want
    ):
        run.fault(
            "archive.layout",
            "a manifest needs layers and a dev.evstore.root annotation equal to its index "
            "entry's dev.evstore.address",
            path,
            pointer,
        )
        return
    if address in run.root_addresses:
        run.fault("archive.layout", f"the root {address} is listed twice", path, pointer)
        return
    run.root_addresses.add(address)
    root = Root(address, str(ann.get(ANN_KIND, "")), hexpart)
    wanted = 0
    for i, layer in enumerate(layers):
        if isinstance(layer, dict) and layer.get("mediaType") in PROOF_MEDIA:
            proof = run.descriptor(layer, path, f"/layers/{i}")
            ann = layer.get("annotations")
            if proof is not None and not root.proofs.add(
                layer["mediaType"], proof, ann if isinstance(ann, dict) else {}
            ):
                run.fault("archive.layout", "a proof names no member", path, f"/layers/{i}")
            continue
        wanted += 1
        m = _member(run, layer, path, f"/layers/{i}")
        if m is not None:
            root.members.append(m)
    if len(root.members) != wanted or not root.members:
        return
    if root.members[0].address != address or root.members[0].role != "root":
        run.fault("archive.layout", "the first member must be the root", path, "/layers/0")
        return
    run.out.roots.append(root)
    _closure_faults(run, root, path)
    for m in root.members:
        run.out.members.setdefault(m.address, m)


def _index(run: _Run, doc: Any, path: str, seen: set[str]) -> None:
    """Walk an image index (index.json or a nested index blob), refusing cycles."""
    entries = doc.get("manifests") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or doc.get("schemaVersion") != 2:
        run.fault("archive.layout", "not an OCI image index (schemaVersion 2, manifests)", path)
        return
    for i, entry in enumerate(entries):
        pointer = f"/manifests/{i}"
        hexpart = run.descriptor(entry, path, pointer)
        if hexpart is None:
            continue
        media = entry["mediaType"]
        if media == INDEX_MEDIA_TYPE and hexpart in seen:
            run.fault("archive.cycle", "the image indexes refer to each other", path, pointer)
            continue
        if hexpart in run.listed:  # in this index or any other of the archive
            run.fault("archive.layout", f"sha256:{hexpart} is listed twice", path, pointer)
            continue
        run.listed.add(hexpart)
        if media == INDEX_MEDIA_TYPE:
            nested = run.json_file(blob_name(hexpart), canonical=False)
            if nested is not None:
                _index(run, nested, blob_name(hexpart), seen | {hexpart})
        elif media == MANIFEST_MEDIA_TYPE:
            _manifest(run, entry, hexpart, pointer)
        else:
            run.fault("archive.layout", f"an index entry of media type {media!r}", path, pointer)


def _cycle_faults(run: _Run) -> None:
    """Edges among the members must form no cycle (a cycle cannot be content-addressed)."""
    members = run.out.members
    state: dict[str, int] = {}  # 1 on the path, 2 done
    for start in sorted(members):
        if start in state:
            continue
        stack: list[tuple[str, Iterable[str]]] = [(start, iter(_dsts(members, start)))]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            nxt = next(iter(children), None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                continue
            if state.get(nxt) == 1:
                run.fault(
                    "archive.cycle",
                    f"the members' edges form a cycle through {nxt}",
                    blob_name(members[nxt].sha256),
                    address=nxt,
                )
                return
            if nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(_dsts(members, nxt))))


def _dsts(members: dict[str, Member], address: str) -> list[str]:
    return sorted({d for _, d in members[address].edges if d != address and d in members})


def _rule_faults(run: _Run, m: Member) -> None:
    """Canonical form and each kind's store-free rules for one artifact member."""
    from ..objects.kinds import claiming_kind, kind_record

    path = blob_name(m.sha256)
    if m.size > run.limits.max_json:
        run.fault("archive.too-large", "an artifact over the JSON size limit", path)
        return
    data = run.src.read(path)
    try:
        value, canonical = loads_canonical(data)
    except EvstoreError as err:
        err.path = path
        run.out.faults.append(err)
        return
    if canonical != data:
        run.fault("archive.not-canonical", "the artifact is not in its canonical form", path)
        return
    before = _found(run.out.faults)
    for kind in m.kinds:
        record = kind_record(kind)  # every kind of a member is registered (_kinds)
        if record.rules is None:  # json: the strict reader, and no contract may claim it
            claimed = claiming_kind(value) if kind == "json" else None
            if claimed is not None:
                run.fault("kind.claimed", f"kind {claimed!r} claims this json member", path)
            continue
        doc = loads(data, number_tokens=True) if record.number_tokens else value
        rules = importlib.import_module(record.rules)
        for fault in rules.validate(doc, run.settings, kind=kind).errors:
            fault.path = path
            fault.details.setdefault("kind", kind)
            run.out.faults.append(fault)
    if _found(run.out.faults) == before:  # well formed: its bytes say which edges it has
        try:
            run.facts[m.address[7:]] = member_facts(m.kinds, value)
        except EvstoreError as err:
            err.path = path
            run.out.faults.append(err)


def _edge_faults(run: _Run) -> None:
    """Every root's edges annotations against the edges the members' bytes call for."""
    for root in run.out.roots:
        members = [
            (m.address[7:], m.sha256, m.kinds, frozenset((r, d[7:]) for r, d in m.edges))
            for m in root.members
        ]
        run.out.faults += edge_faults(members, run.facts, build_fault(blob_name(root.manifest)))


def _proofs(run: _Run, key: str | None) -> None:
    """Every root's proofs (store/archive/proofs.py), against ``key`` when given."""
    with_proofs = [r for r in run.out.roots if r.proofs]
    if key is not None and not with_proofs:
        run.fault(
            "archive.no-proofs",
            "a verifier key was given but the archive carries no checkpoint or proofs",
            INDEX_FILE,
        )
        return
    if not with_proofs:
        return
    notes: set[bytes] = set()
    before = _found(run.out.faults)
    for root in run.out.roots:
        members = {m.address: m.sha256 for m in root.members}
        path = blob_name(root.manifest)
        run.out.faults += proof_faults(
            root.proofs, members, lambda h: run.src.read(blob_name(h)), key, path
        )
        notes.update(run.src.read(blob_name(h)) for h in root.proofs.checkpoint)
    if len(notes) > 1 or len(with_proofs) != len(run.out.roots):
        run.fault("archive.layout", "every root is proven at one checkpoint", INDEX_FILE)
    if _found(run.out.faults) > before:
        run.out.proofs = "failed"
    else:
        run.out.proofs = "verified" if key is not None else "self-consistent"


def verify_source(
    src: Source,
    limits: Limits | None = None,
    key: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> Checked:
    """Every offline check of an archive (see the module docstring), listing every fault.

    Args:
        src: the listed archive (:func:`evstore.archive.layout.open_source`).
        limits: the reader's limits (defaults: :class:`~evstore.archive.layout.Limits`).
        key: the log's verifier key: every proof must verify under it
            (``archive.no-proofs`` when the archive carries none).
        settings: the store settings the kinds' rules read (None: the defaults; an import
            passes the receiving store's, e.g. ``manifests.accept_unverified_phase``).

    Returns:
        A :class:`Checked` (``ok`` when no fault was found).

    Raises:
        InputError: ``input.unreadable`` when a listed file cannot be read.
    """
    run = _Run(src, limits or Limits(), settings)
    layout = run.json_file(LAYOUT_FILE, canonical=False)
    if layout is not None and layout != {"imageLayoutVersion": LAYOUT_VERSION}:
        run.fault("archive.layout", f"oci-layout must say version {LAYOUT_VERSION}", LAYOUT_FILE)
    run.stray_dirs()
    run.hash_blobs()
    index = run.json_file(INDEX_FILE, canonical=False)
    if index is not None:
        _index(run, index, INDEX_FILE, set())
    _cycle_faults(run)
    for hexpart in sorted(set(run.out.digests) - run.referenced):
        run.fault(
            "archive.layout",
            "a blob no descriptor names (only listed objects belong to an archive)",
            blob_name(hexpart),
        )
    for m in sorted(run.out.members.values(), key=lambda m: m.address):
        if m.kinds:
            _rule_faults(run, m)
    _edge_faults(run)
    _proofs(run, key)
    if isinstance(run.out.faults, FaultList):
        run.out.faults.finish()
    return run.out
