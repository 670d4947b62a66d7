"""Evidence fragments, templiqx ``v1alpha1``: the pure rules (no database).

Implements ``../shared/contracts/templiqx-evidence-fragment-v1alpha1.md``: a fragment names
a byte range ``[start_offset, end_offset)`` of source content and the SHA-256 of those bytes.
:func:`validate` runs every store-free rule. The byte rules (``verify_against``) are
``store/contracts/fragments/rules_bytes.py``; the store side is
``store/contracts/fragments/store.py`` and
``store/contracts/fragments/bindings.py``. Codes: the ``fragment.*`` rows of
:data:`evstore.core.errors.CODES`
(the five of family ``binding`` need the store; all others are ``contract``, everywhere).

Decisions where the contract is silent (docs/fragments.md, "The rules", gives them in full):
content is raw bytes, never decoded; an offset is a boundary iff it is the length or
``content[off] & 0xC0 != 0x80``, and the quoted bytes must be well-formed UTF-8; an offset is
an ``int`` or a finite integral ``float`` (never ``bool``); present optional members must have
their type; ids are non-empty; other members are assertion fields, never part of identity.
Fault order: shape (members in the contract's table order, then configured revision
extensions), content_sha256, end_offset against the length, boundaries, quote_sha256; a stage
runs only when every earlier one passed. Detection: :func:`detect`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ...core.canonical import MAX_SAFE_INTEGER, dumps
from ...core.errors import EvstoreError, Faults, error, join_pointer
from ...core.near import near_member, near_members
from ...core.settings import setting

__all__ = [
    "AMBIGUOUS_CONTENT",
    "BATCH_KIND",
    "BOUNDARY",
    "CONTENT_MISMATCH",
    "CONTRACT",
    "CONTRACT_VERSION",
    "DEFAULT_REVISION_KEYS",
    "DIGEST_FORMAT",
    "FRAGMENT_KIND",
    "NEAR_REQUIRED",
    "NOT_FOUND_FRAGMENT",
    "OPTIONAL",
    "QUOTE_MISMATCH",
    "RANGE",
    "REQUIRED",
    "REVISION_FORMAT",
    "REVISION_KEYS_SETTING",
    "REVISION_MISMATCH",
    "SCOPE_FIELDS",
    "SCOPE_INCOMPLETE",
    "SCOPE_REUSE",
    "SHAPE",
    "SOURCE_ENCODING",
    "SOURCE_FIELDS",
    "SOURCE_KIND",
    "UNKNOWN_CONTENT",
    "UNKNOWN_REVISION",
    "detect",
    "extract_evidence",
    "identity",
    "identity_key",
    "revision_checksums",
    "scope_faults",
    "scope_from_parts",
    "scope_of",
    "source_record",
    "validate",
    "validate_shape",
    "validate_source",
]

#: Contract file name, the prefix of every ``rule``.
CONTRACT = "templiqx-evidence-fragment-v1alpha1"
#: Contract version recorded with every fragment artifact.
CONTRACT_VERSION = "v1alpha1"
#: Kind names (store/objects/kinds.py registers the handlers of store/contracts/fragments/store.py
# under them).
FRAGMENT_KIND = "fragment"
BATCH_KIND = "fragment-batch"
SOURCE_KIND = "fragment-source"
#: The store setting naming the revision extension keys (store/core/settings.py).
REVISION_KEYS_SETTING = "fragments.revision_extension_keys"

SHAPE = "fragment.shape"
RANGE = "fragment.range"
BOUNDARY = "fragment.boundary"
QUOTE_MISMATCH = "fragment.quote-mismatch"
CONTENT_MISMATCH = "fragment.content-mismatch"
UNKNOWN_CONTENT = "fragment.unknown-content"
AMBIGUOUS_CONTENT = "fragment.ambiguous-content"
DIGEST_FORMAT = "fragment.digest-format"
SCOPE_INCOMPLETE = "fragment.scope-incomplete"
SCOPE_REUSE = "fragment.scope-reuse"
REVISION_MISMATCH = "fragment.revision-mismatch"
UNKNOWN_REVISION = "fragment.unknown-revision"
REVISION_FORMAT = "fragment.revision-format"
SOURCE_ENCODING = "fragment.source-encoding"
NOT_FOUND_FRAGMENT = "not-found.fragment"

REQUIRED = ("document_id", "fragment_id", "start_offset", "end_offset", "quote_sha256")
#: The optional fields of the contract's table, in its order.
OPTIONAL = ("content_sha256", "scope", "extensions")
#: The members of ``scope``, exactly these, in the contract's table order.
SCOPE_FIELDS = ("host_id", "tenant_id", "authorization_scope_id")
#: Extension keys read as revision checksums unless the store is configured otherwise. The
#: contract's ``example.document_revision`` is illustrative and is read only when configured.
DEFAULT_REVISION_KEYS: tuple[str, ...] = ("evstore.document_revision",)

_json_str = json.JSONEncoder(ensure_ascii=False).encode
# fullmatch, so a trailing newline is not accepted the way "$" would accept it.
_HEX64 = re.compile(r"[0-9a-f]{64}")


# ---------------------------------------------------------------------------------------------
# shape


def _at(name: str, value: int) -> dict[str, Any]:
    return {name: value}  # a fault detail, typed for error(**...)


def _as_int(value: Any) -> int | None:
    """The JSON integer ``value`` denotes, or None (bool is not a number in JSON)."""
    if type(value) is int:
        return value
    if type(value) is float and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def _is_text(value: Any) -> bool:
    """An identifier str: writable as UTF-8 (lone surrogates are not), without U+0000.

    NUL is refused in identifiers (document_id, fragment_id, scope members) on both
    backends alike: PostgreSQL text cannot hold it.
    """
    if type(value) is not str or "\x00" in value:
        return False
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _id_faults(frag: Mapping[str, Any], name: str, base: str) -> list[EvstoreError]:
    if name not in frag:
        return [error(SHAPE, _missing(frag, name), join_pointer(base, name))]
    value = frag[name]
    if not _is_text(value) or value == "":
        message = f"{name} must be a non-empty string without U+0000"
        return [error(SHAPE, message, join_pointer(base, name))]
    return []


def _digest_faults(
    frag: Mapping[str, Any], name: str, base: str, *, required: bool
) -> list[EvstoreError]:
    if name not in frag:
        if required:
            return [error(SHAPE, _missing(frag, name), join_pointer(base, name))]
        return []
    ptr = join_pointer(base, name)
    value = frag[name]
    if type(value) is not str:
        return [error(SHAPE, f"{name} must be a string", ptr)]
    if not _HEX64.fullmatch(value):
        return [
            error(
                DIGEST_FORMAT,
                f"{name} must be 64 lowercase hexadecimal characters (no prefix)",
                ptr,
                value=value,
            )
        ]
    return []


def _missing(frag: Mapping[str, Any], name: str) -> str:
    """The message of a missing required member, naming a near spelling that is present."""
    found = near_member(dict(frag), name)
    if found is None:
        return f"required member {name} is missing"
    return f"required member {name} is missing ({found[0]!r} is not {name}: names are exact)"


def _offset_faults(frag: Mapping[str, Any], base: str) -> list[EvstoreError]:
    faults: list[EvstoreError] = []
    ints: dict[str, int] = {}
    for name in ("start_offset", "end_offset"):
        ptr = join_pointer(base, name)
        if name not in frag:
            faults.append(error(SHAPE, _missing(frag, name), ptr))
            continue
        value = _as_int(frag[name])
        if value is None:
            faults.append(error(SHAPE, f"{name} must be a JSON integer", ptr))
            continue
        if value < 0:
            faults.append(error(RANGE, f"{name} must be >= 0", ptr, **_at(name, value)))
            continue
        if value > MAX_SAFE_INTEGER:
            # No content is that long, and the canonical form could not carry the value.
            faults.append(error(RANGE, f"{name} is beyond 2**53-1", ptr, **_at(name, value)))
            continue
        ints[name] = value
    if len(ints) == 2 and ints["end_offset"] <= ints["start_offset"]:
        what = "empty" if ints["end_offset"] == ints["start_offset"] else "reversed"
        faults.append(
            error(
                RANGE,
                f"the range is {what}: end_offset must be greater than start_offset",
                join_pointer(base, "end_offset"),
                **_at("start_offset", ints["start_offset"]),
                **_at("end_offset", ints["end_offset"]),
            )
        )
    return faults


def _required_faults(frag: Mapping[str, Any], base: str) -> list[EvstoreError]:
    # Fast path (measured: most of the shape time on 10k valid fragments went into building
    # pointers that no fault used): decide validity first, build faults only when invalid.
    s, e, q = frag.get("start_offset"), frag.get("end_offset"), frag.get("quote_sha256")
    if (
        type(s) is int
        and type(e) is int
        and 0 <= s < e <= MAX_SAFE_INTEGER
        and type(q) is str
        and _HEX64.fullmatch(q)
        and _is_text(frag.get("document_id"))
        and frag["document_id"]
        and _is_text(frag.get("fragment_id"))
        and frag["fragment_id"]
    ):
        return []
    return (
        _id_faults(frag, "document_id", base)
        + _id_faults(frag, "fragment_id", base)
        + _offset_faults(frag, base)
        + _digest_faults(frag, "quote_sha256", base, required=True)
    )


def scope_faults(frag: Mapping[str, Any], base: str) -> list[EvstoreError]:
    """Faults of ``frag["scope"]`` (none when absent); pointers start ``base + "/scope"``."""
    if "scope" not in frag:
        return []
    scope = frag["scope"]
    if type(scope) is dict and len(scope) == 3:  # fast path: the three, non-empty strings
        h, t, a = scope.get("host_id"), scope.get("tenant_id"), scope.get("authorization_scope_id")
        if _is_text(h) and h and _is_text(t) and t and _is_text(a) and a:
            return []
    ptr = join_pointer(base, "scope")
    if not isinstance(scope, dict):
        return [error(SHAPE, "scope must be an object", ptr)]
    faults: list[EvstoreError] = []
    for name in SCOPE_FIELDS:
        mptr = join_pointer(ptr, name)
        if name not in scope:
            faults.append(error(SCOPE_INCOMPLETE, f"scope is missing {name}", mptr))
        elif not _is_text(scope[name]) or scope[name] == "":
            message = f"scope.{name} must be a non-empty string without U+0000"
            faults.append(error(SCOPE_INCOMPLETE, message, mptr))
    for name in sorted(k for k in scope if k not in SCOPE_FIELDS):
        faults.append(
            error(
                SCOPE_INCOMPLETE,
                f"scope holds {name!r}; only {', '.join(SCOPE_FIELDS)} belong there",
                join_pointer(ptr, name),
            )
        )
    return faults


def _revision_faults(
    frag: Mapping[str, Any], keys: Sequence[str], base: str
) -> tuple[list[EvstoreError], list[tuple[str, str]]]:
    exts = frag.get("extensions")
    if not isinstance(exts, dict):
        return [], []
    faults: list[EvstoreError] = []
    found: list[tuple[str, str]] = []
    for key in keys:
        if key not in exts:
            continue
        kptr = join_pointer(base, "extensions", key)
        value = exts[key]
        if not isinstance(value, dict):
            faults.append(error(REVISION_FORMAT, f"extension {key!r} must be an object", kptr))
            continue
        cptr = join_pointer(kptr, "revision_checksum")
        checksum = value.get("revision_checksum")
        if type(checksum) is not str or not _HEX64.fullmatch(checksum):
            faults.append(
                error(
                    REVISION_FORMAT,
                    f"extension {key!r} needs revision_checksum as 64 lowercase hex characters",
                    cptr,
                    value=checksum if type(checksum) is str else None,
                )
            )
            continue
        found.append((cptr, checksum))
    return faults, found


def validate_shape(
    frag: Any, pointer: str = "", *, revision_keys: Sequence[str] = ()
) -> list[EvstoreError]:
    """Check everything that needs the fragment alone (contract "Fragment shape" and more).

    Checks, in the contract's table order: required members present; document_id and
    fragment_id non-empty strings; offsets JSON integers (``int``, or a finite ``float`` with
    zero fraction; ``bool`` and ``str`` are rejected), ``start_offset >= 0``,
    ``end_offset > start_offset``; digests 64 lowercase hex; ``scope`` exactly its three
    non-empty strings; ``extensions`` an object; then each configured revision extension.
    Members outside the table (assertion fields such as ``field``) are accepted untouched.

    Args:
        frag: a parsed JSON value, expected to be a fragment object.
        pointer: RFC 6901 pointer of the fragment in its document ("" alone, ``/evidence/3``
            in a batch); every fault's pointer starts with it.
        revision_keys: extension keys that carry a revision checksum (the store setting);
            their values are checked as in :func:`revision_checksums`.

    Returns:
        Every fault, in the order above (empty: the shape is valid). Codes:
        ``fragment.shape``, ``fragment.range``, ``fragment.digest-format``,
        ``fragment.scope-incomplete``, ``fragment.revision-format``. A value that is not an
        object gives one ``fragment.shape`` fault at ``pointer``.
    """
    if not isinstance(frag, dict):
        return [error(SHAPE, "a fragment must be a JSON object", pointer)]
    faults = _required_faults(frag, pointer)
    faults += _digest_faults(frag, "content_sha256", pointer, required=False)
    faults += scope_faults(frag, pointer)
    if "extensions" in frag and not isinstance(frag["extensions"], dict):
        faults.append(
            error(SHAPE, "extensions must be an object", join_pointer(pointer, "extensions"))
        )
    if revision_keys:
        faults += _revision_faults(frag, revision_keys, pointer)[0]
    return faults


# ---------------------------------------------------------------------------------------------
# identity


def identity(frag: Mapping[str, Any]) -> tuple[str, str, int, int, str]:
    """A fragment's identity: its five required fields (assertion fields never count).

    Args:
        frag: a fragment object.

    Returns:
        ``(document_id, fragment_id, start_offset, end_offset, quote_sha256)``, offsets as
        ``int`` (so ``27.0`` and ``27`` give one identity).

    Raises:
        FragmentError: the first fault of the five required fields (``fragment.shape``,
            ``fragment.range`` or ``fragment.digest-format``), at a pointer relative to the
            fragment.
    """
    if not isinstance(frag, dict):
        raise error(SHAPE, "a fragment must be a JSON object")
    faults = _required_faults(frag, "")
    if faults:
        raise faults[0]
    return (
        frag["document_id"],
        frag["fragment_id"],
        int(frag["start_offset"]),
        int(frag["end_offset"]),
        frag["quote_sha256"],
    )


def identity_key(frag: Mapping[str, Any]) -> str:
    """The identity as one canonical string, the key that scope bindings hang on.

    It is the RFC 8785 (JCS) form of the object of the five required fields, e.g.
    ``{"document_id":"D","end_offset":43,"fragment_id":"F","quote_sha256":"…","start_offset":27}``.

    Args:
        frag: a fragment object.

    Returns:
        The JCS text (str; its UTF-8 bytes are the canonical bytes).

    Raises:
        FragmentError: as :func:`identity`.
    """
    document_id, fragment_id, start, end, quote = identity(frag)
    # Written out rather than through canonical.dumps because it runs once per fragment: the
    # member names are fixed ASCII in sorted order, the integers are within 2**53 (decimal),
    # the digest is hex, and json.dumps(ensure_ascii=False) escapes a string exactly as
    # RFC 8785 section 3.2.2.2 does (", \, \b \f \n \r \t, other controls as \u00xx).
    # tests/contracts/test_fragments_rules.py checks it against canonical.dumps.
    return (
        f'{{"document_id":{_json_str(document_id)},"end_offset":{end},'
        f'"fragment_id":{_json_str(fragment_id)},"quote_sha256":"{quote}",'
        f'"start_offset":{start}}}'
    )


def scope_of(frag: Mapping[str, Any]) -> dict[str, str] | None:
    """The fragment's own scope, or None when it carries none (contract "Host scope metadata").

    Args:
        frag: a fragment object.

    Returns:
        A new dict of ``host_id``, ``tenant_id``, ``authorization_scope_id``, or None.

    Raises:
        FragmentError: ``fragment.shape`` or ``fragment.scope-incomplete`` (the first fault)
            when ``scope`` is present but not valid.
    """
    if not isinstance(frag, dict):
        raise error(SHAPE, "a fragment must be a JSON object")
    if "scope" not in frag:
        return None
    faults = scope_faults(frag, "")
    if faults:
        raise faults[0]
    return {name: frag["scope"][name] for name in SCOPE_FIELDS}


def revision_checksums(
    frag: Mapping[str, Any], keys: Sequence[str] = DEFAULT_REVISION_KEYS, pointer: str = ""
) -> list[tuple[str, str]]:
    """Read the revision checksums a fragment carries (contract "Document revision checksum").

    Only the configured keys are read (``extensions[key]["revision_checksum"]``); other
    extensions, and other members of a revision extension's object, are left uninterpreted.

    Args:
        frag: a fragment object.
        keys: extension keys that carry a revision checksum, in the order to read them (the
            store setting; default :data:`DEFAULT_REVISION_KEYS`).
        pointer: pointer of the fragment in its document.

    Returns:
        ``[(pointer to revision_checksum, checksum as 64 lowercase hex), ...]`` in ``keys``
        order; empty when none of the keys is present.

    Raises:
        FragmentError: ``fragment.shape`` when the fragment or ``extensions`` is not an object;
            ``fragment.revision-format`` (the first fault) when a configured key's value is not
            an object or its ``revision_checksum`` is missing or not 64 lowercase hex.
    """
    if not isinstance(frag, dict):
        raise error(SHAPE, "a fragment must be a JSON object", pointer)
    if "extensions" in frag and not isinstance(frag["extensions"], dict):
        raise error(SHAPE, "extensions must be an object", join_pointer(pointer, "extensions"))
    faults, found = _revision_faults(frag, keys, pointer)
    if faults:
        raise faults[0]
    return found


# ---------------------------------------------------------------------------------------------
# documents


#: A near miss of the fragment shape: this many of the five required members, each present
#: exactly or under a near spelling (docs/kinds.md#near-misses). Scenario manifests'
#: ``evidence`` references carry three, so three never claim.
NEAR_REQUIRED = 4


def _looks_like_fragment(value: Any) -> bool:
    return isinstance(value, dict) and near_members(value, REQUIRED) >= NEAR_REQUIRED


def detect(doc: Any) -> str | None:
    """Tell whether a parsed document is a fragment, a batch of fragments, or neither.

    ``"fragment"`` for an object carrying at least four of the five required member names,
    each exactly or under a near spelling (:mod:`evstore.core.near`: ``quote_sha_256`` is near
    ``quote_sha256``), so a near miss is claimed and then rejected by validation with
    ``fragment.shape`` and the missing member's pointer; three are not enough (scenario
    manifests' ``evidence`` references carry three). ``"fragment-batch"`` for any other object
    whose ``evidence`` array holds at least one such object (the others are then reported by
    validation with their pointers). Types are not checked.

    Args:
        doc: a parsed JSON value.

    Returns:
        ``"fragment"``, ``"fragment-batch"`` or None.
    """
    if not isinstance(doc, dict):
        return None
    if _looks_like_fragment(doc):
        return "fragment"
    evidence = doc.get("evidence")
    if isinstance(evidence, list) and any(_looks_like_fragment(item) for item in evidence):
        return "fragment-batch"
    return None


def extract_evidence(output_doc: Any) -> list[tuple[str, Any]]:
    """The fragments of a templiqx eval output (an object with an ``evidence`` array).

    The other members of the output (extracted facts) are ignored. Elements are returned as
    they are, not validated: run :func:`validate_shape` with each pointer.

    Args:
        output_doc: the parsed eval output.

    Returns:
        ``[("/evidence/0", element), ...]`` in array order; empty for an empty array.

    Raises:
        FragmentError: ``fragment.shape`` at "" when the document is not an object, at
            ``/evidence`` when that member is missing or not an array.
    """
    if not isinstance(output_doc, dict):
        raise error(SHAPE, "an eval output must be a JSON object", "")
    if "evidence" not in output_doc:
        raise error(SHAPE, "an eval output needs an evidence array", "/evidence")
    evidence = output_doc["evidence"]
    if not isinstance(evidence, list):
        raise error(SHAPE, "evidence must be an array", "/evidence")
    return [(join_pointer("", "evidence", i), item) for i, item in enumerate(evidence)]


# ---------------------------------------------------------------------------------------------
# scope given apart from the fragment


def scope_from_parts(
    host_id: str | None,
    tenant_id: str | None,
    authorization_scope_id: str | None,
    *,
    names: Sequence[str] = SCOPE_FIELDS,
) -> dict[str, str] | None:
    """The enclosing scope from its three members given apart: all three, or none.

    This is the all-or-none rule of contract "Host scope metadata" for a scope that is not
    on the fragment (the ingest's scope, e.g. the CLI's ``--host-id``, ``--tenant-id`` and
    ``--authorization-scope-id``). The values themselves are checked when the scope is used
    (``fragment.scope-incomplete`` for an empty one).

    Args:
        host_id: the scope's host_id, or None.
        tenant_id: the scope's tenant_id, or None.
        authorization_scope_id: the scope's authorization_scope_id, or None.
        names: how the caller names the three, for the message (default: the member names).

    Returns:
        ``{"host_id", "tenant_id", "authorization_scope_id"}``, or None when all three are None.

    Raises:
        FragmentError: ``fragment.scope-incomplete`` (family ``contract``, pointer "") when
            some but not all of the three are given.
    """
    if host_id is None and tenant_id is None and authorization_scope_id is None:
        return None
    if host_id is None or tenant_id is None or authorization_scope_id is None:
        raise error(
            SCOPE_INCOMPLETE, f"{names[0]}, {names[1]} and {names[2]} go together: all or none"
        )
    return {
        "host_id": host_id,
        "tenant_id": tenant_id,
        "authorization_scope_id": authorization_scope_id,
    }


# ---------------------------------------------------------------------------------------------
# source records (kind fragment-source)

#: The members of a ``fragment-source`` record; the first three are required.
SOURCE_FIELDS = ("document_id", "fragment_id", "content_sha256", "revision_checksum")


def validate_source(doc: Any) -> list[EvstoreError]:
    """Check a ``fragment-source`` record's shape (no store needed).

    The record is ``{"document_id", "fragment_id", "content_sha256"[, "revision_checksum"]}``
    and nothing else.

    Args:
        doc: a parsed JSON value.

    Returns:
        Every fault, in member order then unknown members sorted (empty: valid). Codes:
        ``fragment.shape``, ``fragment.digest-format``, ``fragment.revision-format``.
    """
    if not isinstance(doc, dict):
        return [error(SHAPE, "a source record must be a JSON object", "")]
    faults = _id_faults(doc, "document_id", "") + _id_faults(doc, "fragment_id", "")
    faults += _digest_faults(doc, "content_sha256", "", required=True)
    if "revision_checksum" in doc:
        value = doc["revision_checksum"]
        if type(value) is not str or not _HEX64.fullmatch(value):
            faults.append(
                error(
                    REVISION_FORMAT,
                    "revision_checksum must be 64 lowercase hexadecimal characters",
                    "/revision_checksum",
                )
            )
    for name in sorted(k for k in doc if k not in SOURCE_FIELDS):
        faults.append(error(SHAPE, f"a source record has no member {name!r}", "/" + name))
    return faults


def source_record(
    data: bytes, document_id: str, fragment_id: str, revision_checksum: str | None = None
) -> bytes:
    """The canonical bytes (RFC 8785) of the ``fragment-source`` record of ``data``.

    ``{"document_id", "fragment_id", "content_sha256"[, "revision_checksum"]}`` with
    ``content_sha256`` the SHA-256 (64 lowercase hex) of ``data``: what ``ingest-source``
    stores, locally or over HTTP. Only the types are checked here; the record's rules are
    :func:`validate_source`'s, when it is ingested.

    Raises:
        FragmentError: ``fragment.shape`` when ``document_id`` or ``fragment_id`` (or
            ``revision_checksum``) cannot be written as a JSON string.
    """
    record: dict[str, Any] = {
        "document_id": document_id,
        "fragment_id": fragment_id,
        "content_sha256": hashlib.sha256(data).hexdigest(),
    }
    if revision_checksum is not None:
        record["revision_checksum"] = revision_checksum
    try:
        return dumps(record)
    except (TypeError, EvstoreError):
        raise error(SHAPE, "document_id and fragment_id must be strings") from None


# ---------------------------------------------------------------------------------------------
# validate


def validate(
    doc: Any, settings: Mapping[str, Any] | None = None, *, kind: str | None = None
) -> Faults:
    """Every store-free fault of a fragment document, in the documented fault order.

    Content selection, the byte rules over the selected version and the bindings need the
    store (``store.validate``); this runs the shape stage, which needs nothing else.

    Args:
        doc: a parsed JSON value.
        settings: the store settings map (typed values) or None for the defaults; read:
            ``fragments.revision_extension_keys``.
        kind: ``fragment``, ``fragment-batch`` or ``fragment-source``; detected when None
            (a document that is neither is checked as a fragment).

    Returns:
        :class:`~evstore.core.errors.Faults` (errors only; the contract has no warnings). Batch
        pointers are ``/evidence/N/...``.

    Raises:
        ValueError: ``kind`` is not one of the three fragment kinds.
    """
    keys = tuple(setting(settings, REVISION_KEYS_SETTING) or ())
    kind = kind or detect(doc) or FRAGMENT_KIND
    if kind == FRAGMENT_KIND:
        return Faults(errors=validate_shape(doc, "", revision_keys=keys))
    if kind == BATCH_KIND:
        try:
            items = extract_evidence(doc)
        except EvstoreError as err:
            return Faults(errors=[err])
        faults = Faults()
        for pointer, frag in items:
            faults.errors += validate_shape(frag, pointer, revision_keys=keys)
        return faults
    if kind == SOURCE_KIND:
        return Faults(errors=validate_source(doc))
    raise ValueError(f"not a fragment kind: {kind!r}")
