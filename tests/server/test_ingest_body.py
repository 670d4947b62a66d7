"""The ingest body of the HTTP API, read into the inputs of Store.ingest (no server needed)."""

from __future__ import annotations

import base64

import pytest

import evstore
from evstore.server.writes import ingest_inputs


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_every_member_maps_to_the_cli_inputs():
    docs, options, supplied = ingest_inputs(
        {
            "documents": [{"name": "a.json", "kind": "json", "document": {"x": 1.0}}],
            "envelopes": [{"e": 1}],
            "content": [_b64(b"rendered")],
            "sources": [
                _b64(b"plain"),
                {"document_id": "D", "fragment_id": "F", "data": _b64(b"s")},
            ],
            "scope": {"host_id": "h", "tenant_id": "t", "authorization_scope_id": "a"},
            "source_document": "blake3:" + "0" * 64,
            "root": None,
        }
    )
    assert [(d.name, d.kind) for d in docs] == [("a.json", "json"), ("envelopes/0", "envelope")]
    assert docs[0].data == b'{"x": 1.0}'  # a fraction token stays a fraction token
    assert supplied == [b"rendered", b"plain", b"s"]
    assert options["sources"] == [("D", "F", b"s")]
    assert options["scope"] == {"host_id": "h", "tenant_id": "t", "authorization_scope_id": "a"}
    assert options["source_document"] == "blake3:" + "0" * 64
    assert ingest_inputs({}) == ([], {}, [])


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ([], ""),
        ({"documents": [1]}, "/documents/0"),
        ({"documents": [{"document": {}, "name": 1}]}, "/documents/0/name"),
        ({"documents": [{"document": {}, "kind": 2}]}, "/documents/0/kind"),
        ({"content": "x"}, "/content"),
        ({"content": [1]}, "/content/0"),
        ({"sources": [{"document_id": "D", "fragment_id": "F", "data": "@@"}]}, "/sources/0/data"),
        (
            {"sources": [{"document_id": 1, "fragment_id": "F", "data": ""}]},
            "/sources/0/document_id",
        ),
        ({"scope": "x"}, "/scope"),
        ({"source_document": 5}, "/source_document"),
        ({"a/b": 1}, "/a~1b"),
        # Unknown members of nested objects too (a misspelt option is never ignored).
        ({"documents": [{"document": {}, "knd": "json"}]}, "/documents/0/knd"),
        (
            {"sources": [{"document_id": "D", "fragment_id": "F", "data": "", "x~": 1}]},
            "/sources/0/x~0",
        ),
        ({"scope": {"host_id": "h", "tenant": "t"}}, "/scope/tenant"),
    ],
)
def test_malformed_members_name_their_pointer(body, pointer):
    with pytest.raises(evstore.InputError) as exc:
        ingest_inputs(body)
    assert exc.value.code == "http.request" and exc.value.pointer == pointer


def test_a_partial_scope_is_the_contract_error():
    with pytest.raises(evstore.EvstoreError) as exc:
        ingest_inputs({"scope": {"host_id": "h"}})
    assert exc.value.code == "fragment.scope-incomplete"
