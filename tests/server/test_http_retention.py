"""Retention over HTTP (issue 12 wired into issue 11): roots of remote writes, the roots and
gc routes with their scopes, ``missing`` extending leases only for ingest tokens, and the
CLI's retain/release/roots/gc against a real server (both backends).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess

import sqlalchemy as sa
from serverkit import EVSTORE
from test_http_security import _bundle, _tar

import evstore
from evstore.db.tables import blobs, leases

OLD = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)


def _roots(c) -> dict[str, dict]:
    r = c.get("/v1/roots")
    assert r.status_code == 200, r.text
    return {x["root"]: x for x in r.json()["roots"]}


def _code(r, status: int) -> str:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    return r.json()["code"]


def _token_id(token: str) -> str:
    return token.split("_")[1]


def test_writes_root_under_the_body_or_query_root(served_any, store_url):
    served = served_any
    with served.client("ingest") as c:
        doc = {"documents": [{"name": "a.json", "document": {"rooted": "run-7"}}]}
        r = c.post("/v1/ingest", json={**doc, "root": "run-7"})
        assert r.status_code == 200, r.text
        address = r.json()["artifacts"][0]["address"]
        put = c.put("/v1/objects", content=b"put under a root", params={"root": "put/1"})
        assert put.status_code == 201, put.text
        plain = c.put("/v1/objects", content=b"put under the default root")
        bundle = c.post("/v1/bundles", content=_tar(_bundle()), params={"root": "bundle-1"})
        assert bundle.status_code == 200, bundle.text
        found = _roots(c)
        assert _code(c.put("/v1/objects", content=b"x", params={"root": ".bad"}), 400) == (
            "root.name"
        )
        for bad in ("ok\n", "run-7\n"):  # "$" matched before a final newline
            assert _code(c.put("/v1/objects", content=b"x", params={"root": bad}), 400) == (
                "root.name"
            )
            doc_bad = {**doc, "root": bad}
            assert _code(c.post("/v1/ingest", json=doc_bad), 400) == "root.name"
    assert {"run-7", "put/1", "bundle-1", "default"} <= set(found)
    with evstore.open(store_url) as store:
        held = {e["address"] for e in store.retention.entries("run-7")}
        assert address in held
        assert [e["address"] for e in store.retention.entries("put/1")] == [put.json()["address"]]
        assert plain.json()["address"] in {e["address"] for e in store.retention.entries("default")}
        assert bundle.json()["run"]["address"] in {
            e["address"] for e in store.retention.entries("bundle-1")
        }
        refused = evstore.digest_bytes(b"x").address
        assert store.has([refused]) == [refused]  # a bad root name stores nothing


def test_retain_release_roots_and_gc_with_scopes(served_any, store_url, snapshot):
    served = served_any
    with evstore.open(store_url) as store:
        store.set_config("gc.lease-seconds", 0)
        blob = store.put(b"retained over http")
        store.retention.release("default")
        before = snapshot(store)
    ref = blob.digest.address
    with served.client("read") as c:
        assert _code(c.post("/v1/roots/keep/retain", json={"refs": [ref]}), 403) == (
            "http.forbidden"
        )
        assert _code(c.post("/v1/roots/keep/release", json={}), 403) == "http.forbidden"
        assert _roots(c) == {}
    with served.client("ingest") as c:
        assert _code(c.post("/v1/gc", json={"dry_run": True}), 403) == "http.forbidden"
        assert _code(c.post("/v1/roots/k/retain", json={"refs": ["nope"]}), 400) == "ref.syntax"
        missing = "blake3:" + "0" * 64
        assert _code(c.post("/v1/roots/k/retain", json={"refs": [missing]}), 404) == (
            "not-found.blob"
        )
        assert _code(c.post("/v1/roots/k/retain", json={"refs": []}), 400) == "input.invalid"
        assert _code(c.post("/v1/roots/k/retain", json={"refs": [ref], "x": 1}), 400) == (
            "http.request"
        )
        assert _code(c.post("/v1/roots/k/retain", json={"refs": [ref], "until": 5}), 400) == (
            "http.request"
        )
        far = {"refs": [ref], "until": "99999999999w"}  # past datetime's range
        assert _code(c.post("/v1/roots/k/retain", json=far), 400) == "input.invalid"
        assert _code(c.post("/v1/roots/k/release", json={}), 404) == "not-found.root"
        assert _code(c.post("/v1/roots/k/release", json=[]), 400) == "http.request"
    with evstore.open(store_url) as store:
        assert snapshot(store) == before  # every refused request wrote nothing
    with served.client("ingest") as c:
        r = c.post("/v1/roots/team%2Fkeep/retain", json={"refs": [ref], "until": "30d"})
        assert r.status_code == 200, r.text
        assert r.json()["root"] == "team/keep" and r.json()["retained"] == [ref]
        assert r.json()["until"] is not None
        assert _roots(c)["team/keep"]["held"] == 1
    with served.client("admin") as c:
        assert c.post("/v1/gc", json={"dry_run": True}).json()["count"] == 0
        rel = c.post("/v1/roots/team%2Fkeep/release", json={"refs": [ref]})
        assert rel.status_code == 200 and rel.json() == {"root": "team/keep", "released": [ref]}
        assert _code(c.post("/v1/gc", json={"dry_run": "yes"}), 400) == "http.request"
        assert _code(c.post("/v1/gc", json={"batch": 0}), 400) == "http.request"
        dry = c.post("/v1/gc", json={"dry_run": True}).json()
        assert dry["dry_run"] is True and [o["address"] for o in dry["objects"]] == [ref]
        assert dry["bytes"] == len(b"retained over http")
        assert c.get(f"/v1/objects/{ref}").status_code == 200
        done = c.post("/v1/gc", json={"dry_run": False, "batch": 10}).json()
        assert done["count"] == 1 and done["dry_run"] is False
        assert c.get(f"/v1/objects/{ref}").status_code == 404
        events = c.get("/v1/roots/history", params={"limit": 10}).json()["events"]
    ingest_id, admin_id = _token_id(served.tokens["ingest"]), _token_id(served.tokens["admin"])
    actions = [(e["action"], e["actor"], e["root"]) for e in events]
    assert ("retain", ingest_id, "team/keep") in actions
    assert ("release", admin_id, "team/keep") in actions
    assert any(a == "collect" and who == admin_id for a, who, _ in actions)


def _lease(store, address: str):
    with store.db.engine.connect() as conn:
        q = (
            sa.select(leases.c.expires_at)
            .join(blobs, blobs.c.id == leases.c.blob)
            .where(blobs.c.address == address)
        )
        value = conn.execute(q).scalar_one()
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


def test_missing_extends_leases_only_for_ingest_tokens(served, store_url, snapshot):
    with evstore.open(store_url) as store:
        store.set_config("gc.lease-seconds", 3600)
        blob = store.put(b"checked before an upload")
        with store.db.engine.begin() as conn:
            conn.execute(
                sa.update(leases)
                .where(
                    leases.c.blob
                    == sa.select(blobs.c.id)
                    .where(blobs.c.address == blob.digest.blake3)
                    .scalar_subquery()
                )
                .values(expires_at=OLD)
            )
        assert _lease(store, blob.digest.blake3) == OLD
        before = snapshot(store)
    absent = "blake3:" + "1" * 64
    refs = [blob.digest.address, absent]
    with served.client("read") as c:
        r = c.post("/v1/missing", json={"refs": refs})
        assert r.status_code == 200 and r.json() == {"missing": [absent]}
    with evstore.open(store_url) as store:
        assert snapshot(store) == before  # a read token's check writes nothing
    with served.client("ingest") as c:
        r = c.post("/v1/missing", json={"refs": refs})
        assert r.status_code == 200 and r.json() == {"missing": [absent]}
    with evstore.open(store_url) as store:
        assert _lease(store, blob.digest.blake3) > dt.datetime.now(dt.UTC) + dt.timedelta(
            minutes=30
        )


def _ev(*args: str, token: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("EVSTORE_URL", "EVSTORE_TOKEN")}
    env["EVSTORE_TOKEN"] = token
    return subprocess.run(
        [EVSTORE, *args], input=stdin, capture_output=True, env=env, timeout=120, check=False
    )


def test_the_cli_retains_releases_lists_and_collects_remotely(served, store_url, tmp_path):
    url, tokens = served.base, served.tokens
    with evstore.open(store_url) as store:
        store.set_config("gc.lease-seconds", 0)
    f = tmp_path / "kept.txt"
    f.write_bytes(b"kept remotely\n")
    put = _ev("--store", url, "--json", "put", str(f), "--root", "run-9", token=tokens["ingest"])
    assert put.returncode == 0, put.stderr
    address = json.loads(put.stdout)["address"]
    doc = tmp_path / "doc.json"
    doc.write_text('{"remote": "ingest"}')
    ing = _ev(
        "--store", url, "--json", "ingest", str(doc), "--root", "run-9", token=tokens["ingest"]
    )
    assert ing.returncode == 0, ing.stderr
    with evstore.open(store_url) as store:
        held = {e["address"] for e in store.retention.entries("run-9")}
    assert address in held and len(held) == 2
    ret = _ev("--store", url, "--json", "retain", address, "--root", "keep", token=tokens["ingest"])
    assert ret.returncode == 0 and json.loads(ret.stdout)["retained"] == [address]
    denied = _ev("--store", url, "--json", "retain", address, "--root", "k", token=tokens["read"])
    assert denied.returncode == 1
    assert json.loads(denied.stdout)["error"]["code"] == "http.forbidden"
    listed = _ev("--store", url, "--json", "roots", token=tokens["read"])
    names = {r["root"]: r for r in json.loads(listed.stdout)["roots"]}
    assert names["keep"]["entries"] == 1 and names["run-9"]["entries"] == 2
    human = _ev("--store", url, "roots", token=tokens["read"])
    assert b"keep  1/1 held" in human.stdout
    hist = _ev("--store", url, "--json", "roots", "--history", token=tokens["read"])
    assert json.loads(hist.stdout)["events"][0]["action"] == "retain"
    for root in ("run-9", "default"):
        rel = _ev("--store", url, "--json", "release", "--root", root, token=tokens["ingest"])
        assert rel.returncode in (0, 1), rel.stderr  # default may hold nothing
    denied = _ev("--store", url, "--json", "gc", token=tokens["ingest"])
    assert json.loads(denied.stdout)["error"]["code"] == "http.forbidden"
    dry = _ev("--store", url, "--json", "gc", "--dry-run", token=tokens["admin"])
    assert dry.returncode == 0, dry.stderr
    gone = [o["address"] for o in json.loads(dry.stdout)["objects"]]
    assert address not in gone and len(gone) == 1  # "keep" still holds the file
    vac = _ev("--store", url, "--json", "gc", "--vacuum", token=tokens["admin"])
    assert json.loads(vac.stdout)["error"]["code"] == "remote.unsupported"
    aud = _ev("--store", url, "--json", "audit", token=tokens["admin"])  # run by the server
    assert aud.returncode == 0 and json.loads(aud.stdout)["verdict"] == "pass", aud.stdout
    done = _ev("--store", url, "gc", token=tokens["admin"])
    assert done.returncode == 0 and b"deleted 1 object(s)" in done.stdout
    with evstore.open(store_url) as store:
        assert store.has([address]) == [] and store.has(gone) == gone


def test_the_library_client_roots_retains_and_collects(served_any, store_url):
    served = served_any
    with evstore.open(store_url) as store:
        store.set_config("gc.lease-seconds", 0)
    with evstore.open(served.base, token=served.tokens["admin"]) as remote:
        ops = remote.retention
        with ops.rooting("lib-run"):
            assert evstore.current_root() == "lib-run"
            put = remote.put(b"rooted by the library client")
            report = remote.ingest([evstore.Document(b'{"lib": 1}', name="lib.json")])
        assert evstore.current_root() == "default"
        address = put.digest.address
        doc = report.results[0].digest.address
        held = {r["root"]: r for r in ops.roots()}
        assert held["lib-run"]["entries"] == 2
        until = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
        kept = ops.retain([address], "lib-keep", until=until)
        assert kept["retained"] == [address] and kept["until"].startswith(str(until.year))
        assert ops.missing([address, "blake3:" + "2" * 64]) == ["blake3:" + "2" * 64]
        assert ops.release("lib-run") == {"root": "lib-run", "released": sorted([address, doc])}
        assert ops.release("lib-keep", [address])["released"] == [address]
        assert ops.history(2)[0]["action"] == "release"
        progress: list[tuple[int, int]] = []
        dry = ops.gc(dry_run=True, progress=lambda a, b: progress.append((a, b)))
        assert dry.dry_run and {o["address"] for o in dry.objects} == {address, doc}
        assert dry.count == 2 and dry.to_dict()["count"] == 2 and progress == [(2, 2)]
        for bad in ({"vacuum_after": True}, {"batch": 0}):
            try:
                ops.gc(**bad)
            except evstore.EvstoreError as err:
                assert err.code in ("remote.unsupported", "input.invalid")
            else:
                raise AssertionError(f"gc({bad}) was sent")
        run = ops.audit(record=False)  # run by the server (issue 28)
        assert run.verdict == "pass" and run.id is None
        recorded = ops.audit()
        assert ops.audits(1)[0]["id"] == recorded.id
        try:
            ops.audit(["lib-keep"])  # released above: as locally
        except evstore.EvstoreError as err:
            assert err.code == "not-found.root"
        else:
            raise AssertionError("an audit of a root that holds nothing passed")
        assert ops.gc().count == 2
        assert remote.has([address, doc]) == [address, doc]
