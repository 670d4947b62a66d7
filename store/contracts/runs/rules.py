"""Run records: the rules of evstore's own run-record tree (kind ``run``), pure.

A run record is the canonical JSON tree that ties a run bundle's files together
(docs/bundle.md#the-run-record)::

    {"record": "evstore.run-record.v1",
     "index": {"raw": ADDRESS, "size": N},
     "files": {LOGICAL_FILE: {"descriptor_name": NAME, "descriptor": {...six strings...},
                              "raw": ADDRESS, "size": N[, "kind": KIND, "artifact": ADDRESS]}},
     ["evidence_context": {"logical_file": F, "source_check": "checked"|"unchecked"
                           [, "source_document": ADDRESS]}]}

Its address depends on content only, so one bundle is one record. This module checks the
tree and the bundle layout over its descriptors (store/contracts/runs/rules_bundle.py); whether
everything
it names is stored is the store module's check (store/contracts/runs/store.py). No database.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ...core.errors import Faults, error, join_pointer
from ...core.near import near_member, spelling
from .rules_bundle import BUNDLE_KINDS, check_logical_name, index_faults

__all__ = [
    "CONTRACT",
    "CONTRACT_VERSION",
    "RULE_RECORD",
    "RUN_RECORD_FORMAT",
    "detect",
    "record_edges",
    "record_index",
    "validate",
]

#: The contract (evstore's own) and its version.
CONTRACT: Final = "evstore-run-record-v1"
CONTRACT_VERSION: Final = "v1"
#: The section of docs/bundle.md that states the record's shape (``run.*`` codes).
RULE_RECORD: Final = "docs/bundle.md#the-run-record"
#: Marker member ``record`` of a run record (and what :func:`detect` looks for).
RUN_RECORD_FORMAT: Final = "evstore.run-record.v1"

_ENTRY_REQUIRED = frozenset({"descriptor_name", "descriptor", "raw", "size"})
_ENTRY_ALLOWED = _ENTRY_REQUIRED | {"kind", "artifact"}

_SettingsMap = Mapping[str, Any]


def detect(doc: Any) -> str | None:
    """``"run"`` for an object whose ``record`` member names an evstore run record, else None.

    A near miss (docs/kinds.md#near-misses) is claimed too, and validation rejects it with
    ``run.record-shape``: a member named near ``record`` whose string value is spelt near
    ``evstore.run-record`` (any version, case or separators).
    """
    if not isinstance(doc, dict):
        return None
    if str(doc.get("record", "")).startswith("evstore.run-record"):
        return "run"
    found = near_member(doc, "record")
    if found is not None and isinstance(found[1], str) and spelling(found[1]).startswith(_NEAR):
        return "run"
    return None


_NEAR = spelling("evstore.run-record")


def _is_size(value: Any) -> bool:
    return type(value) is int and value >= 0


def _entry_fault(name: Any, entry: Any, names: set[Any]) -> tuple[str, str] | None:
    """(message, pointer) of the first fault of one file entry, or None."""
    at = join_pointer("/files", name)
    why = check_logical_name(name)
    if why is not None:
        return f"unsafe logical file: {why}", at
    if not isinstance(entry, dict) or not _ENTRY_REQUIRED <= set(entry) <= _ENTRY_ALLOWED:
        return "a file entry is {descriptor_name, descriptor, raw, size[, kind, artifact]}", at
    if not _is_size(entry["size"]):
        return "size is a non-negative integer", join_pointer(at, "size")
    dname, desc = entry["descriptor_name"], entry["descriptor"]
    if not isinstance(dname, str) or dname in names:
        return "descriptor names are unique strings", join_pointer(at, "descriptor_name")
    names.add(dname)
    if not isinstance(desc, dict) or desc.get("logical_file") != name:
        return "the descriptor's logical_file is the entry's name", join_pointer(at, "descriptor")
    artifact_kind = desc.get("artifact_kind")
    known = BUNDLE_KINDS.get(artifact_kind) if isinstance(artifact_kind, str) else None
    want = known.kind if known else None
    if entry.get("kind") != want or ("artifact" in entry) != (want is not None):
        return (
            "kind and artifact are present exactly for a known artifact_kind",
            join_pointer(at, "kind"),
        )
    return None


def _record_fault(doc: Any) -> tuple[str, str] | None:
    """(message, pointer) of the first shape fault of a run record, or None."""
    if not isinstance(doc, dict) or doc.get("record") != RUN_RECORD_FORMAT:
        return f"a run record is an object with record {RUN_RECORD_FORMAT!r}", "/record"
    extra = set(doc) - {"record", "index", "files", "evidence_context"}
    if extra:
        return "unknown member", join_pointer("", sorted(extra)[0])
    index = doc.get("index")
    if not isinstance(index, dict) or set(index) != {"raw", "size"} or not _is_size(index["size"]):
        return "index is {raw, size}", "/index"
    files = doc.get("files")
    if not isinstance(files, dict):
        return "files is an object keyed by logical file", "/files"
    names: set[Any] = set()
    for name, entry in files.items():
        found = _entry_fault(name, entry, names)
        if found is not None:
            return found
    ec = doc.get("evidence_context")
    if ec is not None and (
        not isinstance(ec, dict)
        or ec.get("source_check") not in ("checked", "unchecked")
        or not isinstance(ec.get("logical_file"), str)
        or files.get(ec["logical_file"], {}).get("kind") != "evidence-context"
    ):
        return (
            "evidence_context is {logical_file, source_check[, source_document]} and names the "
            "record's evidence-context file",
            "/evidence_context",
        )
    return None


def record_index(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The index.json a (well-formed) record was made from (descriptor name -> descriptor)."""
    return {e["descriptor_name"]: e["descriptor"] for e in doc["files"].values()}


def record_edges(doc: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The lineage edges of a well-formed record: ``(role, content ref)``, in record order.

    Roles: ``index`` (the raw index.json), ``file`` (each raw file), ``artifact`` (each
    file stored as an artifact).
    """
    out = [("index", doc["index"]["raw"])]
    for entry in doc["files"].values():
        out.append(("file", entry["raw"]))
        if "artifact" in entry:
            out.append(("artifact", entry["artifact"]))
    return out


def validate(doc: Any, settings: _SettingsMap | None = None, *, kind: str | None = None) -> Faults:
    """Every store-free fault of a run record (docs/bundle.md#the-run-record).

    The record's shape first; the tree is judged member by member and only its first shape
    fault is reported (``run.record-shape``, the rest of a malformed tree means nothing).
    A well-formed record's descriptors must then satisfy the bundle layout rules
    (:func:`~evstore.contracts.runs.rules_bundle.index_faults`, every listed file present).

    Args:
        doc: the value from the strict JSON reader.
        settings: store settings; none applies (accepted for the shared signature).
        kind: ``"run"`` or None (the only kind of this module).

    Returns:
        The :class:`~evstore.core.errors.Faults`: ``run.record-shape`` (pointers into the
        record), or the layout's ``bundle.*``/``context.*`` faults (pointers into the
        record's index, as index.json would have them).

    Raises:
        ValueError: ``kind`` is another kind (a programming error).
    """
    if kind not in (None, "run"):
        raise ValueError(f"{kind!r} is not a kind of {CONTRACT}")
    found = _record_fault(doc)
    if found is not None:
        return Faults(errors=[error("run.record-shape", found[0], found[1])])
    return index_faults(record_index(doc), dict.fromkeys(doc["files"], True))
