"""Evidence fragments, templiqx ``v1alpha1``: the pure rules (no database).

Implements ``../shared/contracts/templiqx-evidence-fragment-v1alpha1.md``. A fragment names an
exact byte range ``[start_offset, end_offset)`` of source content and the SHA-256 of those bytes.
This module checks a fragment's shape, checks it against content bytes, reads its revision
extensions and finds fragments in a templiqx eval output. Binding checks that need stored state
(scope reuse, revision bindings, content selection) belong to the store; their codes are defined
here so that every fragment code lives in one place.

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

The last five are :class:`FragmentBindingError` (a :class:`~evstore.errors.BindingConflict`);
all others are :class:`FragmentError` (a :class:`~evstore.errors.ContractError`).

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

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .canonical import MAX_SAFE_INTEGER, dumps
from .errors import BindingConflict, ContractError, join_pointer

__all__ = [
    "AMBIGUOUS_CONTENT",
    "BINDING_CODES",
    "BOUNDARY",
    "CONTENT_MISMATCH",
    "CONTRACT",
    "DEFAULT_REVISION_KEYS",
    "DIGEST_FORMAT",
    "FragmentBindingError",
    "FragmentError",
    "OPTIONAL",
    "QUOTE_MISMATCH",
    "RANGE",
    "REQUIRED",
    "REVISION_FORMAT",
    "REVISION_MISMATCH",
    "RULES",
    "SCOPE_FIELDS",
    "SCOPE_INCOMPLETE",
    "SCOPE_REUSE",
    "SHAPE",
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
    return dumps(dict(zip(REQUIRED, identity(frag), strict=True))).decode("utf-8")


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
