"""The toy contract in the store: the ``toy-note`` kind handler.

Declares only ``detect``, ``check`` and ``write``; ``stage``/``flush``/``prefetch``/``audit``
are the declared defaults of :class:`evstore.objects.kinds.KindHandler`.
"""

from __future__ import annotations

from typing import Any

from evstore.core.errors import Faults
from evstore.objects.artifacts import ArtifactResult
from evstore.objects.kinds import KindHandler
from evstore.objects.txn import Txn

from . import rules

#: Lookup attribute: ``store.find("toy_text", TEXT)``.
FIND_ATTR = "toy_text"


class ToyNoteKind(KindHandler):
    """Kind ``toy-note``: a note, stored with its text as a lookup attribute."""

    name = rules.KIND
    contract_version = rules.CONTRACT_VERSION

    def detect(self, doc: Any) -> bool:
        """True when the rules claim ``doc``."""
        return rules.detect(doc) == self.name

    def check(self, doc: Any, txn: Txn, canonical: bytes | None = None) -> Faults:
        """The pure rules with the store's settings."""
        return rules.validate(doc, txn.settings, kind=self.name)

    def write(self, doc: Any, canonical: bytes, txn: Txn) -> ArtifactResult:
        """Store the note with its ``toy_text`` attribute."""
        return txn.put_artifact(
            self.name, self.contract_version, canonical, attrs=[(FIND_ATTR, doc["text"])]
        )
