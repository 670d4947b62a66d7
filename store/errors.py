"""The evstore error tree: one root, a few families, stable dotted codes.

Every error raised on bad input, a missing object, corrupt bytes or a store in the
wrong state is an :class:`EvstoreError`. Programs catch the family class; scripts,
tests and people read ``code``, a stable dotted string documented in
``docs/errors.md``::

    EvstoreError            code, message, rule (contract section), pointer (RFC 6901)
    |- InputError           the caller's bytes or arguments are wrong; the store is untouched
    |  |- RefSyntaxError    a content ref outside the accepted forms          (ref.syntax)
    |  |- JSONFormError     strict reader faults                              (json.*)
    |  |- ContractError     a contract rule fails                             (fragment.*, manifest.*, ...)
    |  |- BindingConflict   a write-time binding is violated                  (binding.*, *.scope-reuse, ...)
    |- NotFound             no object for that ref                            (not-found.*)
    |- CorruptionError      stored bytes do not match their address           (corruption.*)
    |- StoreStateError      missing store, schema behind/ahead, backend down  (store.*)

Leaf classes for a contract live next to the code that raises them; each still
descends from a family here. API misuse (wrong Python types, a closed Store) stays a
TypeError/ValueError/RuntimeError and is not an EvstoreError.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BindingConflict",
    "CODES",
    "ContractError",
    "CorruptionError",
    "EvstoreError",
    "InputError",
    "JSONFormError",
    "NotFound",
    "RefSyntaxError",
    "StoreStateError",
    "escape_pointer",
    "join_pointer",
]


def escape_pointer(token: str | int) -> str:
    """Escape one JSON Pointer reference token (RFC 6901 section 3)."""
    return str(token).replace("~", "~0").replace("/", "~1")


def join_pointer(base: str, *tokens: str | int) -> str:
    """Append reference tokens to a JSON Pointer: ``join_pointer("/a", "b/c", 0) == "/a/b~1c/0"``."""
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
    """

    family = "error"
    default_code = "error"

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
        """The error as a JSON-ready dict: family, code, message, rule, pointer (and path, details)."""
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
        where = f" at {self.pointer}" if self.pointer else ""
        src = f"{self.path}: " if self.path else ""
        return f"{src}{self.code}{where}: {self.message}"


class InputError(EvstoreError):
    """The caller's bytes or arguments are wrong; nothing was written."""

    family = "input"
    default_code = "input.invalid"


class RefSyntaxError(InputError):
    """A content ref is not in one of the accepted forms (code ``ref.syntax``)."""

    default_code = "ref.syntax"


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


#: Codes raised by the store core (contract modules export their own ``CODES``).
CODES: dict[str, str] = {
    "ref.syntax": "a content ref is not one of the four accepted forms",
    "json.bom": "a UTF-8 byte-order mark precedes the JSON text",
    "json.utf8": "the input is not valid UTF-8",
    "json.syntax": "the input is not JSON (or has trailing data)",
    "json.duplicate-key": "a member name appears twice in one object",
    "json.non-finite": "NaN or Infinity, or a number that overflows a double",
    "json.surrogate": "a string or member name holds a lone surrogate",
    "json.int-range": "an integer beyond +-(2**53-1), or a number canonically read back as one",
    "json.depth": "nesting deeper than the reader's limit (128)",
    "input.unreadable": "an input file cannot be read",
    "input.unused-content": "bytes supplied with the command (--content, --source) are used by no document",
    "input.unused-option": "an option was given that no document of the command uses",
    "input.argument-encoding": "a command-line argument is not valid UTF-8",
    "output.unwritable": "the output file cannot be written",
    "corruption.row": "a stored row is malformed (wrong type or value); its bytes are not served",
    "corruption.setting": "a stored setting is not valid JSON of its declared type",
    "json.number-range": "a non-zero number that underflows to zero (it would not round-trip)",
    "kind.unknown": "no such artifact kind",
    "config.unknown": "no such setting",
    "config.value": "a setting value of the wrong type",
    "not-found.blob": "no stored blob for that content ref",
    "not-found.artifact": "no artifact matches the query",
    "corruption.digest": "stored bytes do not hash to their address; never served",
    "corruption.size": "stored bytes have another length than recorded; never served",
    "corruption.sha256-index": "the SHA-256 recorded for a blob does not match its bytes",
    "check.not-canonical": "a stored artifact's bytes are not in canonical form",
    "check.artifact-without-blob": "an artifact index row has no blob",
    "store.missing": "no store at that URL (create one with evstore init)",
    "store.schema-behind": "the store's schema is older than the code (run evstore migrate)",
    "store.schema-ahead": "the store's schema is newer than the code",
    "store.url": "the store URL cannot be used",
    "store.unreachable": "the database cannot be reached",
    "store.busy": "the database stayed locked after retries",
    "store.database": "another database error",
}
