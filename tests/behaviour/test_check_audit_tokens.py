"""``check``, the audits and tokens of evstore.StoreProtocol (issue 28): one specification.

A local store runs them beside its database; a remote one asks its server (admin token),
which runs and records them. Each test roots, writes and asserts about its own data in the
module's shared store; errors are compared whole with the local reference store's.
"""

from __future__ import annotations

import pytest

import evstore


def _error(call, store) -> dict:
    with pytest.raises(evstore.EvstoreError) as exc:
        run = call(store)
        list(run)  # a check's faults come as it runs
    return exc.value.to_dict()


def test_check_is_a_run_of_faults_with_its_counters(any_store, unique):
    any_store.put(f"checked {unique}".encode())
    seen: list[tuple[int, int]] = []
    audit_warnings: list[dict[str, str]] = []
    run = any_store.check(
        lambda done, total: seen.append((done, total)), record=False, warnings=audit_warnings
    )
    faults = list(run)
    assert faults == []
    assert run.checked >= 1 and run.recorded == 0 and run.not_recorded is not None
    assert seen and seen[-1][0] == seen[-1][1] == run.checked
    assert isinstance(any_store.recorded_warnings(), list)
    run.close()  # closing an ended run is harmless
    recorded = any_store.check(kinds=("blob",))
    assert list(recorded) == [] and recorded.recorded == recorded.checked >= 1


def test_check_refuses_bad_options_as_locally(any_store, reference):
    for name, call in (
        ("sample", lambda s: s.check(sample=2)),
        ("sample nan", lambda s: s.check(sample=float("nan"))),  # was a ValueError
        ("sample -inf", lambda s: s.check(sample=float("-inf"))),
        ("since", lambda s: s.check(since="not a time")),
        ("kind", lambda s: s.check(kinds=("no-such-kind",))),
    ):
        assert _error(call, any_store) == _error(call, reference), name


def test_an_audit_is_run_and_recorded_as_locally(any_store, unique):
    root = f"r{unique[:12]}"
    with any_store.retention.rooting(root):
        put = any_store.put(f"audited {unique}".encode())
    seen: list[tuple[int, int]] = []
    run = any_store.retention.audit([root], progress=lambda d, t: seen.append((d, t)))
    assert isinstance(run, evstore.AuditRun)
    assert run.verdict == "pass" and run.id is not None and seen[-1] == (1, 1)
    assert [r["root"] for r in run.roots] == [root]
    assert run.roots[0]["entries"][0]["address"] == put.digest.address
    assert any_store.retention.audits(1)[0]["id"] == run.id
    quiet = any_store.retention.audit([root], record=False)
    assert quiet.verdict == "pass" and quiet.id is None
    assert any_store.retention.audits(1)[0]["id"] == run.id  # not recorded


def test_audit_errors_are_the_local_ones(any_store, reference, unique):
    for name, call in (
        ("root name", lambda s: s.retention.audit(["Not A Root!"])),
        ("newline root", lambda s: s.retention.audit(["keep\n"])),
        ("newline retain", lambda s: s.retention.retain(["blake3:" + "0" * 64], "keep\n")),
        ("newline release", lambda s: s.retention.release("keep\n")),
        ("surrogate release", lambda s: s.retention.release("k\udcff")),
        ("sample", lambda s: s.retention.audit(sample=0)),
        ("sample nan", lambda s: s.retention.audit(sample=float("nan"))),  # was a ValueError
        ("sample inf", lambda s: s.retention.audit(sample=float("inf"))),
        ("since", lambda s: s.retention.audit(since="not a time")),
        ("one string", lambda s: s.retention.audit("keep")),
        ("no such root", lambda s: s.retention.audit([f"none-{unique[:8]}"])),
        # PostgreSQL answered a negative limit with store.database, SQLite listed everything,
        # the server http.request
        ("audits -1", lambda s: s.retention.audits(-1)),
        ("audits 0", lambda s: s.retention.audits(0)),
        ("audits huge", lambda s: s.retention.audits(10**6)),
        ("history -1", lambda s: s.retention.history(-1)),
        ("history 0", lambda s: s.retention.history(0)),
    ):
        assert _error(call, any_store) == _error(call, reference), name


def test_tokens_are_made_listed_and_revoked_as_locally(any_store, unique):
    made = evstore.create_token(any_store, "read", f"t {unique}")
    assert set(made) >= {"id", "token", "scope", "name", "created_at"}
    assert made["token"].startswith(f"evst_{made['id']}_")
    listed = {t["id"]: t for t in evstore.list_tokens(any_store)}
    assert listed[made["id"]]["revoked_at"] is None
    assert "token" not in listed[made["id"]]
    gone = evstore.revoke_token(any_store, made["id"])
    assert gone["id"] == made["id"] and gone["revoked"] is True
    again = evstore.revoke_token(any_store, made["id"])  # the same answer
    assert again == gone
    listed = {t["id"]: t for t in evstore.list_tokens(any_store)}
    assert listed[made["id"]]["revoked_at"] == gone["revoked_at"]
    with pytest.raises(evstore.EvstoreError) as exc:
        evstore.create_token(any_store, "root")
    assert exc.value.code == "token.scope"
    with pytest.raises(evstore.EvstoreError) as exc:
        evstore.revoke_token(any_store, "0" * 12)
    assert exc.value.code == "not-found.token"
