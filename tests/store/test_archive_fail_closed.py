"""Archives, issue 23 (fail-closed findings): edges re-derived from the bytes, import order and
idempotence, and the receiving store's settings.

Store A (tests/store/conftest.py) holds every kind, once per backend; each import goes into a
fresh store of the same backend.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from archive_helpers import Layout, fresh_url

import evstore
from evstore.core.canonical import dumps

# --------------------------------------------------------------------------- edges


def _export(url: str, refs: list[str], out: Path) -> None:
    with evstore.open(url) as store:
        evstore.export_archive(store, refs, out)


def _edges(layer: dict) -> list[list[str]]:
    return json.loads(layer["annotations"].get("dev.evstore.edges", "[]"))


def _set_edges(layer: dict, edges: list[list[str]]) -> None:
    if edges:
        layer["annotations"]["dev.evstore.edges"] = dumps(edges).decode()
    else:
        layer["annotations"].pop("dev.evstore.edges", None)


def _cut(layout: Layout, role: str) -> str:
    """Drop the root's first ``role`` edge and every member only it reached, consistently.

    The manifest is then complete by its own annotations (every recorded edge listed, every
    member reached, no blob unnamed): only the bytes tell that an edge is missing. Returns
    the address of the member dropped with the edge.
    """
    doc = layout.manifest()
    layers = doc["layers"]
    edges = _edges(layers[0])
    cut = next(e for e in edges if e[0] == role)
    _set_edges(layers[0], [e for e in edges if e != cut])
    by_address = {la["annotations"]["dev.evstore.address"]: la for la in layers}
    reached = {layers[0]["annotations"]["dev.evstore.address"]}
    stack = list(reached)
    while stack:
        for _, dst in _edges(by_address[stack.pop()]):
            if dst not in reached:
                reached.add(dst)
                stack.append(dst)
    kept = [
        la
        for la in layers
        if la["annotations"]["dev.evstore.address"] in reached
        or (
            "fragment-source" in la["annotations"]["dev.evstore.kind"]
            and all(d in reached for _, d in _edges(la))
        )
    ]
    assert cut[1] not in {la["annotations"]["dev.evstore.address"] for la in kept}
    for la in layers:
        if la not in kept:
            layout.blob(la["digest"][7:]).unlink()
    doc["layers"] = kept
    doc["annotations"]["dev.evstore.objects"] = str(len(kept))
    layout.save_manifest(doc)
    return cut[1]


#: A kind whose bytes call for an edge, and the role of that edge.
REQUIRED = {
    "manifest": "content",
    "envelope": "package",
    "fragment": "source",
    "fragment-batch": "fragment",
    "fragment-source": "source",
    "run": "index",
}


@pytest.mark.parametrize("kind", sorted(REQUIRED))
def test_a_member_removed_with_its_edge_fails_verify(kind, source, fresh, tmp_path, snapshot):
    _, url, _ = source
    with evstore.open(url) as a:
        root = next(i.address for i in a.ls(kind))
    out = tmp_path / "d"
    _export(url, [root], out)
    dropped = _cut(Layout(out), REQUIRED[kind])
    checked = evstore.verify_archive(out)
    assert not checked.ok, f"{kind}: {dropped} and its edge removed, yet verify says ok"
    fault = next(f for f in checked.faults if f.code == "archive.closure-incomplete")
    assert (fault.pointer, fault.details["role"]) == ("/layers/0", REQUIRED[kind])
    assert fault.path == "blobs/sha256/" + Layout(out).index["manifests"][0]["digest"][7:]
    b = fresh()
    before = snapshot(b)
    with pytest.raises(evstore.EvstoreError) as exc:
        evstore.import_archive(b, out)
    assert exc.value.code == "archive.closure-incomplete"
    assert snapshot(b) == before


def test_an_edge_the_bytes_do_not_call_for_fails_verify(source, tmp_path):
    _, url, _ = source
    with evstore.open(url) as a:
        frag = next(i.address for i in a.ls("fragment"))
    out = tmp_path / "d"
    _export(url, [frag], out)
    layout = Layout(out)
    doc = layout.manifest()
    layers = doc["layers"]
    record = next(la for la in layers if la["annotations"]["dev.evstore.role"] == "content-version")
    blob = _edges(layers[0])[0][1]  # the fragment's source bytes, listed in the manifest
    _set_edges(record, sorted(_edges(record) + [["mentions", blob]]))
    layout.save_manifest(doc)
    faults = evstore.verify_archive(out).faults
    assert [(f.code, f.details.get("role"), f.details.get("target")) for f in faults] == [
        ("archive.edges-mismatch", "mentions", blob)
    ]
    # an annotation that leaves out an edge whose target stays listed (reached otherwise)
    _set_edges(record, [])
    layout.save_manifest(doc)
    faults = evstore.verify_archive(out).faults
    assert [(f.code, f.details.get("role")) for f in faults] == [
        ("archive.edges-mismatch", "source")
    ]
    assert faults[0].details["target"] == blob


def test_optional_edges_are_accepted_as_exported(store, tmp_path):
    """Optional edges verify as exported; one the bytes give no ground for does not.

    (A context's source-document edge: every archive of the round-trip tests carries one.)
    """
    # json: a mentions edge to each stored blob it names, by BLAKE3 or by SHA-256
    one, two, other = (store.put(b).digest for b in (b"one", b"two", b"other"))
    note = store.ingest({"a": one.address, "b": "sha256:" + two.sha256}).results[0].digest
    store.ingest({"c": other.address})  # so that `other` is in no closure of `note`
    out = tmp_path / "json"
    evstore.export_archive(store, [note.address, other.address], out)
    layout = Layout(out)
    i = [e["annotations"]["dev.evstore.address"] for e in layout.index["manifests"]].index(
        note.address
    )
    doc = layout.manifest(i)
    assert sorted(_edges(doc["layers"][0])) == sorted(
        [["mentions", one.address], ["mentions", two.address]]
    )
    assert evstore.verify_archive(out).ok
    # not every named blob need have an edge (it may not have been stored yet) ...
    _set_edges(doc["layers"][0], [["mentions", one.address]])
    doc["layers"] = [
        la for la in doc["layers"] if la["annotations"]["dev.evstore.address"] != two.address
    ]
    doc["annotations"]["dev.evstore.objects"] = str(len(doc["layers"]))
    layout.blob(two.sha256).unlink()
    layout.save_manifest(doc, i)
    assert evstore.verify_archive(out).ok
    # ... but an edge to a blob it does not name is refused
    doc["layers"].append(
        {
            "annotations": {
                "dev.evstore.address": other.address,
                "dev.evstore.kind": "blob",
                "dev.evstore.role": "mentions",
            },
            "digest": "sha256:" + other.sha256,
            "mediaType": "application/octet-stream",
            "size": other.size,
        }
    )
    _set_edges(doc["layers"][0], [["mentions", one.address], ["mentions", other.address]])
    doc["annotations"]["dev.evstore.objects"] = str(len(doc["layers"]))
    layout.save_manifest(doc, i)
    faults = evstore.verify_archive(out).faults
    assert [(f.code, f.details.get("target")) for f in faults] == [
        ("archive.edges-mismatch", other.address)
    ]


# --------------------------------------------------------------------------- import order


MIXED = "aé€𝄞z".encode()
SCOPE = {"host_id": "H1", "tenant_id": "T1", "authorization_scope_id": "A1"}


def _frag(n: int, **over: object) -> dict:
    """A fragment of identity (D, F, 1, 3); ``n`` varies its bytes (and so its address)."""
    frag = {
        "document_id": "D",
        "fragment_id": "F",
        "start_offset": 1,
        "end_offset": 3,
        "quote_sha256": hashlib.sha256(MIXED[1:3]).hexdigest(),
        "extensions": {"x": {"n": n}},
    }
    frag.update(over)
    return frag


def test_import_cannot_depend_on_address_order_and_is_idempotent(
    store, backend, request, tmp_path, snapshot
):
    """Unscoped writes of an identity accepted before it was scoped import in any order."""
    store.fragments.ingest_source(MIXED, "D", "F")
    orders = set()
    roots = []
    for n in range(6):
        unscoped = store.fragments.ingest(dumps(_frag(n))).results[0].digest.address
        batch = {"evidence": [_frag(n + 50)], "n": n}  # a batch writes its fragment unscoped
        batched = store.fragments.ingest(dumps(batch)).results[0].digest.address
        roots += [unscoped, batched]
        orders.add(unscoped < batched)
    scoped = store.fragments.ingest(dumps(_frag(99, scope=SCOPE))).results[0].digest.address
    assert orders == {True, False}  # both address orders occur among the unscoped writes
    assert min(roots) < scoped < max(roots)  # and the scoped one sorts among them
    assert list(store.check()) == []
    out = tmp_path / "a.tar"
    evstore.export_archive(store, [*roots, scoped], out)
    assert evstore.verify_archive(out).ok
    with evstore.open(fresh_url(backend, request, tmp_path)) as b:
        first = evstore.import_archive(b, out)
        assert {a.address for a in b.ls()} == {a.address for a in store.ls()}
        assert first.new_artifacts == len(store.ls())
        assert list(b.check()) == []
        before = snapshot(b)
        again = evstore.import_archive(b, out)  # a no-op, as docs/archive.md says
        assert (again.new_blobs, again.new_artifacts) == (0, 0)
        assert snapshot(b) == before
        # the rule itself stands: an unscoped write the store never accepted is refused
        with pytest.raises(evstore.EvstoreError) as exc:
            b.fragments.ingest(dumps(_frag(1000)))
        assert exc.value.code == "fragment.scope-reuse"


# --------------------------------------------------------------------------- settings


def _revision_2(content: bytes) -> bytes:
    from evstore.contracts.manifests import rules as m

    doc = json.loads((EXAMPLES / "manifest.json").read_bytes())
    doc["projection"]["revision"] = 2
    doc["phase"] = {"schema": "corpus-task-pack-phase.v1"}
    doc["manifest/ref"] = m.compute_manifest_ref(doc)
    return dumps(doc)


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "manifests"
PHASE = "manifests.accept_unverified_phase"


def test_import_honours_the_receiving_stores_phase_setting(
    store, backend, request, tmp_path, snapshot
):
    content = (EXAMPLES / "rendered-evidence.md").read_bytes()
    store.set_config(PHASE, True)
    res = store.ingest(evstore.Document(_revision_2(content)), supplied=[content]).results[0]
    assert [w.code for w in res.warnings] == ["manifest.phase-unverifiable"]
    out = tmp_path / "m"
    evstore.export_archive(store, [res.digest.address], out)
    # offline, with no store, the default settings apply (docs/archive.md#import)
    assert [f.code for f in evstore.verify_archive(out).faults] == ["manifest.phase-unverifiable"]
    with evstore.open(fresh_url(backend, request, tmp_path)) as b:
        before = snapshot(b)
        with pytest.raises(evstore.EvstoreError) as exc:  # a store that does not accept it
            evstore.import_archive(b, out)
        assert exc.value.code == "manifest.phase-unverifiable"
        assert snapshot(b) == before
        b.set_config(PHASE, True)  # a store that does
        assert evstore.import_archive(b, out).new_artifacts == 1
        assert [w["code"] for w in b.warnings(res.digest.address)] == [
            "manifest.phase-unverifiable"
        ]
        assert list(b.check()) == []
    assert evstore.verify_archive(out, settings={PHASE: True}).ok
