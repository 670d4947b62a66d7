"""One time spelling (store/core/times.py): RFC 3339 UTC, Z, six fraction digits."""

from __future__ import annotations

import datetime as dt

import pytest

from evstore.core.times import utc_text

UTC = dt.UTC


@pytest.mark.parametrize(
    ("when", "text"),
    [
        (dt.datetime(2026, 12, 2, 1, 2, 3, tzinfo=UTC), "2026-12-02T01:02:03.000000Z"),
        (dt.datetime(2026, 12, 2, 1, 2, 3, 456, tzinfo=UTC), "2026-12-02T01:02:03.000456Z"),
        # naive: SQLite's CURRENT_TIMESTAMP, UTC without an offset
        (dt.datetime(2026, 12, 2, 1, 2, 3), "2026-12-02T01:02:03.000000Z"),
        (
            dt.datetime(2026, 12, 2, 3, 2, 3, 5, tzinfo=dt.timezone(dt.timedelta(hours=2))),
            "2026-12-02T01:02:03.000005Z",
        ),
        ("2026-12-02 01:02:03", "2026-12-02T01:02:03.000000Z"),
        ("2026-12-02 01:02:03.250", "2026-12-02T01:02:03.250000Z"),
        ("2026-12-02T01:02:03+00:00", "2026-12-02T01:02:03.000000Z"),
        ("2026-12-02T01:02:03.5-01:00", "2026-12-02T02:02:03.500000Z"),
        ("2026-12-02T01:02:03.000456Z", "2026-12-02T01:02:03.000456Z"),
        ("not a time", "not a time"),
    ],
)
def test_one_spelling(when, text):
    assert utc_text(when) == text


def test_the_log_entries_spelling_is_unchanged():
    """A log entry's bytes are in the Merkle tree: its time keeps the spelling it always had."""
    when = dt.datetime(1970, 1, 1, tzinfo=UTC)
    for _ in range(2000):  # every microsecond digit and every field width
        assert utc_text(when) == when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        when += dt.timedelta(days=7, hours=5, minutes=3, seconds=11, microseconds=123457)
    naive = dt.datetime(2026, 1, 2, 3, 4, 5, 6)
    assert utc_text(naive) == naive.replace(tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
