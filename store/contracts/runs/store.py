"""Run bundles in the store: ingest as one run record, the ``run`` kind, ``store.runs``.

A file whose ``artifact_kind`` is in :data:`~evstore.contracts.runs.rules_bundle.BUNDLE_KINDS` is
validated
and stored by that kind's handler; any other file is stored as a blob and listed (and may
still serve as fragment source bytes or manifest rendered content, which handlers find by
SHA-256). The whole bundle is one transaction: one bad file writes nothing. Reading the
bundle and its layout rules are store/contracts/runs/rules_bundle.py; the record's rules
store/contracts/runs/rules.py; lineage over the edges the record writes store/objects/lineage.py.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

from ...core.canonical import dumps
from ...core.errors import EvstoreError, Faults, InputError, error, join_pointer
from ...core.refs import parse_ref
from ...core.results import RunReport
from ...objects import lineage
from ...objects.artifacts import ArtifactInfo, ArtifactResult
from ...objects.kinds import KindHandler, get_handler, kind_record
from ...objects.txn import Txn
from ..contexts.rules import source_id_of
from .rules import (
    CONTRACT_VERSION,
    RUN_RECORD_FORMAT,
    detect,
    record_edges,
    validate,
)
from .rules_bundle import BundleFile, read_bundle

__all__ = [
    "RunKind",
    "RunOps",
    "RunReport",
]

# Order of storage inside the transaction: what other files are checked against comes first
# (blobs, source documents, fragment sources, packages before their envelopes), the evidence
# context last, once the bundle's source documents are stored.
_RANK: Final[dict[str | None, int]] = {
    None: 0,
    "source-document": 1,
    "fragment-source": 2,
    "envelope": 4,
    "evidence-context": 5,
}


class _Store(Protocol):
    """What :class:`RunOps` needs of the Store it serves (never imported: no cycle)."""

    def transaction(self, work: Callable[[Txn], Any], *, mode: str = ..., **kw: Any) -> Any: ...

    def reading(self) -> contextlib.AbstractContextManager[Txn]: ...

    def ls(
        self, kind: str | None = None, *, attr: tuple[str, str] | None = None
    ) -> list[ArtifactInfo]: ...

    def load(self, ref: str) -> Any: ...


# --------------------------------------------------------------------------- ingest


def _store_artifact(txn: Txn, f: BundleFile) -> ArtifactResult:
    """Check and write one file of a known kind; its faults name the file (``path``)."""
    assert f.kind is not None
    handler = get_handler(f.kind)
    try:
        Faults.of(handler.check(f.value, txn)).raise_first()
        return handler.write(f.value, dumps(f.value), txn)
    except EvstoreError as err:
        err.path = err.path or f.name
        raise


def _ingest_files(
    txn: Txn,
    files: list[BundleFile],
    source_document: str | None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, Any], dict[str, dict[str, Any]]]:
    """Store each file in dependency order; returns (record files, evidence status, report).

    ``progress(done, total)`` is called after each file (counted in files).
    """
    entries: dict[str, dict[str, Any]] = {}
    report: dict[str, dict[str, Any]] = {}
    sources: dict[str, list[str]] = {}  # source_id -> artifact addresses in this bundle
    status: dict[str, Any] = {}
    for f in sorted(files, key=lambda f: _RANK.get(f.kind, 3)):
        blob = txn.put_blob(f.data)
        entry: dict[str, Any] = {
            "descriptor_name": f.descriptor_name,
            "descriptor": f.descriptor,
            "raw": blob.digest.address,
            "size": blob.digest.size,
        }
        report[f.name] = {"raw": blob.digest.address, "size": blob.digest.size}
        if f.kind is not None:
            # The evidence context is stored last (_RANK), after the bundle's source documents.
            if f.kind == "evidence-context":
                txn.options["source_document"] = source_document or _bundle_source(sources, f)
            result = _store_artifact(txn, f)
            entry.update(kind=f.kind, artifact=result.digest.address)
            report[f.name]["artifact"] = result.to_dict()
            if f.kind == "source-document":
                sid = source_id_of(f.value)
                if sid:
                    sources.setdefault(sid, []).append(result.digest.address)
            if f.kind == "evidence-context":
                status = {"logical_file": f.name, **result.info}
        entries[f.name] = entry
        if progress is not None:
            progress(len(entries), len(files))
    return entries, status, report


def _bundle_source(sources: Mapping[str, list[str]], f: BundleFile) -> str | None:
    """The bundle's source document for the excerpt ``f``: the one with its source_id."""
    sid = source_id_of(f.value)
    found = sorted(set(sources.get(sid, []))) if sid else []
    if len(found) > 1:
        raise error(
            "bundle.source-ambiguous",
            f"{len(found)} source documents carry source_id {sid!r}: {', '.join(found)}",
            path=f.name,
        )
    return found[0] if found else None


# --------------------------------------------------------------------------- the record kind


def _presence_faults(doc: Mapping[str, Any], txn: Txn) -> Faults:
    """Every blob and artifact a well-formed record names must be stored, size and kind alike."""
    faults = Faults()
    sizes = {doc["index"]["raw"]: doc["index"]["size"]}
    sizes.update((e["raw"], e["size"]) for e in doc["files"].values())
    for role, ref in record_edges(doc):
        try:
            row = txn.blob(parse_ref(ref))
        except (InputError, TypeError):
            faults.add("run.record-shape", f"{ref!r} is not a content ref")
            continue
        if row is None or (ref in sizes and row.digest.size != sizes[ref]):
            faults.add("run.missing-object", f"the {role} {ref} is not stored")
    for name, entry in doc["files"].items():
        kind = entry.get("kind")
        if kind and not txn.has_artifact(entry["artifact"].removeprefix("blake3:"), kind):
            faults.add(
                "run.missing-object",
                f"{entry['artifact']} is not stored as {kind}",
                join_pointer("/files", name, "artifact"),
            )
    return faults


class RunKind(KindHandler):
    """Kind ``run``: a run record (docs/bundle.md#the-run-record).

    Detected by its ``record`` marker. check: the record's rules
    (:func:`~evstore.contracts.runs.rules.validate`: shape, then the bundle layout over its
    descriptors), and that every blob and artifact it names is stored (with the recorded
    size and kind), so a record never points at nothing. write: edges ``index``, ``file``
    (each raw file) and ``artifact`` (each artifact) for lineage.
    """

    name = "run"
    contract_version = CONTRACT_VERSION

    def detect(self, doc: Any) -> bool:
        """True for an object whose ``record`` member names an evstore run record."""
        return detect(doc) == self.name

    def check(self, doc: Any, txn: Txn, canonical: bytes | None = None) -> Faults:
        """Shape, layout and presence of everything the record names."""
        faults = validate(doc, txn.settings, kind=self.name)
        if any(e.code == "run.record-shape" for e in faults.errors):
            return faults
        return faults.extend(_presence_faults(doc, txn))

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Store the record with its lineage edges."""
        return txn.put_artifact(
            self.name,
            self.contract_version,
            canonical,
            edges=record_edges(doc),
            attrs=[("run", doc["index"]["raw"])],
        )


# --------------------------------------------------------------------------- operations


class RunOps:
    """Run records and lineage (``store.runs``)."""

    def __init__(self, store: _Store) -> None:
        self.store = store

    def ingest_bundle(
        self,
        directory: str | os.PathLike[str],
        *,
        source_document: str | None = None,
        options: Mapping[str, Any] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> RunReport:
        """Store a run bundle as one run record, in one transaction (all or nothing).

        Args:
            directory: the bundle directory (index.json and the files it names).
            source_document: content ref of a stored source document to check the evidence
                context against; overrides the bundle's own source document.
            options: options for the kind handlers (e.g. ``scope`` for fragments).
            progress: called as ``(done, total)`` files after each stored file (the CLI
                draws its bar from it); called again from 0 if the transaction is retried.

        Returns:
            The :class:`RunReport`; the same bundle again gives the same record, ``new`` False.

        Raises:
            BundleError, ContextError, JSONFormError, and every kind's own errors (each with
            ``path`` = the logical file); NotFound (``not-found.source-document``).
        """
        index_data, _, files = read_bundle(
            directory, number_tokens=lambda kind: kind_record(kind).number_tokens
        )

        def work(txn: Txn) -> RunReport:
            index_blob = txn.put_blob(index_data)
            entries, status, report = _ingest_files(txn, files, source_document, progress)
            tree: dict[str, Any] = {
                "record": RUN_RECORD_FORMAT,
                "index": {"raw": index_blob.digest.address, "size": index_blob.digest.size},
                "files": entries,
            }
            if status:
                tree["evidence_context"] = status
            result = get_handler(RunKind.name).write(tree, dumps(tree), txn)
            return RunReport(result, report, tree)

        # The source document is this call's parameter, never a handler option of the caller.
        opts = {k: v for k, v in (options or {}).items() if k != "source_document"}
        return self.store.transaction(work, options=opts, supplied=[f.data for f in files])

    def runs(self) -> list[dict[str, Any]]:
        """Every run record, oldest first, with a summary of its files."""
        out = []
        for info in self.store.ls(RunKind.name):
            tree = self.store.load(info.address)
            files = tree["files"].values()
            out.append(
                {
                    **info.to_dict(),
                    "files": len(files),
                    "artifacts": sum(1 for e in files if "artifact" in e),
                    "evidence_context": tree.get("evidence_context", {}).get(
                        "source_check", "disabled"
                    ),
                }
            )
        return out

    def refs(self, ref: str, *, transitive: bool = False) -> list[dict[str, Any]]:
        """Which stored artifacts refer to ``ref`` (:func:`~evstore.objects.lineage.referrers`)."""
        with self.store.reading() as txn:
            return lineage.referrers(txn.conn, ref, transitive=transitive)

    def closure(self, ref: str) -> lineage.Closure:
        """Everything ``ref`` needs, each verified (see :func:`evstore.objects.lineage.closure`)."""
        with self.store.reading() as txn:
            return lineage.closure(txn.conn, ref)
