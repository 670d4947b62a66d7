"""Property-based API test (schemathesis) against the real server process.

For every operation of the served OpenAPI document, a bounded number of generated requests
(with an admin token, so that auth does not hide the routes): no 5xx, every status, media
type, header and body as the document says, and HEAD answers with GET's headers. Bounded in
examples per operation and in hypothesis' time per example (no deadline: the machine is
shared); the data are random, never a timed assertion.
"""

from __future__ import annotations

import hypothesis
import requests
import schemathesis
from hypothesis import HealthCheck, Phase
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

EXAMPLES = 12
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
schemathesis.serializer.alias("application/x-tar", "application/octet-stream")
schemathesis.serializer.alias("application/x-evstore-objects", "application/octet-stream")

_VOLATILE = {"date", "content-length", "connection", "keep-alive"}


def _headers(resp) -> dict[str, str]:
    return {
        k.lower(): v if isinstance(v, str) else ", ".join(v)
        for k, v in resp.headers.items()
        if k.lower() not in _VOLATILE
    }


def test_the_api_matches_its_openapi_document(served):
    base = served.base
    headers = {"Authorization": f"Bearer {served.tokens['admin']}"}
    with served.client() as c:
        seeded = c.put("/v1/objects", content=b"seed").json()["address"]
        spec = c.get("/openapi.json").json()
    assert "/v1/objects/{ref}" in spec["paths"] and "/v1/ingest" in spec["paths"]
    schema = schemathesis.openapi.from_dict(spec)
    session = requests.Session()
    ran = 0
    operations = [r.ok() for r in schema.get_all_operations()]
    assert len(operations) >= 15
    for op in operations:
        if op.method.upper() == "DELETE":
            continue  # revoking generated ids: covered by test_http_auth

        @hypothesis.given(case=op.as_strategy())
        @hypothesis.settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            derandomize=True,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def run(case) -> None:
            nonlocal ran
            resp = case.call(base_url=base, session=session, headers=headers, timeout=60)
            head_only = case.method.upper() == "HEAD"  # no body to hold to the schema
            checks = [c for c in CHECKS if not (head_only and c is response_schema_conformance)]
            case.validate_response(resp, checks=checks)
            ran += 1
            if case.method.upper() == "GET" and case.operation.path == "/v1/objects/{ref}":
                head = session.head(resp.request.url, headers=resp.request.headers, timeout=60)
                assert head.status_code == resp.status_code
                assert _headers(head) == _headers(resp)
                length = resp.headers.get("content-length")
                length = length if isinstance(length, str) or length is None else length[0]
                assert head.headers.get("content-length") == length

        run()
    assert ran >= EXAMPLES * 5
    # The seeded object through the same path: HEAD and GET agree on a 200 too.
    get = session.get(f"{base}/v1/objects/{seeded}", headers=headers, timeout=60)
    head = session.head(f"{base}/v1/objects/{seeded}", headers=headers, timeout=60)
    assert get.status_code == head.status_code == 200
    assert _headers(get) == _headers(head)
