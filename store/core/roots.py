"""Roots of writes: the root and actor of the calling context (no database).

A write roots what it stores under the root of its context (``default`` unless
:func:`rooting` names another), so the collector keeps it (docs/design.md#retention-and-
garbage-collection). The context variables live here, below the database layers, so the HTTP
client (store/client/) names roots without importing SQLAlchemy; evstore.objects.leases
re-exports them for the writers.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator

from .errors import error

__all__ = [
    "ACTOR",
    "DEFAULT_ROOT",
    "MAX_LISTED",
    "ROOT",
    "check_listed",
    "check_root_name",
    "current_root",
    "rooting",
]

#: The root every write uses unless the caller names another.
DEFAULT_ROOT = "default"
#: The root of writes in the current context (see :func:`rooting`).
ROOT: contextvars.ContextVar[str] = contextvars.ContextVar("evstore_root", default=DEFAULT_ROOT)
#: Who acts in the current context: ``local`` for the CLI and library, a token id for the server.
ACTOR: contextvars.ContextVar[str] = contextvars.ContextVar("evstore_actor", default="local")

#: The most retention events or audit runs one listing returns (the server's bound too).
MAX_LISTED = 100_000

_ROOT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,127}$")


def check_root_name(name: str) -> str:
    """``name`` if it is a valid root name (1-128 of ``A-Z a-z 0-9 . _ : @ / + -``).

    Raises:
        InputError: ``root.name``.
    """
    if not isinstance(name, str) or not _ROOT_NAME.fullmatch(name):  # "$" allows a final "\n"
        raise error(
            "root.name",
            f"{name!r} is no root name: 1-128 characters of letters, digits and . _ : @ / + -,"
            " starting with a letter or digit",
            root=str(name),
        )
    return name


def check_listed(limit: object) -> int:
    """``limit`` if it is a count of events or runs to list (1 to :data:`MAX_LISTED`).

    A local store and a remote one refuse alike what the server's query refuses (PostgreSQL
    answered a negative one with ``store.database``; SQLite read it as no limit).

    Raises:
        InputError: ``input.invalid``.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LISTED:
        raise error("input.invalid", f"limit must be a count from 1 to {MAX_LISTED}, not {limit!r}")
    return limit


def current_root() -> str:
    """The root writes in the current context use (``default`` outside :func:`rooting`)."""
    return ROOT.get()


@contextlib.contextmanager
def rooting(root: str = DEFAULT_ROOT, actor: str = "local") -> Iterator[None]:
    """Writes inside this context root what they write under ``root``, acting as ``actor``.

    Raises:
        InputError: ``root.name``.
    """
    tokens = (ROOT.set(check_root_name(root)), ACTOR.set(actor))
    try:
        yield
    finally:
        ROOT.reset(tokens[0])
        ACTOR.reset(tokens[1])
