"""The kind registry: every kind of JSON artifact evstore knows, one record per kind.

Each kind is one :class:`KindRecord` line in :data:`_REGISTRY` (registry order): its name,
its handler, its pure rules module, its place in detection, whether its rules read numbers as
written, its archive import rank and its reviewer page. Every other module asks the registry
(:func:`kind_record`, :func:`known_kinds`, :func:`detection_order`, :func:`kind_page`,
:func:`get_handler`); none keeps a table of kinds of its own. Modules are named by string and
imported on first use, so this module imports no contract (docs/design.md, "Start-up cost").

A handler is a :class:`KindHandler`: ``detect``, ``check`` and ``write`` are its own; ``stage``,
``flush``, ``prefetch`` and ``audit`` have declared defaults (a kind that does not batch writes
each document at once; a kind without an audit is re-checked as at ingest). Callers call every
member; none probes for one.

Detection tries kinds in :func:`detection_order`; ``json`` (any well-formed JSON) is the
fallback, and a document that looks like a contract kind is never stored as ``json``. A
handler that cannot be imported fails closed (``store.kind-unavailable``) wherever it could be
met: ingest, validate, detection, check, find and ls of that kind.
"""

from __future__ import annotations

import abc
import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..core.errors import EvstoreError, Faults, InputError, error
from ..core.refs import parse_ref

if TYPE_CHECKING:
    from .artifacts import ArtifactResult
    from .txn import Txn

__all__ = [
    "ADDRESS_ATTRS",
    "DEFAULT_IMPORT_RANK",
    "DIGEST_ATTRS",
    "JsonKind",
    "KindHandler",
    "KindRecord",
    "check_kind",
    "claiming_kind",
    "clear_cache",
    "detect_kind",
    "detection_order",
    "get_handler",
    "kind_page",
    "kind_record",
    "kind_records",
    "known_kinds",
    "lookup_value",
    "register_kind",
    "unregister_kind",
]

#: Archive import rank of a kind that others are not checked against (docs/archive.md).
DEFAULT_IMPORT_RANK = 5


@dataclass(frozen=True)
class KindRecord:
    """One kind's facts: the one line a contract adds to the registry (docs/kinds.md).

    Attributes:
        name: the registry name (lower-kebab; ``--kind``, ``artifacts.kind``).
        handler: ``"module:Class"`` of its :class:`KindHandler` (absolute module name,
            imported on first use).
        rules: the absolute name of its pure rules module, whose
            ``validate(doc, settings, *, kind=name) -> Faults`` ``archive verify`` runs with
            no store; None for ``json`` (the strict reader is its only rule).
        detection: its place in detection (lower first), or None for a kind that is only
            ever ingested by name; ``json`` is last, the fallback.
        number_tokens: its rules read JSON numbers as written (``10.0`` stays a float, so unit
            ids must be integer tokens); the stored canonical bytes are unchanged.
        import_rank: its rank in ``archive import`` (lower first: kinds that others are
            checked against), then dependencies first.
        page: the reviewer page (``/ui/<page>/<address>``) that shows it, or None for the
            generic artifact page.
    """

    name: str
    handler: str
    rules: str | None = None
    detection: int | None = None
    number_tokens: bool = False
    import_rank: int = DEFAULT_IMPORT_RANK
    page: str | None = None


class KindHandler(abc.ABC):
    """What a kind handler provides: every member a caller uses, defaults declared.

    A handler is instantiated with no arguments, once per process (:func:`get_handler`).
    ``check``, ``write`` and ``audit`` return or raise typed faults
    (:class:`~evstore.core.errors.Faults`, :class:`~evstore.core.errors.EvstoreError`).
    """

    #: Registry name (docs/kinds.md); equal to its :class:`KindRecord`'s.
    name: ClassVar[str]
    #: The contract version stored with each artifact (``artifacts.contract_version``).
    contract_version: ClassVar[str]

    @abc.abstractmethod
    def detect(self, doc: Any) -> bool:
        """True when ``doc`` is (or claims to be, near misses included) of this kind.

        Raises:
            EvstoreError: a kind may refuse a document it cannot tell from another (the
                contexts' ``context.kind-ambiguous``).
        """

    @abc.abstractmethod
    def check(self, doc: Any, txn: Txn, canonical: bytes | None = None) -> Faults:
        """Every fault of ``doc``, ordered schema, contract rules, self-address (reads only).

        ``canonical`` is the document's RFC 8785 bytes when the caller has them (ingest
        does): a kind may check its self-address on them instead of encoding again.
        """

    @abc.abstractmethod
    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Write-time bindings (faults through ``txn.fault``), then the artifact's rows."""

    def prefetch(self, docs: Sequence[Any], txn: Txn, batch: dict[str, Any]) -> None:
        """Read what a run of consecutive documents of this kind needs, before any is checked.

        State goes in ``batch``, shared with :meth:`stage` and :meth:`flush` of the run.
        Default: nothing to read.
        """
        return None

    def stage(self, doc: Any, canonical: bytes, txn: Txn, batch: dict[str, Any]) -> Any:
        """One checked document's write-time bindings; returns its spec for :meth:`flush`.

        ``batch`` holds state shared by the run (``batch["name"]`` is the document's name).
        Default, a kind that does not batch: :meth:`write` the document at once; its
        :class:`~evstore.objects.artifacts.ArtifactResult` is the spec.
        """
        return self.write(doc, canonical, txn)

    def flush(
        self, specs: list[Any], txn: Txn, batch: dict[str, Any] | None = None
    ) -> list[ArtifactResult]:
        """Write the staged specs of a run (one statement per table); results in order.

        Default: the specs are the results :meth:`stage` wrote.
        """
        return list(specs)

    def audit(self, doc: Any, address: str, txn: Txn) -> Faults:
        """Re-verification of the stored artifact at ``address`` for ``evstore check``.

        The Txn is read-only (mode ``audit``: ``txn.bind`` compares without writing).
        Default: :meth:`check` as at ingest.
        """
        return Faults.of(self.check(doc, txn))


class JsonKind(KindHandler):
    """Kind ``json``: any well-formed JSON (the strict reader is its only rule).

    Edges: every string member that is a content ref of a blob already stored gets an edge
    with role ``mentions``, so lineage finds generic JSON records that name stored bytes.
    """

    name = "json"
    contract_version = "rfc8785"

    def detect(self, doc: Any) -> bool:
        """Always True: the fallback kind."""
        return True

    def check(self, doc: Any, txn: Txn, canonical: bytes | None = None) -> Faults:
        """Refuse a document that a contract kind claims; no other rule beyond the reader.

        ``--kind json`` never stores a contract document unvalidated (docs/kinds.md): a
        document that detection gives to a contract kind, near misses included, fails with
        ``kind.claimed`` at "" naming that kind.

        Raises:
            StoreStateError: ``store.kind-unavailable`` (detection asks every kind).
        """
        faults = Faults()
        claimed = claiming_kind(doc)
        if claimed is not None:
            faults.add(
                "kind.claimed",
                f"this document is claimed by kind {claimed!r} and is not stored as json; "
                f"ingest it with --kind {claimed} (or without --kind) to validate it",
                "",
                kind=claimed,
            )
        return faults

    def audit(self, doc: Any, address: str, txn: Txn) -> Faults:
        """For ``check``: a stored ``json`` document a contract kind now claims is a warning.

        Stores made before the near-miss rule (or with ``--kind json``) may hold such
        documents; they are listed, not treated as corruption.
        """
        faults = Faults()
        for err in self.check(doc, txn).errors:
            faults.warnings.append(err)
        return faults

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Store ``doc`` with ``mentions`` edges to stored blobs it names."""
        return self.flush([self.stage(doc, canonical, txn, {})], txn, {})[0]

    def stage(self, doc: Any, canonical: bytes, txn: Txn, batch: dict[str, Any]) -> Any:
        """The artifact row spec of one document of a batch.

        ``batch`` is state shared by the documents of one run, here the digests of earlier
        documents, so a ref to a document earlier in the same command gets its edge too.
        Those digests are taken only when a document has a ref to look up: the blob write
        hashes every document anyway, so a run of documents without refs hashes each once
        (issue 29).
        """
        earlier: dict[tuple[str, str], str] = batch.setdefault("earlier", {})
        unhashed: list[bytes] = batch.setdefault("unhashed", [])
        mentioned: list[tuple[str, str]] = []
        # Every content ref holds "blake3:" or "sha256:", which RFC 8785 writes unescaped: a
        # document whose canonical bytes hold neither has no ref to walk for (issue 16).
        maybe = b"blake3:" in canonical or b"sha256:" in canonical
        refs = _content_refs(doc) if maybe else []
        if refs and unhashed:
            _note_digests(earlier, unhashed)
            unhashed.clear()
        # The stored blobs among the blake3 refs: one query per 500, not one per ref.
        # (A set of every earlier digest built per document made a run quadratic: 0.2 s per
        # 1,000 documents, seconds per 10k, issue 29; a lookup in ``earlier`` is enough.)
        stored = txn.existing_blobs(
            sorted(
                {
                    r.hex
                    for r in refs
                    if r.algorithm == "blake3" and ("blake3", r.hex) not in earlier
                }
            ),
        )
        for ref in refs:
            hit = earlier.get((ref.algorithm, ref.hex))
            if hit is None:
                row = (
                    txn.blob_by_sha256(ref.hex)
                    if ref.algorithm == "sha256"
                    else stored.get(ref.hex)
                )
                hit = row.digest.blake3 if row is not None else None
            if hit is not None:
                mentioned.append(("mentions", hit))
        unhashed.append(canonical)
        return (canonical, mentioned, [])

    def flush(
        self, specs: list[Any], txn: Txn, batch: dict[str, Any] | None = None
    ) -> list[ArtifactResult]:
        """Write staged documents with one statement per table (results in order)."""
        return txn.put_artifacts(self.name, self.contract_version, specs)


def _note_digests(earlier: dict[tuple[str, str], str], canonicals: list[bytes]) -> None:
    """Enter both digests of each of ``canonicals`` in ``earlier`` (-> its blake3 hex)."""
    from ..core.digests import digest_bytes

    for canonical in canonicals:
        dg = digest_bytes(canonical)
        earlier[("blake3", dg.blake3)] = dg.blake3
        earlier[("sha256", dg.sha256)] = dg.blake3


def _content_refs(doc: Any) -> list[Any]:
    """Strings in ``doc`` that parse as content refs (cheap pre-filter: ``:`` and length)."""
    out = []
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str) and ":" in node and 50 <= len(node) < 100:
            try:
                out.append(parse_ref(node))
            except InputError:
                continue
    return out


#: The registry: one line per kind, in registry order (:func:`known_kinds`, docs/kinds.md).
#: A contract adds its kinds here and nowhere else (docs/contract-modules.md).
_REGISTRY: dict[str, KindRecord] = {
    r.name: r
    for r in (
        KindRecord("json", "evstore.objects.kinds:JsonKind", detection=1000),
        KindRecord(
            "fragment",
            "evstore.contracts.fragments.store:FragmentKind",
            "evstore.contracts.fragments.rules",
            detection=60,
            page="fragment",
        ),
        KindRecord(
            "fragment-batch",
            "evstore.contracts.fragments.store:FragmentBatchKind",
            "evstore.contracts.fragments.rules",
            detection=50,
        ),
        KindRecord(
            "fragment-source",
            "evstore.contracts.fragments.store:FragmentSourceKind",
            "evstore.contracts.fragments.rules",
            import_rank=1,
        ),
        KindRecord(
            "manifest",
            "evstore.contracts.manifests.store:ManifestKind",
            "evstore.contracts.manifests.rules",
            detection=10,
            page="manifest",
        ),
        KindRecord(
            "package",
            "evstore.contracts.packages.store:PackageKind",
            "evstore.contracts.packages.rules",
            detection=20,
            import_rank=2,
            page="package",
        ),
        KindRecord(
            "request",
            "evstore.contracts.packages.store:RequestKind",
            "evstore.contracts.packages.rules",
            detection=30,
        ),
        KindRecord(
            "envelope",
            "evstore.contracts.packages.store:EnvelopeKind",
            "evstore.contracts.packages.rules",
            detection=40,
            page="envelope",
        ),
        KindRecord(
            "evidence-context",
            "evstore.contracts.contexts.store:EvidenceContextKind",
            "evstore.contracts.contexts.rules",
            detection=80,
            number_tokens=True,
            page="context",
        ),
        KindRecord(
            "source-document",
            "evstore.contracts.contexts.store:SourceDocumentKind",
            "evstore.contracts.contexts.rules",
            number_tokens=True,
            import_rank=0,
            page="context",
        ),
        KindRecord(
            "run",
            "evstore.contracts.runs.store:RunKind",
            "evstore.contracts.runs.rules",
            detection=70,
            import_rank=9,
            page="run",
        ),
    )
}


def _detection() -> tuple[str, ...]:
    """The detected kinds of the registry, in their detection order."""
    found = [r for r in _REGISTRY.values() if r.detection is not None]
    return tuple(r.name for r in sorted(found, key=lambda r: r.detection or 0))


_order: tuple[str, ...] = _detection()
_cache: dict[str, KindHandler] = {}


def _unknown(name: str) -> EvstoreError:
    return error("kind.unknown", f"unknown kind {name!r}; known kinds: {', '.join(_REGISTRY)}")


def kind_record(name: str) -> KindRecord:
    """The registry record of kind ``name`` (nothing is imported).

    Raises:
        InputError: ``kind.unknown`` for a name not in the registry.
    """
    record = _REGISTRY.get(name)
    if record is None:
        raise _unknown(name)
    return record


def kind_records() -> list[KindRecord]:
    """Every registry record, in registry order."""
    return list(_REGISTRY.values())


def kind_page(name: str) -> str | None:
    """The reviewer page (``/ui/<page>/``) that shows an artifact of kind ``name``.

    None for a kind shown on the generic artifact page, and for any name not in the registry
    (an unknown kind is never an error here: the pages link what they find).
    """
    record = _REGISTRY.get(name)
    return record.page if record is not None else None


def detection_order() -> tuple[str, ...]:
    """The kinds detection tries, in order (docs/kinds.md); ``json``, the fallback, is last."""
    return _order


def register_kind(record: KindRecord) -> None:
    """Add ``record`` to the registry, after the kinds already there.

    The registry's lines are :data:`_REGISTRY`; this is for a contract loaded from outside
    evstore's own folders (the test of a toy contract: tests/test_contract_path.py), and
    :func:`unregister_kind` undoes it.

    Raises:
        ValueError: a kind of that name is registered, or another kind has that
            ``detection`` place (a programming error, not user input).
    """
    global _order
    if record.name in _REGISTRY:
        raise ValueError(f"kind {record.name!r} is registered already")
    if record.detection is not None and any(
        r.detection == record.detection for r in _REGISTRY.values()
    ):
        raise ValueError(f"another kind has detection place {record.detection}")
    _REGISTRY[record.name] = record
    _cache.pop(record.name, None)
    _order = _detection()


def unregister_kind(name: str) -> None:
    """Remove kind ``name`` from the registry (and forget its loaded handler).

    Raises:
        InputError: ``kind.unknown``.
    """
    global _order
    kind_record(name)
    del _REGISTRY[name]
    _cache.pop(name, None)
    _order = _detection()


def get_handler(name: str) -> KindHandler:
    """The handler for kind ``name`` (imported on first use, then cached).

    Fails closed: a registered kind whose handler cannot be imported (a dependency such as
    ``jsonschema_rs`` missing) is refused, never replaced by ``json``.

    Raises:
        InputError: ``kind.unknown`` for a name not in the registry.
        StoreStateError: ``store.kind-unavailable`` for a registered kind whose handler
            cannot be imported in this installation (or is no :class:`KindHandler`).
    """
    handler = _cache.get(name)
    if handler is not None:
        return handler
    module, _, attr = kind_record(name).handler.partition(":")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise error(
            "store.kind-unavailable",
            f"kind {name!r} is not available in this installation ({exc}); "
            "reinstall evstore with its dependencies",
            kind=name,
        ) from exc
    if not (isinstance(cls, type) and issubclass(cls, KindHandler)):
        raise error(
            "store.kind-unavailable",
            f"kind {name!r} is not available in this installation ({module}:{attr} is not "
            "a KindHandler)",
            kind=name,
        )
    handler = cls()
    _cache[name] = handler
    return handler


def check_kind(name: str) -> None:
    """Refuse a kind name before any store is opened (``--kind`` of find, ls, ingest).

    Raises:
        InputError: ``kind.unknown``. StoreStateError: ``store.kind-unavailable``.
    """
    get_handler(name)


def known_kinds() -> list[str]:
    """Every registered kind name, in registry order (available or not: see :func:`get_handler`)."""
    return list(_REGISTRY)


def detect_kind(doc: Any) -> str:
    """The kind of an untyped document by the documented discriminators (docs/kinds.md).

    Every kind of :func:`detection_order` is asked in turn, so a kind whose handler cannot
    be loaded stops detection (it might have claimed the document).

    Raises:
        StoreStateError: ``store.kind-unavailable``.
    """
    for name in _order:
        if get_handler(name).detect(doc):
            return name
    return "json"


def claiming_kind(doc: Any) -> str | None:
    """The contract kind detection gives ``doc`` (near misses included), or None.

    An array of source units, which detection refuses as ambiguous, is claimed by
    ``evidence-context``.

    Raises:
        StoreStateError: ``store.kind-unavailable``.
    """
    for name in _order:
        if name == "json":
            continue
        try:
            if get_handler(name).detect(doc):
                return name
        except EvstoreError as err:
            if err.code != "context.kind-ambiguous":
                raise
            return name
    return None


#: Lookup attributes whose values are SHA-256 digests as 64 lowercase hex, with the format
#: code of the contract that defines them (docs/kinds.md#lookup-attributes-evstore-find).
DIGEST_ATTRS: dict[str, str] = {"quote_sha256": "fragment.digest-format"}
#: Lookup attributes whose values are ``blake3:`` addresses of stored bytes.
ADDRESS_ATTRS: dict[str, str] = {"run": "ref.syntax"}

_HEX = frozenset("0123456789abcdef")


def lookup_value(name: str, value: str) -> str:
    """The stored spelling of a lookup value, for an exact ``find``.

    A digest attribute (:data:`DIGEST_ATTRS`) accepts one unambiguous spelling of a SHA-256:
    64 hex in either case, with or without a ``sha256:`` prefix (either case), or 43-char
    canonical base64url (RFC 4648 section 5, unpadded); it is stored as 64 lowercase hex.
    An address attribute (:data:`ADDRESS_ATTRS`) takes ``blake3:`` and 64 hex in either case.
    Other attributes are returned unchanged.

    Raises:
        InputError: the attribute's format code (``fragment.digest-format``, ``ref.syntax``)
            for a malformed digest, so a malformed query is never answered "not found";
            ``input.invalid`` for U+0000 in any value.
    """
    if "\x00" in value:
        raise error("input.invalid", f"a {name} value never contains U+0000", attribute=name)
    if name in DIGEST_ATTRS:
        body = value[7:] if value[:7].lower() == "sha256:" else value
        if len(body) == 64 and set(body.lower()) <= _HEX:
            return body.lower()
        if len(body) == 43:
            from ..core.digests import b64u_to_hex

            try:
                return b64u_to_hex(body)
            except ValueError:
                pass
        raise error(
            DIGEST_ATTRS[name],
            f"{name} takes a SHA-256 as 64 hex digits (optionally prefixed sha256:) or 43-char "
            f"base64url; got {len(body)} characters {value!r}",
            attribute=name,
        )
    if name in ADDRESS_ATTRS:
        body = value[7:] if value[:7].lower() == "blake3:" else ""
        if len(body) == 64 and set(body.lower()) <= _HEX:
            return "blake3:" + body.lower()
        raise error(
            ADDRESS_ATTRS[name],
            f"{name} takes a blake3: address (64 hex digits); got {value!r}",
            attribute=name,
        )
    return value


def clear_cache() -> None:
    """Forget every loaded handler (tests that hide a dependency use it)."""
    _cache.clear()
