"""The kind registry: every kind of JSON artifact evstore knows, and who handles it.

A kind handler is an object with:

    name: str                  registry name (docs/kinds.md)
    contract_version: str
    detect(doc) -> bool        the documented discriminator, for ingest without --kind
    check(doc, txn) -> Faults  (a list of EvstoreError is accepted too)
                               every fault of the document, in the order: schema, contract
                               rules, self-address (reads allowed, no writes)
    write(doc, canonical, txn) -> ArtifactResult
                               write-time bindings (reported through txn.fault), then the
                               artifact with its edges and attributes
    stage(doc, canonical, txn, batch) / flush(specs, txn)   (optional, together)
                               a batchable kind: stage does one document's write-time
                               bindings and returns its row spec; flush writes the specs of a
                               run of consecutive documents with one statement per table
    audit(doc, address, txn) -> Faults   (optional)
                               re-verification for ``evstore check``; defaults to check()

Handlers live in their contract modules and are loaded lazily by name, so this module knows
no contract. Detection tries kinds in :data:`DETECTION_ORDER`; ``json`` (any well-formed JSON)
is the fallback, and a document that looks like a contract kind is never stored as ``json``.
A handler that cannot be imported fails closed (``store.kind-unavailable``) wherever it could
be met: ingest, validate, detection, check, find and ls of that kind.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from ..core.errors import EvstoreError, Faults, InputError, error
from ..core.refs import parse_ref
from .artifacts import ArtifactResult
from .txn import Txn

__all__ = [
    "ADDRESS_ATTRS",
    "DETECTION_ORDER",
    "DIGEST_ATTRS",
    "JsonKind",
    "KINDS",
    "KindHandler",
    "check_kind",
    "claiming_kind",
    "clear_cache",
    "detect_kind",
    "get_handler",
    "known_kinds",
    "lookup_value",
]


class KindHandler(Protocol):
    """What a kind handler provides (see the module docstring for each member's contract)."""

    name: str
    contract_version: str

    def detect(self, doc: Any) -> bool:
        """True when ``doc`` is (or claims to be) of this kind."""
        ...

    def check(self, doc: Any, txn: Txn) -> Faults | list[EvstoreError]:
        """Every fault of ``doc``, ordered schema, contract rules, self-address."""
        ...

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Bindings and storage inside ``txn``."""
        ...


class JsonKind:
    """Kind ``json``: any well-formed JSON (the strict reader is its only rule).

    Edges: every string member that is a content ref of a blob already stored gets an edge
    with role ``mentions``, so lineage finds generic JSON records that name stored bytes.
    """

    name = "json"
    contract_version = "rfc8785"

    def detect(self, doc: Any) -> bool:
        """Always True: the fallback kind."""
        return True

    def check(self, doc: Any, txn: Txn) -> Faults:
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
        return self.flush([self.stage(doc, canonical, txn, {})], txn)[0]

    def stage(self, doc: Any, canonical: bytes, txn: Txn, batch: dict[str, Any]) -> Any:
        """The artifact row spec of one document of a batch.

        ``batch`` is state shared by the documents of one run, here the digests of earlier
        documents, so a ref to a document earlier in the same command gets its edge too.
        """
        from ..core.digests import digest_bytes
        from . import blobs

        earlier: dict[tuple[str, str], str] = batch.setdefault("earlier", {})
        mentioned: list[tuple[str, str]] = []
        # Every content ref holds "blake3:" or "sha256:", which RFC 8785 writes unescaped: a
        # document whose canonical bytes hold neither has no ref to walk for (issue 16).
        maybe = b"blake3:" in canonical or b"sha256:" in canonical
        refs = _content_refs(doc) if maybe else []
        # The stored blobs among the blake3 refs: one query per 500, not one per ref.
        stored = blobs.existing_rows(
            txn.conn,
            sorted({r.hex for r in refs if r.algorithm == "blake3"} - {h for _, h in earlier}),
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
        dg = digest_bytes(canonical)
        earlier[("blake3", dg.blake3)] = dg.blake3
        earlier[("sha256", dg.sha256)] = dg.blake3
        return (canonical, mentioned, [])

    def flush(self, specs: list[Any], txn: Txn) -> list[ArtifactResult]:
        """Write staged documents with one statement per table (results in order)."""
        return txn.put_artifacts(self.name, self.contract_version, specs)


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


#: Registry name -> "module:attribute" of the handler (loaded lazily). docs/kinds.md mirrors it.
KINDS: dict[str, str] = {
    "json": "evstore.objects.kinds:JsonKind",
    "fragment": "evstore.contracts.fragments.store:FragmentKind",
    "fragment-batch": "evstore.contracts.fragments.store:FragmentBatchKind",
    "fragment-source": "evstore.contracts.fragments.store:FragmentSourceKind",
    "manifest": "evstore.contracts.manifests.store:ManifestKind",
    "package": "evstore.contracts.packages.store:PackageKind",
    "request": "evstore.contracts.packages.store:RequestKind",
    "envelope": "evstore.contracts.packages.store:EnvelopeKind",
    "evidence-context": "evstore.contracts.contexts.store:EvidenceContextKind",
    "source-document": "evstore.contracts.contexts.store:SourceDocumentKind",
    "run": "evstore.contracts.runs.store:RunKind",
}

#: Kinds tried, in order, when ingest is given no --kind. ``json`` is the fallback.
DETECTION_ORDER = (
    "manifest",
    "package",
    "request",
    "envelope",
    "fragment-batch",
    "fragment",
    "run",
    "evidence-context",
    "json",
)

_cache: dict[str, Any] = {}


def get_handler(name: str) -> Any:
    """The handler for kind ``name`` (imported on first use, then cached).

    Fails closed: a registered kind whose handler cannot be imported (a dependency such as
    ``jsonschema_rs`` missing) is refused, never replaced by ``json``.

    Raises:
        InputError: ``kind.unknown`` for a name not in the registry.
        StoreStateError: ``store.kind-unavailable`` for a registered kind whose handler
            cannot be imported in this installation.
    """
    if name in _cache:
        return _cache[name]
    target = KINDS.get(name)
    if target is None:
        raise error("kind.unknown", f"unknown kind {name!r}; known kinds: {', '.join(KINDS)}")
    module, _, attr = target.partition(":")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise error(
            "store.kind-unavailable",
            f"kind {name!r} is not available in this installation ({exc}); "
            "reinstall evstore with its dependencies",
            kind=name,
        ) from exc
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
    return list(KINDS)


def detect_kind(doc: Any) -> str:
    """The kind of an untyped document by the documented discriminators (docs/kinds.md).

    Every kind of :data:`DETECTION_ORDER` is asked in turn, so a kind whose handler cannot
    be loaded stops detection (it might have claimed the document).

    Raises:
        StoreStateError: ``store.kind-unavailable``.
    """
    for name in DETECTION_ORDER:
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
    for name in DETECTION_ORDER:
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
