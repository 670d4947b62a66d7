"""``evstore check`` for blob backends: objects that no row names (issue 25).

Rows whose bytes are missing or damaged in a backend are found by the blob pass itself
(it reads every blob through :func:`evstore.objects.blobs.iter_stored`); this module adds
the other direction: every object in a backend the store names that no row names and no
queued deletion holds, once older than ``blobs.orphan_grace_seconds``; and a backend whose
marker names another store (store/objects/markers.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import sqlalchemy as sa

from ..core.errors import EvstoreError, error
from ..objects.external import backends_in_use, find_orphans
from ..objects.markers import marker_faults

__all__ = ["orphan_faults"]


def orphan_faults(conn: sa.Connection) -> Iterator[EvstoreError]:
    """One ``check.blob-orphan`` fault per orphaned object (``details``: backend, key,
    size in bytes, and the address its key names); a backend that cannot be listed is
    reported as its ``blobs.*`` error.
    """  # noqa: D205
    try:
        yield from marker_faults(conn, backends_in_use(conn))  # another store's place?
        orphans = find_orphans(conn)
    except EvstoreError as err:
        if err.code != "corruption.setting":  # the check reported that one already
            yield err
        return
    for spec, key, size in orphans:
        yield error(
            "check.blob-orphan",
            f"{spec} holds {key} ({size} bytes) but no blob row names it; gc deletes it",
            backend=spec,
            key=key,
            size=size,
            address="blake3:" + key.rsplit("/", 1)[-1],
        )
