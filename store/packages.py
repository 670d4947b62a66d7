"""insonic answer evidence 1.3.0: retained packages, their requests and answer envelopes.

Contract: ``insonic-answer-evidence-1.3.0.schema.json`` (GitHub shruggietech/insonic,
schemas/v1.3.0), a JSON Schema 2020-12 whose root is the retained package and whose ``$defs``
hold the request, the answer envelope, its claims and citations. Error rules are JSON
Pointers into that published file, e.g.
``insonic-answer-evidence-1.3.0#/$defs/citation/properties/quote``.

Validation, pure (:func:`validate_package`, :func:`validate_request`, :func:`validate_envelope`),
reports faults in this order:

1. Structure, by evstore's own schema (``schemas/insonic-answer-evidence-1.3.0.schema.json``:
   the contract's constraints, our wording and layout) through jsonschema-rs, draft 2020-12,
   formats (``uuid``, ``date``) asserted, no network: ``package.schema``,
   ``request.schema``, ``envelope.schema`` at the instance pointer.
2. Semantic rules the schema cannot state (unique ids, ids that must resolve, verbatim quotes,
   interval order, counts and budgets, the context's own byte size, one binding per recording
   revision), in :mod:`evstore.package_rules`. They run even when the structure is faulty,
   skipping what is malformed, so one report lists everything.

Integers that may exceed 2**53 travel as decimal strings and are compared as exact ``int``.

In the store (kinds ``package``, ``request``, ``envelope``; :class:`PackageKind` and friends):

- a package binds its id to its address (namespace ``package.id``; another package under the
  same id is ``package.id-reuse``, the same one again is accepted as not new) and every
  ``(workspace_id, recording_id, recording_revision)`` it cites to ``(document_digest,
  source_digest, source_map_digest, identity_digest)`` (namespace ``package.revision``;
  another digest later is ``package.revision-conflict``), first write wins, all in the
  command's one transaction. A wrong ``context.bytes``/``tokens`` is recorded as a warning
  unless ``packages.strict_context_bytes`` is on. Lookup attributes: ``package_id``, ``key``,
  ``workspace_id``, ``recording`` (``ws/rec``), ``recording_revision`` (``ws/rec/rev``).
- an envelope must name a stored package (``envelope.unknown-package``) and is checked against
  it (every citation an item, quote verbatim, same reference); it gets a ``package`` edge.
- :meth:`PackageOps.export` prints a stored package unchanged, wrapped with observations kept
  outside it: freshness of each cited recording revision, envelopes citing it, recorded
  warnings and when the store first accepted it.

Every code with its meaning is in :data:`CODES`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

import sqlalchemy as sa

from . import blobs as _blobs
from . import package_rules as _rules
from .artifacts import ArtifactResult, Warning_, artifact_kinds, iso_utc, warnings_of
from .canonical import dumps, loads
from .digests import blake3_hex, sha256_hex
from .errors import (
    BindingConflict,
    ContractError,
    CorruptionError,
    EvstoreError,
    NotFound,
    RefSyntaxError,
)
from .package_rules import (  # the codes live beside the rules that emit them
    CODE_BINDING_MISSING,
    CODE_CITATION_QUOTE,
    CODE_CITATION_REFERENCE,
    CODE_CITATION_UNKNOWN_EVIDENCE,
    CODE_CONFLICT_UNKNOWN_EVIDENCE,
    CODE_CONTEXT_BYTES,
    CODE_CONTEXT_OMITTED,
    CODE_CONTEXT_QUESTION,
    CODE_CONTEXT_TOKENS,
    CODE_ENVELOPE_INTERVAL_ORDER,
    CODE_ENVELOPE_PACKAGE_MISMATCH,
    CODE_ENVELOPE_SCHEMA,
    CODE_ID_REUSE,
    CODE_INDEPENDENT_FAMILIES,
    CODE_INTERVAL_ORDER,
    CODE_ITEM_BUDGET,
    CODE_ITEM_ID_DUPLICATE,
    CODE_NODE_ID_DUPLICATE,
    CODE_NODE_PARENT_CYCLE,
    CODE_NODE_PARENT_UNKNOWN,
    CODE_NODE_SOURCE_UNKNOWN,
    CODE_NODE_TEXT_LEVEL,
    CODE_NODE_TEXT_PREFIX,
    CODE_NODE_TEXT_SOURCES,
    CODE_PACKAGE_EDGE,
    CODE_PACKAGE_SCHEMA,
    CODE_REQUEST_INTERVAL_ORDER,
    CODE_REQUEST_SCHEMA,
    CODE_REVISION_CONFLICT,
    CODE_UNKNOWN_PACKAGE,
    CONTRACT,
    MAX_SCHEMA_FAULTS,
    SCHEMA_FILE,
    budget_default,
    effective_item_budget,
    load_schema,
)
from .refs import parse_ref
from .tables import artifacts, attrs, bindings, edges
from .txn import Txn

__all__ = [
    "ATTR_KEY",
    "ATTR_PACKAGE_ID",
    "ATTR_RECORDING",
    "ATTR_RECORDING_REVISION",
    "ATTR_WORKSPACE_ID",
    "CODES",
    "CODE_BINDING_MISSING",
    "CODE_CITATION_QUOTE",
    "CODE_CITATION_REFERENCE",
    "CODE_CITATION_UNKNOWN_EVIDENCE",
    "CODE_CONFLICT_UNKNOWN_EVIDENCE",
    "CODE_CONTEXT_BYTES",
    "CODE_CONTEXT_OMITTED",
    "CODE_CONTEXT_QUESTION",
    "CODE_CONTEXT_TOKENS",
    "CODE_ENVELOPE_INTERVAL_ORDER",
    "CODE_ENVELOPE_PACKAGE_MISMATCH",
    "CODE_ENVELOPE_SCHEMA",
    "CODE_ID_REUSE",
    "CODE_INDEPENDENT_FAMILIES",
    "CODE_INTERVAL_ORDER",
    "CODE_ITEM_BUDGET",
    "CODE_ITEM_ID_DUPLICATE",
    "CODE_NODE_ID_DUPLICATE",
    "CODE_NODE_PARENT_CYCLE",
    "CODE_NODE_PARENT_UNKNOWN",
    "CODE_NODE_SOURCE_UNKNOWN",
    "CODE_NODE_TEXT_LEVEL",
    "CODE_NODE_TEXT_PREFIX",
    "CODE_NODE_TEXT_SOURCES",
    "CODE_PACKAGE_EDGE",
    "CODE_PACKAGE_SCHEMA",
    "CODE_REQUEST_INTERVAL_ORDER",
    "CODE_REQUEST_SCHEMA",
    "CODE_REVISION_CONFLICT",
    "CODE_UNKNOWN_PACKAGE",
    "CONTRACT",
    "DocumentKind",
    "EDGE_PACKAGE",
    "EXPORT_FORMAT",
    "EnvelopeKind",
    "ID_NAMESPACE",
    "MAX_SCHEMA_FAULTS",
    "PACKAGE_KIND",
    "PackageBindingError",
    "PackageError",
    "PackageKind",
    "PackageOps",
    "RELEASE",
    "REVISION_NAMESPACE",
    "RequestKind",
    "SCHEMA_FILE",
    "SCHEMA_ID",
    "STRICT_CONTEXT_BYTES",
    "binding_error",
    "budget_default",
    "context_fixed_point",
    "detect",
    "effective_item_budget",
    "load_schema",
    "measure_context",
    "revision_bindings",
    "revision_conflicts",
    "validate_envelope",
    "validate_package",
    "validate_request",
]

#: ``$id`` of evstore's own schema.
SCHEMA_ID = "urn:evstore:schema:insonic-answer-evidence:1.3.0"
#: The package discriminator, ``kind``'s const value.
PACKAGE_KIND = "answer-evidence-context"
#: The contract release: const of ``schema_version`` (package) and ``version`` (request,
#: envelope); also the stored artifacts' contract version.
RELEASE = "1.3.0"
#: Store setting: when true, a wrong ``context.bytes``/``context.tokens`` rejects the package
#: instead of being recorded as a warning.
STRICT_CONTEXT_BYTES = "packages.strict_context_bytes"
#: Binding namespace: package id (lowercase) -> package address (64 hex).
ID_NAMESPACE = "package.id"
#: Binding namespace: ``ws/rec/rev`` -> ``document/source/source_map/identity`` digests.
REVISION_NAMESPACE = "package.revision"
#: Lookup attributes (``evstore find --attr NAME=VALUE``). UUIDs are stored as written and
#: lowercased, so either form finds them.
ATTR_PACKAGE_ID = "package_id"
ATTR_KEY = "key"
ATTR_WORKSPACE_ID = "workspace_id"
ATTR_RECORDING = "recording"
ATTR_RECORDING_REVISION = "recording_revision"
#: Edge role envelope -> package.
EDGE_PACKAGE = "package"
#: ``format`` member of an export document.
EXPORT_FORMAT = "evstore.insonic-package-export.v1"

DocumentKind = Literal["package", "request", "envelope"]
Faults = tuple[list[EvstoreError], list[EvstoreError]]

#: Every code this module defines, with a one-line meaning.
CODES: Mapping[str, str] = MappingProxyType({c: m for c, (_, m) in _rules.CODE_TABLE.items()})

_KEY_FIELDS = ("workspace_id", "recording_id", "recording_revision")
_VALUE_FIELDS = ("document_digest", "source_digest", "source_map_digest", "identity_digest")
_BINDING_CODES = frozenset({CODE_REVISION_CONFLICT, CODE_ID_REUSE, CODE_UNKNOWN_PACKAGE})
_CORRUPTION_CODES = frozenset({CODE_BINDING_MISSING, CODE_PACKAGE_EDGE})
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


class PackageError(ContractError):
    """A rule of the insonic 1.3.0 contract fails.

    Codes ``package.*``, ``request.*`` and ``envelope.*`` (see :data:`CODES`).
    """

    default_code = CODE_PACKAGE_SCHEMA


class PackageBindingError(BindingConflict):
    """A revision or package-id binding would be violated; nothing is written.

    Codes ``package.revision-conflict``, ``package.id-reuse``, ``envelope.unknown-package``.
    """

    default_code = CODE_REVISION_CONFLICT


def _make(code: str, message: str, pointer: str, details: dict[str, Any] | None) -> EvstoreError:
    cls: type[EvstoreError] = PackageError
    if code in _BINDING_CODES:
        cls = PackageBindingError
    elif code in _CORRUPTION_CODES:
        cls = CorruptionError
    rule = f"{CONTRACT}#{_rules.CODE_TABLE[code][0]}"
    return cls(message, code=code, rule=rule, pointer=pointer, details=details)


def _emit(found: list[_rules.Fault]) -> list[EvstoreError]:
    return [_make(code, message, pointer, details) for code, pointer, message, details in found]


def binding_error(
    code: str, message: str, pointer: str = "", details: dict[str, Any] | None = None
) -> PackageBindingError:
    """Build the error for a write-time binding failure.

    Args:
        code: ``package.revision-conflict``, ``package.id-reuse`` or
            ``envelope.unknown-package``.
        message: a human sentence.
        pointer: RFC 6901 pointer into the rejected document (``/items/3/reference``,
            ``/id``, ``/package_id``).
        details: JSON-ready extra facts (the bound values, the stored address...).

    Returns:
        A :class:`PackageBindingError` with the contract rule filled in.

    Raises:
        ValueError: ``code`` is not a binding code.
    """
    if code not in _BINDING_CODES:
        raise ValueError(f"{code!r} is not a package binding code")
    err = _make(code, message, pointer, details)
    assert isinstance(err, PackageBindingError)
    return err


# --------------------------------------------------------------------------- pure API


def detect(doc: Any) -> DocumentKind | None:
    """Tell which document of this contract ``doc`` is, by its discriminators.

    - ``"package"``: an object whose ``kind`` is ``"answer-evidence-context"`` (the
      package's const). ``schema_version`` is not required here, so a package of another
      release is still recognized and then fails ``package.schema`` at ``/schema_version``.
    - ``"envelope"``: no ``kind``/``schema_version``, ``version == "1.3.0"`` and a
      ``package_id`` or ``claims`` member (both required by the envelope, forbidden in a request).
    - ``"request"``: no ``kind``/``schema_version``, ``version == "1.3.0"`` and a
      ``question`` member (required by the request, forbidden in an envelope).

    Args:
        doc: a parsed JSON value.

    Returns:
        ``"package"``, ``"request"``, ``"envelope"`` or ``None`` when none matches.
    """
    if not isinstance(doc, dict):
        return None
    if doc.get("kind") == PACKAGE_KIND:
        return "package"
    if "kind" in doc or "schema_version" in doc or doc.get("version") != RELEASE:
        return None
    if "package_id" in doc or "claims" in doc:
        return "envelope"
    if "question" in doc:
        return "request"
    return None


def _strict(settings: Mapping[str, Any] | None) -> bool:
    value = (settings or {}).get(STRICT_CONTEXT_BYTES, False)
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def validate_package(doc: Any, settings: Mapping[str, Any] | None = None) -> Faults:
    """Check a retained package against every structural and semantic rule.

    Args:
        doc: the parsed package (a dict from the strict JSON reader).
        settings: store settings; ``packages.strict_context_bytes`` (bool, or "true"/"1")
            turns context size faults from warnings into errors.

    Returns:
        ``(errors, warnings)``. Errors are :class:`PackageError` (and
        :class:`PackageBindingError` for ``package.revision-conflict`` between two items of
        this package), structure first (``package.schema``, ordered by pointer), then the
        semantic rules. Warnings are the ``package.context-bytes``/``package.context-tokens``
        faults when not strict. No errors means the package is acceptable.

    Contract:
        the whole schema; the semantic sections are listed in :data:`CODES`.
    """
    errors = _emit(_rules.schema_faults("package", doc, CODE_PACKAGE_SCHEMA))
    hard, soft = _rules.package_faults(doc)
    errors += _emit(hard)
    if _strict(settings):
        return errors + _emit(soft), []
    return errors, _emit(soft)


def validate_request(doc: Any) -> Faults:
    """Check a standalone request (``$defs/request``).

    Args:
        doc: the parsed request.

    Returns:
        ``(errors, warnings)``: ``request.schema`` faults, then ``request.interval-order``
        for ``filters.source_interval``; warnings is always empty (kept for one call shape).
    """
    errors = _emit(_rules.schema_faults("request", doc, CODE_REQUEST_SCHEMA))
    errors += _emit(_rules.request_faults(doc, "", CODE_REQUEST_INTERVAL_ORDER))
    return errors, []


def validate_envelope(doc: Any, package: Any = None) -> Faults:
    """Check an answer envelope, and, given its package, every citation against it.

    Args:
        doc: the parsed envelope.
        package: the (accepted) package the envelope answers from, or ``None`` to check the
            envelope alone.

    Returns:
        ``(errors, warnings)``: ``envelope.schema`` faults (the claim conditionals
        included), then ``envelope.interval-order``; with ``package`` also
        ``envelope.package-mismatch`` (package_id is not the package's id, compared as UUIDs,
        case-insensitively), and per citation ``envelope.citation-unknown-evidence``,
        ``envelope.citation-quote`` (quote not an exact substring of the item's text) and
        ``envelope.citation-reference`` (reference not the item's). Warnings is always empty.

    Contract:
        ``$defs/envelope``, ``$defs/claim``, ``$defs/citation``.
    """
    errors = _emit(_rules.schema_faults("envelope", doc, CODE_ENVELOPE_SCHEMA))
    errors += _emit(_rules.envelope_faults(doc, package))
    return errors, []


def revision_bindings(
    package: Any,
) -> list[tuple[str, tuple[str, str, str], tuple[str, str, str, str]]]:
    """The recording-revision bindings a package asks the store to hold, one per item.

    Args:
        package: a parsed package (items with a malformed reference are skipped).

    Returns:
        ``[(pointer, key, value), ...]`` in item order: ``pointer`` is
        ``/items/<i>/reference``, ``key`` is ``(workspace_id, recording_id,
        recording_revision)``, ``value`` is ``(document_digest, source_digest,
        source_map_digest, identity_digest)``. UUIDs are lowercased (RFC 4122: case does not
        matter) and the revision is the canonical decimal string of its integer value (it may
        exceed 2**63: keep it as text or numeric in a database).

    Contract:
        ``$defs/reference``; the first accepted write binds the key to the value.
    """
    return _rules.revision_bindings(package)


def revision_conflicts(package: Any) -> list[PackageBindingError]:
    """Items of one package that bind one recording revision to different digests.

    Returns:
        One ``package.revision-conflict`` per item disagreeing with the first item that
        bound its key, at ``/items/<i>/reference``. Also part of :func:`validate_package`.
    """
    return [binding_error(c, m, p, d) for c, p, m, d in _rules.revision_conflict_faults(package)]


def measure_context(context: Mapping[str, Any]) -> int:
    r"""UTF-8 size of the context object as the contract counts it, with its values as given.

    The object is serialized on its own, in its own member order, compactly
    (``separators=(",", ":")``), non-ASCII unescaped (``ensure_ascii=False``); control
    characters, ``"`` and ``\`` are escaped as JSON requires. The schema's one example
    (``bytes`` 150) holds under this measure.

    Args:
        context: the package's ``context`` object.

    Returns:
        The size in bytes; a correct package has
        ``context["bytes"] == measure_context(context)``.
    """
    return _rules.measure_context(context)


def context_fixed_point(context: Mapping[str, Any]) -> int | None:
    """The ``bytes`` value (= ``tokens``) that would make ``context`` self-consistent.

    Args:
        context: the package's ``context`` object (not modified).

    Returns:
        The smallest n such that setting ``bytes`` (and ``tokens`` when present) to n gives
        a serialization of n bytes, or ``None`` when no such n exists.
    """
    return _rules.context_fixed_point(dict(context))


# --------------------------------------------------------------------------- store


def _key_text(key: tuple[str, str, str]) -> str:
    return "/".join(key)


def _value_text(value: tuple[str, str, str, str]) -> str:
    return "/".join(value)


def _binding_origin(txn: Txn, namespace: str, key: str) -> str:
    origin = txn.conn.execute(
        sa.select(bindings.c.origin).where(
            bindings.c.namespace == namespace, bindings.c.key_digest == sha256_hex(key.encode())
        )
    ).scalar()
    return f"blake3:{origin}" if origin else ""


def _uuid_attrs(name: str, value: Any) -> list[tuple[str, str]]:
    if not isinstance(value, str):
        return []
    return [(name, value), (name, value.lower())]


def _id_reuse(txn: Txn, pid: str, address: str) -> Any:
    def conflict(existing: str) -> PackageBindingError:
        return binding_error(
            CODE_ID_REUSE,
            f"package id {pid} already names another package (blake3:{existing})",
            "/id",
            {"package_id": pid, "stored": f"blake3:{existing}", "address": f"blake3:{address}"},
        )

    return conflict


def _revision_conflict(txn: Txn, pointer: str, key: tuple[str, str, str], value: tuple) -> Any:
    fields = _VALUE_FIELDS

    def conflict(existing: str) -> PackageBindingError:
        bound = existing.split("/")
        differ = [f for f, a, b in zip(fields, bound, value, strict=False) if a != b]
        origin = _binding_origin(txn, REVISION_NAMESPACE, _key_text(key))
        return binding_error(
            CODE_REVISION_CONFLICT,
            f"recording {key[1]} revision {key[2]} is already bound to other "
            f"{', '.join(differ)}" + (f" (by {origin})" if origin else ""),
            pointer,
            {
                "key": dict(zip(_KEY_FIELDS, key, strict=True)),
                "bound": dict(zip(fields, bound, strict=False)),
                "bound_by": origin,
                "differs": differ,
            },
        )

    return conflict


def _revision_keys(doc: Any) -> dict[tuple[str, str, str], tuple[str, tuple[str, str, str, str]]]:
    """Distinct revision keys of a package -> (pointer of the first item, value)."""
    out: dict[tuple[str, str, str], tuple[str, tuple[str, str, str, str]]] = {}
    for pointer, key, value in _rules.revision_bindings(doc):
        out.setdefault(key, (pointer, value))
    return out


class PackageKind:
    """Kind ``package``: a retained insonic 1.3.0 answer evidence package.

    Check: :func:`validate_package` with the store settings. Write, in this order: bind the
    package id (lowercase) to the address (``package.id``), bind each cited recording revision
    (lowercase UUIDs, decimal revision) to its four digests (``package.revision``), then store
    the artifact with its context-size warnings (unless strict, where they were errors) and the
    lookup attributes ``package_id``, ``key``, ``workspace_id``, ``recording``,
    ``recording_revision``.
    """

    name = "package"
    contract_version = RELEASE

    def detect(self, doc: Any) -> bool:
        """True when ``kind`` is ``answer-evidence-context`` (see :func:`detect`)."""
        return detect(doc) == "package"

    def check(self, doc: Any, txn: Txn) -> list[EvstoreError]:
        """Every structural and semantic fault (:func:`validate_package`, store settings)."""
        return validate_package(doc, txn.settings)[0]

    def _bind(self, doc: dict[str, Any], address: str, txn: Txn) -> None:
        pid = doc.get("id")
        if isinstance(pid, str):
            txn.bind(ID_NAMESPACE, pid.lower(), address, _id_reuse(txn, pid, address), address)
        revisions = list(_revision_keys(doc).items())
        # One lookup and one insert for all revisions of the package (Txn.bind_many).
        txn.bind_many(
            REVISION_NAMESPACE,
            [(_key_text(key), _value_text(value)) for key, (_pointer, value) in revisions],
            lambda i, existing: _revision_conflict(
                txn, revisions[i][1][0], revisions[i][0], revisions[i][1][1]
            )(existing),
            address,
        )

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Bind the id and the recording revisions, then store (see the class docstring).

        Raises:
            PackageBindingError: in ingest mode, ``package.id-reuse`` or
                ``package.revision-conflict`` (the whole command rolls back); collected
                through ``txn.fault`` in validate mode.
        """
        address = blake3_hex(canonical)
        self._bind(doc, address, txn)
        notes = []
        if not _strict(txn.settings):
            for code, pointer, message, _ in _rules.context_size_faults(doc):
                notes.append(Warning_(code, message, pointer))
        found = _uuid_attrs(ATTR_PACKAGE_ID, doc.get("id"))
        found += _uuid_attrs(ATTR_WORKSPACE_ID, doc.get("workspace_id"))
        if isinstance(doc.get("key"), str):
            found.append((ATTR_KEY, doc["key"]))
        for ws, rec, rev in _revision_keys(doc):
            found += [
                (ATTR_RECORDING, f"{ws}/{rec}"),
                (ATTR_RECORDING_REVISION, f"{ws}/{rec}/{rev}"),
            ]
        return txn.put_artifact(
            self.name, self.contract_version, canonical, attrs=found, warnings=notes
        )

    def audit(self, doc: Any, address: str, txn: Txn) -> list[EvstoreError]:
        """Re-verify a stored package for ``evstore check``.

        The rules as at ingest (context size as warnings: the package was accepted with them
        recorded), then every binding it made: present (``package.binding-missing``) and
        still its own (``package.id-reuse``, ``package.revision-conflict`` via ``txn``).
        """
        faults = validate_package(doc)[0]
        if faults or not isinstance(doc, dict):
            return faults
        wanted = [(ID_NAMESPACE, str(doc["id"]).lower(), "/id")]
        wanted += [
            (REVISION_NAMESPACE, _key_text(k), p) for k, (p, _) in _revision_keys(doc).items()
        ]
        for namespace, key, pointer in wanted:
            if txn.binding(namespace, key) is None:
                faults.append(
                    _make(
                        CODE_BINDING_MISSING,
                        f"the {namespace} binding of {key} is missing from the store",
                        pointer,
                        {"namespace": namespace, "key": key},
                    )
                )
        self._bind(doc, address, txn)  # audit mode: compares, never writes
        return faults


class RequestKind:
    """Kind ``request``: a standalone insonic 1.3.0 request (``$defs/request``)."""

    name = "request"
    contract_version = RELEASE

    def detect(self, doc: Any) -> bool:
        """True for ``version`` 1.3.0 with a ``question`` (see :func:`detect`)."""
        return detect(doc) == "request"

    def check(self, doc: Any, txn: Txn) -> list[EvstoreError]:
        """Every fault (:func:`validate_request`)."""
        return validate_request(doc)[0]

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Store the request; it binds nothing."""
        return txn.put_artifact(self.name, self.contract_version, canonical)


def _package_address(txn: Txn, package_id: Any) -> str | None:
    """Address (64 hex) of the stored package with this id, or None."""
    if not isinstance(package_id, str):
        return None
    found = txn.find_attr(ATTR_PACKAGE_ID, package_id.lower(), kind=PackageKind.name)
    return found[0][0] if found else None


def _stored_package(txn: Txn, package_id: Any) -> tuple[str, Any] | None:
    """(address hex, parsed package) of the stored package with this id, or None."""
    address = _package_address(txn, package_id)
    if address is None:
        return None
    row = _blobs.lookup(txn.conn, parse_ref("blake3:" + address))
    if row is None:
        return None
    return address, loads(txn.read_blob(row))


def _unknown_package(package_id: str) -> PackageBindingError:
    return binding_error(
        CODE_UNKNOWN_PACKAGE,
        f"no stored package has id {package_id}; ingest the package first",
        "/package_id",
        {"package_id": package_id},
    )


class EnvelopeKind:
    """Kind ``envelope``: an answer envelope bound to a stored package.

    Check: :func:`validate_envelope` against the stored package named by ``package_id``
    (``envelope.unknown-package`` when there is none). Write: the artifact with a ``package``
    edge to that package and the lookup attribute ``package_id``.
    """

    name = "envelope"
    contract_version = RELEASE

    def detect(self, doc: Any) -> bool:
        """True for ``version`` 1.3.0 with ``package_id`` or ``claims`` (see :func:`detect`)."""
        return detect(doc) == "envelope"

    def check(self, doc: Any, txn: Txn) -> list[EvstoreError]:
        """Every fault: schema, envelope rules, then the package's existence and citations."""
        pid = doc.get("package_id") if isinstance(doc, dict) else None
        stored = _stored_package(txn, pid)
        errors = validate_envelope(doc, stored[1] if stored else None)[0]
        if stored is None and isinstance(pid, str):
            errors.append(_unknown_package(pid))
        return errors

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Store the envelope with its ``package`` edge."""
        pid = doc.get("package_id")
        address = _package_address(txn, pid)
        if address is None:
            txn.fault(_unknown_package(str(pid)))
        links = [(EDGE_PACKAGE, address)] if address else []
        return txn.put_artifact(
            self.name,
            self.contract_version,
            canonical,
            edges=links,
            attrs=_uuid_attrs(ATTR_PACKAGE_ID, pid),
        )

    def audit(self, doc: Any, address: str, txn: Txn) -> list[EvstoreError]:
        """Re-check against the stored package, and the ``package`` edge to it."""
        faults = self.check(doc, txn)
        target = _package_address(txn, doc.get("package_id") if isinstance(doc, dict) else None)
        if target and (EDGE_PACKAGE, target) not in txn.edges_from(address):
            faults.append(
                _make(
                    CODE_PACKAGE_EDGE,
                    "the stored envelope has no package edge to its package",
                    "/package_id",
                    {"package": "blake3:" + target},
                )
            )
        return faults


# --------------------------------------------------------------------------- operations


class PackageOps:
    """``store.packages``: insonic package operations on one :class:`~evstore.Store`."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def ingest(self, data: bytes, *, kind: str | None = None, name: str = "-") -> ArtifactResult:
        """Ingest one package, request or envelope (detected unless ``kind``), in one transaction.

        Raises:
            JSONFormError, PackageError, PackageBindingError: the first fault; nothing written.
        """
        from .api import Document

        return self.store.ingest([Document(data, name=name, kind=kind)]).results[0]

    def validate(self, data: bytes, *, kind: str | None = None, name: str = "-") -> Any:
        """Every fault of one document against the store as it is; writes nothing.

        Returns:
            The :class:`~evstore.api.IngestReport` (``faults``; ``results`` with warnings).
        """
        from .api import Document

        return self.store.validate([Document(data, name=name, kind=kind)])

    def find(self, package_id: str, kind: str | None = PackageKind.name) -> list[Any]:
        """Stored artifacts naming this package id, as ArtifactInfo, oldest first.

        Packages by default; envelopes with ``kind="envelope"``; both with ``kind=None``.
        """
        return self.store.find(ATTR_PACKAGE_ID, package_id.lower(), kind=kind)

    def by_key(self, key: str) -> list[Any]:
        """Stored packages with this cache ``key``."""
        return self.store.find(ATTR_KEY, key, kind=PackageKind.name)

    def in_workspace(self, workspace_id: str) -> list[Any]:
        """Stored packages of one workspace, oldest first."""
        return self.store.ls(PackageKind.name, attr=(ATTR_WORKSPACE_ID, workspace_id.lower()))

    def load(self, ref: str) -> dict[str, Any]:
        """The stored package named by a content ref or a package id (UUID), parsed.

        Raises:
            NotFound: ``not-found.artifact``. RefSyntaxError: neither a ref nor a UUID.
        """
        with self.store.reading() as txn:
            address, _, doc = self._resolve(txn, ref)
        return doc

    def _resolve(self, txn: Txn, ref: str) -> tuple[str, bytes, Any]:
        if _UUID.fullmatch(ref):
            stored = txn.find_attr(ATTR_PACKAGE_ID, ref.lower(), kind=PackageKind.name)
            if not stored:
                raise NotFound(
                    f"no stored package has id {ref}",
                    code="not-found.artifact",
                    details={"package_id": ref},
                )
            ref = "blake3:" + stored[0][0]
        try:
            row = _blobs.lookup(txn.conn, parse_ref(ref))
        except RefSyntaxError as err:
            err.message += "; or give a package id (UUID)"
            raise
        address = row.digest.blake3 if row is not None else ""
        if row is None or not txn.has_artifact(address, PackageKind.name):
            raise NotFound(
                f"{ref} is not a stored package", code="not-found.artifact", details={"ref": ref}
            )
        data = txn.read_blob(row)
        return address, data, loads(data)

    def freshness(self, txn: Txn, doc: Any) -> list[dict[str, Any]]:
        """For each recording revision the package cites: is it still the newest known?

        The newest revision the store knows for a recording is the largest (as an integer)
        ``recording_revision`` any accepted package cites for it.
        """
        out = []
        by_key: dict[tuple[str, str, str], list[str]] = {}
        for pointer, key, _ in _rules.revision_bindings(doc):
            by_key.setdefault(key, []).append(pointer.removesuffix("/reference"))
        for (ws, rec, rev), items in by_key.items():
            prefix = f"{ws}/{rec}/"
            known = [
                _rules.decimal_value(v.removeprefix(prefix))
                for v in txn.conn.execute(
                    sa.select(attrs.c.value)
                    .where(attrs.c.name == ATTR_RECORDING_REVISION)
                    .where(attrs.c.value.like(prefix + "%"))
                ).scalars()
                if v.startswith(prefix)
            ]
            newest = max([int(rev), *(k for k in known if k is not None)])
            out.append(
                {
                    "workspace_id": ws,
                    "recording_id": rec,
                    "recording_revision": rev,
                    "newest_known_revision": str(newest),
                    "current": newest == int(rev),
                    "items": items,
                }
            )
        return out

    def export(self, ref: str) -> bytes:
        """A stored package, unchanged, wrapped with current observations kept outside it.

        Args:
            ref: a content ref of the package (``blake3:...``, ``sha256:...``) or its id.

        Returns:
            RFC 8785 bytes of ``{"address", "format", "observations", "package"}``, where
            ``package`` is the stored bytes verbatim (they sort last, so the wrapper stays
            canonical) and ``observations`` has ``accepted_at`` (when the store first accepted
            it: time lives only here, never in an address), ``freshness`` (one entry per cited
            recording revision: ``current`` when it is still the newest the store knows),
            ``envelopes`` (address and accepted_at of each envelope citing it) and
            ``warnings`` (recorded at ingest).

        Raises:
            NotFound: ``not-found.artifact``. RefSyntaxError. CorruptionError.
        """
        with self.store.reading() as txn:
            address, data, doc = self._resolve(txn, ref)
            accepted = [t for k, _, t in artifact_kinds(txn.conn, address) if k == "package"]
            cited_by = txn.conn.execute(
                sa.select(edges.c.src, artifacts.c.accepted_at)
                .join(artifacts, artifacts.c.address == edges.c.src)
                .where(
                    edges.c.dst == address,
                    edges.c.role == EDGE_PACKAGE,
                    artifacts.c.kind == EnvelopeKind.name,
                )
                .order_by(artifacts.c.accepted_at, edges.c.src)
            ).all()
            observations = {
                "accepted_at": iso_utc(accepted[0]),
                "envelopes": [
                    {"address": "blake3:" + r.src, "accepted_at": iso_utc(r.accepted_at)}
                    for r in cited_by
                ],
                "freshness": self.freshness(txn, doc),
                "warnings": [w.to_dict() for w in warnings_of(txn.conn, address)],
            }
        wrapper = dumps(
            {"address": "blake3:" + address, "format": EXPORT_FORMAT, "observations": observations}
        )
        return wrapper[:-1] + b',"package":' + data + b"}"
