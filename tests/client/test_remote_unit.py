"""The remote store against scripted servers (httpx.MockTransport): verification, retries,
backoff bounds, problem documents, lying and broken servers. No network, no sleeping."""

import base64
import hashlib
import io
import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import blake3
import httpx
import pytest

import evstore
from evstore.client import RemoteStore, RetryPolicy
from evstore.client.http import Http, display_url, is_remote_url, rebuild_error

URL = "http://evstore.test:8080/acme"
TOKEN = "s3cret-token-value"
DATA = b"hello remote\n"
ADDRESS = "blake3:" + blake3.blake3(DATA).hexdigest()
SHA_HEX = hashlib.sha256(DATA).hexdigest()
SHA_B64 = base64.urlsafe_b64encode(hashlib.sha256(DATA).digest()).rstrip(b"=").decode()
OTHER = b"other bytes\n"


def forms(data: bytes) -> dict:
    d = evstore.digest_bytes(data)
    return dict(d.forms())


def problem(status: int, code: str, message: str, **extra) -> httpx.Response:
    fault = {"family": extra.pop("family", "input"), "code": code, "message": message}
    fault.update({"rule": extra.get("rule", ""), "pointer": extra.get("pointer", "")})
    if "path" in extra:
        fault["path"] = extra["path"]
    if "details" in extra:
        fault["details"] = extra["details"]
    body = {
        "type": f"https://evstore.dev/errors/{code}",
        "title": "x",
        "status": status,
        "detail": message,
        "code": code,
        "rule": fault["rule"],
        "pointer": fault["pointer"],
        "errors": [fault],
    }
    return httpx.Response(
        status,
        content=json.dumps(body).encode(),
        headers={"Content-Type": "application/problem+json", **extra.get("headers", {})},
    )


class Script:
    """A transport handler answering from a list of callables/responses, recording requests."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        if callable(answer):
            return answer(request)
        return answer


def remote(script, **policy) -> tuple[RemoteStore, list[float]]:
    sleeps: list[float] = []
    store = RemoteStore(
        URL,
        token=TOKEN,
        transport=httpx.MockTransport(script),
        policy=RetryPolicy(**policy) if policy else None,
        sleep=sleeps.append,
    )
    return store, sleeps


def obj(data: bytes, **headers) -> httpx.Response:
    return httpx.Response(200, content=data, headers={"ETag": f'"{ADDRESS}"', **headers})


# -- verification of what the server sends --------------------------------------------------


@pytest.mark.parametrize("ref", [ADDRESS, f"sha256:{SHA_HEX}", f"sha256:{SHA_B64}"])
def test_get_returns_bytes_that_hash_to_the_ref(ref):
    script = Script(obj(DATA))
    store, _ = remote(script)
    assert store.get(ref) == DATA
    req = script.requests[0]
    assert req.url.path == "/acme/v1/objects/" + ref
    assert req.headers["Authorization"] == f"Bearer {TOKEN}"


@pytest.mark.parametrize("ref", [ADDRESS, f"sha256:{SHA_HEX}", f"object-store:sha256:{SHA_B64}"])
def test_a_lying_server_is_refused_whatever_its_headers_say(ref):
    # Other bytes, with the headers of the right ones: the client hashes what it got.
    sha = base64.b64encode(hashlib.sha256(DATA).digest()).decode()
    store, _ = remote(Script(obj(OTHER, **{"Repr-Digest": f"sha-256=:{sha}:"})))
    with pytest.raises(evstore.CorruptionError) as exc:
        store.get(ref)
    assert exc.value.code == "remote.digest"
    assert exc.value.details["ref"] == ref
    assert TOKEN not in str(exc.value)


def test_a_wrong_header_with_the_right_bytes_is_ignored():
    store, _ = remote(Script(obj(DATA, ETag='"blake3:' + "0" * 64 + '"', **{"Repr-Digest": "x"})))
    assert store.get(ADDRESS) == DATA


def test_open_blob_verifies_before_the_first_chunk_and_streams_after():
    store, _ = remote(Script(obj(DATA)))
    with store.open_blob(ADDRESS) as (digest, chunks):
        assert digest.address == ADDRESS and digest.size == len(DATA)
        assert digest.sha256 == SHA_HEX
        assert b"".join(chunks) == DATA
    store, _ = remote(Script(obj(OTHER)))
    with pytest.raises(evstore.CorruptionError), store.open_blob(ADDRESS) as (_, chunks):
        pytest.fail("no chunk may be handed out before verification")


def test_open_blob_unverified_first_raises_after_the_last_chunk():
    store, _ = remote(Script(obj(OTHER)))
    with store.open_blob(ADDRESS, verify_first=False) as (digest, chunks):
        assert digest.size == len(OTHER)  # the announced length, for a progress bar
        with pytest.raises(RuntimeError):
            digest.address  # noqa: B018 - unknown until verified
        got = b""
        with pytest.raises(evstore.CorruptionError) as exc:
            for c in chunks:
                got += c
        assert got == OTHER and exc.value.code == "remote.digest"
    store, _ = remote(Script(obj(DATA)))
    with store.open_blob(ADDRESS, verify_first=False) as (digest, chunks):
        assert b"".join(chunks) == DATA
        assert digest.address == ADDRESS and digest.forms()["sha256"] == "sha256:" + SHA_HEX


class Truncated(httpx.SyncByteStream):
    def __iter__(self):
        yield DATA[:5]
        raise httpx.RemoteProtocolError("peer closed connection without sending complete body")


def test_a_truncated_body_is_a_typed_protocol_error():
    answer = httpx.Response(200, headers={"Content-Length": str(len(DATA))}, stream=Truncated())
    store, _ = remote(Script(answer))
    with pytest.raises(evstore.StoreStateError) as exc:
        store.get(ADDRESS)
    assert exc.value.code == "remote.protocol"
    assert URL in exc.value.message and TOKEN not in exc.value.message


def test_a_500_without_a_body_is_remote_protocol_and_not_retried():
    script = Script(httpx.Response(500))
    store, sleeps = remote(script)
    with pytest.raises(evstore.StoreStateError) as exc:
        store.get(ADDRESS)
    assert exc.value.code == "remote.protocol" and exc.value.details["status"] == 500
    assert len(script.requests) == 1 and sleeps == []


def test_a_500_corruption_problem_is_the_local_corruption_error():
    store, _ = remote(
        Script(problem(500, "corruption.digest", "stored bytes do not hash", family="corruption"))
    )
    with pytest.raises(evstore.CorruptionError) as exc:
        store.get(ADDRESS)
    assert exc.value.code == "corruption.digest"


def test_problem_documents_become_the_same_typed_error():
    rule = "templiqx-evidence-fragment-v1alpha1#offset-and-digest-invariants"
    answer = problem(
        422,
        "fragment.range",
        "end_offset beyond the content",
        family="contract",
        rule=rule,
        pointer="/end_offset",
        path="frag.json",
        details={"end": 9},
    )
    store, _ = remote(Script(answer))
    with pytest.raises(evstore.ContractError) as exc:
        store.ingest([evstore.Document(b"{}", name="frag.json")])
    err = exc.value
    assert type(err).__name__ == "FragmentError"
    assert (err.code, err.pointer, err.rule, err.path) == (
        "fragment.range",
        "/end_offset",
        rule,
        "frag.json",
    )
    assert err.details == {"end": 9}
    assert str(err) == "frag.json: fragment.range at /end_offset: end_offset beyond the content"


def test_an_unknown_code_keeps_its_text_in_its_family():
    err = rebuild_error({"code": "future.thing", "family": "not-found", "message": "m"}, 404)
    assert isinstance(err, evstore.NotFound) and err.code == "future.thing"
    err = rebuild_error({"code": "future.thing", "message": "m"}, 409)
    assert isinstance(err, evstore.BindingConflict)


def test_ref_syntax_fails_before_any_request():
    script = Script(obj(DATA))
    store, _ = remote(script)
    for call in (store.get, store.stat, lambda r: store.has([r]), store.warnings):
        with pytest.raises(evstore.RefSyntaxError):
            call("blake3:XYZ")
    assert script.requests == []


# -- retries and backoff --------------------------------------------------------------------


def test_connection_errors_are_retried_with_bounded_exponential_backoff():
    script = Script(httpx.ConnectError("refused"), httpx.ConnectError("refused"), obj(DATA))
    store, sleeps = remote(script, retries=4, backoff=0.5, max_backoff=8)
    assert store.get(ADDRESS) == DATA
    assert len(script.requests) == 3
    assert 0.25 <= sleeps[0] <= 0.5 and 0.5 <= sleeps[1] <= 1.0


def test_backoff_doubles_up_to_its_ceiling():
    policy = RetryPolicy(retries=10, backoff=0.25, max_backoff=2.0)
    for attempt in range(10):
        ceiling = min(2.0, 0.25 * 2**attempt)
        for _ in range(20):
            assert ceiling / 2 <= policy.delay(attempt) <= ceiling


def test_the_final_connection_failure_is_remote_unreachable_with_the_url_only():
    script = Script(httpx.ConnectError("refused"))
    store, sleeps = remote(script, retries=3, backoff=0.1)
    with pytest.raises(evstore.StoreStateError) as exc:
        store.get(ADDRESS)
    assert exc.value.code == "remote.unreachable"
    assert len(script.requests) == 4 and len(sleeps) == 3
    assert URL in exc.value.message and TOKEN not in json.dumps(exc.value.to_dict())


def test_timeouts_are_retried_for_reads_then_remote_timeout():
    script = Script(httpx.ReadTimeout("slow"))
    store, sleeps = remote(script, retries=2)
    with pytest.raises(evstore.StoreStateError) as exc:
        store.stat(ADDRESS)
    assert exc.value.code == "remote.timeout" and len(script.requests) == 3


def test_503_honours_retry_after_capped():
    script = Script(
        problem(503, "store.busy", "busy", family="store", headers={"Retry-After": "2"}),
        problem(503, "store.busy", "busy", family="store", headers={"Retry-After": "3600"}),
        obj(DATA),
    )
    store, sleeps = remote(script, retries=4, max_retry_after=30)
    assert store.get(ADDRESS) == DATA
    assert sleeps == [2.0, 30.0]


def test_retry_after_as_an_http_date():
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=5), usegmt=True)
    policy = RetryPolicy()
    assert 3 <= policy.delay(0, when) <= 5
    assert 0 <= policy.delay(0, "garbage") <= 0.25  # unreadable: the computed backoff


def test_503_forever_is_remote_busy():
    script = Script(problem(503, "store.busy", "busy", family="store"))
    store, sleeps = remote(script, retries=2)
    with pytest.raises(evstore.StoreStateError) as exc:
        store.has([ADDRESS])
    assert exc.value.code == "remote.busy" and exc.value.details["server_code"] == "store.busy"
    assert len(script.requests) == 3 and len(sleeps) == 2


def test_ingest_is_not_resent_once_the_server_may_have_seen_it():
    script = Script(httpx.ReadTimeout("slow"))
    store, sleeps = remote(script)
    with pytest.raises(evstore.StoreStateError) as exc:
        store.ingest([evstore.Document(b"{}")])
    assert exc.value.code == "remote.timeout" and len(script.requests) == 1 and sleeps == []
    script = Script(problem(503, "store.busy", "busy", family="store"))
    store, sleeps = remote(script)
    with pytest.raises(evstore.StoreStateError) as exc:
        store.ingest([evstore.Document(b"{}")])
    assert exc.value.code == "remote.busy" and len(script.requests) == 1


def test_an_ingest_that_never_left_is_retried():
    report = {"ok": True, "documents": 1, "artifacts": [], "faults": []}
    script = Script(httpx.ConnectError("refused"), httpx.Response(200, json=report))
    store, sleeps = remote(script)
    assert store.ingest([evstore.Document(b"{}")]).documents == 1
    assert len(script.requests) == 2 and len(sleeps) == 1


# -- writes ---------------------------------------------------------------------------------


def put_answer(data: bytes, new: bool = True):
    def answer(request: httpx.Request) -> httpx.Response:
        assert request.content == data
        return httpx.Response(201 if new else 200, json={**forms(data), "new": new})

    return answer


def test_put_sends_the_expected_address_and_checks_the_answer():
    script = Script(put_answer(DATA))
    store, _ = remote(script)
    res = store.put(DATA)
    assert res.digest.address == ADDRESS and res.new
    assert script.requests[0].url.params["expect"] == ADDRESS
    store, _ = remote(Script(lambda r: httpx.Response(201, json={**forms(OTHER), "new": True})))
    with pytest.raises(evstore.CorruptionError) as exc:
        store.put(DATA)
    assert exc.value.code == "remote.digest"


class OneShot(io.RawIOBase):
    """A stream that cannot rewind (like stdin)."""

    def __init__(self, data):
        self._buf = io.BytesIO(data)

    def readable(self):
        return True

    def seekable(self):
        return False

    def readinto(self, b):
        n = self._buf.readinto(b)
        return n


def test_a_stream_that_cannot_rewind_is_spooled_and_resent_whole_after_503():
    script = Script(problem(503, "store.busy", "busy", family="store"), put_answer(DATA, False))
    store, _ = remote(script)
    res = store.put(OneShot(DATA))
    assert res.digest.address == ADDRESS and res.new is False
    assert [r.content for r in script.requests] == [DATA, DATA]


def test_put_many_is_one_request_and_checks_every_answer(tmp_path):
    (tmp_path / "a").write_bytes(DATA)
    row = {**evstore.digest_bytes(DATA).forms(), "new": True}
    script = Script(httpx.Response(200, json={"results": [row, row]}))
    store, _ = remote(script)
    batches = []
    out = store.put_many([tmp_path / "a", DATA], batch=1, on_batch=lambda *a: batches.append(a))
    assert [r.digest.address for r in out] == [ADDRESS, ADDRESS] and batches == [(1, 1), (2, 2)]
    (req,) = script.requests
    assert req.method == "POST" and req.url.path == "/acme/v1/objects/batch"
    assert req.url.params["batch"] == "1"
    assert req.content == (f"{len(DATA)} {ADDRESS}\n".encode() + DATA) * 2
    other = {**evstore.digest_bytes(b"other").forms(), "new": True}
    store, _ = remote(Script(httpx.Response(200, json={"results": [other]})))
    with pytest.raises(evstore.CorruptionError) as exc:
        store.put_many([DATA])
    assert exc.value.code == "remote.digest"
    store, _ = remote(Script(httpx.Response(200, json={"results": []})))
    with pytest.raises(evstore.StoreStateError) as exc:
        store.put_many([DATA])
    assert exc.value.code == "remote.protocol"
    with pytest.raises(evstore.InputError) as exc:
        store.put_many(["a string"])
    assert exc.value.code == "input.invalid"
    with pytest.raises(evstore.InputError) as exc:
        store.put_many([tmp_path / "missing"])
    assert exc.value.code == "input.unreadable"


# -- reads of JSON --------------------------------------------------------------------------


def test_has_sends_refs_as_given_and_refuses_an_answer_about_others():
    script = Script(lambda r: httpx.Response(200, json={"missing": json.loads(r.content)["refs"]}))
    store, _ = remote(script)
    refs = [ADDRESS, f"sha256:{SHA_HEX}", ADDRESS]
    assert store.has(refs) == refs
    assert json.loads(script.requests[0].content) == {"refs": [ADDRESS, f"sha256:{SHA_HEX}"]}
    store, _ = remote(Script(httpx.Response(200, json={"missing": ["blake3:" + "0" * 64]})))
    with pytest.raises(evstore.StoreStateError) as exc:
        store.has([ADDRESS])
    assert exc.value.code == "remote.protocol"
    assert remote(Script(obj(DATA)))[0].has([]) == []


def test_stat_must_describe_the_blob_asked_for():
    stat = {**forms(DATA), "verified": True, "stored": "inline", "artifacts": []}
    script = Script(httpx.Response(200, json=stat))
    store, _ = remote(script)
    assert store.stat(f"sha256:{SHA_B64}", verify=True) == stat
    assert script.requests[0].url.params["verify"] == "1"
    store, _ = remote(Script(httpx.Response(200, json={**stat, **forms(OTHER)})))
    with pytest.raises(evstore.CorruptionError):
        store.stat(ADDRESS)
    store, _ = remote(Script(httpx.Response(200, content=b"not json")))
    with pytest.raises(evstore.StoreStateError) as exc:
        store.stat(ADDRESS)
    assert exc.value.code == "remote.protocol"


def art(n: int, kind: str = "json") -> dict:
    return {
        "address": f"blake3:{n:064x}",
        "kind": kind,
        "contract_version": "v1",
        "accepted_at": f"2026-01-01T00:00:{59 - n:02d}+00:00",
        "size": n,
    }


def test_a_listing_by_attribute_starts_after_the_cursor_and_refuses_a_malformed_one():
    rows = [art(3), art(1), art(2, "manifest"), art(2)]
    script = Script(httpx.Response(200, json={"artifacts": rows}))
    store, _ = remote(script)
    got = store.iter_artifacts(attr=("key", "k"), after=art(1)["address"] + "/json")
    assert [(a.address, a.kind) for a in got] == [
        (art(2)["address"], "json"),
        (art(2)["address"], "manifest"),
        (art(3)["address"], "json"),
    ]
    got = store.iter_artifacts(attr=("key", "k"), after=art(2)["address"], limit=1)
    assert [(a.address, a.kind) for a in got] == [(art(2)["address"], "json")]
    sent = len(script.requests)
    for bad in ("garbage", "blake3:xyz/json", art(1)["address"].upper()):
        with pytest.raises(evstore.InputError) as exc:
            store.iter_artifacts(attr=("key", "k"), after=bad)
        assert exc.value.code == "input.invalid" and exc.value.details == {"cursor": bad}
    assert len(script.requests) == sent  # refused before any request, as a local store does


def test_ls_follows_the_cursor_and_sorts_oldest_first():
    pages = {None: ([art(1), art(2)], "c2"), "c2": ([art(3)], None)}

    def answer(request):
        items, nxt = pages[request.url.params.get("after")]
        limit = int(request.url.params["limit"])
        if len(items) > limit:
            items, nxt = items[:limit], "c-limit"
        return httpx.Response(200, json={"items": items, "next": nxt})

    script = Script(answer)
    store, _ = remote(script)
    assert [a.address for a in store.iter_artifacts()] == [art(n)["address"] for n in (1, 2, 3)]
    limited = list(store.iter_artifacts(kind="json", limit=1))
    assert len(limited) == 1 and script.requests[-1].url.params["limit"] == "1"
    stuck = Script(httpx.Response(200, json={"items": [art(1)], "next": "same"}))
    store, _ = remote(stuck)
    with pytest.raises(evstore.StoreStateError) as exc:
        list(store.iter_artifacts(after="same"))
    assert exc.value.code == "remote.protocol"


def test_ls_is_the_servers_acceptance_order():
    arts = {"artifacts": [art(2), art(1)]}
    script = Script(httpx.Response(200, json=arts))
    store, _ = remote(script)
    assert [a.size for a in store.ls(kind="json")] == [2, 1]
    assert script.requests[0].url.path == "/acme/v1/artifacts"
    assert script.requests[0].url.params["kind"] == "json"
    store, _ = remote(Script(httpx.Response(200, json={"items": []})))
    with pytest.raises(evstore.StoreStateError):
        store.ls()


def test_find_caches_warnings_and_nothing_found_is_empty():
    warn = {"code": "package.context-bytes", "message": "m", "pointer": "/context/bytes"}
    script = Script(
        httpx.Response(200, json={"artifacts": [{**art(1), "warnings": [warn]}]}),
        problem(404, "not-found.artifact", "none", family="not-found"),
    )
    store, _ = remote(script)
    found = store.find("key", "k")
    assert [a.address for a in found] == [art(1)["address"]]
    assert store.warnings(found[0].address) == [warn]
    assert len(script.requests) == 1  # the warnings came with the find
    assert store.find("key", "nothing", kind="package") == []
    assert script.requests[1].url.params["kind"] == "package"


# -- what a remote store refuses ------------------------------------------------------------


@pytest.mark.parametrize("call", ["recorded_warnings", "transaction"])
def test_database_commands_are_remote_unsupported(call):
    store, _ = remote(Script(obj(DATA)))
    args = {"transaction": (print,)}.get(call, ())
    with pytest.raises(evstore.StoreStateError) as exc:
        getattr(store, call)(*args)
    assert exc.value.code == "remote.unsupported"


@pytest.mark.parametrize("fn", [evstore.init, evstore.migrate])
def test_schema_commands_are_remote_unsupported(fn):
    with pytest.raises(evstore.StoreStateError) as exc:
        fn(URL)
    assert exc.value.code == "remote.unsupported" and exc.value.details["command"] in (
        "init",
        "migrate",
    )


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://user:pw@h:1/x", "a user part"),
        ("http://h:1/x?token=a", "a query"),
        ("http:///x", "no host"),
        ("https://h/#f", "a fragment"),
    ],
)
def test_store_urls_with_credentials_or_queries_are_refused(url, said):
    with pytest.raises(evstore.StoreStateError) as exc:
        evstore.open(url)
    assert exc.value.code == "store.url" and "pw" not in str(exc.value)
    assert "user" not in str(exc.value).split(" is not")[0]  # the URL shown has no user part
    assert f"({said}" in exc.value.message  # which part made it no store URL


@pytest.mark.parametrize(
    "url", ["http://u:pw@h.test:99999", "http://u:pw@[::1", "http://u:pw@h.test:x/"]
)
def test_store_urls_that_do_not_parse_are_store_url(url):
    # urllib raised ValueError: a traceback out of evstore --store http://h:99999 ls
    with pytest.raises(evstore.StoreStateError) as exc:
        evstore.open(url, token="t")
    assert exc.value.code == "store.url" and "pw" not in str(exc.value)


@pytest.mark.parametrize(
    "token", [TOKEN + "\r\nX-Evil: 1", TOKEN + "\udcff", TOKEN + "\xe9", "a b"]
)
def test_a_token_no_header_can_carry_is_refused_without_echoing_it(token):
    # httpx raised UnicodeEncodeError for a non-ASCII token, and for a line break answered
    # remote.protocol with the whole Authorization header (the token) in its message
    with pytest.raises(evstore.EvstoreError) as exc:
        evstore.open("http://h.test:1", token=token)
    assert exc.value.code == "input.invalid"
    assert TOKEN not in json.dumps(exc.value.to_dict())


def test_open_dispatches_on_the_scheme(tmp_path):
    with evstore.open("HTTPS://h.test:1/a/", token="t") as s:
        assert isinstance(s, evstore.RemoteStore) and s.url == "https://h.test:1/a"
        assert s.created is False and s.path is None
    with pytest.raises(evstore.InputError):
        evstore.open(f"sqlite:///{tmp_path}/x.db", token="t")
    assert is_remote_url("http://x") and not is_remote_url("sqlite:///x")
    assert display_url("http://u:p@[::1]:8/a/?q#f") == "http://[::1]:8/a"
    closed = evstore.open("http://h.test:1")
    closed.close()
    with pytest.raises(RuntimeError):
        closed.get(ADDRESS)


def test_http_policy_refuses_negative_settings():
    with pytest.raises(ValueError):
        RetryPolicy(retries=-1)
    http = Http(URL, transport=httpx.MockTransport(lambda r: httpx.Response(200, text="x")))
    with pytest.raises(evstore.StoreStateError):
        http.json("GET", "v1")


# -- contract reads: checked against bytes verified here -------------------------------------

FRAG = {"quote_sha256": hashlib.sha256(b"quoted").hexdigest(), "start_offset": 2, "end_offset": 8}
FRAG_BYTES = evstore.dumps(FRAG)
FRAG_REF = "blake3:" + blake3.blake3(FRAG_BYTES).hexdigest()


def routes(table):
    def answer(request: httpx.Request) -> httpx.Response:
        for prefix, response in table.items():
            if request.url.path.startswith(prefix):
                return response() if callable(response) else response
        return problem(404, "http.route", "no route", family="not-found")

    return answer


def test_a_quote_must_hash_to_the_fragments_quote_sha256():
    table = {
        "/acme/v1/fragments/": httpx.Response(200, content=b"quoted"),
        "/acme/v1/objects/": httpx.Response(200, content=FRAG_BYTES),
    }
    store, _ = remote(routes(table))
    assert store.fragments.quote(FRAG_REF) == b"quoted"
    table["/acme/v1/fragments/"] = httpx.Response(200, content=b"QUOTED")
    store, _ = remote(routes(table))
    with pytest.raises(evstore.CorruptionError) as exc:
        store.fragments.quote(FRAG_REF)
    assert exc.value.code == "remote.digest"
    table["/acme/v1/objects/"] = httpx.Response(200, content=b"[]")
    table["/acme/v1/fragments/"] = httpx.Response(200, content=b"x")
    store, _ = remote(routes(table))
    with pytest.raises(evstore.CorruptionError):  # [] does not hash to FRAG_REF
        store.fragments.quote(FRAG_REF)


def test_an_export_must_wrap_the_package_asked_for():
    package = {"id": "7d3e9f10-2a4b-4c6d-8e0f-1a2b3c4d5e6f", "x": 1}
    digest = evstore.digest_bytes(evstore.dumps(package))
    wrapper = {"address": digest.address, "observations": {}, "package": package}
    table = {"/acme/v1/packages/": httpx.Response(200, content=evstore.dumps(wrapper))}
    store, _ = remote(routes(table))
    for ref in (digest.address, "sha256:" + digest.sha256, package["id"].upper()):
        assert evstore.loads(store.packages.export(ref)) == wrapper
    for ref in ("blake3:" + "0" * 64, "00000000-0000-4000-8000-000000000000"):
        with pytest.raises(evstore.CorruptionError):
            store.packages.export(ref)
    lying = {**wrapper, "package": {**package, "x": 2}}
    store, _ = remote(routes({"/acme/v1/packages/": httpx.Response(200, json=lying)}))
    with pytest.raises(evstore.CorruptionError):
        store.packages.export(digest.address)
    store, _ = remote(routes({"/acme/v1/packages/": httpx.Response(200, content=b"[1]")}))
    with pytest.raises(evstore.StoreStateError) as exc:
        store.packages.export(digest.address)
    assert exc.value.code == "remote.protocol"


def test_an_excerpt_is_made_here_and_must_match_the_servers_address():
    units = [{"id": 1, "kind": "line", "text": "a"}]
    address = evstore.digest_bytes(evstore.dumps(units)).address
    answer = {"ok": True, "excerpt": units, "address": address}
    script = Script(httpx.Response(200, json=answer))
    store, _ = remote(script)
    got = store.contexts.excerpt_bytes(ADDRESS, [(1, 2), (3, 3)], 1)
    assert got.data == evstore.dumps(units) and got.digest.address == address
    assert script.requests[0].url.params.get_list("range") == ["1:2", "3:3"]
    assert store.contexts.excerpt(ADDRESS, [], 0) == units
    store, _ = remote(Script(httpx.Response(200, json={**answer, "address": ADDRESS})))
    with pytest.raises(evstore.CorruptionError):
        store.contexts.excerpt_bytes(ADDRESS, [], 0)


def test_a_namespace_method_the_client_lacks_is_remote_unsupported():
    store, _ = remote(Script(obj(DATA)))
    with pytest.raises(evstore.StoreStateError) as exc:
        store.fragments.scope("a", "b", "c")
    assert exc.value.code == "remote.unsupported"
    assert exc.value.details["command"] == "fragments.scope"
    with pytest.raises(evstore.StoreStateError):
        store.db  # noqa: B018 - no database behind a remote store
    with pytest.raises(AttributeError):
        store._private  # noqa: B018


# -- inputs and reports -----------------------------------------------------------------------


def report_of(docs: list[bytes], warn: bool = False) -> dict:
    arts = []
    for raw in docs:
        d = evstore.digest_bytes(evstore.dumps(evstore.loads(raw)))
        a = {"address": d.address, "kind": "json", "new": True, "size": d.size}
        if warn:
            a["warnings"] = [{"code": "w.x", "message": "m", "pointer": "/a"}]
        arts.append(a)
    return {"ok": True, "documents": len(docs), "artifacts": arts, "faults": []}


def test_ingest_takes_every_input_form_the_local_store_takes(tmp_path):
    seen = []

    def answer(request):
        body = json.loads(request.content)
        seen.append(body)
        raws = [json.dumps(d["document"]).encode() for d in body["documents"]]
        return httpx.Response(200, json=report_of(raws, warn=True))

    store, _ = remote(Script(answer))
    path = tmp_path / "d.json"
    path.write_bytes(b'{"p": 1.0}')
    for docs in ({"a": 1}, [1, 2], b'{"b": 2}', path, (path, b"[]"), (d for d in [b"3"])):
        report = store.ingest(docs)
        assert report.results and report.results[0].warnings[0].to_dict()["code"] == "w.x"
    assert seen[3]["documents"][0] == {"name": str(path), "kind": None, "document": {"p": 1.0}}
    for bad in ("text", 5, None):
        with pytest.raises(evstore.InputError):
            store.ingest(bad)
    with pytest.raises(evstore.InputError) as exc:
        store.ingest((tmp_path / "missing.json",))
    assert exc.value.code == "input.unreadable"
    with pytest.raises(evstore.InputError):
        store.ingest((object(),))
    with pytest.raises(evstore.InputError):
        store.ingest({"a": float("nan")})
    with pytest.raises(evstore.InputError):
        store.ingest(b"{}", batch=0)
    with pytest.raises(evstore.InputError):
        store.ingest(b"{}", options={"unknown": 1})


def test_ingest_options_travel_as_the_servers_members():
    seen = []

    def answer(request):
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=report_of([b"{}"]))

    store, _ = remote(Script(answer))
    scope = {"host_id": "h", "tenant_id": "t", "authorization_scope_id": "a"}
    store.ingest(
        (b"{}",),
        options={"scope": scope, "sources": [("d", "f", b"src")], "source_document": ADDRESS},
        supplied=[b"content", b"src"],
    )
    body = seen[0]
    assert body["scope"] == scope and body["source_document"] == ADDRESS
    assert body["sources"] == [
        {"document_id": "d", "fragment_id": "f", "data": base64.b64encode(b"src").decode()}
    ]
    assert body["content"] == [base64.b64encode(b"content").decode()]  # src sent once


def test_a_failing_batch_says_what_was_committed():
    calls = []

    def answer(request):
        calls.append(1)
        if len(calls) == 2:
            return problem(422, "package.schema", "bad", family="contract")
        return httpx.Response(200, json=report_of([b"1"]))

    store, _ = remote(Script(answer))
    done = []
    with pytest.raises(evstore.ContractError) as exc:
        store.ingest((b"1", b"2"), batch=1, on_batch=lambda *a: done.append(a), progress=int)
    assert exc.value.details["committed_batches"] == 1 and done == [(1, 1)]
    assert "batches committed before this one: 1" in str(exc.value)


def test_json_form_faults_are_found_here_as_locally():
    script = Script(httpx.Response(200, json=report_of([b"{}"])))
    store, _ = remote(script)
    with pytest.raises(evstore.JSONFormError) as exc:
        store.ingest([evstore.Document(b'{"a":1,"a":2}', name="dup.json")])
    assert exc.value.code == "json.duplicate-key" and exc.value.path == "dup.json"
    assert script.requests == []  # refused before sending
    report = store.validate([evstore.Document(b"\xef\xbb\xbf{}", name="bom.json")])
    assert [f.code for f in report.faults] == ["json.bom"] and script.requests == []
    unused = {"code": "input.unused-content", "message": "m", "family": "input"}
    faulty = {**report_of([b"{}"]), "ok": False, "faults": [unused]}
    answer = problem(422, "input.unused-content", "m")
    answer = httpx.Response(
        422, json={**json.loads(answer.content), "report": faulty}, headers=answer.headers
    )
    store, _ = remote(Script(answer))
    report = store.validate(
        [evstore.Document(b"{}"), evstore.Document(b"[", name="x.json")], supplied=[b"c"]
    )
    assert [f.code for f in report.faults] == ["json.syntax"] and report.documents == 2
    store, _ = remote(Script(problem(422, "input.unused-content", "m")))
    with pytest.raises(evstore.InputError):
        store.validate(b"{}")
    store, _ = remote(Script(httpx.Response(200, content=b"<html>")))
    with pytest.raises(evstore.StoreStateError):
        store.validate(b"{}")
    store, _ = remote(Script(httpx.Response(200, json={"nope": 1})))
    with pytest.raises(evstore.StoreStateError):
        store.ingest(b"{}")


def test_a_put_answer_that_is_not_a_put_result_is_remote_protocol():
    store, _ = remote(Script(httpx.Response(201, json={"address": 1})))
    with pytest.raises(evstore.StoreStateError) as exc:
        store.put(DATA)
    assert exc.value.code == "remote.protocol"
    store, _ = remote(Script(put_answer(DATA)))
    assert store.put(io.BytesIO(b"xx" + DATA).getbuffer()[2:]).new  # a memoryview
    stream = io.BytesIO(b"skip" + DATA)
    stream.seek(4)
    assert store.put(stream).digest.address == ADDRESS  # from where the stream stands


def test_blob_listing_find_and_warnings_shapes():
    blob = {"address": ADDRESS, "sha256": "sha256:" + SHA_HEX, "size": len(DATA), "x": 1}
    store, _ = remote(Script(httpx.Response(200, json={"items": [blob], "next": None})))
    assert list(store.iter_blobs(after=ADDRESS)) == [{k: blob[k] for k in blob if k != "x"}]
    store, _ = remote(Script(httpx.Response(200, json={"nope": []})))
    with pytest.raises(evstore.StoreStateError):
        store.find("key", "k")
    arts = {"artifacts": [art(2, "b"), art(1, "a"), art(3, "c")]}
    store, _ = remote(Script(httpx.Response(200, json=arts)))
    got = store.iter_artifacts(attr=("workspace_id", "w"), after=art(1)["address"] + "/a", limit=1)
    assert [a.kind for a in got] == ["b"]
    assert [a.kind for a in store.ls(attr=("workspace_id", "w"))] == ["b", "a", "c"]  # as found
    warn = {"code": "c", "message": "m", "pointer": ""}
    store, _ = remote(Script(httpx.Response(200, json={"warnings": [warn]})))
    assert store.warnings(f"sha256:{SHA_HEX}") == [warn]
    store, _ = remote(Script(problem(404, "not-found.artifact", "no", family="not-found")))
    assert store.warnings(ADDRESS) == []
    store, _ = remote(Script(problem(404, "not-found.blob", "no", family="not-found")))
    with pytest.raises(evstore.NotFound):
        store.warnings(ADDRESS)
    with pytest.raises(evstore.NotFound):
        store.find("key", "k")


def test_gc_and_closure_answers_are_the_library_types_and_their_json():
    answer = {
        "dry_run": True,
        "count": 1,
        "bytes": 6,
        "batches": 0,
        "rounds": 1,
        "skipped": 0,
        "seconds": 0.012,
        "vacuumed": False,
        "backend_deleted": 0,
        "backend_kept": 0,
        "objects": [{"address": ADDRESS, "size": 6}],
        "leased": [],
    }
    seen = []
    store, _ = remote(Script(httpx.Response(200, json=answer)))
    report = store.retention.gc(dry_run=True, progress=lambda a, b: seen.append((a, b)))
    assert isinstance(report, evstore.GcReport) and report.to_dict() == answer
    assert json.dumps(report.to_dict()) == json.dumps(answer) and seen == [(1, 1)]
    closure = {
        "ok": True,
        "root": ADDRESS,
        "objects": 1,
        "items": [{"address": ADDRESS, "ok": True}],
    }
    store, _ = remote(Script(httpx.Response(200, json=closure)))
    got = store.runs.closure(ADDRESS)
    assert isinstance(got, evstore.Closure) and got.to_dict() == closure
    for bad, call in (
        ({"dry_run": True}, lambda s: s.retention.gc()),
        ({"root": ADDRESS}, lambda s: s.runs.closure(ADDRESS)),
    ):
        store, _ = remote(Script(httpx.Response(200, json=bad)))
        with pytest.raises(evstore.StoreStateError) as exc:
            call(store)
        assert exc.value.code == "remote.protocol"


def test_a_refused_until_is_at_the_document_root_as_locally():
    refused = problem(
        400,
        "input.invalid",
        "--until 'soon' is no time",
        pointer="/until",
        details={"until": "soon"},
    )
    store, _ = remote(Script(refused))
    with pytest.raises(evstore.InputError) as exc:
        store.retention.retain([ADDRESS], "keep", until="soon")
    assert exc.value.pointer == "" and exc.value.details["until"] == "soon"
    other = problem(400, "http.request", "m", pointer="/refs")
    store, _ = remote(Script(other))
    with pytest.raises(evstore.InputError) as exc:
        store.retention.retain([ADDRESS], "keep")
    assert exc.value.pointer == "/refs"


@pytest.mark.parametrize(
    ("call", "args"),
    [("ask_witnesses", ()), ("witness_add_checkpoint", (None, b"")), ("witnessed", ())],
)
def test_witness_calls_are_remote_unsupported(call, args):
    """Issue 26: a served store asks its witnesses, and witnesses, on its own server."""
    store, sent = remote(Script(obj(DATA)))
    with pytest.raises(evstore.StoreStateError) as exc:
        getattr(store.log, call)(*args)
    assert exc.value.code == "remote.unsupported" and sent == []


def test_a_url_that_names_no_store_says_so():
    # A server of named stores answers http.route at its root: the client says why.
    body = {
        "type": "about:blank",
        "title": "Not Found",
        "status": 404,
        "code": "http.route",
        "family": "not-found",
        "message": "no route GET /v1/artifacts",
        "rule": "",
        "pointer": "",
    }
    store, _ = remote(
        Script(httpx.Response(404, json=body, headers={"Content-Type": "application/problem+json"}))
    )
    with pytest.raises(evstore.NotFound) as exc:
        store.ls()
    assert exc.value.code == "http.route"
    assert f"no evstore store is served at {URL}" in exc.value.message
    assert "/NAME" in exc.value.message and TOKEN not in str(exc.value)
