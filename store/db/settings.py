"""Store settings, stored: the ``settings`` table read once per transaction and written.

The declarations (names, types, defaults, parsing) are pure and live in
:mod:`evstore.core.settings`; this module is their database half.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.settings import SETTINGS, decode_stored

__all__ = ["load_settings", "write_setting"]


def load_settings(conn: Connection) -> dict[str, Any]:
    """Every declared setting's current value (stored value, else the default).

    Read once per transaction: inside a transaction a second call returns a copy of what the
    first read (issue 16: an ingest used to read the table twice). The memo is tied to that
    transaction object and dies with it, so nothing is reused across transactions; a write
    of a setting (:func:`write_setting`) drops it.

    Raises:
        CorruptionError: ``corruption.setting`` for a stored value evstore would not write.
    """
    from .engine import driver_rows

    txn = conn.get_transaction()
    memo = conn.info.get(_MEMO)
    if txn is not None and memo is not None and memo[0] is txn:
        return _copy(memo[1])
    values = {name: s.default for name, s in SETTINGS.items()}
    for name, raw in driver_rows(conn, "SELECT name, value FROM settings"):
        if name in SETTINGS:
            values[name] = decode_stored(name, raw)
    if txn is not None:
        conn.info[_MEMO] = (txn, _copy(values))
    return values


def _copy(values: dict[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, list) else v for k, v in values.items()}


#: ``conn.info`` key of the settings read in the connection's current transaction.
_MEMO = "evstore.core.settings"


def write_setting(conn: Connection, name: str, value: Any) -> None:
    """Store a setting's value (already parsed to its type)."""
    from .tables import settings as settings_table

    conn.info.pop(_MEMO, None)
    conn.execute(sa.delete(settings_table).where(settings_table.c.name == name))
    conn.execute(sa.insert(settings_table), {"name": name, "value": json.dumps(value)})
