"""Evidence fragments, templiqx ``v1alpha1``: the byte rules (no database).

A fragment against the content its offsets are measured over (contract "Offset and digest
invariants"): content_sha256, well-formedness of a registered source (its encoding fault comes
before any offset fault), end_offset against the length, UTF-8 character boundaries and
well-formedness of the quoted bytes, then quote_sha256; and the well-formedness of registered
source bytes. Units are bytes throughout; content is never normalised (only a quote mismatch
looks at normal forms, to say when the quote was hashed after normalising). The shape
rules these build on are ``store/contracts/fragments/rules.py``.
"""

from __future__ import annotations

import codecs
import hashlib
import unicodedata
from collections import OrderedDict
from typing import Any

from ...core.errors import EvstoreError, error, join_pointer
from .rules import (
    BOUNDARY,
    CONTENT_MISMATCH,
    QUOTE_MISMATCH,
    RANGE,
    SOURCE_ENCODING,
    validate_shape,
)

__all__ = ["is_char_boundary", "source_encoding_fault", "verify_against"]

_CONTINUATION_MASK = 0xC0
_CONTINUATION_BITS = 0x80
# Well-formedness is decoded in chunks of this many bytes, so checking a large source never
# holds its whole decoded text in memory.
_CHUNK = 1 << 20
# Verdicts of well-formedness by content SHA-256 (the store checks many fragments of one
# source): at most this many are remembered.
_WELL_FORMED_CACHE = 256
_well_formed: OrderedDict[str, int | None] = OrderedDict()


def _utf8_fault_at(data: bytes | bytearray | memoryview) -> int | None:
    """Offset in bytes of the first byte that makes ``data`` ill-formed UTF-8, else None."""
    if isinstance(data, (bytes, bytearray)) and data.isascii():
        return None
    view = memoryview(data)
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    for at in range(0, len(view), _CHUNK):
        pending = len(decoder.getstate()[0])  # bytes of a character split by the last chunk
        try:
            decoder.decode(view[at : at + _CHUNK].tobytes(), at + _CHUNK >= len(view))
        except UnicodeDecodeError as exc:
            return at - pending + exc.start
    return None


def _content_fault_at(
    content: bytes | bytearray | memoryview, content_sha256: str | None
) -> int | None:
    """:func:`_utf8_fault_at`, remembered by the content's SHA-256 when the caller knows it."""
    if content_sha256 is None:
        return _utf8_fault_at(content)
    if content_sha256 in _well_formed:
        _well_formed.move_to_end(content_sha256)
        return _well_formed[content_sha256]
    verdict = _utf8_fault_at(content)
    _well_formed[content_sha256] = verdict
    if len(_well_formed) > _WELL_FORMED_CACHE:
        _well_formed.popitem(last=False)
    return verdict


def _at(name: str, value: int) -> dict[str, Any]:
    return {name: value}  # a fault detail, typed for error(**...)


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
    source: bool = False,
) -> list[EvstoreError]:
    """Verify a fragment against the content its offsets are measured over (fail closed).

    Stages (the module docstring's fault order); a stage runs only when all earlier ones passed:
    shape; ``content_sha256`` (when the fragment has it) equals the SHA-256 of ``content``;
    with ``source``, ``content`` is well-formed UTF-8 (in chunks, the verdict remembered by
    SHA-256);
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
        source: ``content`` is a registered source version (the store's case), which must be
            well-formed UTF-8 as a whole: when it is not, that fault
            (``fragment.source-encoding`` at ``pointer``) is reported instead of any offset
            fault, which would mean nothing over such bytes. Without it only the quoted bytes
            must be well-formed (the contract's rule for arbitrary content).

    Returns:
        The faults of the first failing stage (empty: the fragment is verified). Codes:
        those of :func:`validate_shape`, ``fragment.content-mismatch``,
        ``fragment.source-encoding`` (with ``source``), ``fragment.range``,
        ``fragment.boundary``, ``fragment.quote-mismatch``.

    Raises:
        TypeError: ``content`` is not bytes-like (a str would hide an encoding choice).
    """
    if not isinstance(content, (bytes, bytearray, memoryview)):
        raise TypeError(
            "content must be bytes, bytearray or memoryview, not " + type(content).__name__
        )
    if not shape_checked:
        shape = validate_shape(frag, pointer)
        if shape:
            return shape
    start = int(frag["start_offset"])
    end = int(frag["end_offset"])

    if "content_sha256" in frag:
        claimed = frag["content_sha256"]
        actual = (
            content_sha256 if content_sha256 is not None else hashlib.sha256(content).hexdigest()
        )
        if claimed != actual:
            return [
                error(
                    CONTENT_MISMATCH,
                    "content_sha256 names other bytes than the content verified against",
                    join_pointer(pointer, "content_sha256"),
                    expected=claimed,
                    actual=actual,
                )
            ]

    bad = _content_fault_at(content, content_sha256) if source else None
    if bad is not None:
        # Offsets over ill-formed bytes mean nothing: the source's fault comes first.
        return [
            error(
                SOURCE_ENCODING,
                f"the content verified against is not well-formed UTF-8 (byte {bad})",
                pointer,
                document_id=frag["document_id"],
                fragment_id=frag["fragment_id"],
                byte=bad,
            )
        ]

    length = len(content)
    if end > length:
        return [
            error(
                RANGE,
                f"end_offset {end} is beyond the content length of {length} bytes",
                join_pointer(pointer, "end_offset"),
                end_offset=end,
                content_length=length,
            )
        ]

    return _quote_faults(frag, content, pointer, start, end)


def _quote_faults(
    frag: Any, content: bytes | bytearray | memoryview, pointer: str, start: int, end: int
) -> list[EvstoreError]:
    """Stages 4 and 5 of :func:`verify_against`: boundaries, well-formedness, quote digest."""
    faults: list[EvstoreError] = []
    for name, off in (("start_offset", start), ("end_offset", end)):
        if not is_char_boundary(content, off):
            faults.append(
                error(
                    BOUNDARY,
                    f"{name} {off} falls inside a UTF-8 character",
                    join_pointer(pointer, name),
                    **_at(name, off),
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
                error(
                    BOUNDARY,
                    f"the quoted bytes are not well-formed UTF-8 (byte {start + exc.start})",
                    pointer,
                    start_offset=start,
                    end_offset=end,
                    byte=start + exc.start,
                )
            ]

    actual_quote = hashlib.sha256(quoted).hexdigest()
    if actual_quote != frag["quote_sha256"]:
        message = "quote_sha256 is not the SHA-256 of the bytes in [start_offset, end_offset)"
        form = _normal_form_of(bytes(quoted), frag["quote_sha256"])
        if form is not None:
            message += (
                f"; it is the SHA-256 of their Unicode normalisation {form}: the quote was "
                "normalised (NFC vs NFD) before hashing, but offsets and digests are over the "
                "source's exact bytes, never normalised"
            )
        err = error(
            QUOTE_MISMATCH,
            message,
            join_pointer(pointer, "quote_sha256"),
            expected=frag["quote_sha256"],
            actual=actual_quote,
        )
        if form is not None:
            err.details["normalization"] = form
        return [err]
    return []


def _normal_form_of(quoted: bytes, digest: str) -> str | None:
    """The Unicode normal form whose UTF-8 bytes of ``quoted`` hash to ``digest``, if any.

    Only asked after a mismatch (never on the verified path); ``quoted`` is well-formed UTF-8.
    """
    if quoted.isascii():
        return None  # ASCII is the same in every normal form
    text = quoted.decode("utf-8")
    for form in ("NFC", "NFD", "NFKC", "NFKD"):
        normal = unicodedata.normalize(form, text)
        if normal != text and hashlib.sha256(normal.encode("utf-8")).hexdigest() == digest:
            return form
    return None


def source_encoding_fault(data: bytes, pointer: str = "", **details: Any) -> EvstoreError | None:
    """``fragment.source-encoding`` when source bytes are not well-formed UTF-8, else None.

    Args:
        data: the source content bytes.
        pointer: where to point the fault.
        details: extra facts for the fault (the pair); ``byte`` (offset in bytes of the first
            bad byte) is added.
    """
    bad = _utf8_fault_at(data)
    if bad is None:
        return None
    return error(
        SOURCE_ENCODING,
        f"source bytes are not well-formed UTF-8 (byte {bad})",
        pointer,
        **details,
        byte=bad,
    )
