"""The context size rules of insonic answer evidence 1.3.0: ``context.bytes`` and ``tokens``.

Pure (no database). A package's ``context.bytes`` is the UTF-8 size of the compact JSON of
its ``context`` object *holding that very value* (a fixed point), and under the
``utf8-byte-upper-bound`` accounting ``context.tokens`` equals ``bytes``. One example cannot
settle every serialization detail, so :mod:`evstore.contracts.packages.rules` reports these faults
as
warnings unless the store setting ``packages.strict_context_bytes`` is on (docs/packages.md,
"context.bytes and context.tokens").

Contract sections: ``insonic-answer-evidence-1.3.0#/$defs/context/properties/bytes`` and
``#/$defs/context/properties/tokens`` (codes ``package.context-bytes``,
``package.context-tokens``).

:func:`context_size` is the verdict ``evstore package context-size`` prints.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...core.canonical import loads
from ...core.errors import EvstoreError, error

__all__ = [
    "ContextSize",
    "context_fixed_point",
    "context_size",
    "context_size_faults",
    "measure_context",
]


def _int(value: Any) -> int | None:
    # bool is an int subclass in Python, never a JSON integer.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def measure_context(context: Mapping[str, Any]) -> int:
    r"""UTF-8 size of the context object as the contract counts it, with its values as given.

    The object is serialized on its own, in its own member order, compactly
    (``separators=(",", ":")``), non-ASCII unescaped (``ensure_ascii=False``); control
    characters, ``"`` and ``\`` are escaped as JSON requires. The schema's one example
    (``bytes`` 150) holds under this measure.

    Args:
        context: the package's ``context`` object.

    Returns:
        The size in bytes (not characters); a correct package has
        ``context["bytes"] == measure_context(context)``.

    Raises:
        TypeError, ValueError: ``context`` holds values that are not JSON.
    """
    text = json.dumps(context, ensure_ascii=False, separators=(",", ":"))
    # Lone surrogates cannot come through the strict reader; count them as UTF-8 would
    # (3 bytes) rather than fail, should a caller pass one.
    return len(text.encode("utf-8", "surrogatepass"))


def context_fixed_point(context: Mapping[str, Any]) -> int | None:
    """The ``bytes`` value (= ``tokens``) that would make ``context`` self-consistent.

    Args:
        context: the package's ``context`` object (not modified: a copy is measured).

    Returns:
        The smallest n such that setting ``bytes`` (and ``tokens`` when present) to n gives
        a serialization of n bytes, or ``None`` when no such n exists (or ``bytes`` is
        absent).
    """
    copy = dict(context)
    fields = [f for f in ("bytes", "tokens") if f in copy]
    if "bytes" not in fields:
        return None
    for f in fields:
        copy[f] = 0
    base = measure_context(copy) - len(fields)  # the size without the digits
    for digits in range(1, 8):
        n = base + digits * len(fields)
        if len(str(n)) == digits:
            return n
    return None


def context_size_faults(doc: Any) -> list[EvstoreError]:
    """``package.context-bytes`` / ``package.context-tokens`` faults of a package.

    ``context.bytes`` must equal :func:`measure_context` of the context with its values as
    given (a fixed point: the claimed value is inside what is measured), and under
    ``utf8-byte-upper-bound`` ``tokens`` must equal ``bytes``. The caller decides whether
    these are warnings or errors (``packages.strict_context_bytes``). A missing or malformed
    context yields nothing here (it is the schema's fault to report).

    Args:
        doc: the parsed package.

    Returns:
        At most one ``package.context-bytes`` (pointer ``/context/bytes``, details
        ``claimed``, ``measured``, ``fixed_point``) then one ``package.context-tokens``
        (pointer ``/context/tokens``, details ``tokens``, ``bytes``), as
        :class:`~evstore.core.errors.PackageError`.
    """
    context = doc.get("context") if isinstance(doc, dict) else None
    if not isinstance(context, dict):
        return []
    faults: list[EvstoreError] = []
    claimed = _int(context.get("bytes"))
    if claimed is not None:
        try:
            measured: int | None = measure_context(context)
        except (TypeError, ValueError):
            measured = None
        if measured is not None and measured != claimed:
            faults.append(
                error(
                    "package.context-bytes",
                    f"context.bytes is {claimed} but the compact UTF-8 JSON of the context "
                    f"with that value is {measured} bytes",
                    "/context/bytes",
                    claimed=claimed,
                    measured=measured,
                    fixed_point=context_fixed_point(context),
                )
            )
    tokens = _int(context.get("tokens"))
    if (
        context.get("token_accounting") == "utf8-byte-upper-bound"
        and tokens is not None
        and claimed is not None
        and tokens != claimed
    ):
        faults.append(
            error(
                "package.context-tokens",
                f"context.tokens is {tokens} but utf8-byte-upper-bound makes it equal to "
                f"bytes ({claimed})",
                "/context/tokens",
                tokens=tokens,
                bytes=claimed,
            )
        )
    return faults


@dataclass(frozen=True)
class ContextSize:
    """The context-size verdict on one package (``evstore package context-size``).

    Attributes:
        claimed_bytes: ``context.bytes`` as written (any JSON value, None when absent).
        claimed_tokens: ``context.tokens`` as written (any JSON value, None when absent).
        measured: :func:`measure_context` of the context as written, in bytes.
        fixed_point: :func:`context_fixed_point`: the value that would make both right.
    """

    claimed_bytes: Any
    claimed_tokens: Any
    measured: int
    fixed_point: int | None

    @property
    def ok(self) -> bool:
        """True when ``bytes`` and ``tokens`` both equal the measured size."""
        return bool(self.claimed_bytes == self.measured == self.claimed_tokens)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: claimed_bytes, claimed_tokens, measured, fixed_point, ok."""
        return {
            "claimed_bytes": self.claimed_bytes,
            "claimed_tokens": self.claimed_tokens,
            "measured": self.measured,
            "fixed_point": self.fixed_point,
            "ok": self.ok,
        }


def context_size(data: bytes, name: str | None = None) -> ContextSize:
    """Measure the context of the package in ``data`` (JSON bytes, read strictly).

    Args:
        data: the package's bytes (any JSON object with a ``context`` object will do: the
            rest of the package is not checked).
        name: the input's name (a path or "-"), set as the error's ``path``.

    Returns:
        The :class:`ContextSize` verdict.

    Raises:
        JSONFormError: ``json.*`` (the strict reader).
        InputError: ``input.invalid``: not a JSON object with a context object.

    Contract:
        ``insonic-answer-evidence-1.3.0#/$defs/context/properties/bytes``.
    """
    doc = loads(data)
    context = doc.get("context") if isinstance(doc, dict) else None
    if not isinstance(context, dict):
        raise error("input.invalid", "a package is a JSON object with a context object", path=name)
    return ContextSize(
        claimed_bytes=context.get("bytes"),
        claimed_tokens=context.get("tokens"),
        measured=measure_context(context),
        fixed_point=context_fixed_point(context),
    )
