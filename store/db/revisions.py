"""The schema revisions shipped with this evstore, read as text (no SQLAlchemy, no Alembic).

The revisions are migrations/versions/*.py (``revision`` and ``down_revision`` in each); the
newest is the schema this evstore writes (``evstore --version`` names it, docs/design.md,
"Store lifecycle"). Checking a store's schema and printing the version import neither
SQLAlchemy nor Alembic: this module reads the files' text only.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

__all__ = ["head_revision", "schema_revisions"]

_REVISION = re.compile(r"^revision\s*(?::[^=]*)?=\s*[\"']([^\"']+)[\"']", re.M)
_DOWN = re.compile(r"^down_revision\s*(?::[^=]*)?=\s*(?:None|[\"']([^\"']*)[\"'])", re.M)


@functools.cache
def schema_revisions() -> tuple[str, ...]:
    """The schema revisions shipped with this evstore, oldest first (the last is the head).

    Read from the text of migrations/versions/*.py (``revision`` and ``down_revision``), so
    checking a store's schema does not import Alembic.
    """
    parents: dict[str, str | None] = {}
    for entry in (resources.files("evstore.migrations") / "versions").iterdir():
        if not entry.name.endswith(".py") or entry.name.startswith("_"):
            continue
        text = entry.read_text(encoding="utf-8")
        rev, down = _REVISION.search(text), _DOWN.search(text)
        if rev is not None:
            parents[rev.group(1)] = down.group(1) if down is not None else None
    chain: list[str] = []
    children = {v: k for k, v in parents.items()}
    node = children.get(None)
    while node is not None:
        chain.append(node)
        node = children.get(node)
    return tuple(chain)


def head_revision() -> str:
    """The schema revision this evstore writes: the newest it ships (``"0007"``).

    ``evstore.head_revision()``; ``evstore --version`` prints it beside the version. Reads
    migrations/versions as text (no SQLAlchemy or Alembic import).
    """
    return schema_revisions()[-1]
