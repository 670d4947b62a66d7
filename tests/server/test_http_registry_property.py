"""A property-based run of the ``/v2/`` routes against a real served store (issue 27).

A hypothesis state machine drives one server (both backends) with every route of
docs/registry.md: blob uploads (monolithic, and chunked ``POST``/``PATCH``/``PUT``, status
``GET`` and ``DELETE``), manifest ``PUT`` (good closures, closures with a lying member, a
wrong kind, no root, not JSON; to ``latest``, a digest, the root's tag, a bad tag), ``GET``
and ``HEAD`` of manifests and blobs, tags lists with paging, referrers, and paths and methods
no route takes; good and bad repository names; an ingest token, a read token, none.

After every request:

* no answer is a 5xx;
* every 4xx of a ``GET``/``PUT``/``POST``/``PATCH``/``DELETE`` carries the OCI error body
  (``{"errors": [{"code", "message", "detail"}]}``, ``detail.code`` an evstore code);
* an upload request (whatever its answer) and a refused manifest leave the store exactly as
  it was (every row and byte): nothing of a push is kept until its manifest is accepted;
* an accepted manifest is served back byte for byte by the digest its answer named.

Examples are bounded (derandomized in CI; ``HYPOTHESIS_PROFILE=dev`` explores at random).
"""

from __future__ import annotations

import hashlib
import json
import os

import httpx
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    rule,
    run_state_machine_as_test,
)
from serverkit import make_tokens, start_thread
from test_http_registry_push import _MANIFEST, _source

import evstore

#: The server's object size limit: some blobs of the pool are over it.
LIMIT = 4096
NAMES = ["prop/a", "prop/b", "c", "Bad/Upper", "x/%2E%2E/y", "a//b", "%2E", "ok/" + "n" * 300]


def _oci_error(r: httpx.Response) -> None:
    """A 4xx answer (not to HEAD) has the OCI error body."""
    body = r.json()
    (err,) = body["errors"]
    assert isinstance(err["code"], str) and err["code"].isupper(), body
    assert isinstance(err["message"], str) and err["message"], body
    assert isinstance(err["detail"]["code"], str) and err["detail"]["code"], body


class RegistryMachine(RuleBasedStateMachine):
    """Requests to the /v2/ routes of one served store, checked after each."""

    sessions = Bundle("sessions")

    def __init__(self, ctx: dict) -> None:
        super().__init__()
        self.ctx = ctx
        self.clients: dict[str, httpx.Client] = ctx["clients"]
        self.last: httpx.Response | None = None

    # ------------------------------------------------------------------ helpers

    def _send(self, who: str, method: str, url: str, **kw) -> httpx.Response:
        r = self.clients[who].request(method, url, **kw)
        assert r.status_code < 500, (method, url, r.status_code, r.text)
        what = "manifest" if "/manifests/" in url else "upload" if "/uploads/" in url else "other"
        self.ctx["seen"].add((what, method, r.status_code))
        if 400 <= r.status_code < 500 and method != "HEAD":
            _oci_error(r)
        self.last = r
        return r

    def _unchanged(self, who: str, method: str, url: str, **kw) -> httpx.Response:
        """Send a request that must not change the store."""
        before = self.ctx["snapshot"](self.ctx["store"])
        r = self._send(who, method, url, **kw)
        assert self.ctx["snapshot"](self.ctx["store"]) == before, (method, url, r.status_code)
        return r

    # ------------------------------------------------------------------ uploads

    @rule(
        target=sessions,
        name=st.sampled_from(NAMES),
        who=st.sampled_from(["ingest", "ingest", "ingest", "read", "none"]),
    )
    def start_upload(self, name: str, who: str):
        r = self._unchanged(who, "POST", f"/v2/{name}/blobs/uploads/")
        if r.status_code == 202:
            assert r.headers["location"].startswith(f"/v2/{name}/blobs/uploads/")
            return {"where": r.headers["location"], "data": b""}
        return {"where": f"/v2/{name}/blobs/uploads/{'0' * 32}", "data": b""}

    @rule(
        session=sessions,
        blob=st.integers(0, 1000),
        split=st.integers(0, 100),
        in_order=st.booleans(),
    )
    def patch_upload(self, session: dict, blob: int, split: int, in_order: bool):
        data = self.ctx["pool"][blob % len(self.ctx["pool"])]
        chunk = data[: len(data) * split // 100]
        start = len(session["data"]) if in_order else len(session["data"]) + 1
        headers = {"Content-Range": f"{start}-{start + max(len(chunk), 1) - 1}"}
        r = self._unchanged("ingest", "PATCH", session["where"], content=chunk, headers=headers)
        if r.status_code == 202:
            session["data"] += chunk
            assert r.headers["range"] == f"0-{max(len(session['data']) - 1, 0)}"

    @rule(session=consumes(sessions), how=st.sampled_from(["right", "lie", "twice", "none"]))
    def finish_upload(self, session: dict, how: str):
        right = "sha256:" + hashlib.sha256(session["data"]).hexdigest()
        params: list[tuple[str, str]] = {
            "right": [("digest", right)],
            "lie": [("digest", "sha256:" + "3" * 64)],
            "twice": [("digest", "sha256:" + "3" * 64), ("digest", right)],
            "none": [],
        }[how]
        r = self._unchanged("ingest", "PUT", session["where"], params=params)
        if r.status_code == 201:
            assert how == "right" and r.headers["docker-content-digest"] == right
        elif how == "right":  # a bad name, or an upload never started (or dropped)
            assert r.json()["errors"][0]["code"] in ("NAME_INVALID", "BLOB_UPLOAD_UNKNOWN")

    @rule(session=consumes(sessions), verb=st.sampled_from(["GET", "DELETE"]))
    def status_or_cancel(self, session: dict, verb: str):
        self._unchanged("ingest", verb, session["where"])

    @rule(
        name=st.sampled_from(NAMES),
        blob=st.integers(0, 1000),
        lie=st.booleans(),
        who=st.sampled_from(["ingest", "ingest", "read", "none"]),
    )
    def monolithic_upload(self, name: str, blob: int, lie: bool, who: str):
        data = self.ctx["pool"][blob % len(self.ctx["pool"])]
        digest = "sha256:" + ("4" * 64 if lie else hashlib.sha256(data).hexdigest())
        url = f"/v2/{name}/blobs/uploads/"
        r = self._unchanged(who, "POST", url, params={"digest": digest}, content=data)
        if r.status_code == 201:
            assert not lie and len(data) <= LIMIT and who == "ingest"

    @rule(name=st.sampled_from(NAMES), which=st.sampled_from(["src", "other"]))
    def upload_closure(self, name: str, which: str):
        """Every blob of a closure, monolithically (so that its manifest can be accepted)."""
        for data in self.ctx[which]["blobs_bytes"]:
            digest = "sha256:" + hashlib.sha256(data).hexdigest()
            url = f"/v2/{name}/blobs/uploads/"
            self._unchanged("ingest", "POST", url, params={"digest": digest}, content=data)

    # ------------------------------------------------------------------ manifests

    @rule(
        name=st.sampled_from(NAMES),
        which=st.sampled_from(["src", "other"]),
        variant=st.sampled_from(["good", "good", "lying", "kind", "rootless", "not-json"]),
        reference=st.sampled_from(["latest", "digest", "root", "v1", "sha256:" + "5" * 64]),
    )
    def put_manifest(self, name: str, which: str, variant: str, reference: str):
        closure = self.ctx[which]
        doc = json.loads(closure["manifest"])
        if variant == "lying":
            doc["layers"][1]["annotations"]["dev.evstore.address"] = "blake3:" + "0" * 64
        elif variant == "kind":
            doc["layers"][0]["annotations"]["dev.evstore.kind"] = "fragment"
        elif variant == "rootless":
            del doc["annotations"]["dev.evstore.root"]
        data = b"{not json" if variant == "not-json" else evstore.dumps(doc)
        ref = {
            "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
            "root": closure["root"][7:],
        }.get(reference, reference)
        before = self.ctx["snapshot"](self.ctx["store"])
        r = self._send(
            "ingest",
            "PUT",
            f"/v2/{name}/manifests/{ref}",
            content=data,
            headers={"Content-Type": _MANIFEST},
        )
        if r.status_code != 201:
            assert self.ctx["snapshot"](self.ctx["store"]) == before, r.text
            return
        assert variant == "good", r.text
        served = self._send(
            "read", "GET", f"/v2/{name}/manifests/{r.headers['docker-content-digest']}"
        )
        assert served.status_code == 200 and served.content == closure["manifest"]

    # ------------------------------------------------------------------ reads

    @rule(
        name=st.sampled_from(NAMES),
        which=st.sampled_from(["src", "other"]),
        reference=st.sampled_from(
            ["latest", "digest", "root", "v1", "sha256:zz", "sha256:" + "6" * 64]
        ),
        method=st.sampled_from(["GET", "HEAD"]),
        who=st.sampled_from(["read", "none"]),
    )
    def get_manifest(self, name: str, which: str, reference: str, method: str, who: str):
        closure = self.ctx[which]
        ref = {"digest": closure["digest"], "root": closure["root"][7:]}.get(reference, reference)
        r = self._send(who, method, f"/v2/{name}/manifests/{ref}")
        if r.status_code == 200 and method == "GET":
            assert (
                r.headers["docker-content-digest"]
                == "sha256:" + hashlib.sha256(r.content).hexdigest()
            )

    @rule(
        name=st.sampled_from(NAMES),
        blob=st.integers(0, 1000),
        bad=st.sampled_from([None, "sha256:abc", "md5:" + "0" * 32, "sha256:" + "7" * 64]),
        method=st.sampled_from(["GET", "HEAD"]),
        ranged=st.booleans(),
    )
    def get_blob(self, name: str, blob: int, bad: str | None, method: str, ranged: bool):
        data = self.ctx["pool"][blob % len(self.ctx["pool"])]
        digest = bad or "sha256:" + hashlib.sha256(data).hexdigest()
        headers = {"Range": "bytes=0-3"} if ranged else {}
        r = self._send("read", method, f"/v2/{name}/blobs/{digest}", headers=headers)
        if r.status_code == 200 and method == "GET":
            assert r.content == data
        if r.status_code == 206 and method == "GET":
            assert r.content == data[:4]

    @rule(
        name=st.sampled_from(NAMES),
        n=st.sampled_from([None, "0", "1", "2", "-1", "x", "99999999999999999999"]),
        last=st.sampled_from([None, "latest", "", "zzz"]),
    )
    def tags_list(self, name: str, n: str | None, last: str | None):
        params = {k: v for k, v in (("n", n), ("last", last)) if v is not None}
        r = self._send("read", "GET", f"/v2/{name}/tags/list", params=params)
        if r.status_code == 200:
            body = r.json()
            assert body["tags"] == sorted(body["tags"])

    @rule(
        name=st.sampled_from(NAMES),
        blob=st.integers(0, 1000),
        artifact=st.sampled_from([None, "application/vnd.evstore.closure.v1", "x/y"]),
    )
    def referrers(self, name: str, blob: int, artifact: str | None):
        data = self.ctx["pool"][blob % len(self.ctx["pool"])]
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        params = {"artifactType": artifact} if artifact else {}
        r = self._send("read", "GET", f"/v2/{name}/referrers/{digest}", params=params)
        if r.status_code == 200:
            assert r.json()["mediaType"] == "application/vnd.oci.image.index.v1+json"

    @rule(
        method=st.sampled_from(["GET", "PUT", "POST", "PATCH", "DELETE"]),
        path=st.text(alphabet="abc/:._-%2E0", min_size=0, max_size=40),
    )
    def any_path(self, method: str, path: str):
        self._unchanged("ingest", method, "/v2/" + path, content=b"" if method != "GET" else None)

    @invariant()
    def nothing_went_wrong(self):
        assert self.last is None or self.last.status_code < 500


def test_the_v2_routes_under_a_state_machine(store_url, tmp_path, snapshot):
    """No 5xx, OCI error bodies, nothing kept from refused pushes: both backends."""
    dev = os.environ.get("HYPOTHESIS_PROFILE") == "dev"
    src = _source(store_url, tmp_path)
    other = _source(store_url, tmp_path, "b")
    pool = [
        p.read_bytes() for t in ("", "b") for p in (tmp_path / f"export{t}/blobs/sha256").iterdir()
    ]
    pool += [b"", b"x" * (LIMIT + 1), os.urandom(100)]
    for closure, tag in ((src, ""), (other, "b")):
        closure["blobs_bytes"] = [
            p.read_bytes() for p in sorted((tmp_path / f"export{tag}/blobs/sha256").iterdir())
        ]
    tokens = make_tokens(store_url)
    server = start_thread({None: store_url}, limits=evstore.ServerLimits(object_bytes=LIMIT))
    server.tokens = tokens
    clients = {
        "ingest": server.client("ingest"),
        "read": server.client("read"),
        "none": server.client(None),
    }
    try:
        with evstore.open(store_url) as store:
            ctx = {
                "store": store,
                "snapshot": snapshot,
                "seen": set(),
                "clients": clients,
                "pool": pool,
                "src": src,
                "other": other,
            }
            run_state_machine_as_test(
                lambda: RegistryMachine(ctx),
                settings=settings(
                    max_examples=40 if dev else 12,
                    stateful_step_count=25,
                    deadline=None,
                    derandomize=not dev,
                    database=None,
                    suppress_health_check=list(HealthCheck),
                    # no shrinking outside dev: each step is a request, a shrink takes minutes
                    phases=list(Phase) if dev else [Phase.explicit, Phase.generate],
                ),
            )
    finally:
        for c in clients.values():
            c.close()
        server.stop()
    # the run reached both sides of the routes that write: accepted and refused
    seen = ctx["seen"]
    for what, method, status in [
        ("manifest", "PUT", 201),
        ("upload", "POST", 201),
        ("upload", "POST", 202),
        ("upload", "PATCH", 202),
        ("upload", "PUT", 201),
    ]:
        assert (what, method, status) in seen, sorted(seen)
    assert any(w == "manifest" and m == "PUT" and 400 <= s < 500 for w, m, s in seen)
