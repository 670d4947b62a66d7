"""Times as evstore writes them: RFC 3339 in UTC, ``Z``, to the microsecond; one spelling.

Every time evstore prints, answers or records in a document (``accepted_at``, a root's
``until``, retention history ``at``, audit ``started_at``/``finished_at``, token
``created_at``/``revoked_at``, a checkpoint's ``signed_at``, a log entry's ``accepted_at``)
is :func:`utc_text`: ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (RFC 3339 section 5.6, always six
fraction digits, so the text sorts as the time does). The digits are the stored time's:

* PostgreSQL (``timestamptz``) keeps microseconds.
* SQLite keeps what is written: ``accepted_at`` is ``CURRENT_TIMESTAMP``, whole seconds
  (``.000000``); the times evstore writes itself keep milliseconds (retention history,
  audits, an ``until`` from a duration: the transaction's time) or microseconds (tokens,
  log keys and checkpoints: the process clock; an ``until`` given as a time).

docs/design.md ("Times") has the table.

A log entry's bytes are in the Merkle tree; their time has always had this spelling
(docs/log.md), so entries written before and after read the same.
"""

from __future__ import annotations

import datetime as _dt

__all__ = ["utc_text"]


def utc_text(when: _dt.datetime | str) -> str:
    """``when`` as RFC 3339 UTC with microseconds, e.g. ``2026-12-02T01:02:03.000456Z``.

    Args:
        when: a datetime (naive is taken as UTC: SQLite's ``CURRENT_TIMESTAMP``) or ISO 8601
            text as a database may return it (``2026-12-02 01:02:03``, ``...+00:00``).

    Returns:
        The time in UTC; text that is no ISO 8601 time is returned as it is (a damaged row
        is shown, not hidden: ``evstore check`` names it).
    """
    if isinstance(when, str):
        try:
            t = _dt.datetime.fromisoformat(when.strip())
        except ValueError:
            return when
    else:
        t = when
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.UTC)
    return t.astimezone(_dt.UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
