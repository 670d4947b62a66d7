"""insonic answer evidence 1.3.0 in the store: packages, requests and envelopes.

The pure rules (detect, shape, semantics) are :mod:`evstore.contracts.packages.rules`; this module
binds
and indexes inside the ingest transaction, holds the kind handlers (kinds ``package``,
``request``, ``envelope``) and :class:`PackageOps` (``store.packages``). Fault order: shape,
contract rules (:func:`evstore.contracts.packages.rules.validate`), then the write-time bindings
here.

- a package binds its id to its address (namespace ``package.id``; another package under the
  same id is ``package.id-reuse``, the same one again is accepted as not new) and every
  ``(workspace_id, recording_id, recording_revision)`` it cites to ``(document_digest,
  source_digest, source_map_digest, identity_digest)`` (namespace ``package.revision``;
  another digest later is ``package.revision-conflict``), first write wins, all in the
  command's one transaction (:func:`bind`). A wrong ``context.bytes``/``tokens`` is recorded
  as a warning unless ``packages.strict_context_bytes`` is on. Lookup attributes:
  ``package_id``, ``key``, ``workspace_id``, ``recording`` (``ws/rec``),
  ``recording_revision`` (``ws/rec/rev``).
- an envelope must name a stored package (``envelope.unknown-package``) and is checked against
  it (every citation an item, quote verbatim, same reference); it gets a ``package`` edge.
- :meth:`PackageOps.export` prints a stored package unchanged, wrapped with observations kept
  outside it: freshness of each cited recording revision, envelopes citing it, recorded
  warnings and when the store first accepted it.

Codes, families and contract sections: the ``package.*``, ``request.*`` and ``envelope.*``
rows of :data:`evstore.core.errors.CODES` (docs/errors.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from ...core.canonical import dumps, loads
from ...core.digests import blake3_hex
from ...core.errors import EvstoreError, Faults, RefSyntaxError, error
from ...core.refs import parse_ref
from ...core.settings import setting
from ...core.times import utc_text
from ...db.tables import artifacts, attrs, edges
from ...objects.artifacts import (
    ArtifactResult,
    Document,
    Warning_,
    artifact_kinds,
    warnings_of,
)
from ...objects.kinds import KindHandler
from ...objects.txn import Txn
from .rules import (
    CONTRACT_VERSION,
    STRICT_CONTEXT_BYTES,
    decimal_value,
    detect,
    normalize_uuid,
    revision_bindings,
    validate,
    validate_envelope,
    validate_package,
)
from .rules_context import ContextSize, context_size, context_size_faults

__all__ = [
    "ATTR_KEY",
    "ATTR_PACKAGE_ID",
    "ATTR_RECORDING",
    "ATTR_RECORDING_REVISION",
    "ATTR_WORKSPACE_ID",
    "EDGE_PACKAGE",
    "EXPORT_FORMAT",
    "EnvelopeKind",
    "ID_NAMESPACE",
    "PackageKind",
    "PackageOps",
    "REVISION_NAMESPACE",
    "RequestKind",
    "bind",
]

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

_KEY_FIELDS = ("workspace_id", "recording_id", "recording_revision")
_VALUE_FIELDS = ("document_digest", "source_digest", "source_map_digest", "identity_digest")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _strict(txn: Txn) -> bool:
    return setting(txn.settings, STRICT_CONTEXT_BYTES) is True


# --------------------------------------------------------------------------- bindings


def _key_text(key: tuple[str, str, str]) -> str:
    return "/".join(key)


def _value_text(value: tuple[str, str, str, str]) -> str:
    return "/".join(value)


def _uuid_attrs(name: str, value: Any) -> list[tuple[str, str]]:
    if not isinstance(value, str):
        return []
    return [(name, value), (name, normalize_uuid(value))]


def _id_reuse(pid: str, address: str) -> Callable[[str], EvstoreError]:
    def conflict(existing: str) -> EvstoreError:
        return error(
            "package.id-reuse",
            f"package id {pid} already names another package (blake3:{existing})",
            "/id",
            package_id=pid,
            stored=f"blake3:{existing}",
            address=f"blake3:{address}",
        )

    return conflict


def _revision_conflict(
    txn: Txn, pointer: str, key: tuple[str, str, str], value: tuple[str, str, str, str]
) -> Callable[[str], EvstoreError]:
    def conflict(existing: str) -> EvstoreError:
        bound = existing.split("/")
        differ = [f for f, a, b in zip(_VALUE_FIELDS, bound, value, strict=False) if a != b]
        origin = txn.binding_origin(REVISION_NAMESPACE, _key_text(key))
        return error(
            "package.revision-conflict",
            f"recording {key[1]} revision {key[2]} is already bound to other "
            f"{', '.join(differ)}" + (f" (by {origin})" if origin else ""),
            pointer,
            key=dict(zip(_KEY_FIELDS, key, strict=True)),
            bound=dict(zip(_VALUE_FIELDS, bound, strict=False)),
            bound_by=origin,
            differs=differ,
        )

    return conflict


def _revision_keys(doc: Any) -> dict[tuple[str, str, str], tuple[str, tuple[str, str, str, str]]]:
    """Distinct revision keys of a package -> (pointer of the first item, value)."""
    out: dict[tuple[str, str, str], tuple[str, tuple[str, str, str, str]]] = {}
    for pointer, key, value in revision_bindings(doc):
        out.setdefault(key, (pointer, value))
    return out


def bind(doc: dict[str, Any], address: str, txn: Txn) -> None:
    """The write-time bindings of a package (first write wins, across the whole store).

    Binds the package id (:func:`~evstore.contracts.packages.rules.normalize_uuid`) to ``address``
    (namespace ``package.id``), then each distinct recording revision the package cites to
    its four digests (namespace ``package.revision``, one lookup and one insert for all).

    Args:
        doc: the parsed package (its rules already passed).
        address: the package's address (64 hex, blake3 of its canonical bytes).
        txn: the ingest transaction; in audit mode the bindings are compared, not written.

    Raises:
        PackageBindingError: in ingest mode, ``package.id-reuse`` (at ``/id``) or
            ``package.revision-conflict`` (at ``/items/<i>/reference``); collected through
            ``txn.fault`` in validate and audit modes.

    Contract:
        ``insonic-answer-evidence-1.3.0#/properties/id`` and
        ``#/$defs/reference/properties/recording_revision``.
    """
    pid = doc.get("id")
    if isinstance(pid, str):
        txn.bind(ID_NAMESPACE, normalize_uuid(pid), address, _id_reuse(pid, address), address)
    revisions = list(_revision_keys(doc).items())
    txn.bind_many(
        REVISION_NAMESPACE,
        [(_key_text(key), _value_text(value)) for key, (_pointer, value) in revisions],
        lambda i, existing: _revision_conflict(
            txn, revisions[i][1][0], revisions[i][0], revisions[i][1][1]
        )(existing),
        address,
    )


# --------------------------------------------------------------------------- kinds


class PackageKind(KindHandler):
    """Kind ``package``: a retained insonic 1.3.0 answer evidence package.

    Check: :func:`evstore.contracts.packages.rules.validate_package` with the store settings. Write:
    :func:`bind` (package id, then each cited recording revision), then the artifact with its
    context-size warnings (unless strict, where they were errors) and the lookup attributes
    ``package_id``, ``key``, ``workspace_id``, ``recording``, ``recording_revision``.
    """

    name = "package"
    contract_version = CONTRACT_VERSION

    def detect(self, doc: Any) -> bool:
        """True when ``kind`` is ``answer-evidence-context`` (see ``package_rules.detect``)."""
        return detect(doc) == "package"

    def check(self, doc: Any, txn: Txn, canonical: bytes | None = None) -> Faults:
        """Every shape and rule fault, context size as the store settings say."""
        return validate_package(doc, txn.settings)

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Bind the id and the recording revisions, then store (see the class docstring).

        Raises:
            PackageBindingError: in ingest mode, ``package.id-reuse`` or
                ``package.revision-conflict`` (the whole command rolls back); collected
                through ``txn.fault`` in validate mode.
        """
        address = blake3_hex(canonical)
        bind(doc, address, txn)
        notes = []
        if not _strict(txn):
            for w in context_size_faults(doc):
                notes.append(Warning_(w.code, w.message, w.pointer))
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

    def audit(self, doc: Any, address: str, txn: Txn) -> Faults:
        """Re-verify a stored package for ``evstore check``.

        The rules as at ingest (context size as warnings: the package was accepted with them
        recorded), then every binding it made: present (``package.binding-missing``) and
        still its own (``package.id-reuse``, ``package.revision-conflict`` via ``txn``).
        """
        faults = Faults(errors=validate_package(doc).errors)
        if faults.errors or not isinstance(doc, dict):
            return faults
        wanted = [(ID_NAMESPACE, normalize_uuid(str(doc["id"])), "/id")]
        wanted += [
            (REVISION_NAMESPACE, _key_text(k), p) for k, (p, _) in _revision_keys(doc).items()
        ]
        for namespace, key, pointer in wanted:
            if txn.binding(namespace, key) is None:
                faults.add(
                    "package.binding-missing",
                    f"the {namespace} binding of {key} is missing from the store",
                    pointer,
                    namespace=namespace,
                    key=key,
                )
        bind(doc, address, txn)  # audit mode: compares, never writes
        return faults


class RequestKind(KindHandler):
    """Kind ``request``: a standalone insonic 1.3.0 request (``$defs/request``)."""

    name = "request"
    contract_version = CONTRACT_VERSION

    def detect(self, doc: Any) -> bool:
        """True for ``version`` 1.3.0 with a ``question`` (see ``package_rules.detect``)."""
        return detect(doc) == "request"

    def check(self, doc: Any, txn: Txn, canonical: bytes | None = None) -> Faults:
        """Every fault (``package_rules.validate_request``)."""
        return validate(doc, txn.settings, kind="request")

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Store the request; it binds nothing."""
        return txn.put_artifact(self.name, self.contract_version, canonical)


def _package_address(txn: Txn, package_id: Any) -> str | None:
    """Address (64 hex) of the stored package with this id, or None."""
    if not isinstance(package_id, str):
        return None
    found = txn.find_attr(ATTR_PACKAGE_ID, normalize_uuid(package_id), kind=PackageKind.name)
    return found[0][0] if found else None


def _stored_package(txn: Txn, package_id: Any) -> tuple[str, Any] | None:
    """(address hex, parsed package) of the stored package with this id, or None."""
    address = _package_address(txn, package_id)
    if address is None:
        return None
    row = txn.blob(parse_ref("blake3:" + address))
    if row is None:
        return None
    return address, loads(txn.read_blob(row))


def _unknown_package(package_id: str) -> EvstoreError:
    return error(
        "envelope.unknown-package",
        f"no stored package has id {package_id}; ingest the package first",
        "/package_id",
        package_id=package_id,
    )


class EnvelopeKind(KindHandler):
    """Kind ``envelope``: an answer envelope bound to a stored package.

    Check: ``package_rules.validate_envelope`` against the stored package named by
    ``package_id`` (``envelope.unknown-package`` when there is none). Write: the artifact
    with a ``package`` edge to that package and the lookup attribute ``package_id``.
    """

    name = "envelope"
    contract_version = CONTRACT_VERSION

    def detect(self, doc: Any) -> bool:
        """True for ``version`` 1.3.0 with ``package_id`` or ``claims`` (``detect``)."""
        return detect(doc) == "envelope"

    def check(self, doc: Any, txn: Txn, canonical: bytes | None = None) -> Faults:
        """Every fault: shape, envelope rules, then the package's existence and citations."""
        pid = doc.get("package_id") if isinstance(doc, dict) else None
        stored = _stored_package(txn, pid)
        faults = validate_envelope(doc, stored[1] if stored else None)
        if stored is None and isinstance(pid, str):
            faults.errors.append(_unknown_package(pid))
        return faults

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

    def audit(self, doc: Any, address: str, txn: Txn) -> Faults:
        """Re-check against the stored package, and the ``package`` edge to it."""
        faults = self.check(doc, txn)
        target = _package_address(txn, doc.get("package_id") if isinstance(doc, dict) else None)
        if target and (EDGE_PACKAGE, target) not in txn.edges_from(address):
            faults.add(
                "envelope.package-edge",
                "the stored envelope has no package edge to its package",
                "/package_id",
                package="blake3:" + target,
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
        return self.store.ingest([Document(data, name=name, kind=kind)]).results[0]

    def validate(self, data: bytes, *, kind: str | None = None, name: str = "-") -> Any:
        """Every fault of one document against the store as it is; writes nothing.

        Returns:
            The ``IngestReport`` (``faults``; ``results`` with warnings).
        """
        return self.store.validate([Document(data, name=name, kind=kind)])

    def find(self, package_id: str, kind: str | None = PackageKind.name) -> list[Any]:
        """Stored artifacts naming this package id, as ArtifactInfo, oldest first.

        Packages by default; envelopes with ``kind="envelope"``; both with ``kind=None``.
        """
        return self.store.find(ATTR_PACKAGE_ID, normalize_uuid(package_id), kind=kind)

    def by_key(self, key: str) -> list[Any]:
        """Stored packages with this cache ``key``."""
        return self.store.find(ATTR_KEY, key, kind=PackageKind.name)

    def in_workspace(self, workspace_id: str) -> list[Any]:
        """Stored packages of one workspace, oldest first."""
        return self.store.ls(
            PackageKind.name, attr=(ATTR_WORKSPACE_ID, normalize_uuid(workspace_id))
        )

    @staticmethod
    def context_size(data: bytes, name: str | None = None) -> ContextSize:
        """The context-size verdict on a package's bytes (no store read).

        See :func:`evstore.contracts.packages.rules_context.context_size`.

        Raises:
            JSONFormError: ``json.*``. InputError: ``input.invalid`` (no context object).
        """
        return context_size(data, name)

    @staticmethod
    def normalize_uuid(value: str) -> str:
        """A package, workspace or recording id as the store keys it (lowercased)."""
        return normalize_uuid(value)

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
            stored = txn.find_attr(ATTR_PACKAGE_ID, normalize_uuid(ref), kind=PackageKind.name)
            if not stored:
                raise error("not-found.artifact", f"no stored package has id {ref}", package_id=ref)
            ref = "blake3:" + stored[0][0]
        try:
            row = txn.blob(parse_ref(ref))
        except RefSyntaxError as err:
            err.message += "; or give a package id (UUID)"
            raise
        address = row.digest.blake3 if row is not None else ""
        if row is None or not txn.has_artifact(address, PackageKind.name):
            raise error("not-found.artifact", f"{ref} is not a stored package", ref=ref)
        data = txn.read_blob(row)
        return address, data, loads(data)

    def freshness(self, txn: Txn, doc: Any) -> list[dict[str, Any]]:
        """For each recording revision the package cites: is it still the newest known?

        The newest revision the store knows for a recording is the largest (as an integer)
        ``recording_revision`` any accepted package cites for it.
        """
        out = []
        by_key: dict[tuple[str, str, str], list[str]] = {}
        for pointer, key, _ in revision_bindings(doc):
            by_key.setdefault(key, []).append(pointer.removesuffix("/reference"))
        for (ws, rec, rev), items in by_key.items():
            prefix = f"{ws}/{rec}/"
            known = [
                decimal_value(v.removeprefix(prefix))
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
                "accepted_at": utc_text(accepted[0]),
                "envelopes": [
                    {"address": "blake3:" + r.src, "accepted_at": utc_text(r.accepted_at)}
                    for r in cited_by
                ],
                "freshness": self.freshness(txn, doc),
                "warnings": [w.to_dict() for w in warnings_of(txn.conn, address)],
            }
        wrapper = dumps(
            {"address": "blake3:" + address, "format": EXPORT_FORMAT, "observations": observations}
        )
        return wrapper[:-1] + b',"package":' + data + b"}"
