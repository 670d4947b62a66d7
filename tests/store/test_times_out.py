"""Every time evstore answers has one spelling (RFC 3339 UTC, Z, microseconds), both backends."""

from __future__ import annotations

import datetime as dt
import re

import sqlalchemy as sa

import evstore
from evstore.db.tables import artifacts, retention_history

SPELLING = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def _spelt(value) -> bool:
    return isinstance(value, str) and SPELLING.fullmatch(value) is not None


def test_every_answered_time_has_one_spelling(store, backend):
    address = store.ingest({"n": 1}).results[0].digest.address
    (info,) = store.ls()
    (kind,) = store.stat(address)["artifacts"]
    (described,) = evstore.describe_artifact(store, address)["kinds"]
    (listed,) = store.iter_artifacts()
    times = [info.accepted_at, kind["accepted_at"], described["accepted_at"], listed.accepted_at]
    assert len(set(times)) == 1 and all(_spelt(t) for t in times), times
    with store.db.engine.connect() as conn:
        stored = conn.execute(sa.select(artifacts.c.accepted_at)).scalar_one()
    if backend == "postgresql":  # timestamptz: the microseconds are shown, not cut
        assert times[0] == stored.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    else:  # CURRENT_TIMESTAMP: whole seconds
        assert times[0].endswith(".000000Z")

    token = evstore.create_token(store, "read", "t")
    revoked = evstore.revoke_token(store, token["id"])
    (row,) = evstore.list_tokens(store)
    for value in (token["created_at"], revoked["revoked_at"], row["created_at"], row["revoked_at"]):
        assert _spelt(value), value

    kept = store.retention.retain([address], "hold", until="30d")
    (root,) = [r for r in store.retention.roots() if r["root"] == "hold"]
    (entry,) = store.retention.entries("hold")
    event = next(e for e in store.retention.history() if e["action"] == "retain")
    for value in (kept["until"], root["until"], entry["until"], event["at"]):
        assert _spelt(value), value
    assert event["detail"]["until"] == kept["until"] == entry["until"]

    run = store.retention.audit(["hold"])
    (recorded,) = store.retention.audits()
    for value in (run.started_at, run.finished_at, recorded["started_at"], recorded["finished_at"]):
        assert _spelt(value), value

    store.log.integrate()
    (logged,) = [r for r in store.log.entries() if r["entry"]["op"] == "ingest"]
    assert _spelt(logged["entry"]["accepted_at"])


def test_history_written_before_shows_its_until_in_todays_spelling(store):
    with store.db.engine.begin() as conn:
        conn.execute(
            sa.insert(retention_history).values(
                at=dt.datetime.now(dt.UTC),
                actor="local",
                action="retain",
                root="old",
                address=None,
                detail='{"until": "2999-01-01T00:00:00+00:00"}',
            )
        )
    (event,) = store.retention.history()
    assert event["detail"] == {"until": "2999-01-01T00:00:00.000000Z"}
