"""orbidocs manifests in the store: write-time bindings, one transaction, check, find, CLI.

Every test that takes `store` runs on SQLite and PostgreSQL. Manifests and their rendered
content are built here (manifest/ref recomputed after each mutation); upstream fixtures, whose
content is not public, are only validated.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

import evstore
from evstore import Document
from evstore.cli.main import cli
from evstore.contracts.manifests import rules as m
from evstore.contracts.manifests import store as ms
from evstore.core.digests import sha256_b64u
from evstore.core.errors import CODES, EvstoreError, Faults, ManifestBindingError, ManifestError
from evstore.db.tables import bindings, edges

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "manifests"
CONTENT = ("# rendered evidence\n" + "line of evidence with ü\n" * 50).encode("utf-8")
ACCEPT = m.SETTING_ACCEPT_UNVERIFIED_PHASE


def _d(tag: str) -> str:
    return "sha256:" + sha256_b64u(tag.encode())


def seal(doc: dict[str, Any]) -> dict[str, Any]:
    doc["manifest/ref"] = m.compute_manifest_ref(doc)
    return doc


def build(content: bytes = CONTENT, tag: str = "1") -> dict[str, Any]:
    """A valid revision-1 manifest for ``content``; ``tag`` varies the evidence refs."""
    ex = "corpus-task-pack-execution:" + _d("ex" + tag)
    digest = "sha256:" + sha256_b64u(content)
    return seal(
        {
            "schema": "corpus-passage-evidence-manifest.v1",
            "query/id": "query:q" + tag,
            "room/id": "room:r",
            "reader": {"kind": "participant", "id": "participant:reviewer"},
            "inference-flow-binding/ref": "corpus-inference-flow-binding:b",
            "projection": {"id": "corpus-task-pack-evidence", "revision": 1},
            "bytes/max": 16384,
            "items": [
                {
                    "kind": "execution",
                    "ref": ex,
                    "digest": _d("ex" + tag),
                    "required": True,
                    "included": True,
                    "execution/ref": ex,
                },
                {
                    "kind": "artifact",
                    "ref": "object-store:" + _d("art" + tag),
                    "digest": _d("art" + tag),
                    "required": False,
                    "included": True,
                    "execution/ref": ex,
                    "step/id": "inspect",
                },
                {
                    "kind": "candidate",
                    "ref": "corpus-candidate:c" + tag,
                    "digest": _d("cand" + tag),
                    "required": True,
                    "included": True,
                },
                {
                    "kind": "review",
                    "ref": "corpus-review:r" + tag,
                    "digest": _d("rev" + tag),
                    "required": False,
                    "included": False,
                    "omitted/reason": "exceeds-limit",
                },
            ],
            "class/key": "Community",
            "content/ref": "object-store:" + digest,
            "content/digest": digest,
            "content/size-bytes": len(content),
            "review/target": {
                "proposal/ref": "corpus-experiment:" + _d("prop" + tag),
                "proposal/digest": _d("prop" + tag),
                "candidate/digest": _d("cand" + tag),
            },
        }
    )


def _bytes(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode("utf-8")


def _doc(doc: dict[str, Any], name: str = "m.json") -> Document:
    return Document(_bytes(doc), name=name)


def _address(doc: dict[str, Any]) -> str:
    return "blake3:" + evstore.core.digests.blake3_hex(evstore.core.canonical.dumps(doc))


# --- acceptance ------------------------------------------------------------------------------


def test_ingest_binds_content_and_is_found(store: evstore.Store) -> None:
    doc = build()
    report = store.ingest([_doc(doc)], supplied=[CONTENT])
    (res,) = report.results
    assert (res.kind, res.new, res.warnings) == ("manifest", True, ())
    assert res.digest.address == _address(doc)
    # The content is stored and linked; the manifest is found by its manifest/ref.
    assert store.get(doc["content/ref"]) == CONTENT
    content_blob = store.stat(doc["content/ref"])["address"]
    with store.reading() as txn:
        assert txn.edges_from(res.digest.address) == [("content", content_blob[7:])]
        assert txn.binding(ms.REF_NAMESPACE, doc["items"][0]["ref"]) == doc["items"][0]["digest"]
    assert [a.address for a in store.manifests.find(doc["manifest/ref"])] == [res.digest.address]
    assert [a.address for a in store.find("manifest_ref", doc["manifest/ref"])] == [
        res.digest.address
    ]
    assert store.manifests.content(doc["manifest/ref"]) == CONTENT
    assert store.manifests.load(doc["manifest/ref"]) == doc
    assert list(store.check()) == []
    # Again: accepted, not new; content already stored, so it need not be supplied.
    assert store.manifests.ingest(_bytes(doc)).new is False


def test_content_already_stored(store: evstore.Store) -> None:
    store.put(CONTENT)
    assert store.manifests.ingest(_bytes(build())).new is True


def test_same_refs_same_digests_in_another_manifest(store: evstore.Store) -> None:
    store.manifests.ingest(_bytes(build()), CONTENT)
    other = build()
    other["room/id"] = "room:elsewhere"
    assert store.manifests.ingest(_bytes(seal(other)), CONTENT).new is True


def test_not_found(store: evstore.Store) -> None:
    with pytest.raises(evstore.NotFound) as info:
        store.manifests.content("corpus-evidence-manifest:sha256:" + "A" * 43)
    assert info.value.code == "not-found.artifact"


# --- one rejection per rule, store unchanged -------------------------------------------------

Mutation = Callable[[dict[str, Any]], bytes | None]


def _keep(doc: dict[str, Any]) -> bytes | None:
    return CONTENT


def _m(fn: Callable[[dict[str, Any]], Any], content: bytes | None = CONTENT, reseal: bool = True):
    def mutate(doc: dict[str, Any]) -> bytes | None:
        fn(doc)
        if reseal:
            seal(doc)
        return content

    return mutate


def _non_canonical(doc: dict[str, Any]) -> None:
    b64u = doc["content/digest"][7:]
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    doc["content/digest"] = "sha256:" + b64u[:-1] + alphabet[alphabet.index(b64u[-1]) | 1]
    doc["content/ref"] = "object-store:" + doc["content/digest"]


def _dup_ref(doc: dict[str, Any]) -> None:
    twin = copy.deepcopy(doc["items"][2])
    twin["digest"] = _d("another candidate")
    twin["required"] = False
    doc["items"].append(twin)


REJECTIONS: list[tuple[str, Mutation, str]] = [
    ("schema", _m(lambda d: d.update({"class/key": "public"})), m.SCHEMA),
    ("rule-1", _m(lambda d: (d.update({"items": []}), d.pop("review/target"))), m.RULE_1),
    ("phase-missing", _m(lambda d: d["projection"].update({"revision": 2})), m.PHASE_MISSING),
    (
        "phase-unverifiable",
        _m(lambda d: (d["projection"].update({"revision": 2}), d.update({"phase": {}}))),
        m.PHASE_UNVERIFIABLE,
    ),
    (
        "required-excluded",
        _m(lambda d: d["items"][0].update({"included": False, "omitted/reason": "exceeds-limit"})),
        m.REQUIRED_EXCLUDED,
    ),
    ("omitted-reason", _m(lambda d: d["items"][3].pop("omitted/reason")), m.OMITTED_REASON),
    (
        "included-reason",
        _m(lambda d: d["items"][1].update({"omitted/reason": "exceeds-limit"})),
        m.INCLUDED_REASON,
    ),
    ("artifact-execution", _m(lambda d: d["items"][1].pop("execution/ref")), m.ARTIFACT_EXECUTION),
    (
        "ref-not-exact",
        _m(lambda d: d["items"][3].update({"ref": "corpus-review:latest"})),
        m.REF_NOT_EXACT,
    ),
    (
        "review-target",
        _m(lambda d: d["review/target"].update({"candidate/digest": _d("nobody")})),
        m.REVIEW_TARGET,
    ),
    (
        "self-address",
        _m(lambda d: d.update({"room/id": "room:other"}), reseal=False),
        m.SELF_ADDRESS,
    ),
    ("content-not-supplied", _m(lambda d: None, content=None), m.CONTENT_MISSING),
    # The one byte string supplied is taken for the content: its SHA-256 is wrong.
    ("content-other-bytes", _m(lambda d: None, content=CONTENT + b"!"), m.CONTENT_DIGEST),
    ("content-digest-non-canonical", _m(_non_canonical), m.CONTENT_DIGEST),
    (
        "content-size",
        _m(lambda d: d.update({"content/size-bytes": len(CONTENT) + 1})),
        m.CONTENT_SIZE,
    ),
    (
        "content-over-limit",
        _m(lambda d: d.update({"bytes/max": len(CONTENT) - 1})),
        m.CONTENT_OVER_LIMIT,
    ),
    ("ref-digest", _m(lambda d: d["items"][1].update({"digest": _d("x")})), m.REF_DIGEST),
    (
        "content-ref-digest",
        _m(lambda d: d.update({"content/ref": "object-store:" + _d("x")})),
        m.REF_DIGEST,
    ),
    ("ref-rebound-same-manifest", _m(_dup_ref), m.REF_REBOUND),
]


@pytest.mark.parametrize(
    "mutate, code", [r[1:] for r in REJECTIONS], ids=[r[0] for r in REJECTIONS]
)
def test_ingest_rejects_and_writes_nothing(
    store: evstore.Store, snapshot: Any, mutate: Mutation, code: str
) -> None:
    # A store that is not empty (with other content: this test's content must be new).
    store.manifests.ingest(_bytes(build(b"earlier", tag="earlier")), b"earlier")
    doc = build()
    content = mutate(doc)
    before = snapshot(store)
    with pytest.raises(EvstoreError) as info:
        store.ingest([_doc(doc)], supplied=[content] if content is not None else [])
    assert info.value.code == code
    assert info.value.path == "m.json"
    assert snapshot(store) == before


def test_every_code_is_exercised_by_ingest() -> None:
    assert {r[2] for r in REJECTIONS} | {m.REF_REBOUND, m.CONTENT_EDGE_MISSING} == {
        code for code in CODES if code.startswith("manifest.")
    }


def test_ref_rebound_by_an_earlier_manifest(store: evstore.Store, snapshot: Any) -> None:
    first = build()
    store.manifests.ingest(_bytes(first), CONTENT)
    second = build()
    second["room/id"] = "room:second"
    second["items"][2]["digest"] = _d("a different candidate")  # same ref, new digest
    second["review/target"]["candidate/digest"] = _d("a different candidate")
    seal(second)
    assert m.validate(second) == Faults()
    before = snapshot(store)
    with pytest.raises(ManifestBindingError) as info:
        store.manifests.ingest(_bytes(second), CONTENT)
    err = info.value
    assert (err.code, err.pointer) == (m.REF_REBOUND, "/items/2/digest")
    assert err.details["bound"] == first["items"][2]["digest"]
    assert snapshot(store) == before


def test_rebinding_faults_keep_item_order(store: evstore.Store, snapshot: Any) -> None:
    # All item refs are bound in one batch; the faults are still one per item, in item order,
    # an item repeating a ref of the same manifest with another digest included.
    store.manifests.ingest(_bytes(build()), CONTENT)
    doc = build()
    doc["room/id"] = "room:again"
    doc["items"][2]["digest"] = _d("candidate, rebound")
    doc["review/target"]["candidate/digest"] = _d("candidate, rebound")
    doc["items"][3]["digest"] = _d("review, rebound")
    twin = copy.deepcopy(doc["items"][2])
    twin.update(digest=_d("candidate, third digest"), required=False)
    doc["items"].append(twin)
    seal(doc)
    before = snapshot(store)
    report = store.manifests.validate(_bytes(doc), CONTENT)
    assert [(f.code, f.pointer, f.details["bound"]) for f in report.faults] == [
        (m.REF_REBOUND, "/items/2/digest", _d("cand1")),
        (m.REF_REBOUND, "/items/3/digest", _d("rev1")),
        (m.REF_REBOUND, "/items/4/digest", _d("cand1")),
    ]
    with pytest.raises(ManifestBindingError) as info:
        store.manifests.ingest(_bytes(doc), CONTENT)
    assert (info.value.code, info.value.pointer) == (m.REF_REBOUND, "/items/2/digest")
    assert snapshot(store) == before


def test_batch_is_one_transaction(store: evstore.Store, snapshot: Any) -> None:
    good = build()
    bad = build(tag="2")
    bad["items"][0]["included"] = False
    bad["items"][0]["omitted/reason"] = "exceeds-limit"
    seal(bad)
    before = snapshot(store)
    with pytest.raises(ManifestError) as info:
        store.ingest([_doc(good, "good.json"), _doc(bad, "bad.json")], supplied=[CONTENT])
    assert (info.value.code, info.value.path) == (m.REQUIRED_EXCLUDED, "bad.json")
    assert snapshot(store) == before  # neither the good manifest nor the content


def test_a_binding_fault_after_content_rolls_the_content_back(
    store: evstore.Store, snapshot: Any
) -> None:
    doc = build()
    doc["items"][1]["digest"] = _d("other")  # ref-digest, checked after the content is bound
    seal(doc)
    before = snapshot(store)
    with pytest.raises(ManifestBindingError):
        store.manifests.ingest(_bytes(doc), CONTENT)
    assert snapshot(store) == before
    assert store.has([doc["content/ref"]]) == [doc["content/ref"]]


# --- supplied bytes that are not the content ---------------------------------------------------

OTHER = CONTENT.replace(b"evidence", b"EVIDENCE")  # same length, other SHA-256


@pytest.mark.parametrize(
    "supplied, faults",
    [
        # Exactly one byte string supplied: it is checked as the content.
        ([OTHER], [(m.CONTENT_DIGEST, "/content~1digest")]),
        (
            [CONTENT + b"!"],
            [(m.CONTENT_DIGEST, "/content~1digest"), (m.CONTENT_SIZE, "/content~1size-bytes")],
        ),
        (
            [CONTENT * 20],
            [
                (m.CONTENT_DIGEST, "/content~1digest"),
                (m.CONTENT_SIZE, "/content~1size-bytes"),
                (m.CONTENT_OVER_LIMIT, "/bytes~1max"),
            ],
        ),
        ([OTHER, OTHER], [(m.CONTENT_DIGEST, "/content~1digest")]),  # the same bytes twice
        # Several candidates: none is the content, and none can be blamed.
        ([OTHER, CONTENT + b"!"], [(m.CONTENT_MISSING, "/content~1ref")]),
    ],
    ids=["same-size", "other-size", "over-limit", "duplicate", "two-others"],
)
def test_supplied_bytes_that_are_not_the_content(
    store: evstore.Store, snapshot: Any, supplied: list[bytes], faults: list[tuple[str, str]]
) -> None:
    doc = build()
    before = snapshot(store)
    with pytest.raises(ManifestBindingError) as info:
        store.ingest([_doc(doc)], supplied=supplied)
    assert (info.value.code, info.value.pointer) == faults[0]
    assert snapshot(store) == before
    report = store.validate([_doc(doc)], supplied=supplied)
    if faults[0][0] == m.CONTENT_MISSING:  # validate: absent content is a warning
        assert report.ok and [w.code for w in report.results[0].warnings] == [m.CONTENT_MISSING]
    else:
        assert [(f.code, f.pointer) for f in report.faults] == faults
    assert snapshot(store) == before


def test_content_digest_names_the_supplied_bytes(store: evstore.Store) -> None:
    doc = build()
    with pytest.raises(ManifestBindingError) as info:
        store.manifests.ingest(_bytes(doc), OTHER)
    err = info.value
    assert err.details == {
        "actual": "sha256:" + sha256_b64u(OTHER),
        "expected": doc["content/digest"],
        "supplied": True,
    }
    assert "supplied with the command" in err.message


def test_the_manifest_itself_is_not_a_content_candidate(store: evstore.Store) -> None:
    # A bundle supplies every file, the manifest's own JSON too: that is never the content.
    doc = build()
    with pytest.raises(ManifestBindingError) as info:
        store.ingest([_doc(doc)], supplied=[_bytes(doc)])
    assert info.value.code == m.CONTENT_MISSING
    with pytest.raises(ManifestBindingError) as info:
        store.ingest([_doc(doc)], supplied=[_bytes(doc), OTHER])
    assert info.value.code == m.CONTENT_DIGEST


def test_a_wrong_supplied_file_is_refused_even_when_content_is_stored(
    store: evstore.Store, snapshot: Any
) -> None:
    # The stored content would satisfy the manifest, but the caller supplied another file
    # for it: evstore refuses rather than silently ignoring what the user gave it.
    store.put(CONTENT)
    before = snapshot(store)
    with pytest.raises(evstore.InputError) as info:
        store.manifests.ingest(_bytes(build()), OTHER)
    assert info.value.code == "input.unused-content"
    assert snapshot(store) == before
    assert store.manifests.ingest(_bytes(build())).new is True


def test_batch_with_one_content_file(store: evstore.Store, snapshot: Any) -> None:
    # The rule counts what the command supplied: the second manifest's content is absent, and
    # the only file supplied (the first manifest's content) is blamed as its content.
    first, second = build(), build(OTHER, tag="2")
    before = snapshot(store)
    with pytest.raises(ManifestBindingError) as info:
        store.ingest([_doc(first, "a.json"), _doc(second, "b.json")], supplied=[CONTENT])
    assert (info.value.code, info.value.path) == (m.CONTENT_DIGEST, "b.json")
    assert snapshot(store) == before
    report = store.ingest([_doc(first), _doc(second)], supplied=[CONTENT, OTHER])
    assert [r.new for r in report.results] == [True, True]


# --- validate: every fault, nothing written --------------------------------------------------


def test_validate_lists_every_binding_fault(store: evstore.Store, snapshot: Any) -> None:
    store.manifests.ingest(_bytes(build()), CONTENT)
    doc = build()
    doc["room/id"] = "room:again"
    doc["content/size-bytes"] = len(CONTENT) + 1
    doc["items"][1]["digest"] = _d("other")  # ref-digest and ref-rebound
    seal(doc)
    before = snapshot(store)
    report = store.manifests.validate(_bytes(doc), CONTENT)
    assert [(f.code, f.pointer) for f in report.faults] == [
        (m.CONTENT_SIZE, "/content~1size-bytes"),
        (m.REF_DIGEST, "/items/1/digest"),
        (m.REF_REBOUND, "/items/1/digest"),
    ]
    assert snapshot(store) == before


def test_validate_without_content_warns(store: evstore.Store, snapshot: Any) -> None:
    before = snapshot(store)
    report = store.manifests.validate(_bytes(build()))
    assert report.ok
    (res,) = report.results
    assert [w.code for w in res.warnings] == [m.CONTENT_MISSING]
    assert snapshot(store) == before


@pytest.mark.shared
def test_upstream_fixtures_validate(shared_dir: Path, store: evstore.Store, snapshot: Any) -> None:
    folder = shared_dir / "fixtures" / "orbidocs"
    before = snapshot(store)
    names = (
        "fixture.corpus-passage-evidence-manifest.json",
        "at-8c55b85/fixture.corpus-passage-evidence-manifest.json",
    )
    report = store.validate([Document((folder / n).read_bytes(), name=n) for n in names])
    assert report.ok and [r.kind for r in report.results] == ["manifest", "manifest"]
    invalid = "invalid/omitted-required.corpus-passage-evidence-manifest.json"
    report = store.validate([Document((folder / invalid).read_bytes(), name=invalid)])
    assert [(f.code, f.pointer) for f in report.faults] == [
        (m.REQUIRED_EXCLUDED, "/items/0/required"),
        (m.SELF_ADDRESS, "/manifest~1ref"),
    ]
    with pytest.raises(ManifestError) as info:
        store.ingest([Document((folder / invalid).read_bytes(), name=invalid)])
    assert info.value.code == m.REQUIRED_EXCLUDED
    assert snapshot(store) == before


# --- revision 2 and the setting ----------------------------------------------------------


def _revision_2() -> dict[str, Any]:
    doc = build()
    doc["projection"]["revision"] = 2
    doc["phase"] = {"schema": "corpus-task-pack-phase.v1"}
    doc["items"] = []
    del doc["review/target"]
    return seal(doc)


def test_revision_2_accepted_with_recorded_warning_when_setting_on(store: evstore.Store) -> None:
    doc = _revision_2()
    with pytest.raises(ManifestError) as info:
        store.manifests.ingest(_bytes(doc), CONTENT)
    assert info.value.code == m.PHASE_UNVERIFIABLE
    store.set_config(ACCEPT, True)
    res = store.manifests.ingest(_bytes(doc), CONTENT)
    assert [(w.code, w.pointer) for w in res.warnings] == [(m.PHASE_UNVERIFIABLE, "/phase")]
    (found,) = store.manifests.find(doc["manifest/ref"])
    assert [w["code"] for w in store.warnings(found.address)] == [m.PHASE_UNVERIFIABLE]
    # Accepted once, it stays sound for check even if the setting is turned off again.
    store.set_config(ACCEPT, False)
    assert list(store.check()) == []


# --- check re-verifies -----------------------------------------------------------------------


def test_check_finds_a_rebound_ref_and_a_missing_edge(store: evstore.Store) -> None:
    doc = build()
    address = store.manifests.ingest(_bytes(doc), CONTENT).digest.address
    with store.db.engine.begin() as conn:
        conn.execute(
            sa.update(bindings)
            .where(
                bindings.c.namespace == ms.REF_NAMESPACE, bindings.c.key == doc["items"][1]["ref"]
            )
            .values(value=_d("tampered"))
        )
        conn.execute(sa.delete(edges).where(edges.c.src == address[7:]))
    faults = [(f.code, f.pointer, f.details["address"]) for f in store.check()]
    assert sorted(faults) == sorted(
        [
            (m.REF_REBOUND, "/items/1/digest", address),
            (m.CONTENT_EDGE_MISSING, "/content~1ref", address),
        ]
    )


def test_audit_requires_the_content(store: evstore.Store) -> None:
    doc = build()
    with store.reading() as txn:
        faults = ms.ManifestKind().audit(doc, _address(doc)[7:], txn)
    assert [(f.code, f.pointer) for f in faults] == [(m.CONTENT_MISSING, "/content~1ref")]


def test_audit_reports_contract_faults(store: evstore.Store) -> None:
    doc = build()
    doc["room/id"] = "room:x"  # self-address no longer holds
    with store.reading() as txn:
        faults = ms.ManifestKind().audit(doc, _address(doc)[7:], txn)
    assert [f.code for f in faults] == [m.SELF_ADDRESS]


# --- example and CLI -------------------------------------------------------------------------


def test_example_ingests(store: evstore.Store) -> None:
    manifest = (EXAMPLES / "manifest.json").read_bytes()
    content = (EXAMPLES / "rendered-evidence.md").read_bytes()
    doc = json.loads(manifest)
    assert m.validate(doc) == Faults()
    res = store.manifests.ingest(manifest, content, name="manifest.json")
    assert res.new and store.manifests.content(doc["manifest/ref"]) == content
    assert list(store.check()) == []


def test_cli(store_url: str, tmp_path: Path) -> None:
    def run(*args: str) -> Any:
        return CliRunner().invoke(cli, ["--store", store_url, *args], catch_exceptions=False)

    doc = build()
    mf, cf = tmp_path / "m.json", tmp_path / "content.md"
    mf.write_bytes(_bytes(doc))
    cf.write_bytes(CONTENT)
    assert run("validate", str(mf)).exit_code == 0
    r = run("--json", "ingest", "--content", str(cf), str(mf))
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["artifacts"][0]["kind"] == "manifest"
    r = run("--json", "find", "--manifest-ref", doc["manifest/ref"])
    assert r.exit_code == 0 and len(json.loads(r.stdout)["artifacts"]) == 1
    r = run("manifest", "content", doc["manifest/ref"])
    assert r.exit_code == 0 and r.stdout_bytes == CONTENT
    r = run("--json", "manifest", "address", str(mf))
    assert r.exit_code == 0
    assert json.loads(r.stdout) == {
        "computed": doc["manifest/ref"],
        "claimed": doc["manifest/ref"],
        "matches": True,
    }
    doc["room/id"] = "room:changed"
    mf.write_bytes(_bytes(doc))
    r = run("--json", "manifest", "address", str(mf))
    assert r.exit_code == 1 and json.loads(r.stdout)["matches"] is False
    r = run("--json", "ingest", "--content", str(cf), str(mf))
    assert r.exit_code == 1
    assert json.loads(r.stdout)["error"]["code"] == m.SELF_ADDRESS
    r = run("--json", "manifest", "content", "corpus-evidence-manifest:sha256:" + "A" * 43)
    assert r.exit_code == 1
    assert json.loads(r.stdout)["error"]["code"] == "not-found.artifact"


def test_cli_address_needs_no_store_and_refuses_non_objects(tmp_path: Path) -> None:
    # `manifest address` never opens a store: a URL to nowhere does not matter.
    url = "sqlite:///" + str(tmp_path / "absent.db")
    doc = build()
    mf = tmp_path / "m.json"
    mf.write_bytes(_bytes(doc))
    r = CliRunner().invoke(cli, ["--store", url, "manifest", "address", str(mf)])
    assert (r.exit_code, r.stdout) == (0, doc["manifest/ref"] + "\n")
    doc["manifest/ref"] = "corpus-evidence-manifest:sha256:" + "A" * 43
    mf.write_bytes(_bytes(doc))
    r = CliRunner().invoke(cli, ["--store", url, "manifest", "address", str(mf)])
    assert r.exit_code == 1
    assert r.stdout == (
        f"{m.compute_manifest_ref(doc)}\nmanifest/ref differs: {doc['manifest/ref']}\n"
    )
    mf.write_bytes(b"[]")
    r = CliRunner().invoke(cli, ["--json", "--store", url, "manifest", "address", str(mf)])
    assert r.exit_code == 1
    err = json.loads(r.stdout)["error"]
    assert (err["code"], err["family"], err["path"]) == ("input.invalid", "input", str(mf))
    assert not (tmp_path / "absent.db").exists()
