"""Run bundles on disk: the layout, ``index.json`` descriptors, logical names, safe reading.

The one place for the bundle rules that run records (store/contracts/runs/store.py,
store/contracts/runs/rules.py) and
evidence contexts (store/contracts/contexts/rules.py) share (docs/bundle.md):

    bundle: a directory holding ``index.json`` and the files it names.
    descriptor: one member of ``index.json``: six strings keyed by
        :data:`~evstore.contracts.contexts.rules.DESCRIPTOR_KEYS`, announcing one logical file.
    logical file: a descriptor's ``logical_file``, a relative POSIX path inside the bundle.

:func:`check_logical_name` is the lexical path rule; :func:`index_faults` the layout rules of
``index.json`` (descriptor shape, known kinds' fixed values, unique and present files, and
the evidence-context descriptor through :func:`~evstore.contracts.contexts.rules.check_index`);
:func:`read_bundle` reads a directory with those rules, refusing symlink escapes. No database.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Final, NamedTuple

import jsonschema_rs

from ...core.canonical import loads
from ...core.errors import EvstoreError, Faults, error, join_pointer
from ...core.json_schema import (
    MAX_SCHEMA_FAULTS,
    compile_schema,
    read_schema,
    schema_faults,
    truncated_fault,
)
from ..contexts.rules import (
    DESCRIPTOR_KEYS,
    EVIDENCE_CONTEXT_DESCRIPTOR,
    INDEX_KEY,
    SOURCE_DOCUMENT_DESCRIPTOR,
    check_index,
)

__all__ = [
    "BUNDLE_KINDS",
    "BundleFile",
    "BundleKind",
    "INDEX_FILE",
    "RULE_DEFS",
    "RULE_LAYOUT",
    "SCHEMA_FILE",
    "check_logical_name",
    "index_faults",
    "load_schema",
    "read_bundle",
]

#: The section of docs/bundle.md that states the layout rules (``bundle.*`` codes).
RULE_LAYOUT: Final = "docs/bundle.md#indexjson"
#: The index file of every bundle; it needs no descriptor and cannot be a logical file.
INDEX_FILE: Final = "index.json"


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
#: notarius and source-document rows come from store/contracts/contexts/rules.py; docs/bundle.md
# has the
#: table.
BUNDLE_KINDS: Final[dict[str, BundleKind]] = {
    "source/evidence-context": _from_contexts("evidence-context", EVIDENCE_CONTEXT_DESCRIPTOR),
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
            raise error(
                "bundle.path-unsafe", f"{name!r} resolves outside the bundle", pointer, path=name
            )
        if not real.exists():
            return None
        if not real.is_file():
            raise error(
                "bundle.file-missing", f"{name!r} is not a regular file", pointer, path=name
            )
    except OSError as exc:  # e.g. a name longer than the file system allows
        raise error(
            "bundle.path-unsafe",
            f"{name[:80]!r} cannot be a file here: {exc.strerror}",
            pointer,
            path=name[:200],
        ) from None
    try:
        return real.read_bytes()
    except OSError as exc:
        raise error(
            "bundle.unreadable", f"cannot read {name}: {exc.strerror}", pointer, path=name
        ) from None


# --------------------------------------------------------------------------- index.json


#: Our JSON Schema of index.json's layout shape, a file of this package (``evstore/schemas/``).
SCHEMA_FILE: Final = "evstore-bundle-index-v1.schema.json"
#: ``rule-*`` subschemas of :data:`SCHEMA_FILE`; a fault under any of them is
#: ``bundle.index-shape`` (one per descriptor, the first in the documented order).
RULE_DEFS: Final = ("rule-index-shape", "rule-index-descriptor", "rule-index-descriptor-value")


def load_schema() -> dict[str, Any]:
    """Our JSON Schema of index.json's layout shape, parsed (a fresh copy on each call)."""
    return read_schema(SCHEMA_FILE)


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return load_schema()  # one copy, read only


@lru_cache(maxsize=1)
def _validator() -> jsonschema_rs.Draft202012Validator:
    return compile_schema(_schema())


def _shape_faults(index: Any) -> tuple[dict[str | None, EvstoreError], bool]:
    """Schema faults of index.json: ``None`` -> the index's own; descriptor name -> its one.

    A descriptor that is not an object of exactly the six keys gets that fault; otherwise
    its first non-string value in :data:`~evstore.contracts.contexts.rules.DESCRIPTOR_KEYS` order.
    The bool: the schema found more than :data:`~evstore.core.json_schema.MAX_SCHEMA_FAULTS`
    faults, and only the descriptors of the first have theirs.
    """
    result = schema_faults(_validator(), index, schema=_schema())
    objects: set[str] = set()
    values: dict[str, set[str]] = {}
    for fault in result.faults:
        path = list(fault.path)
        rule = fault.rule()
        if rule == "rule-index-shape":
            shape = error("bundle.index-shape", "index.json must be a JSON object of descriptors")
            return {None: shape}, False
        if rule == "rule-index-descriptor":
            objects.add(str(path[0]))
        else:
            values.setdefault(str(path[0]), set()).add(str(path[1]))
    out: dict[str | None, EvstoreError] = {}
    for dname in objects:
        out[dname] = error(
            "bundle.index-shape",
            "a descriptor is an object with exactly " + ", ".join(DESCRIPTOR_KEYS),
            join_pointer("", dname),
        )
    for dname, keys in values.items():
        if dname not in out:
            first = next(k for k in DESCRIPTOR_KEYS if k in keys)
            out[dname] = error(
                "bundle.index-shape",
                "descriptor values are strings",
                join_pointer("", dname, first),
            )
    return out, result.truncated


def _kind_faults(desc: Mapping[str, str], at: str, faults: Faults) -> None:
    """A known artifact_kind's fixed values, and the evidence context's one place."""
    kind = desc["artifact_kind"]
    if kind == EVIDENCE_CONTEXT_DESCRIPTOR["artifact_kind"]:
        faults.add(
            "bundle.descriptor-misplaced",
            f"the evidence context is announced under {INDEX_KEY!r} only",
            at,
        )
    elif kind in BUNDLE_KINDS:
        for key in _FIXED_KEYS:
            want = getattr(BUNDLE_KINDS[kind], key)
            if desc[key] != want:
                faults.add(
                    "bundle.descriptor-mismatch",
                    f"{kind} takes {key} {want!r}, not {desc[key]!r}",
                    join_pointer(at, key),
                )


def index_faults(index: Any, exists: Mapping[str, bool]) -> Faults:
    """Layout rules of ``index.json`` (docs/bundle.md#indexjson), given which files exist.

    In order: each descriptor's shape and fixed values (index order), then each logical
    file's name, uniqueness and presence (index order), then the evidence-context
    descriptor (:func:`~evstore.contracts.contexts.rules.check_index`).

    Args:
        index: the parsed ``index.json``.
        exists: logical file -> whether it is a regular file of the bundle.

    Returns:
        Every fault, pointers into ``index.json``: ``bundle.index-shape``,
        ``bundle.descriptor-misplaced``, ``bundle.descriptor-mismatch``,
        ``bundle.path-unsafe``, ``bundle.file-duplicate``, ``bundle.file-missing``, and
        the ``context.*`` codes of ``check_index``. When the schema finds more than
        :data:`~evstore.core.json_schema.MAX_SCHEMA_FAULTS` faults, only the shape faults
        of the descriptors judged, then one ``bundle.index-shape`` fault at ``""`` with
        ``details.truncated``; likewise when the later rules find more than that many (an
        index naming thousands of missing or duplicate files): the first ones, then that
        fault.
    """
    faults = Faults()
    shape, truncated = _shape_faults(index)
    if None in shape:
        faults.errors.append(shape[None])
        return faults
    if truncated:  # not every descriptor was judged: list what was, and no further rules
        faults.errors.extend(shape[d] for d in index if d in shape)
        faults.errors.append(truncated_fault("bundle.index-shape"))
        return faults
    for dname, desc in index.items():
        if dname == INDEX_KEY:
            continue  # the contract's own rules, below
        if dname in shape:
            faults.errors.append(shape[dname])
        else:
            _kind_faults(desc, join_pointer("", dname), faults)
    named: dict[str, str] = {}
    for dname, desc in index.items():
        name = desc.get("logical_file") if isinstance(desc, dict) else None
        if not isinstance(name, str):
            continue  # reported above, or by check_index for the evidence context
        at = join_pointer("", dname, "logical_file")
        why = check_logical_name(name)
        if why is not None:
            faults.add("bundle.path-unsafe", f"{name!r}: {why}", at)
            continue
        if name in named:
            faults.add("bundle.file-duplicate", f"{name!r} is also named by {named[name]!r}", at)
        named[name] = dname
        if dname != INDEX_KEY and not exists.get(name, False):
            faults.add("bundle.file-missing", f"{name!r} is not in the bundle", at)
    faults.extend(check_index(index, {n for n, ok in exists.items() if ok}))
    if len(faults.errors) > MAX_SCHEMA_FAULTS:  # one cap for every fault list (issue 23)
        del faults.errors[MAX_SCHEMA_FAULTS:]
        faults.errors.append(truncated_fault("bundle.index-shape"))
    return faults


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


def _load(data: bytes, path: str, *, number_tokens: bool = False) -> Any:
    """Parse with the strict reader, naming the bundle file in a ``json.*`` fault.

    ``number_tokens``: keep 10.0 and 1e1 as floats (unit ids must be integer tokens).
    """
    try:
        return loads(data, number_tokens=number_tokens)
    except EvstoreError as err:
        err.path = path
        raise


def read_bundle(
    directory: str | os.PathLike[str], *, number_tokens: Callable[[str], bool]
) -> tuple[bytes, Any, list[BundleFile]]:
    """Read a bundle: its index, and every logical file the index names, checked.

    Checks the layout (:func:`index_faults`), path safety (lexical, then the resolved path
    must stay inside the directory, symlinks included), the evidence-context descriptor and
    the JSON form of every file of a known kind. Reads nothing that no descriptor names.

    Args:
        directory: the bundle directory.
        number_tokens: ``number_tokens(kind)``: whether the rules of an evstore kind read
            JSON numbers as written (the kind registry's record says; this module is pure).

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
        raise error("bundle.unreadable", f"{os.fspath(directory)!r} is not a directory")
    index_data = _read_inside(root, INDEX_FILE, "")
    if index_data is None:
        raise error("bundle.index-missing", f"no {INDEX_FILE} in {os.fspath(directory)!r}")
    index = _load(index_data, INDEX_FILE)
    data: dict[str, bytes | None] = {}
    if isinstance(index, dict):
        for dname, desc in index.items():
            name = desc.get("logical_file") if isinstance(desc, dict) else None
            if isinstance(name, str) and check_logical_name(name) is None and name not in data:
                data[name] = _read_inside(root, name, join_pointer("", dname, "logical_file"))
    faults = index_faults(index, {n: d is not None for n, d in data.items()})
    first = faults.first()
    if first is not None:
        first.path = first.path or INDEX_FILE
        raise first
    files = []
    for dname, desc in index.items():
        raw = data[desc["logical_file"]]
        assert raw is not None  # index_faults reported missing files
        known = BUNDLE_KINDS.get(desc["artifact_kind"])
        kind = known.kind if known else None
        value = (
            _load(
                raw,
                desc["logical_file"],
                number_tokens=number_tokens(kind),
            )
            if kind is not None
            else None
        )
        files.append(BundleFile(desc["logical_file"], dname, dict(desc), raw, kind, value))
    return index_data, index, files
