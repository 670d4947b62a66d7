"""Evidence fragments, templiqx ``v1alpha1``: the rules, and their place in the store.

Implements ``../shared/contracts/templiqx-evidence-fragment-v1alpha1.md``. A fragment names an
exact byte range ``[start_offset, end_offset)`` of source content and the SHA-256 of those bytes.

The first half is pure (no database): it checks a fragment's shape, checks it against content
bytes, reads its revision extensions and finds fragments in a templiqx eval output. The second
half ("Store integration") registers source content versions, selects the version a fragment
is measured over, enforces the write-time bindings (scope reuse, revision checksums) and
provides the kind handlers (``fragment``, ``fragment-batch``, ``fragment-source``) and
:class:`FragmentOps` (``store.fragments``). docs/fragments.md describes the decisions.

Codes (``code`` -> meaning; the rule is ``RULES[code]``)::

    fragment.shape              not an object, a required field missing, or a field of the wrong
                                type (an empty document_id/fragment_id counts as wrong type)
    fragment.range              start_offset < 0, end_offset <= start_offset (empty or reversed),
                                end_offset > content length in bytes, or an offset beyond 2**53-1
    fragment.boundary           an offset inside a UTF-8 character, or quoted bytes that are not
                                well-formed UTF-8
    fragment.quote-mismatch     SHA-256 of content[start_offset:end_offset] != quote_sha256
    fragment.content-mismatch   content_sha256 names bytes other than the content checked against
    fragment.digest-format      quote_sha256/content_sha256 not 64 lowercase hex (uppercase,
                                ``sha256:``-prefixed, wrong length)
    fragment.scope-incomplete   scope is not exactly host_id, tenant_id, authorization_scope_id,
                                each a non-empty string
    fragment.revision-format    a configured revision extension is not an object whose
                                revision_checksum is 64 lowercase hex
    fragment.unknown-content    (store) no source content is registered for the pair
    fragment.ambiguous-content  (store) several versions and nothing on the fragment selects one
    fragment.scope-reuse        (store) the identity was bound to another scope (or none/some)
    fragment.revision-mismatch  (store) the revision checksum is bound to another document or
                                content version
    fragment.unknown-revision   (store) the revision checksum is not known to the store
    fragment.source-encoding    (store) registered source bytes are not well-formed UTF-8

The codes marked (store), except source-encoding, are :class:`FragmentBindingError` (a
:class:`~evstore.errors.BindingConflict`); all others are :class:`FragmentError` (a
:class:`~evstore.errors.ContractError`). ``not-found.fragment`` (:func:`FragmentOps.quote` on a
ref that is no fragment) is a :class:`~evstore.errors.NotFound`.

Decisions where the contract is silent:

* Character boundary. Content is raw bytes, never decoded or normalised (no BOM stripping, no
  CRLF folding, no Unicode normalisation). A byte offset ``off`` is a boundary iff
  ``off == len(content)`` or ``content[off]`` is not a UTF-8 continuation byte
  (``content[off] & 0xC0 != 0x80``). For well-formed UTF-8 this is exactly "between two
  characters". In addition the quoted bytes must be well-formed UTF-8 (strict decoder: no
  overlongs, no surrogates), which only adds faults for content that is not valid UTF-8; such a
  fault points at the fragment itself.
* Integers. An offset is a JSON integer: a Python ``int`` (not ``bool``) or a finite ``float``
  with zero fraction (JSON Schema counts ``1.0`` as an integer). Identity uses the ``int``.
* Optional members, when present, must have their type: ``null`` is not absence.
* document_id and fragment_id must be non-empty (upstream's own output schema says
  ``minLength: 1``).
* Members outside the contract's table are assertion fields (such as ``field``): allowed,
  preserved (nothing here mutates a fragment), never part of identity.
* Fault order. Checks run in stages; a stage runs only if every earlier stage passed, because
  its answer would be meaningless otherwise. Inside a stage every fault is reported, in order:

  1. shape (:func:`validate_shape`): fields in the contract's table order (document_id,
     fragment_id, start_offset, end_offset, quote_sha256, content_sha256, scope, extensions),
     then configured revision extensions in the order configured;
  2. content_sha256 against the content (a mismatch means the offsets refer to other bytes);
  3. end_offset against the content length;
  4. boundaries: start_offset, then end_offset, then well-formedness of the quoted bytes;
  5. quote_sha256 against the quoted bytes.

* Detection (:func:`detect`): a fragment is an object carrying all five required member names
  (types are not looked at: validation reports those). Three names are not enough: templiqx
  scenario manifests carry ``evidence`` arrays of {document_id, fragment_id, quote_sha256}
  references, which are not fragments. A fragment batch is an object that is not itself a
  fragment and whose ``evidence`` member is a non-empty array with at least one such object;
  the others are then reported by validation with their pointers instead of hiding the
  document from detection.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from . import blobs as _blobs
from .artifacts import ArtifactResult
from .canonical import MAX_SAFE_INTEGER, dumps, loads
from .digests import digest_bytes
from .errors import BindingConflict, ContractError, EvstoreError, NotFound, join_pointer
from .refs import parse_ref
from .tables import bindings as _bindings_table

if TYPE_CHECKING:
    from .txn import Txn

__all__ = [
    "AMBIGUOUS_CONTENT",
    "ATTR_SOURCE_PAIR",
    "BATCH_KIND",
    "BINDING_CODES",
    "BOUNDARY",
    "CODES",
    "CONTENT_MISMATCH",
    "CONTRACT",
    "CONTRACT_VERSION",
    "DEFAULT_REVISION_KEYS",
    "DIGEST_FORMAT",
    "FRAGMENT_KIND",
    "FragmentBatchKind",
    "FragmentBindingError",
    "FragmentError",
    "FragmentKind",
    "FragmentOps",
    "FragmentSourceKind",
    "NOT_FOUND_FRAGMENT",
    "OPTIONAL",
    "QUOTE_MISMATCH",
    "RANGE",
    "REQUIRED",
    "REVISION_FORMAT",
    "REVISION_KEYS_SETTING",
    "REVISION_MISMATCH",
    "RULES",
    "SCOPE_FIELDS",
    "SCOPE_INCOMPLETE",
    "SCOPE_REUSE",
    "SHAPE",
    "SOURCE_ENCODING",
    "SOURCE_KIND",
    "UNKNOWN_CONTENT",
    "UNKNOWN_REVISION",
    "detect",
    "extract_evidence",
    "fragment_error",
    "identity",
    "identity_key",
    "is_char_boundary",
    "revision_checksums",
    "scope_of",
    "validate_shape",
    "verify_against",
]

#: Contract file name, the prefix of every ``rule``.
CONTRACT = "templiqx-evidence-fragment-v1alpha1"

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

_SHAPE_RULE = f"{CONTRACT}#fragment-shape"
_INVARIANTS_RULE = f"{CONTRACT}#offset-and-digest-invariants"
_SCOPE_RULE = f"{CONTRACT}#host-scope-metadata"
_REVISION_RULE = f"{CONTRACT}#document-revision-checksum-extension"

#: code -> contract section it enforces.
RULES: Mapping[str, str] = {
    SHAPE: _SHAPE_RULE,
    DIGEST_FORMAT: _SHAPE_RULE,
    RANGE: _INVARIANTS_RULE,
    BOUNDARY: _INVARIANTS_RULE,
    QUOTE_MISMATCH: _INVARIANTS_RULE,
    CONTENT_MISMATCH: _INVARIANTS_RULE,
    UNKNOWN_CONTENT: _INVARIANTS_RULE,
    AMBIGUOUS_CONTENT: _INVARIANTS_RULE,
    SCOPE_INCOMPLETE: _SCOPE_RULE,
    SCOPE_REUSE: _SCOPE_RULE,
    REVISION_FORMAT: _REVISION_RULE,
    REVISION_MISMATCH: _REVISION_RULE,
    UNKNOWN_REVISION: _REVISION_RULE,
    SOURCE_ENCODING: _INVARIANTS_RULE,
}

#: Codes raised as :class:`FragmentBindingError` (they depend on what the store holds).
BINDING_CODES = frozenset(
    {UNKNOWN_CONTENT, AMBIGUOUS_CONTENT, SCOPE_REUSE, REVISION_MISMATCH, UNKNOWN_REVISION}
)

#: The five fields that make up a fragment's identity, in the contract's table order.
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
_CONTINUATION_MASK = 0xC0
_CONTINUATION_BITS = 0x80


class FragmentError(ContractError):
    """A templiqx evidence fragment breaks a rule of the contract (codes ``fragment.*``)."""


class FragmentBindingError(BindingConflict):
    """A fragment conflicts with what the store holds (content, revision or scope bindings)."""


def fragment_error(
    code: str, message: str, pointer: str = "", details: dict[str, Any] | None = None
) -> FragmentError | FragmentBindingError:
    """Build the error for a fragment code, with its class and contract rule filled in.

    Args:
        code: one of the ``fragment.*`` constants of this module.
        message: a human sentence.
        pointer: RFC 6901 pointer to the offending member.
        details: optional JSON-ready facts (offsets, digests).

    Returns:
        A :class:`FragmentBindingError` for :data:`BINDING_CODES`, else a :class:`FragmentError`.

    Raises:
        ValueError: ``code`` is not a fragment code (a caller bug).
    """
    try:
        rule = RULES[code]
    except KeyError:
        raise ValueError(f"not a fragment code: {code!r}") from None
    cls = FragmentBindingError if code in BINDING_CODES else FragmentError
    return cls(message, code=code, rule=rule, pointer=pointer, details=details)


# ---------------------------------------------------------------------------------------------
# shape


def _as_int(value: Any) -> int | None:
    """The JSON integer ``value`` denotes, or None (bool is not a number in JSON)."""
    if type(value) is int:
        return value
    if type(value) is float and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def _is_text(value: Any) -> bool:
    """A str that can be written as UTF-8 (lone surrogates cannot)."""
    if type(value) is not str:
        return False
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _id_faults(frag: Mapping[str, Any], name: str, base: str) -> list[FragmentError]:
    ptr = join_pointer(base, name)
    if name not in frag:
        return [fragment_error(SHAPE, f"required member {name} is missing", ptr)]
    value = frag[name]
    if not _is_text(value) or value == "":
        return [fragment_error(SHAPE, f"{name} must be a non-empty string", ptr)]
    return []


def _digest_faults(
    frag: Mapping[str, Any], name: str, base: str, *, required: bool
) -> list[FragmentError]:
    ptr = join_pointer(base, name)
    if name not in frag:
        if required:
            return [fragment_error(SHAPE, f"required member {name} is missing", ptr)]
        return []
    value = frag[name]
    if type(value) is not str:
        return [fragment_error(SHAPE, f"{name} must be a string", ptr)]
    if not _HEX64.fullmatch(value):
        return [
            fragment_error(
                DIGEST_FORMAT,
                f"{name} must be 64 lowercase hexadecimal characters (no prefix)",
                ptr,
                {"value": value},
            )
        ]
    return []


def _offset_faults(frag: Mapping[str, Any], base: str) -> list[FragmentError]:
    faults: list[FragmentError] = []
    ints: dict[str, int] = {}
    for name in ("start_offset", "end_offset"):
        ptr = join_pointer(base, name)
        if name not in frag:
            faults.append(fragment_error(SHAPE, f"required member {name} is missing", ptr))
            continue
        value = _as_int(frag[name])
        if value is None:
            faults.append(fragment_error(SHAPE, f"{name} must be a JSON integer", ptr))
            continue
        if value < 0:
            faults.append(fragment_error(RANGE, f"{name} must be >= 0", ptr, {name: value}))
            continue
        if value > MAX_SAFE_INTEGER:
            # No content is that long, and the canonical form could not carry the value.
            faults.append(fragment_error(RANGE, f"{name} is beyond 2**53-1", ptr, {name: value}))
            continue
        ints[name] = value
    if len(ints) == 2 and ints["end_offset"] <= ints["start_offset"]:
        what = "empty" if ints["end_offset"] == ints["start_offset"] else "reversed"
        faults.append(
            fragment_error(
                RANGE,
                f"the range is {what}: end_offset must be greater than start_offset",
                join_pointer(base, "end_offset"),
                dict(ints),
            )
        )
    return faults


def _required_faults(frag: Mapping[str, Any], base: str) -> list[FragmentError]:
    return (
        _id_faults(frag, "document_id", base)
        + _id_faults(frag, "fragment_id", base)
        + _offset_faults(frag, base)
        + _digest_faults(frag, "quote_sha256", base, required=True)
    )


def _scope_faults(frag: Mapping[str, Any], base: str) -> list[FragmentError]:
    if "scope" not in frag:
        return []
    ptr = join_pointer(base, "scope")
    scope = frag["scope"]
    if not isinstance(scope, dict):
        return [fragment_error(SHAPE, "scope must be an object", ptr)]
    faults: list[FragmentError] = []
    for name in SCOPE_FIELDS:
        mptr = join_pointer(ptr, name)
        if name not in scope:
            faults.append(fragment_error(SCOPE_INCOMPLETE, f"scope is missing {name}", mptr))
        elif not _is_text(scope[name]) or scope[name] == "":
            faults.append(
                fragment_error(SCOPE_INCOMPLETE, f"scope.{name} must be a non-empty string", mptr)
            )
    for name in sorted(k for k in scope if k not in SCOPE_FIELDS):
        faults.append(
            fragment_error(
                SCOPE_INCOMPLETE,
                f"scope holds {name!r}; only {', '.join(SCOPE_FIELDS)} belong there",
                join_pointer(ptr, name),
            )
        )
    return faults


def _revision_faults(
    frag: Mapping[str, Any], keys: Sequence[str], base: str
) -> tuple[list[FragmentError], list[tuple[str, str]]]:
    exts = frag.get("extensions")
    if not isinstance(exts, dict):
        return [], []
    faults: list[FragmentError] = []
    found: list[tuple[str, str]] = []
    for key in keys:
        if key not in exts:
            continue
        kptr = join_pointer(base, "extensions", key)
        value = exts[key]
        if not isinstance(value, dict):
            faults.append(
                fragment_error(REVISION_FORMAT, f"extension {key!r} must be an object", kptr)
            )
            continue
        cptr = join_pointer(kptr, "revision_checksum")
        checksum = value.get("revision_checksum")
        if type(checksum) is not str or not _HEX64.fullmatch(checksum):
            faults.append(
                fragment_error(
                    REVISION_FORMAT,
                    f"extension {key!r} needs revision_checksum as 64 lowercase hex characters",
                    cptr,
                    {"value": checksum} if type(checksum) is str else None,
                )
            )
            continue
        found.append((cptr, checksum))
    return faults, found


def validate_shape(
    frag: Any, pointer: str = "", *, revision_keys: Sequence[str] = ()
) -> list[FragmentError]:
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
        return [fragment_error(SHAPE, "a fragment must be a JSON object", pointer)]
    faults = _required_faults(frag, pointer)
    faults += _digest_faults(frag, "content_sha256", pointer, required=False)
    faults += _scope_faults(frag, pointer)
    if "extensions" in frag and not isinstance(frag["extensions"], dict):
        faults.append(
            fragment_error(
                SHAPE, "extensions must be an object", join_pointer(pointer, "extensions")
            )
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
        raise fragment_error(SHAPE, "a fragment must be a JSON object")
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
        raise fragment_error(SHAPE, "a fragment must be a JSON object")
    if "scope" not in frag:
        return None
    faults = _scope_faults(frag, "")
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
        raise fragment_error(SHAPE, "a fragment must be a JSON object", pointer)
    if "extensions" in frag and not isinstance(frag["extensions"], dict):
        raise fragment_error(
            SHAPE, "extensions must be an object", join_pointer(pointer, "extensions")
        )
    faults, found = _revision_faults(frag, keys, pointer)
    if faults:
        raise faults[0]
    return found


# ---------------------------------------------------------------------------------------------
# bytes


def is_char_boundary(content: bytes | bytearray | memoryview, offset: int) -> bool:
    """Whether a byte offset falls on a UTF-8 character boundary of ``content``.

    ``offset`` is a boundary iff ``offset == len(content)`` or ``content[offset]`` is not a
    continuation byte (``0b10xxxxxx``). The bytes are never decoded.

    Args:
        content: the raw content bytes.
        offset: a byte offset, ``0 <= offset <= len(content)``.

    Returns:
        True on a boundary.

    Raises:
        IndexError: ``offset`` outside ``[0, len(content)]`` (a caller bug).
    """
    if offset == len(content):
        return True
    if offset < 0 or offset > len(content):
        raise IndexError(f"offset {offset} outside [0, {len(content)}]")
    return content[offset] & _CONTINUATION_MASK != _CONTINUATION_BITS


def verify_against(
    frag: Any,
    content: bytes | bytearray | memoryview,
    pointer: str = "",
    *,
    content_sha256: str | None = None,
    shape_checked: bool = False,
) -> list[FragmentError]:
    """Verify a fragment against the content its offsets are measured over (fail closed).

    Stages (module docstring, "Fault order"); a stage runs only when all earlier ones passed:
    shape; ``content_sha256`` (when the fragment has it) equals the SHA-256 of ``content``;
    ``end_offset <= len(content)``; both offsets on character boundaries and the quoted bytes
    well-formed UTF-8; SHA-256 of ``content[start_offset:end_offset]`` equals
    ``quote_sha256``. Units are bytes throughout; ``content`` is used exactly as given.

    Args:
        frag: the fragment (a parsed JSON value).
        content: the complete raw byte sequence identified by the fragment's ``fragment_id``.
        pointer: pointer of the fragment in its document; prefixes every fault's pointer.
        content_sha256: the SHA-256 of ``content`` as 64 lowercase hex when the caller already
            knows it (the store does), so large content is not hashed once per fragment.
            Trusted as given.
        shape_checked: skip the shape stage because the caller already ran
            :func:`validate_shape` on this fragment and got no faults.

    Returns:
        The faults of the first failing stage (empty: the fragment is verified). Codes:
        those of :func:`validate_shape`, ``fragment.content-mismatch``, ``fragment.range``,
        ``fragment.boundary``, ``fragment.quote-mismatch``.

    Raises:
        TypeError: ``content`` is not bytes-like (a str would hide an encoding choice).
    """
    if not isinstance(content, (bytes, bytearray, memoryview)):
        raise TypeError(
            "content must be bytes, bytearray or memoryview, not " + type(content).__name__
        )
    if not shape_checked:
        faults = validate_shape(frag, pointer)
        if faults:
            return faults
    start = int(frag["start_offset"])
    end = int(frag["end_offset"])

    if "content_sha256" in frag:
        claimed = frag["content_sha256"]
        actual = (
            content_sha256 if content_sha256 is not None else hashlib.sha256(content).hexdigest()
        )
        if claimed != actual:
            return [
                fragment_error(
                    CONTENT_MISMATCH,
                    "content_sha256 names other bytes than the content verified against",
                    join_pointer(pointer, "content_sha256"),
                    {"expected": claimed, "actual": actual},
                )
            ]

    length = len(content)
    if end > length:
        return [
            fragment_error(
                RANGE,
                f"end_offset {end} is beyond the content length of {length} bytes",
                join_pointer(pointer, "end_offset"),
                {"end_offset": end, "content_length": length},
            )
        ]

    faults: list[FragmentError] = []
    for name, off in (("start_offset", start), ("end_offset", end)):
        if not is_char_boundary(content, off):
            faults.append(
                fragment_error(
                    BOUNDARY,
                    f"{name} {off} falls inside a UTF-8 character",
                    join_pointer(pointer, name),
                    {name: off},
                )
            )
    if faults:
        return faults
    quoted = content[start:end]
    if isinstance(quoted, memoryview):
        quoted = quoted.tobytes()
    if not quoted.isascii():
        try:
            str(quoted, "utf-8")
        except UnicodeDecodeError as exc:
            # Only reachable when the content itself is not well-formed UTF-8.
            return [
                fragment_error(
                    BOUNDARY,
                    f"the quoted bytes are not well-formed UTF-8 (byte {start + exc.start})",
                    pointer,
                    {"start_offset": start, "end_offset": end, "byte": start + exc.start},
                )
            ]

    actual_quote = hashlib.sha256(quoted).hexdigest()
    if actual_quote != frag["quote_sha256"]:
        return [
            fragment_error(
                QUOTE_MISMATCH,
                "quote_sha256 is not the SHA-256 of the bytes in [start_offset, end_offset)",
                join_pointer(pointer, "quote_sha256"),
                {"expected": frag["quote_sha256"], "actual": actual_quote},
            )
        ]
    return []


# ---------------------------------------------------------------------------------------------
# documents


def _looks_like_fragment(value: Any) -> bool:
    return isinstance(value, dict) and all(name in value for name in REQUIRED)


def detect(doc: Any) -> str | None:
    """Tell whether a parsed document is a fragment, a batch of fragments, or neither.

    Discriminator (module docstring, "Detection"): ``"fragment"`` for an object carrying all
    five required member names; ``"fragment-batch"`` for any other object whose ``evidence``
    member is a non-empty array holding at least one such object. Types are not checked.

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
        raise fragment_error(SHAPE, "an eval output must be a JSON object", "")
    if "evidence" not in output_doc:
        raise fragment_error(SHAPE, "an eval output needs an evidence array", "/evidence")
    evidence = output_doc["evidence"]
    if not isinstance(evidence, list):
        raise fragment_error(SHAPE, "evidence must be an array", "/evidence")
    return [(join_pointer("", "evidence", i), item) for i, item in enumerate(evidence)]


# =============================================================================================
# Store integration: source content versions, bindings, kind handlers, operations.
#
# Terms:
#   source (content version)  the exact bytes a fragment's offsets are measured over, registered
#                             for a pair (document_id, fragment_id) and identified by SHA-256;
#                             recorded as a ``fragment-source`` artifact (a small JSON record)
#                             with a ``source`` edge to the blob. A pair may gain versions.
#   selection                 content_sha256 names the version; else the revision extension;
#                             else the pair's only version. Several and no pin: ambiguous.
#
# Bindings (first write wins, store/bindings.py):
#   fragment.scope              identity_key(fragment)            -> JCS(scope)
#   fragment.revision-document  revision checksum                 -> document_id
#   fragment.revision-content   JCS([revision checksum, fragment_id]) -> content SHA-256
# =============================================================================================

#: Contract version recorded with every fragment artifact.
CONTRACT_VERSION = "v1alpha1"
#: Kind names (store/kinds.py registers the handlers below under them).
FRAGMENT_KIND = "fragment"
BATCH_KIND = "fragment-batch"
SOURCE_KIND = "fragment-source"
#: The store setting naming the revision extension keys (store/settings.py).
REVISION_KEYS_SETTING = "fragments.revision_extension_keys"

NOT_FOUND_FRAGMENT = "not-found.fragment"

#: Every code this module raises -> one-line meaning (docs/errors.md is generated from it).
CODES: Mapping[str, str] = {
    SHAPE: "a fragment (or source record, or eval output) is not an object, misses a required "
    "member, or has a member of the wrong type",
    RANGE: "start_offset < 0, end_offset <= start_offset (empty or reversed range), or "
    "end_offset beyond the content length in bytes",
    BOUNDARY: "an offset falls inside a UTF-8 character, or the quoted bytes are not "
    "well-formed UTF-8",
    QUOTE_MISMATCH: "quote_sha256 is not the SHA-256 of the bytes in [start_offset, end_offset)",
    CONTENT_MISMATCH: "content_sha256 names bytes other than the selected content version",
    UNKNOWN_CONTENT: "no source content is registered (or supplied) for the fragment's "
    "(document_id, fragment_id), or a source record's bytes are absent",
    AMBIGUOUS_CONTENT: "the pair has several content versions and neither content_sha256 nor "
    "a revision extension selects one",
    DIGEST_FORMAT: "quote_sha256 or content_sha256 is not 64 lowercase hex (uppercase, "
    "sha256:-prefixed, wrong length)",
    SCOPE_INCOMPLETE: "scope is not exactly host_id, tenant_id and authorization_scope_id, each "
    "a non-empty string",
    SCOPE_REUSE: "the fragment identity is bound to another scope (or to a scope while this "
    "write has none), or the fragment's scope differs from the ingest's",
    REVISION_MISMATCH: "a revision checksum is bound to another document_id or another content "
    "version, or disagrees with content_sha256",
    UNKNOWN_REVISION: "a revision checksum (or its fragment_id) is not known to the store",
    REVISION_FORMAT: "a configured revision extension is not an object with revision_checksum "
    "as 64 lowercase hex",
    SOURCE_ENCODING: "registered source bytes are not well-formed UTF-8 (the contract measures "
    "offsets over UTF-8)",
    NOT_FOUND_FRAGMENT: "the ref names no stored fragment artifact",
}

_NS_SCOPE = "fragment.scope"
_NS_REV_DOC = "fragment.revision-document"
_NS_REV_CONTENT = "fragment.revision-content"
#: Lookup attribute of source records: SHA-256 hex of JCS([document_id, fragment_id]).
ATTR_SOURCE_PAIR = "fragment_source"
_SOURCE_FIELDS = ("document_id", "fragment_id", "content_sha256", "revision_checksum")
_SOURCE_REQUIRED = _SOURCE_FIELDS[:3]


def _jcs(value: Any) -> str:
    return dumps(value).decode("utf-8")


def _pair_hash(document_id: str, fragment_id: str) -> str:
    return hashlib.sha256(dumps([document_id, fragment_id])).hexdigest()


def _revision_content_key(checksum: str, fragment_id: str) -> str:
    return _jcs([checksum, fragment_id])


def _utf8_fault(data: bytes, pointer: str, details: dict[str, Any]) -> FragmentError | None:
    if data.isascii():
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return fragment_error(
            SOURCE_ENCODING,
            f"source bytes are not well-formed UTF-8 (byte {exc.start})",
            pointer,
            {**details, "byte": exc.start},
        )
    return None


class _TxnState:
    """Per-transaction caches (content versions, bytes, revision bindings, command sources).

    Never holds the Txn itself: the states live in a WeakKeyDictionary keyed by it.
    """

    def __init__(self) -> None:
        self.versions: dict[tuple[str, str], set[str]] = {}
        self.content: dict[str, bytes] = {}
        self.revisions: dict[tuple[str, str], str | None] = {}
        self.command: list[tuple[str, str, str, bytes]] | None = None
        self.registered = False
        self.rows: dict[str, _blobs.BlobRow] = {}
        self.scopes: dict[str, str] = {}  # scope bindings made in this transaction


_STATES: weakref.WeakKeyDictionary[Any, _TxnState] = weakref.WeakKeyDictionary()


def _state(txn: Txn) -> _TxnState:
    st = _STATES.get(txn)
    if st is None:
        st = _STATES[txn] = _TxnState()
    return st


def _command_sources(txn: Txn, st: _TxnState) -> list[tuple[str, str, str, bytes]]:
    """``(document_id, fragment_id, sha256, bytes)`` given with the command (``--source``)."""
    if st.command is None:
        st.command = []
        for entry in txn.options.get("sources") or ():
            d, f, data = entry
            data = bytes(data)
            sha = txn.supply(data)  # so blob_by_sha256 can store them when used
            st.command.append((d, f, sha, data))
            st.content.setdefault(sha, data)
    return st.command


def _read_json_artifact(txn: Txn, address: str) -> Any:
    row = _blobs.lookup(txn.conn, parse_ref("blake3:" + address))
    if row is None:
        return None
    return loads(txn.read_blob(row))


def _versions(txn: Txn, st: _TxnState, document_id: str, fragment_id: str) -> set[str]:
    """SHA-256s of the content versions of a pair: registered ones and this command's."""
    key = (document_id, fragment_id)
    found = st.versions.get(key)
    if found is None:
        found = set()
        for address, _kind in txn.find_attr(
            ATTR_SOURCE_PAIR, _pair_hash(document_id, fragment_id), kind=SOURCE_KIND
        ):
            rec = _read_json_artifact(txn, address)
            if isinstance(rec, dict) and isinstance(rec.get("content_sha256"), str):
                found.add(rec["content_sha256"])
        for d, f, sha, _data in _command_sources(txn, st):
            if (d, f) == key:
                found.add(sha)
        st.versions[key] = found
    return found


def _content(txn: Txn, st: _TxnState, sha: str) -> bytes | None:
    data = st.content.get(sha)
    if data is None:
        # Txn.blob_by_sha256 trusts no index row it has not re-hashed, and repairs a corrupt
        # copy from supplied bytes.
        row = txn.blob_by_sha256(sha)
        if row is not None:
            data = txn.read_blob(row)
        if data is not None:
            st.content[sha] = data
    return data


def _revision_binding(txn: Txn, st: _TxnState, namespace: str, key: str) -> str | None:
    ck = (namespace, key)
    if ck not in st.revisions:
        st.revisions[ck] = txn.binding(namespace, key)
    return st.revisions[ck]


def _revision_keys(txn: Txn) -> Sequence[str]:
    keys = txn.settings.get(REVISION_KEYS_SETTING, list(DEFAULT_REVISION_KEYS))
    return tuple(keys or ())


def _select(
    frag: dict[str, Any], pointer: str, txn: Txn, st: _TxnState
) -> tuple[str | None, list[FragmentError]]:
    """Select the content version a shape-valid fragment is measured over.

    Order: each configured revision extension (known checksum, bound to this document_id and
    to a version for this fragment_id, all extensions agreeing); then content_sha256 (a
    registered version of the pair, agreeing with the revision); then the pair's only version.
    """
    d, f = frag["document_id"], frag["fragment_id"]
    by_revision: str | None = None
    rev_ptr = ""
    for ptr, checksum in revision_checksums(frag, _revision_keys(txn), pointer):
        bound_doc = _revision_binding(txn, st, _NS_REV_DOC, checksum)
        if bound_doc is None:
            return None, [
                fragment_error(
                    UNKNOWN_REVISION,
                    "the store knows no document revision with this checksum",
                    ptr,
                    {"revision_checksum": checksum},
                )
            ]
        if bound_doc != d:
            return None, [
                fragment_error(
                    REVISION_MISMATCH,
                    "this revision checksum belongs to another document_id",
                    ptr,
                    {"revision_checksum": checksum, "bound_document_id": bound_doc},
                )
            ]
        bound_sha = _revision_binding(txn, st, _NS_REV_CONTENT, _revision_content_key(checksum, f))
        if bound_sha is None:
            return None, [
                fragment_error(
                    UNKNOWN_REVISION,
                    "the store knows this revision, but no content for this fragment_id in it",
                    ptr,
                    {"revision_checksum": checksum, "fragment_id": f},
                )
            ]
        if by_revision is not None and bound_sha != by_revision:
            return None, [
                fragment_error(
                    REVISION_MISMATCH,
                    "two revision extensions select different content versions",
                    ptr,
                    {"content_sha256": bound_sha, "other": by_revision, "other_pointer": rev_ptr},
                )
            ]
        by_revision, rev_ptr = bound_sha, ptr

    versions = _versions(txn, st, d, f)
    if "content_sha256" in frag:
        wanted = frag["content_sha256"]
        cptr = join_pointer(pointer, "content_sha256")
        if by_revision is not None and by_revision != wanted:
            return None, [
                fragment_error(
                    REVISION_MISMATCH,
                    "the revision extension is bound to another content version than "
                    "content_sha256 names",
                    rev_ptr,
                    {"content_sha256": wanted, "revision_content_sha256": by_revision},
                )
            ]
        if wanted in versions:
            return wanted, []
        if not versions and by_revision is None:
            return None, [_unknown_content(d, f, pointer)]
        return None, [
            fragment_error(
                CONTENT_MISMATCH,
                "content_sha256 names no content version registered for this document and fragment",
                cptr,
                {"content_sha256": wanted, "versions": sorted(versions)},
            )
        ]
    if by_revision is not None:
        return by_revision, []
    if not versions:
        return None, [_unknown_content(d, f, pointer)]
    if len(versions) > 1:
        return None, [
            fragment_error(
                AMBIGUOUS_CONTENT,
                f"{len(versions)} content versions are registered for this document and "
                "fragment; pin one with content_sha256 or a revision extension",
                join_pointer(pointer, "fragment_id"),
                {"versions": sorted(versions)},
            )
        ]
    return next(iter(versions)), []


def _unknown_content(document_id: str, fragment_id: str, pointer: str) -> FragmentError:
    return fragment_error(
        UNKNOWN_CONTENT,
        "no source content is registered for this document_id and fragment_id "
        "(evstore ingest-source, or --source with the ingest)",
        join_pointer(pointer, "fragment_id"),
        {"document_id": document_id, "fragment_id": fragment_id},
    )


def _check_fragment(
    frag: Any, pointer: str, txn: Txn, st: _TxnState
) -> tuple[str | None, list[FragmentError]]:
    """Every content-dependent rule for one fragment: ``(selected sha256, faults)``."""
    faults = validate_shape(frag, pointer, revision_keys=_revision_keys(txn))
    if faults:
        return None, faults
    sha, faults = _select(frag, pointer, txn, st)
    if faults or sha is None:
        return None, faults
    content = _content(txn, st, sha)
    if content is None:  # a record whose blob went missing: fail closed
        return None, [_unknown_content(frag["document_id"], frag["fragment_id"], pointer)]
    return sha, verify_against(frag, content, pointer, content_sha256=sha, shape_checked=True)


def _ingest_scope(txn: Txn, pointer: str = "") -> tuple[dict[str, str] | None, list[FragmentError]]:
    """The enclosing ingest's scope (``options["scope"]``), checked like a fragment's scope."""
    scope = txn.options.get("scope")
    if scope is None:
        return None, []
    faults = _scope_faults({"scope": scope}, "")
    if faults:
        return None, [
            fragment_error(
                f.code,
                "the ingest's scope: " + f.message,
                pointer,
                {"scope_member": f.pointer.removeprefix("/scope")},
            )
            for f in faults
        ]
    return {name: scope[name] for name in SCOPE_FIELDS}, []


def _lookup_scope_bindings(txn: Txn, idents: Sequence[str]) -> dict[str, str]:
    """Scope bindings of many identities in one query per 500 (read-only; see tables.bindings).

    The bindings table keys rows by the SHA-256 hex of the key text (store/tables.py).
    """
    digests = {hashlib.sha256(i.encode("utf-8")).hexdigest(): i for i in idents}
    found: dict[str, str] = {}
    keys = list(digests)
    for n in range(0, len(keys), 500):
        q = sa.select(_bindings_table.c.key, _bindings_table.c.value).where(
            _bindings_table.c.namespace == _NS_SCOPE,
            _bindings_table.c.key_digest.in_(keys[n : n + 500]),
        )
        for row in txn.conn.execute(q):
            found[row.key] = row.value
    return found


def _write_fragments(
    items: Sequence[tuple[str, dict[str, Any], bytes]], txn: Txn, st: _TxnState, origin: str
) -> list[ArtifactResult]:
    """Store checked fragments ``(pointer, fragment, canonical)``: bindings first, then artifacts.

    ``origin`` (64 hex) is the artifact whose write makes new bindings: the batch, or the
    single fragment.

    Scope rule (contract "Host scope metadata", issue: scope reuse): the first scoped write of
    an identity binds it; afterwards every write of it must carry that scope (on the fragment or
    from the enclosing ingest), and the two must agree when both are given. Faults go through
    ``txn.fault`` (ingest: raise and roll back; validate: collect and go on).
    """
    outer, faults = _ingest_scope(txn)
    for fault in faults:
        txn.fault(fault)
    prepared: list[tuple[str, dict[str, Any], bytes, str, str, dict[str, str] | None]] = []
    for pointer, frag, canonical in items:
        sha, faults = _select(frag, pointer, txn, st)
        for fault in faults:
            txn.fault(fault)
        if faults or sha is None:
            continue
        own = scope_of(frag)
        if own is not None and outer is not None and own != outer:
            txn.fault(
                fragment_error(
                    SCOPE_REUSE,
                    "the fragment's scope differs from the scope of the enclosing ingest",
                    join_pointer(pointer, "scope"),
                    {"fragment_scope": own, "ingest_scope": outer},
                )
            )
        prepared.append((pointer, frag, canonical, identity_key(frag), sha, own or outer))

    bound = _lookup_scope_bindings(txn, [i for _, _, _, i, _, _ in prepared if i not in st.scopes])
    bound.update(st.scopes)
    to_store: list[tuple[dict[str, Any], bytes, str, str, bool]] = []
    to_bind: list[tuple[str, str, str, dict[str, str]]] = []
    jcs_of: dict[tuple[str, ...], str] = {}
    for pointer, frag, canonical, ident, sha, scope in prepared:
        existing = bound.get(ident)
        if scope is None:
            if existing is not None:
                txn.fault(
                    fragment_error(
                        SCOPE_REUSE,
                        "this fragment identity is bound to a scope; a write without one is "
                        "refused",
                        pointer,
                        {"bound_scope": loads(existing)},
                    )
                )
                continue
        else:
            values = tuple(scope[name] for name in SCOPE_FIELDS)
            value = jcs_of.get(values)
            if value is None:  # one serialisation per distinct scope, not per fragment
                value = jcs_of[values] = _jcs(scope)
            where = join_pointer(pointer, "scope") if "scope" in frag else pointer
            if existing is None:
                to_bind.append((ident, value, where, scope))
                bound[ident] = st.scopes[ident] = value
            elif existing != value:
                txn.fault(
                    fragment_error(
                        SCOPE_REUSE,
                        "this fragment identity was first written under another scope",
                        where,
                        {"bound_scope": loads(existing), "scope": scope},
                    )
                )
                continue
        to_store.append((frag, canonical, ident, sha, scope is not None))
    _bind_scopes(txn, to_bind, origin)
    return _put_fragments(txn, st, to_store)


def _bind_scopes(
    txn: Txn, entries: Sequence[tuple[str, str, str, dict[str, str]]], origin: str
) -> None:
    """Make new scope bindings ``(identity key, JCS scope, pointer, scope)`` in one batch.

    They were unbound when looked up; a conflict now means a concurrent writer won.
    ``origin`` is the artifact whose write makes them (the batch, or the single fragment).
    """

    def conflict(i: int, found: str) -> FragmentError:
        _, _, where, scope = entries[i]
        return fragment_error(
            SCOPE_REUSE,
            "this fragment identity was first written under another scope",
            where,
            {"bound_scope": loads(found), "scope": scope},
        )

    if entries:
        txn.bind_many(_NS_SCOPE, [(k, v) for k, v, _, _ in entries], conflict, origin=origin)


def _put_fragments(
    txn: Txn, st: _TxnState, items: Sequence[tuple[dict[str, Any], bytes, str, str, bool]]
) -> list[ArtifactResult]:
    """Store fragment artifacts ``(fragment, canonical, identity key, source sha256, scoped)``.

    Each gets a ``source`` edge to its content version's blob and the lookup attributes
    ``quote_sha256``, ``document_id`` and ``fragment_identity``, written with the core's bulk
    ``txn.put_artifacts`` (one statement per table instead of several per fragment).
    """
    specs: list[tuple[bytes, list[tuple[str, str]], list[tuple[str, str]]]] = []
    infos: list[dict[str, Any]] = []
    for frag, canonical, ident, sha, scoped in items:
        row = st.rows.get(sha)
        if row is None:
            row = txn.blob_by_sha256(sha)
            if row is None:  # cannot happen after selection; fail closed anyway
                txn.fault(_unknown_content(frag["document_id"], frag["fragment_id"], ""))
                continue
            st.rows[sha] = row
        specs.append(
            (
                canonical,
                [("source", row.digest.blake3)],
                [
                    ("quote_sha256", frag["quote_sha256"]),
                    ("document_id", frag["document_id"]),
                    ("fragment_identity", hashlib.sha256(ident.encode("utf-8")).hexdigest()),
                ],
            )
        )
        infos.append({"source_sha256": sha, "scoped": scoped})
    results = txn.put_artifacts(FRAGMENT_KIND, CONTRACT_VERSION, specs)
    return [dataclasses.replace(r, info=i) for r, i in zip(results, infos, strict=True)]


def _register_command_sources(txn: Txn, st: _TxnState) -> None:
    """Record every ``--source`` of the command as a content version (once per transaction)."""
    if st.registered:
        return
    st.registered = True
    handler = FragmentSourceKind()
    for d, f, sha, _data in _command_sources(txn, st):
        record = {"document_id": d, "fragment_id": f, "content_sha256": sha}
        faults = handler.check(record, txn)
        for fault in faults:
            fault.details.setdefault("source", {"document_id": d, "fragment_id": f})
            txn.fault(fault)
        if not faults:
            handler.write(record, dumps(record), txn)


def _audit_fragment(frag: Any, address: str, pointer: str, txn: Txn) -> list[EvstoreError]:
    """Re-verify a stored fragment against its recorded source version and its bindings."""
    faults: list[EvstoreError] = list(
        validate_shape(frag, pointer, revision_keys=_revision_keys(txn))
    )
    if faults:
        return faults
    sources = [dst for role, dst in txn.edges_from(address) if role == "source"]
    if not sources:
        return [
            fragment_error(
                UNKNOWN_CONTENT,
                "the fragment has no recorded source version",
                join_pointer(pointer, "fragment_id"),
            )
        ]
    for dst in sources:
        row = _blobs.lookup(txn.conn, parse_ref("blake3:" + dst))
        if row is None:
            faults.append(
                fragment_error(
                    UNKNOWN_CONTENT,
                    f"the recorded source blake3:{dst} is not stored",
                    join_pointer(pointer, "fragment_id"),
                )
            )
            continue
        content = txn.read_blob(row)  # CorruptionError propagates: reported by check
        faults += verify_against(
            frag, content, pointer, content_sha256=row.digest.sha256, shape_checked=True
        )
        for ptr, checksum in revision_checksums(frag, _revision_keys(txn), pointer):
            bound = txn.binding(
                _NS_REV_CONTENT, _revision_content_key(checksum, frag["fragment_id"])
            )
            if bound != row.digest.sha256:
                faults.append(
                    fragment_error(
                        REVISION_MISMATCH if bound else UNKNOWN_REVISION,
                        "the revision extension does not select the recorded source version",
                        ptr,
                        {"revision_content_sha256": bound, "source_sha256": row.digest.sha256},
                    )
                )
    own = scope_of(frag)
    if own is not None:
        value = _jcs(own)
        txn.bind(
            _NS_SCOPE,
            identity_key(frag),
            value,
            on_conflict=lambda existing: fragment_error(
                SCOPE_REUSE,
                "this fragment identity is bound to another scope",
                join_pointer(pointer, "scope"),
                {"bound_scope": loads(existing), "scope": own},
            ),
        )
    return faults


class FragmentKind:
    """Kind ``fragment``: one templiqx v1alpha1 evidence fragment (contract in this module).

    Detection: an object with all five required member names (:func:`detect`).
    check: shape, content selection, every byte rule. write: scope binding, then the artifact
    with a ``source`` edge to the verified content version and attributes ``quote_sha256``,
    ``document_id``, ``fragment_identity`` (SHA-256 hex of :func:`identity_key`).
    """

    name = FRAGMENT_KIND
    contract_version = CONTRACT_VERSION

    def detect(self, doc: Any) -> bool:
        """True for an object carrying the five required member names."""
        return detect(doc) == "fragment"

    def check(self, doc: Any, txn: Txn) -> list[EvstoreError]:
        """Every fault of one fragment (shape, content selection, bytes)."""
        return list(_check_fragment(doc, "", txn, _state(txn))[1])

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Register the command's sources, bind the scope, store the fragment."""
        st = _state(txn)
        _register_command_sources(txn, st)
        stored = _write_fragments([("", doc, canonical)], txn, st, digest_bytes(canonical).blake3)
        if not stored:  # validate mode after a fault: report the document anyway
            return txn.put_artifact(FRAGMENT_KIND, CONTRACT_VERSION, canonical)
        return stored[0]

    def audit(self, doc: Any, address: str, txn: Txn) -> list[EvstoreError]:
        """Re-verify against the recorded source version; compare the scope binding."""
        return _audit_fragment(doc, address, "", txn)


class FragmentBatchKind:
    """Kind ``fragment-batch``: a templiqx eval output whose ``evidence`` array holds fragments.

    The output is stored as it is (facts included) with a ``fragment`` edge to each of its
    fragments, which are stored as ``fragment`` artifacts. One bad fragment rejects the whole
    ingest (one transaction).
    """

    name = BATCH_KIND
    contract_version = CONTRACT_VERSION

    def detect(self, doc: Any) -> bool:
        """True for an object with an ``evidence`` array holding at least one fragment."""
        return detect(doc) == "fragment-batch"

    def check(self, doc: Any, txn: Txn) -> list[EvstoreError]:
        """Every fault of every fragment, pointers ``/evidence/N/...``."""
        try:
            items = extract_evidence(doc)
        except FragmentError as err:
            return [err]
        st = _state(txn)
        faults: list[EvstoreError] = []
        for pointer, frag in items:
            faults += _check_fragment(frag, pointer, txn, st)[1]
        return faults

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Register sources, store each fragment (bindings first), then the output itself."""
        st = _state(txn)
        _register_command_sources(txn, st)
        stored = _write_fragments(
            [(pointer, frag, dumps(frag)) for pointer, frag in extract_evidence(doc)],
            txn,
            st,
            digest_bytes(canonical).blake3,
        )
        documents = sorted({f["document_id"] for _, f in extract_evidence(doc)})
        res = txn.put_artifact(
            BATCH_KIND,
            CONTRACT_VERSION,
            canonical,
            edges=[("fragment", r.digest.blake3) for r in stored],
            attrs=[("document_id", d) for d in documents],
        )
        return dataclasses.replace(
            res,
            info={
                "fragments": len(stored),
                "new_fragments": sum(1 for r in stored if r.new),
            },
        )

    def audit(self, doc: Any, address: str, txn: Txn) -> list[EvstoreError]:
        """Each fragment is stored as a ``fragment`` artifact (those are audited themselves)."""
        try:
            items = extract_evidence(doc)
        except FragmentError as err:
            return [err]
        faults: list[EvstoreError] = []
        for pointer, frag in items:
            shape = validate_shape(frag, pointer)
            if shape:
                faults += shape
                continue
            if not txn.has_artifact(digest_bytes(dumps(frag)).blake3, FRAGMENT_KIND):
                faults.append(
                    fragment_error(
                        UNKNOWN_CONTENT,
                        "this fragment of the batch is not stored as a fragment artifact",
                        pointer,
                    )
                )
        return faults


class FragmentSourceKind:
    """Kind ``fragment-source``: a content version of (document_id, fragment_id).

    The record is ``{"document_id", "fragment_id", "content_sha256"[, "revision_checksum"]}``
    (no other member); the bytes travel with the command (``supplied``) or are stored already.
    They must be well-formed UTF-8 and are stored exactly (no decoding, no normalisation).
    write: revision bindings (checksum -> document_id; (checksum, fragment_id) -> content
    SHA-256), then the record with a ``source`` edge to the blob and attributes
    ``fragment_source`` (SHA-256 of JCS([document_id, fragment_id])) and ``document_id``.
    Not detected automatically: ``evstore ingest-source`` (or ``--kind fragment-source``).
    """

    name = SOURCE_KIND
    contract_version = CONTRACT_VERSION

    def detect(self, doc: Any) -> bool:
        """True for an object with exactly the source record's members (never auto-detected)."""
        return (
            isinstance(doc, dict)
            and all(k in doc for k in _SOURCE_REQUIRED)
            and all(k in _SOURCE_FIELDS for k in doc)
        )

    def _shape(self, doc: Any) -> list[FragmentError]:
        if not isinstance(doc, dict):
            return [fragment_error(SHAPE, "a source record must be a JSON object", "")]
        faults = _id_faults(doc, "document_id", "") + _id_faults(doc, "fragment_id", "")
        faults += _digest_faults(doc, "content_sha256", "", required=True)
        if "revision_checksum" in doc:
            value = doc["revision_checksum"]
            if type(value) is not str or not _HEX64.fullmatch(value):
                faults.append(
                    fragment_error(
                        REVISION_FORMAT,
                        "revision_checksum must be 64 lowercase hexadecimal characters",
                        "/revision_checksum",
                    )
                )
        for name in sorted(k for k in doc if k not in _SOURCE_FIELDS):
            faults.append(
                fragment_error(SHAPE, f"a source record has no member {name!r}", "/" + name)
            )
        return faults

    def _bytes(self, doc: dict[str, Any], txn: Txn) -> bytes | None:
        return _content(txn, _state(txn), doc["content_sha256"])

    def _revision_faults(self, doc: dict[str, Any], txn: Txn) -> list[FragmentError]:
        checksum = doc.get("revision_checksum")
        if checksum is None:
            return []
        faults = []
        bound_doc = txn.binding(_NS_REV_DOC, checksum)
        if bound_doc is not None and bound_doc != doc["document_id"]:
            faults.append(
                fragment_error(
                    REVISION_MISMATCH,
                    "this revision checksum is bound to another document_id",
                    "/revision_checksum",
                    {"bound_document_id": bound_doc},
                )
            )
        key = _revision_content_key(checksum, doc["fragment_id"])
        bound_sha = txn.binding(_NS_REV_CONTENT, key)
        if bound_sha is not None and bound_sha != doc["content_sha256"]:
            faults.append(
                fragment_error(
                    REVISION_MISMATCH,
                    "this revision already has other content for this fragment_id",
                    "/revision_checksum",
                    {"bound_content_sha256": bound_sha},
                )
            )
        return faults

    def check(self, doc: Any, txn: Txn) -> list[EvstoreError]:
        """Shape, bytes present and well-formed UTF-8, revision bindings not contradicted."""
        faults: list[EvstoreError] = list(self._shape(doc))
        if faults:
            return faults
        data = self._bytes(doc, txn)
        if data is None:
            return [
                fragment_error(
                    UNKNOWN_CONTENT,
                    "the source bytes are neither supplied with the command nor stored",
                    "/content_sha256",
                )
            ]
        bad = _utf8_fault(
            data, "", {"document_id": doc["document_id"], "fragment_id": doc["fragment_id"]}
        )
        if bad is not None:
            return [bad]
        return list(self._revision_faults(doc, txn))

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Bind the revision (if any), store the record, and make the version visible."""
        address = digest_bytes(canonical).blake3
        d, f, sha = doc["document_id"], doc["fragment_id"], doc["content_sha256"]
        checksum = doc.get("revision_checksum")
        st = _state(txn)
        if checksum is not None:
            for namespace, key, value, what in (
                (_NS_REV_DOC, checksum, d, "document_id"),
                (_NS_REV_CONTENT, _revision_content_key(checksum, f), sha, "content version"),
            ):
                txn.bind(
                    namespace,
                    key,
                    value,
                    on_conflict=lambda existing, what=what: fragment_error(
                        REVISION_MISMATCH,
                        f"this revision checksum is bound to another {what}",
                        "/revision_checksum",
                        {"bound": existing},
                    ),
                    origin=address,
                )
                st.revisions[(namespace, key)] = txn.binding(namespace, key)
        row = txn.blob_by_sha256(sha)
        edges = [("source", row.digest.blake3)] if row is not None else []
        res = txn.put_artifact(
            SOURCE_KIND,
            CONTRACT_VERSION,
            canonical,
            edges=edges,
            attrs=[(ATTR_SOURCE_PAIR, _pair_hash(d, f)), ("document_id", d)],
        )
        if (d, f) in st.versions:  # keep a cached version list current
            st.versions[(d, f)].add(sha)
        info: dict[str, Any] = {"content_sha256": sha, "size": row.digest.size if row else None}
        if checksum is not None:
            info["revision_checksum"] = checksum
        return dataclasses.replace(res, info=info)

    def audit(self, doc: Any, address: str, txn: Txn) -> list[EvstoreError]:
        """Bytes still stored and UTF-8; revision bindings still say this record's values."""
        faults: list[EvstoreError] = list(self._shape(doc))
        if faults:
            return faults
        row = txn.blob_by_sha256(doc["content_sha256"])
        if row is None:
            return [
                fragment_error(
                    UNKNOWN_CONTENT, "the source bytes are not stored", "/content_sha256"
                )
            ]
        bad = _utf8_fault(txn.read_blob(row), "", {})
        if bad is not None:
            faults.append(bad)
        checksum = doc.get("revision_checksum")
        if checksum is not None:
            if txn.binding(_NS_REV_DOC, checksum) != doc["document_id"]:
                faults.append(
                    fragment_error(
                        REVISION_MISMATCH,
                        "the revision binding names another document_id",
                        "/revision_checksum",
                    )
                )
            key = _revision_content_key(checksum, doc["fragment_id"])
            if txn.binding(_NS_REV_CONTENT, key) != doc["content_sha256"]:
                faults.append(
                    fragment_error(
                        REVISION_MISMATCH,
                        "the revision binding names another content version",
                        "/revision_checksum",
                    )
                )
        return faults


class FragmentOps:
    """Fragment operations on a Store (``store.fragments``): sources, ingest, quote, lists."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def ingest_source(
        self,
        data: bytes,
        document_id: str,
        fragment_id: str,
        revision_checksum: str | None = None,
        *,
        name: str = "-",
    ) -> ArtifactResult:
        """Register the exact bytes a pair's offsets are measured over, as a content version.

        Args:
            data: the raw content bytes (stored exactly: no decoding or normalisation).
            document_id: the fragment's document_id.
            fragment_id: the fragment's fragment_id.
            revision_checksum: optional 64 lowercase hex revision checksum to bind.
            name: where the bytes came from, for error messages.

        Returns:
            The ``fragment-source`` record's :class:`ArtifactResult` (info: content_sha256,
            size, revision_checksum).

        Raises:
            FragmentError: ``fragment.shape``, ``fragment.revision-format``,
                ``fragment.source-encoding``. FragmentBindingError:
                ``fragment.revision-mismatch``.
        """
        from .api import Document

        raw = bytes(data)
        record: dict[str, Any] = {
            "document_id": document_id,
            "fragment_id": fragment_id,
            "content_sha256": hashlib.sha256(raw).hexdigest(),
        }
        if revision_checksum is not None:
            record["revision_checksum"] = revision_checksum
        try:
            canonical = dumps(record)
        except (TypeError, EvstoreError):
            raise fragment_error(SHAPE, "document_id and fragment_id must be strings") from None
        report = self.store.ingest(
            [Document(canonical, name=name, kind=SOURCE_KIND)], supplied=[raw]
        )
        return report.results[0]

    def ingest(
        self,
        data: bytes,
        *,
        sources: Sequence[tuple[str, str, bytes]] = (),
        scope: Mapping[str, str] | None = None,
        name: str = "-",
        kind: str | None = None,
    ) -> Any:
        """Ingest a fragment or an eval output with its source bytes, in one transaction.

        Args:
            data: the JSON bytes (a fragment, or a templiqx eval output).
            sources: ``(document_id, fragment_id, bytes)`` content versions to register.
            scope: the enclosing scope (host_id, tenant_id, authorization_scope_id), bound to
                every fragment without changing it.
            name: the input's name for error messages.
            kind: ``fragment`` or ``fragment-batch``; detected when None.

        Returns:
            The :class:`~evstore.api.IngestReport`.

        Raises:
            Every ``fragment.*`` code (the first fault); nothing is written then.
        """
        from .api import Document

        options: dict[str, Any] = {}
        if sources:
            options["sources"] = [(d, f, bytes(b)) for d, f, b in sources]
        if scope is not None:
            options["scope"] = dict(scope)
        return self.store.ingest(
            [Document(bytes(data), name=name, kind=kind)],
            options=options,
            supplied=[bytes(b) for _, _, b in sources],
        )

    def quote(self, ref: str) -> bytes:
        """The exact quoted bytes of a stored fragment, from its recorded source version.

        Args:
            ref: a content ref of the fragment artifact (``blake3:…`` or ``sha256:…``).

        Returns:
            ``source[start_offset:end_offset]``, re-verified against quote_sha256.

        Raises:
            RefSyntaxError; NotFound (``not-found.blob``, ``not-found.fragment``);
            FragmentError (``fragment.unknown-content`` when no source is recorded, or any
            byte rule if re-verification fails); CorruptionError.
        """
        with self.store.reading() as txn:
            row = _blobs.lookup(txn.conn, parse_ref(ref))
            if row is None:
                raise NotFound(f"no blob for {ref}", code="not-found.blob", details={"ref": ref})
            address = row.digest.blake3
            if not txn.has_artifact(address, FRAGMENT_KIND):
                raise NotFound(
                    f"{ref} is not a stored fragment", code=NOT_FOUND_FRAGMENT, details={"ref": ref}
                )
            frag = loads(txn.read_blob(row))
            sources = [dst for role, dst in txn.edges_from(address) if role == "source"]
            if not sources:
                raise fragment_error(UNKNOWN_CONTENT, "the fragment has no recorded source")
            src = _blobs.lookup(txn.conn, parse_ref("blake3:" + sources[0]))
            if src is None:
                raise fragment_error(UNKNOWN_CONTENT, "the recorded source is not stored")
            content = txn.read_blob(src)
        faults = verify_against(frag, content, content_sha256=src.digest.sha256)
        if faults:
            raise faults[0]
        return content[int(frag["start_offset"]) : int(frag["end_offset"])]

    def find(self, quote_sha256: str) -> list[Any]:
        """Stored fragments whose quote_sha256 is ``quote_sha256`` (oldest first)."""
        return list(self.store.find("quote_sha256", quote_sha256, kind=FRAGMENT_KIND))

    def by_document(self, document_id: str) -> list[Any]:
        """Stored fragments of one document_id (oldest first)."""
        return list(self.store.find("document_id", document_id, kind=FRAGMENT_KIND))

    def sources(self, document_id: str, fragment_id: str) -> list[Any]:
        """The content versions (``fragment-source`` records) registered for a pair."""
        return list(
            self.store.find(
                ATTR_SOURCE_PAIR, _pair_hash(document_id, fragment_id), kind=SOURCE_KIND
            )
        )
