"""The evstore error tree: one root, a few families, stable dotted codes.

Every error raised on bad input, a missing object, corrupt bytes or a store in the
wrong state is an :class:`EvstoreError`. Programs catch the family class; scripts,
tests and people read ``code``, a stable dotted string documented in
``docs/errors.md``::

    EvstoreError          code, message, rule (contract section), pointer (RFC 6901)
    |- InputError         the caller's bytes or arguments are wrong     (input.*, kind.*, ...)
    |  |- RefSyntaxError  a content ref outside the accepted forms      (ref.syntax)
    |  |- JSONFormError   strict reader faults                          (json.*)
    |  |- ContractError   a contract rule fails                         (fragment.*, ...)
    |  |- BindingConflict a write-time binding is violated              (*.scope-reuse, ...)
    |- NotFound           no object for that ref                        (not-found.*)
    |- CorruptionError    stored bytes do not match their address       (corruption.*)
    |- StoreStateError    missing store, schema behind/ahead, busy, ... (store.*)

Contract leaf classes (FragmentError, ManifestBindingError, ...) sit under ContractError and
BindingConflict. Every code is a row of :data:`CODES` (family, default rule, meaning), and
:func:`error` is the one builder: the code decides the class.

API misuse (wrong Python types, a closed Store) stays a
TypeError/ValueError/RuntimeError and is not an EvstoreError.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .error_codes import STATUS_BY_CODE, STATUS_BY_FAMILY, TABLE, Code

__all__ = [
    "BindingConflict",
    "BundleError",
    "CODES",
    "Code",
    "ContextError",
    "ContractError",
    "CorruptionError",
    "EvstoreError",
    "Faults",
    "FragmentBindingError",
    "FragmentError",
    "InputError",
    "JSONFormError",
    "ManifestBindingError",
    "ManifestError",
    "NotFound",
    "PackageBindingError",
    "PackageError",
    "RefSyntaxError",
    "StoreStateError",
    "error",
    "error_class",
    "escape_pointer",
    "family_of_status",
    "http_status",
    "join_pointer",
    "pointer_phrase",
]


def escape_pointer(token: str | int) -> str:
    """Escape one JSON Pointer reference token (RFC 6901 section 3)."""
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer_phrase(pointer: str) -> str:
    """Where a fault is, for people: ``"at /a/0"``, and ``"at the document root"`` for ``""``.

    RFC 6901 reads ``"/"`` as the member named ``""``, so the root is never written that way.
    """
    return f"at {pointer}" if pointer else "at the document root"


def _about_no_document(code: str) -> bool:
    """True for a code whose faults are about no JSON document, so an empty pointer names no
    place: an HTTP fault about the request itself (its token, route, size, time: ``http.*``
    but ``http.request``, whose pointer is into the body) and the log's key files
    (``log.key-*``: a file of key text, no document).
    """  # noqa: D205
    return (code.startswith("http.") and code != "http.request") or code.startswith("log.key")


def join_pointer(base: str, *tokens: str | int) -> str:
    """Append reference tokens to a JSON Pointer (RFC 6901).

    ``join_pointer("/a", "b/c", 0) == "/a/b~1c/0"``.
    """
    # Called for every member that validation visits: keep the common case cheap.
    out = base
    for token in tokens:
        text = token if type(token) is str else str(token)
        if "~" in text or "/" in text:
            text = text.replace("~", "~0").replace("/", "~1")
        out += "/" + text
    return out


class EvstoreError(Exception):
    """Root of every evstore error.

    Attributes:
        code: stable dotted code such as ``fragment.range`` (see docs/errors.md).
        message: a human sentence.
        rule: the contract rule or section implemented, e.g.
            ``templiqx-evidence-fragment-v1alpha1#offset-and-digest-invariants``; empty
            for errors that are not about a contract.
        pointer: RFC 6901 JSON Pointer to the offending field ("" is the whole document).
        path: the input file the error is about, when known.
        about_document: whether a fault with a rule and the root pointer names "the document
            root" in its text (False for a content ref given on its own).
    """

    family = "error"
    default_code = "error"
    about_document = True

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        rule: str = "",
        pointer: str = "",
        path: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code or self.default_code
        self.message = message
        self.rule = rule
        self.pointer = pointer
        self.path = path
        self.details = details or {}

    def to_dict(self) -> dict[str, Any]:
        """The error as a JSON-ready dict: family, code, message, rule, pointer, path, details."""
        out: dict[str, Any] = {
            "family": self.family,
            "code": self.code,
            "message": self.message,
            "rule": self.rule,
            "pointer": self.pointer,
        }
        if self.path is not None:
            out["path"] = self.path
        if self.details:
            out["details"] = self.details
        return out

    def __str__(self) -> str:
        # "" is the whole document (RFC 6901), never "/" (the member named ""); errors that are
        # not about a document (no rule, or a ref given on its own) name no place.
        whole = self.rule and self.about_document and not _about_no_document(self.code)
        where = f" {pointer_phrase(self.pointer)}" if self.pointer or whole else ""
        src = f"{self.path}: " if self.path else ""
        return f"{src}{self.code}{where}: {self.message}"


class InputError(EvstoreError):
    """The caller's bytes or arguments are wrong; nothing was written."""

    family = "input"
    default_code = "input.invalid"


class RefSyntaxError(InputError):
    """A content ref is not in one of the accepted forms (code ``ref.syntax``)."""

    default_code = "ref.syntax"
    about_document = False  # a ref on its own (an argument): no place unless a pointer is set


class JSONFormError(InputError):
    """The strict JSON reader refused the bytes (codes ``json.*``)."""

    default_code = "json.syntax"


class ContractError(InputError):
    """A contract rule failed; subclasses per contract live in the contract modules."""

    family = "contract"
    default_code = "contract.invalid"


class BindingConflict(InputError):
    """A write-time binding (first write wins) would be violated; nothing was written."""

    family = "binding"
    default_code = "binding.conflict"


class NotFound(EvstoreError):
    """No stored object answers that ref or query."""

    family = "not-found"
    default_code = "not-found"


class CorruptionError(EvstoreError):
    """Stored bytes do not match their recorded size or digest; they are never served."""

    family = "corruption"
    default_code = "corruption.digest"


class StoreStateError(EvstoreError):
    """The store cannot serve: missing, schema behind or ahead of the code, backend unreachable."""

    family = "store"
    default_code = "store.state"
    about_document = False  # the store's state: no place unless a pointer is set


# ---------------------------------------------------------------------------------------
# Contract leaf classes: one contract error and one binding conflict per contract, so that a
# program can catch "any manifest fault" without parsing codes. The builder picks them.
# ---------------------------------------------------------------------------------------


class FragmentError(ContractError):
    """A templiqx v1alpha1 evidence-fragment rule failed (codes ``fragment.*``)."""


class FragmentBindingError(BindingConflict):
    """A fragment's write-time binding fails (scope reuse, revision, unknown content)."""


class ManifestError(ContractError):
    """An orbidocs v1 manifest breaks its contract (codes ``manifest.*``)."""


class ManifestBindingError(BindingConflict):
    """A manifest's write-time binding fails (content, ref digest, ref rebinding)."""


class PackageError(ContractError):
    """An insonic 1.3.0 package, request or envelope breaks its contract."""


class PackageBindingError(BindingConflict):
    """A package's write-time binding fails (revision conflict, id reuse, unknown package)."""


class ContextError(ContractError):
    """A notarius v1 evidence-context or generic source-document rule failed."""


class BundleError(ContractError):
    """A run bundle or run record breaks its layout rules (codes ``bundle.*``, ``run.*``)."""


CODES: Mapping[str, Code] = MappingProxyType({c.code: c for c in TABLE})

_FAMILY_CLASS: dict[str, type[EvstoreError]] = {
    "input": InputError,
    "contract": ContractError,
    "binding": BindingConflict,
    "not-found": NotFound,
    "corruption": CorruptionError,
    "store": StoreStateError,
}

#: (code prefix, family) -> leaf class; the prefix is the code's first dotted segment.
_LEAF_CLASS: dict[tuple[str, str], type[EvstoreError]] = {
    ("ref", "input"): RefSyntaxError,
    ("json", "input"): JSONFormError,
    ("fragment", "contract"): FragmentError,
    ("fragment", "binding"): FragmentBindingError,
    ("manifest", "contract"): ManifestError,
    ("manifest", "binding"): ManifestBindingError,
    ("package", "contract"): PackageError,
    ("request", "contract"): PackageError,
    ("envelope", "contract"): PackageError,
    ("package", "binding"): PackageBindingError,
    ("envelope", "binding"): PackageBindingError,
    ("context", "contract"): ContextError,
    ("bundle", "contract"): BundleError,
    ("run", "contract"): BundleError,
}


def error_class(code: str) -> type[EvstoreError]:
    """The class :func:`error` raises for ``code`` (from its family and prefix).

    Raises:
        KeyError: ``code`` is not in :data:`CODES` (a programming error, not user input).
    """
    entry = CODES[code]
    prefix = code.split(".", 1)[0]
    return _LEAF_CLASS.get((prefix, entry.family), _FAMILY_CLASS[entry.family])


def http_status(err: EvstoreError) -> int:
    """The HTTP status of an evstore error (docs/http.md#errors).

    Its code's own (:data:`~evstore.core.error_codes.STATUS_BY_CODE`), else its family's
    (:data:`~evstore.core.error_codes.STATUS_BY_FAMILY`), else 500. The server answers with
    it (problem+json, RFC 9457) and the pages' error pages carry it.
    """
    return STATUS_BY_CODE.get(err.code, STATUS_BY_FAMILY.get(err.family, 500))


def family_of_status(status: int) -> str:
    """The error family an HTTP status stands for, when no code says it (a newer server's).

    A status that one family alone has (404, 409, 422, 400) is that family's; any other 4xx
    is ``input`` and anything else ``store``: the inverse of
    :data:`~evstore.core.error_codes.STATUS_BY_FAMILY`.
    """
    families = [f for f, s in STATUS_BY_FAMILY.items() if s == status]
    if len(families) == 1:
        return families[0]
    return "input" if 400 <= status < 500 else "store"


def error(
    code: str,
    message: str,
    pointer: str = "",
    *,
    rule: str | None = None,
    path: str | None = None,
    **details: Any,
) -> EvstoreError:
    """Build the typed error for ``code``: the one error builder of evstore.

    Args:
        code: a code of :data:`CODES`; it decides the class (family, contract leaf).
        message: a human sentence.
        pointer: RFC 6901 JSON Pointer to the offending value ("" is the whole document).
        rule: the contract section, when narrower than the table's default for ``code``.
        path: the input file, when known.
        details: extra JSON-ready facts (``None`` values are dropped).

    Returns:
        The error (not raised: callers raise it or collect it in :class:`Faults`).

    Raises:
        KeyError: ``code`` is not in the table (a bug in evstore, caught by the tests).
    """
    cls = error_class(code)
    kept = {k: v for k, v in details.items() if v is not None}
    return cls(
        message,
        code=code,
        rule=CODES[code].rule if rule is None else rule,
        pointer=pointer,
        path=path,
        details=kept or None,
    )


@dataclass
class Faults:
    """Every fault one validation found: ``errors`` then ``warnings``, each in fault order.

    The documented fault order of every contract is: shape (JSON Schema), contract rules,
    self-address, then write-time bindings. ``ingest`` reports ``errors[0]``; ``validate``
    lists them all. A warning is an :class:`EvstoreError` that does not refuse the document
    (it is recorded with the artifact).
    """

    errors: list[EvstoreError] = field(default_factory=list)
    warnings: list[EvstoreError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when there is no error (warnings allowed)."""
        return not self.errors

    def __bool__(self) -> bool:
        return bool(self.errors)

    def __iter__(self) -> Iterator[EvstoreError]:
        return iter(self.errors)

    def __len__(self) -> int:
        return len(self.errors)

    def add(self, code: str, message: str, pointer: str = "", **kw: Any) -> EvstoreError:
        """Build an error with :func:`error` and append it; returns it."""
        err = error(code, message, pointer, **kw)
        self.errors.append(err)
        return err

    def warn(self, code: str, message: str, pointer: str = "", **kw: Any) -> EvstoreError:
        """Build a warning with :func:`error` and append it; returns it."""
        err = error(code, message, pointer, **kw)
        self.warnings.append(err)
        return err

    def extend(self, other: Faults | Iterable[EvstoreError]) -> Faults:
        """Append another Faults (errors and warnings) or a sequence of errors; returns self."""
        if isinstance(other, Faults):
            self.errors.extend(other.errors)
            self.warnings.extend(other.warnings)
        else:
            self.errors.extend(other)
        return self

    def first(self) -> EvstoreError | None:
        """The first error, or None."""
        return self.errors[0] if self.errors else None

    def raise_first(self) -> None:
        """Raise the first error, if any (``ingest`` semantics)."""
        if self.errors:
            raise self.errors[0]

    @classmethod
    def of(cls, value: Faults | Iterable[EvstoreError] | None) -> Faults:
        """``value`` as Faults (a Faults is returned as is; a sequence becomes its errors)."""
        if isinstance(value, Faults):
            return value
        return cls(errors=list(value or ()))
