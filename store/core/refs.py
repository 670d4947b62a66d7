"""Content refs: the grammar of digests that name stored bytes.

Accepted forms (each names the exact bytes of one blob):

    blake3:<64 lowercase hex>                    the address
    sha256:<64 lowercase hex>
    sha256:<43-char base64url, no padding>       as orbidocs ``content/digest``
    object-store:sha256:<43-char base64url>      as orbidocs ``content/ref``

Anything else (upper or mixed-case hex, wrong length, ``=`` padding, non-zero padding bits,
an unknown algorithm) is ``ref.syntax``. Contract identifiers that are not digests of stored
bytes (a manifest's ``manifest/ref``, a package id, a quote digest) are not refs; ``find``
resolves them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from .digests import b64u_to_hex
from .errors import RefSyntaxError, error

__all__ = ["ACCEPTED_FORMS", "ContentRef", "parse_ref", "parse_refs"]

ACCEPTED_FORMS = (
    "blake3:<64 lowercase hex>",
    "sha256:<64 lowercase hex>",
    "sha256:<43-char base64url>",
    "object-store:sha256:<43-char base64url>",
)

_HEX64 = re.compile(r"[0-9a-f]{64}")
_B64U43 = re.compile(r"[A-Za-z0-9_-]{43}")


@dataclass(frozen=True, slots=True)
class ContentRef:
    """A parsed content ref: which digest, and its 64 lowercase hex value.

    Attributes:
        algorithm: ``"blake3"`` or ``"sha256"``.
        hex: 64 lowercase hex characters.
        text: the ref as the caller wrote it.
    """

    algorithm: Literal["blake3", "sha256"]
    hex: str
    text: str


def _fail(text: str, why: str) -> RefSyntaxError:
    # A ref is at most 7 + 64 characters: a longer text is named by its start and length.
    shown = repr(text) if len(text) <= 100 else f"{text[:40]!r}... ({len(text)} characters)"
    return RefSyntaxError(
        f"{shown} is not a content ref ({why}); accepted forms: " + ", ".join(ACCEPTED_FORMS),
        code="ref.syntax",
        rule="evstore#content-refs",
        details={"accepted_forms": list(ACCEPTED_FORMS)},
    )


def parse_ref(text: str) -> ContentRef:
    """Parse one content ref.

    Args:
        text: the ref, e.g. ``"sha256:ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0"``.

    Returns:
        The :class:`ContentRef` (algorithm and 64 lowercase hex).

    Raises:
        RefSyntaxError: ``ref.syntax``, naming the accepted forms.
    """
    if not isinstance(text, str):
        raise TypeError("a content ref is a str")
    body = text
    object_store = False
    if body.startswith("object-store:"):
        object_store = True
        body = body[len("object-store:") :]
    algo, sep, value = body.partition(":")
    if not sep:
        raise _fail(text, "no algorithm prefix")
    if algo == "blake3" and not object_store:
        if _HEX64.fullmatch(value):
            return ContentRef("blake3", value, text)
        raise _fail(text, "blake3 takes 64 lowercase hex")
    if algo == "sha256":
        if not object_store and _HEX64.fullmatch(value):
            return ContentRef("sha256", value, text)
        if _B64U43.fullmatch(value):
            try:
                return ContentRef("sha256", b64u_to_hex(value), text)
            except ValueError as exc:
                raise _fail(text, str(exc)) from None
        if object_store:
            raise _fail(text, "object-store refs take 43-char base64url")
        raise _fail(text, "sha256 takes 64 lowercase hex or 43-char base64url")
    raise _fail(text, f"unknown algorithm {algo!r}")


def parse_refs(refs: Iterable[str]) -> list[ContentRef]:
    """Parse an iterable of content refs (``has``'s argument), all before any lookup.

    A bare ``str`` is refused rather than read as its characters: ``has`` answers the
    refs that are *missing*, so a lone ref would otherwise look up ``"b"``, ``"l"``, ...

    Raises:
        InputError: ``input.invalid`` for a ``str``/``bytes`` given in place of the
            iterable. RefSyntaxError: ``ref.syntax`` on the first malformed ref.
    """
    if isinstance(refs, (str, bytes, bytearray)):
        raise error(
            "input.invalid",
            "has takes an iterable of content refs and answers the missing ones; "
            "for one ref pass a list: has([ref])",
        )
    return [parse_ref(r) for r in refs]
