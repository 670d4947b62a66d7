"""Run bundles as run records: safe bundle reading, per-file dispatch, the record tree.

Terms (docs/bundle.md):
    bundle: a directory holding ``index.json`` and the files it names.
    descriptor: one member of ``index.json``: six strings keyed by
        :data:`~evstore.contexts.DESCRIPTOR_KEYS`, announcing one logical file.
    logical file: a descriptor's ``logical_file``, a relative POSIX path inside the bundle.
    run record: the canonical JSON tree (kind ``run``) that ties a bundle's files together:
        logical file -> raw address, artifact address where the file is an artifact, size,
        descriptor. Its address depends on content only, so one bundle is one record.

A file whose ``artifact_kind`` is in :data:`BUNDLE_KINDS` is validated and stored by that
kind's handler; any other file is stored as a blob and listed (and may still serve as fragment
source bytes or manifest rendered content, which handlers find by SHA-256). The whole bundle is
one transaction: one bad file writes nothing. Lineage over the edges the record writes is in
store/lineage.py.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from . import blobs, contexts, lineage
from .artifacts import ArtifactResult
from .canonical import dumps, loads
from .contexts import DESCRIPTOR_KEYS, INDEX_KEY, SOURCE_DOCUMENT_DESCRIPTOR
from .errors import ContractError, EvstoreError, InputError, join_pointer
from .kinds import get_handler
from .refs import parse_ref
from .txn import Txn

if TYPE_CHECKING:
    from .api import Store

__all__ = [
    "BUNDLE_KINDS",
    "BundleError",
    "BundleFile",
    "BundleKind",
    "CODES",
    "INDEX_FILE",
    "RUN_RECORD_FORMAT",
    "RunKind",
    "RunOps",
    "RunReport",
    "check_logical_name",
    "read_bundle",
]

_RULE_LAYOUT = "docs/bundle.md#indexjson"
_RULE_RECORD = "docs/bundle.md#the-run-record"

#: The index file of every bundle; it needs no descriptor and cannot be a logical file.
INDEX_FILE: Final = "index.json"
#: Marker member ``record`` of a run record (and what RunKind detects).
RUN_RECORD_FORMAT: Final = "evstore.run-record.v1"


class BundleKind(NamedTuple):
    """A known ``artifact_kind``: the evstore kind that handles it and its fixed values."""

    kind: str
    schema_id: str
    schema_name: str
    schema_version: str
    media_type: str = "application/json"


def _from_contexts(kind: str, desc: Mapping[str, str]) -> BundleKind:
    return BundleKind(
        kind, desc["schema_id"], desc["schema_name"], desc["schema_version"], desc["media_type"]
    )


#: artifact_kind -> its evstore kind and fixed descriptor values (all but logical_file). The
#: notarius and source-document rows come from store/contexts.py; docs/bundle.md has the table.
BUNDLE_KINDS: Final[dict[str, BundleKind]] = {
    "source/evidence-context": _from_contexts(
        "evidence-context", contexts.EVIDENCE_CONTEXT_DESCRIPTOR
    ),
    "source/document": _from_contexts("source-document", SOURCE_DOCUMENT_DESCRIPTOR),
    "templiqx/evidence-fragment": BundleKind(
        "fragment", "templiqx.evidence_fragment", "templiqx_evidence_fragment_v1alpha1", "v1alpha1"
    ),
    "templiqx/eval-output": BundleKind(
        "fragment-batch", "templiqx.eval_output", "templiqx_eval_output_v1alpha1", "v1alpha1"
    ),
    "evstore/fragment-source": BundleKind(
        "fragment-source", "evstore.fragment_source", "evstore_fragment_source_v1", "v1"
    ),
    "orbidocs/corpus-passage-evidence-manifest": BundleKind(
        "manifest",
        "corpus-passage-evidence-manifest.v1",
        "corpus_passage_evidence_manifest_v1",
        "v1",
    ),
    "insonic/answer-evidence": BundleKind(
        "package", "insonic.answer_evidence", "insonic_answer_evidence_1_3_0", "1.3.0"
    ),
    "insonic/answer-evidence-request": BundleKind(
        "request",
        "insonic.answer_evidence_request",
        "insonic_answer_evidence_request_1_3_0",
        "1.3.0",
    ),
    "insonic/answer-evidence-envelope": BundleKind(
        "envelope",
        "insonic.answer_evidence_envelope",
        "insonic_answer_evidence_envelope_1_3_0",
        "1.3.0",
    ),
}
_FIXED_KEYS = ("media_type", "schema_id", "schema_name", "schema_version")

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

CODES: Final[dict[str, str]] = {
    "bundle.unreadable": "the bundle directory or one of its files cannot be read",
    "bundle.index-missing": "the bundle has no regular index.json",
    "bundle.index-shape": "index.json is not an object of descriptors (six strings each)",
    "bundle.path-unsafe": "a logical file is absolute, has '..'/'.'/empty segments or a "
    "backslash, names index.json, or resolves outside the bundle",
    "bundle.file-missing": "a logical file named by a descriptor is not a regular file",
    "bundle.file-duplicate": "two descriptors name one logical file",
    "bundle.descriptor-mismatch": "a known artifact_kind with other fixed descriptor values",
    "bundle.descriptor-misplaced": "the evidence-context descriptor under a name other than "
    "evidence_context",
    "bundle.source-ambiguous": "two source documents in the bundle carry the excerpt's source_id",
    "run.record-shape": "a run record is not the documented tree",
    "run.missing-object": "a blob or artifact a run record names is not stored",
}


class BundleError(ContractError):
    """A run bundle or run record breaks docs/bundle.md (codes ``bundle.*``, ``run.*``)."""

    default_code = "bundle.index-shape"


def _err(
    code: str, message: str, pointer: str = "", *, rule: str = _RULE_LAYOUT, path: str | None = None
) -> BundleError:
    return BundleError(message, code=code, rule=rule, pointer=pointer, path=path)


# --------------------------------------------------------------------------- paths


def check_logical_name(name: Any) -> str | None:
    """Why ``name`` is not a safe logical file name (lexical rules only), or None.

    A logical file is a relative POSIX path of non-empty segments other than ``.`` and
    ``..``, without backslashes or NUL, and not ``index.json``. Symlinks are judged when the
    bundle is read (:func:`read_bundle`): the resolved path must stay inside the bundle.
    """
    if not isinstance(name, str) or not name:
        return "a logical file is a non-empty string"
    if "\\" in name or "\0" in name:
        return "backslashes and NUL are not allowed (POSIX paths only)"
    if name.startswith("/"):
        return "absolute paths are not allowed"
    if any(seg in ("", ".", "..") for seg in name.split("/")):
        return "empty, '.' and '..' segments are not allowed"
    if name == INDEX_FILE:
        return "index.json is the bundle's index, not a logical file"
    return None


def _read_inside(root: Path, name: str, pointer: str) -> bytes | None:
    """The bytes of logical file ``name`` (None when absent), refusing escapes via symlinks."""
    try:
        real = Path(os.path.realpath(root / name))
        if real != root and root not in real.parents:
            raise _err(
                "bundle.path-unsafe", f"{name!r} resolves outside the bundle", pointer, path=name
            )
        if not real.exists():
            return None
        if not real.is_file():
            raise _err("bundle.file-missing", f"{name!r} is not a regular file", pointer, path=name)
    except OSError as exc:  # e.g. a name longer than the file system allows
        raise _err(
            "bundle.path-unsafe",
            f"{name[:80]!r} cannot be a file here: {exc.strerror}",
            pointer,
            path=name[:200],
        ) from None
    try:
        return real.read_bytes()
    except OSError as exc:
        raise _err(
            "bundle.unreadable", f"cannot read {name}: {exc.strerror}", pointer, path=name
        ) from None


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class BundleFile:
    """One logical file of a bundle, read and (for a known kind) parsed.

    Attributes:
        name: the logical file (relative POSIX path).
        descriptor_name: its member name in ``index.json``.
        descriptor: the six descriptor values, verbatim.
        data: the bytes as found.
        kind: the evstore kind, or None for a blob.
        value: the parsed JSON (artifacts only).
    """

    name: str
    descriptor_name: str
    descriptor: dict[str, str]
    data: bytes
    kind: str | None = None
    value: Any = None


def _index_faults(index: Any, exists: Mapping[str, bool]) -> list[EvstoreError]:
    """Layout rules of ``index.json`` (docs/bundle.md#indexjson), given which files exist."""
    if not isinstance(index, dict):
        return [_err("bundle.index-shape", "index.json must be a JSON object of descriptors")]
    faults: list[EvstoreError] = []
    named: dict[str, str] = {}
    for dname, desc in index.items():
        at = join_pointer("", dname)
        if dname == INDEX_KEY:
            continue  # the contract's own rules, below
        if not isinstance(desc, dict) or set(desc) != set(DESCRIPTOR_KEYS):
            faults.append(
                _err(
                    "bundle.index-shape",
                    "a descriptor is an object with exactly " + ", ".join(DESCRIPTOR_KEYS),
                    at,
                )
            )
            continue
        bad = [k for k in DESCRIPTOR_KEYS if not isinstance(desc[k], str)]
        if bad:
            faults.append(
                _err(
                    "bundle.index-shape", "descriptor values are strings", join_pointer(at, bad[0])
                )
            )
            continue
        kind = desc["artifact_kind"]
        if kind == contexts.EVIDENCE_CONTEXT_DESCRIPTOR["artifact_kind"]:
            faults.append(
                _err(
                    "bundle.descriptor-misplaced",
                    f"the evidence context is announced under {INDEX_KEY!r} only",
                    at,
                )
            )
        elif kind in BUNDLE_KINDS:
            for key in _FIXED_KEYS:
                want = getattr(BUNDLE_KINDS[kind], key)
                if desc[key] != want:
                    faults.append(
                        _err(
                            "bundle.descriptor-mismatch",
                            f"{kind} takes {key} {want!r}, not {desc[key]!r}",
                            join_pointer(at, key),
                        )
                    )
    for dname, desc in index.items():
        if not isinstance(desc, dict):
            continue
        at = join_pointer("", dname, "logical_file")
        name = desc.get("logical_file")
        if not isinstance(name, str):
            continue  # reported above, or by check_index for the evidence context
        why = check_logical_name(name)
        if why is not None:
            faults.append(_err("bundle.path-unsafe", f"{name!r}: {why}", at))
            continue
        if name in named:
            faults.append(
                _err("bundle.file-duplicate", f"{name!r} is also named by {named[name]!r}", at)
            )
        named[name] = dname
        if dname != INDEX_KEY and not exists.get(name, False):
            faults.append(_err("bundle.file-missing", f"{name!r} is not in the bundle", at))
    faults.extend(contexts.check_index(index, {n for n, ok in exists.items() if ok}))
    return faults


def read_bundle(directory: str | os.PathLike[str]) -> tuple[bytes, Any, list[BundleFile]]:
    """Read a bundle: its index, and every logical file the index names, checked.

    Checks the layout (docs/bundle.md#indexjson), path safety (lexical, then the resolved path
    must stay inside the directory, symlinks included), the evidence-context descriptor
    (:func:`~evstore.contexts.check_index`) and the JSON form of every file of a known kind.
    Reads nothing that no descriptor names.

    Args:
        directory: the bundle directory.

    Returns:
        ``(index bytes, parsed index, files)`` with files in index order.

    Raises:
        BundleError: ``bundle.*`` codes (pointers into ``index.json``).
        ContextError: ``context.descriptor-*``, ``context.unsupported-version``,
            ``context.logical-file-missing``.
        JSONFormError: ``json.*`` for index.json or a file of a known kind (``path`` set).
    """
    root = Path(os.path.realpath(directory))
    if not root.is_dir():
        raise _err("bundle.unreadable", f"{os.fspath(directory)!r} is not a directory")
    index_data = _read_inside(root, INDEX_FILE, "")
    if index_data is None:
        raise _err("bundle.index-missing", f"no {INDEX_FILE} in {os.fspath(directory)!r}")
    try:
        index = loads(index_data)
    except EvstoreError as err:
        err.path = INDEX_FILE
        raise
    data: dict[str, bytes | None] = {}
    if isinstance(index, dict):
        for dname, desc in index.items():
            name = desc.get("logical_file") if isinstance(desc, dict) else None
            if isinstance(name, str) and check_logical_name(name) is None and name not in data:
                data[name] = _read_inside(root, name, join_pointer("", dname, "logical_file"))
    faults = _index_faults(index, {n: d is not None for n, d in data.items()})
    if faults:
        faults[0].path = faults[0].path or INDEX_FILE
        raise faults[0]
    files = []
    for dname, desc in index.items():
        raw = data[desc["logical_file"]]
        assert raw is not None  # _index_faults reported missing files
        known = BUNDLE_KINDS.get(desc["artifact_kind"])
        kind = known.kind if known else None
        value = None
        if kind is not None:
            try:
                value = loads(raw)
            except EvstoreError as err:
                err.path = desc["logical_file"]
                raise
        files.append(BundleFile(desc["logical_file"], dname, dict(desc), raw, kind, value))
    return index_data, index, files


# --------------------------------------------------------------------------- ingest


@dataclass
class RunReport:
    """What :meth:`RunOps.ingest_bundle` did.

    Attributes:
        record: the run record's :class:`ArtifactResult` (``new`` False for a bundle seen before).
        files: per logical file: its blob and, for an artifact, the kind's result.
        tree: the run record itself.
    """

    record: ArtifactResult
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    tree: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"ok": True, "run": self.record.to_dict(), "files": self.files, "record": self.tree}


def _ingest_files(
    txn: Txn, files: list[BundleFile], source_document: str | None
) -> tuple[dict[str, dict[str, Any]], dict[str, Any], dict[str, dict[str, Any]]]:
    """Store each file in dependency order; returns (record files, evidence status, report)."""
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
            handler = get_handler(f.kind)
            try:
                faults = handler.check(f.value, txn)
                if faults:
                    raise faults[0]
                result = handler.write(f.value, dumps(f.value), txn)
            except EvstoreError as err:
                err.path = err.path or f.name
                raise
            entry.update(kind=f.kind, artifact=result.digest.address)
            report[f.name]["artifact"] = result.to_dict()
            if f.kind == "source-document":
                sid = contexts.source_id_of(f.value)
                if sid:
                    sources.setdefault(sid, []).append(result.digest.address)
            if f.kind == "evidence-context":
                status = {"logical_file": f.name, **result.info}
        entries[f.name] = entry
    return entries, status, report


def _bundle_source(sources: Mapping[str, list[str]], f: BundleFile) -> str | None:
    """The bundle's source document for the excerpt ``f``: the one with its source_id."""
    sid = contexts.source_id_of(f.value)
    found = sorted(set(sources.get(sid, []))) if sid else []
    if len(found) > 1:
        raise _err(
            "bundle.source-ambiguous",
            f"{len(found)} source documents carry source_id {sid!r}: {', '.join(found)}",
            path=f.name,
        )
    return found[0] if found else None


# --------------------------------------------------------------------------- the record kind


def _record_faults(doc: Any) -> list[EvstoreError]:
    """Shape of a run record (docs/bundle.md#the-run-record); pointers into the record."""

    def bad(message: str, pointer: str) -> list[EvstoreError]:
        return [_err("run.record-shape", message, pointer, rule=_RULE_RECORD)]

    if not isinstance(doc, dict) or doc.get("record") != RUN_RECORD_FORMAT:
        return bad(f"a run record is an object with record {RUN_RECORD_FORMAT!r}", "/record")
    extra = set(doc) - {"record", "index", "files", "evidence_context"}
    if extra:
        return bad("unknown member", join_pointer("", sorted(extra)[0]))
    index = doc.get("index")
    if not isinstance(index, dict) or set(index) != {"raw", "size"} or not _is_size(index["size"]):
        return bad("index is {raw, size}", "/index")
    files = doc.get("files")
    if not isinstance(files, dict):
        return bad("files is an object keyed by logical file", "/files")
    names: set[Any] = set()
    for name, entry in files.items():
        at = join_pointer("/files", name)
        if check_logical_name(name) is not None:
            return bad(f"unsafe logical file: {check_logical_name(name)}", at)
        if not isinstance(entry, dict) or not _ENTRY_REQUIRED <= set(entry) <= _ENTRY_ALLOWED:
            return bad(
                "a file entry is {descriptor_name, descriptor, raw, size[, kind, artifact]}", at
            )
        if not _is_size(entry["size"]):
            return bad("size is a non-negative integer", join_pointer(at, "size"))
        dname, desc = entry["descriptor_name"], entry["descriptor"]
        if not isinstance(dname, str) or dname in names:
            return bad("descriptor names are unique strings", join_pointer(at, "descriptor_name"))
        names.add(dname)
        if not isinstance(desc, dict) or desc.get("logical_file") != name:
            return bad(
                "the descriptor's logical_file is the entry's name", join_pointer(at, "descriptor")
            )
        artifact_kind = desc.get("artifact_kind")
        known = BUNDLE_KINDS.get(artifact_kind) if isinstance(artifact_kind, str) else None
        want = known.kind if known else None
        if entry.get("kind") != want or ("artifact" in entry) != (want is not None):
            return bad(
                "kind and artifact are present exactly for a known artifact_kind",
                join_pointer(at, "kind"),
            )
    ec = doc.get("evidence_context")
    if ec is not None and (
        not isinstance(ec, dict)
        or ec.get("source_check") not in ("checked", "unchecked")
        or not isinstance(ec.get("logical_file"), str)
        or files.get(ec["logical_file"], {}).get("kind") != "evidence-context"
    ):
        return bad(
            "evidence_context is {logical_file, source_check[, source_document]} and names the "
            "record's evidence-context file",
            "/evidence_context",
        )
    return []


_ENTRY_REQUIRED = frozenset({"descriptor_name", "descriptor", "raw", "size"})
_ENTRY_ALLOWED = _ENTRY_REQUIRED | {"kind", "artifact"}


def _is_size(value: Any) -> bool:
    return type(value) is int and value >= 0


def _record_index(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The index.json a record was made from (descriptor name -> descriptor)."""
    return {e["descriptor_name"]: e["descriptor"] for e in doc["files"].values()}


def _edges(doc: Mapping[str, Any]) -> list[tuple[str, str]]:
    out = [("index", doc["index"]["raw"])]
    for entry in doc["files"].values():
        out.append(("file", entry["raw"]))
        if "artifact" in entry:
            out.append(("artifact", entry["artifact"]))
    return out


class RunKind:
    """Kind ``run``: a run record (docs/bundle.md#the-run-record).

    Detected by its ``record`` marker. check: the record's shape, the bundle layout rules
    over its descriptors, and that every blob and artifact it names is stored (with the
    recorded size and kind), so a record never points at nothing. write: edges ``index``,
    ``file`` (each raw file) and ``artifact`` (each artifact) for lineage.
    """

    name = "run"
    contract_version = "v1"

    def detect(self, doc: Any) -> bool:
        """True for an object whose ``record`` member names an evstore run record."""
        return isinstance(doc, dict) and str(doc.get("record", "")).startswith("evstore.run-record")

    def check(self, doc: Any, txn: Txn) -> list[EvstoreError]:
        """Shape, layout and presence of everything the record names."""
        faults = _record_faults(doc)
        if faults:
            return faults
        faults = _index_faults(_record_index(doc), dict.fromkeys(doc["files"], True))
        sizes = {doc["index"]["raw"]: doc["index"]["size"]}
        sizes.update((e["raw"], e["size"]) for e in doc["files"].values())
        for role, ref in _edges(doc):
            try:
                row = blobs.lookup(txn.conn, parse_ref(ref))
            except (InputError, TypeError):
                faults.append(
                    _err("run.record-shape", f"{ref!r} is not a content ref", rule=_RULE_RECORD)
                )
                continue
            if row is None or (ref in sizes and row.digest.size != sizes[ref]):
                faults.append(
                    _err("run.missing-object", f"the {role} {ref} is not stored", rule=_RULE_RECORD)
                )
        for name, entry in doc["files"].items():
            kind = entry.get("kind")
            if kind and not txn.has_artifact(entry["artifact"].removeprefix("blake3:"), kind):
                faults.append(
                    _err(
                        "run.missing-object",
                        f"{entry['artifact']} is not stored as {kind}",
                        join_pointer("/files", name, "artifact"),
                        rule=_RULE_RECORD,
                    )
                )
        return faults

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Store the record with its lineage edges."""
        return txn.put_artifact(
            self.name,
            self.contract_version,
            canonical,
            edges=_edges(doc),
            attrs=[("run", doc["index"]["raw"])],
        )


# --------------------------------------------------------------------------- operations


class RunOps:
    """Run records and lineage (``store.runs``)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def ingest_bundle(
        self,
        directory: str | os.PathLike[str],
        *,
        source_document: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> RunReport:
        """Store a run bundle as one run record, in one transaction (all or nothing).

        Args:
            directory: the bundle directory (index.json and the files it names).
            source_document: content ref of a stored source document to check the evidence
                context against; overrides the bundle's own source document.
            options: options for the kind handlers (e.g. ``scope`` for fragments).

        Returns:
            The :class:`RunReport`; the same bundle again gives the same record, ``new`` False.

        Raises:
            BundleError, ContextError, JSONFormError, and every kind's own errors (each with
            ``path`` = the logical file); NotFound (``not-found.source-document``).
        """
        index_data, _, files = read_bundle(directory)

        def work(txn: Txn) -> RunReport:
            index_blob = txn.put_blob(index_data)
            entries, status, report = _ingest_files(txn, files, source_document)
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
        """Which stored artifacts refer to ``ref`` (see :func:`evstore.lineage.referrers`)."""
        with self.store.reading() as txn:
            return lineage.referrers(txn.conn, ref, transitive=transitive)

    def closure(self, ref: str) -> lineage.Closure:
        """Everything ``ref`` needs, each verified (see :func:`evstore.lineage.closure`)."""
        with self.store.reading() as txn:
            return lineage.closure(txn.conn, ref)
