"""insonic packages in the store: bindings, one transaction, envelopes, export, check, CLI.

Every test that takes `store` runs on SQLite and PostgreSQL. The base documents are the
examples in examples/packages (so the README main job's inputs are tested too); mutated
packages get their context.bytes recomputed so only the rule under test can fire.
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
from evstore.contracts.packages import rules as R
from evstore.contracts.packages import rules_context as C
from evstore.contracts.packages import store as P
from evstore.core import errors as E
from evstore.core.canonical import dumps, loads
from evstore.core.errors import EvstoreError, NotFound
from evstore.db.tables import bindings, edges

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "packages"
SCHEMA = "contracts/insonic-answer-evidence-1.3.0.schema.json"
OTHER_ID = "9f5a0b12-4c6d-4e8f-a0b1-c2d3e4f5a6b7"


def example(name: str) -> dict[str, Any]:
    return json.loads((EXAMPLES / name).read_text("utf-8"))


def package() -> dict[str, Any]:
    return example("01-package-launch.json")


def newer() -> dict[str, Any]:
    return example("02-package-launch-board-rev4.json")


def envelope() -> dict[str, Any]:
    return example("04-envelope-launch.json")


def finish(doc: dict[str, Any]) -> dict[str, Any]:
    n = C.context_fixed_point(doc["context"])
    doc["context"]["bytes"] = doc["context"]["tokens"] = n
    return doc


def raw(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode("utf-8")


def ingest(store: evstore.Store, *docs: Any) -> Any:
    return store.ingest([Document(raw(d), name=f"doc{i}") for i, d in enumerate(docs)])


def rejected(store: evstore.Store, snapshot: Any, *docs: Any) -> EvstoreError:
    """Ingest ``docs``, expect a rejection, and check that nothing at all was written."""
    before = snapshot(store)
    with pytest.raises(EvstoreError) as info:
        ingest(store, *docs)
    assert snapshot(store) == before
    return info.value


# --------------------------------------------------------------------------- real input


def test_embedded_examples_ingest(shared_dir: Path, store: evstore.Store) -> None:
    published = json.loads((shared_dir / SCHEMA).read_text("utf-8"))
    pkg = published["examples"][0]
    req = published["$defs"]["request"]["examples"][0]
    env = published["$defs"]["envelope"]["examples"][0]
    report = ingest(store, pkg, req, env)
    assert [(r.kind, r.new, r.warnings) for r in report.results] == [
        ("package", True, ()),
        ("request", True, ()),
        ("envelope", True, ()),
    ]
    assert [a.kind for a in store.find(P.ATTR_PACKAGE_ID, pkg["id"])] == ["envelope", "package"]
    assert list(store.check()) == []


def test_examples_ingest_and_again_as_not_new(store: evstore.Store, snapshot: Any) -> None:
    files = sorted(EXAMPLES.glob("*.json"))
    assert len(files) == 4
    docs = [Document(f.read_bytes(), name=str(f)) for f in files]
    report = store.ingest(docs)
    assert [r.kind for r in report.results] == ["package", "package", "request", "envelope"]
    assert all(r.new and not r.warnings for r in report.results)
    before = snapshot(store)
    again = store.ingest(docs)
    assert [r.new for r in again.results] == [False] * 4
    assert snapshot(store) == before
    assert list(store.check()) == []


# --------------------------------------------------------------------------- bindings


def test_same_package_again_is_not_new(store: evstore.Store, snapshot: Any) -> None:
    first = ingest(store, package()).results[0]
    before = snapshot(store)
    # Same JSON value, other key order and spacing: one canonical form, one address.
    doc = package()
    shuffled = json.dumps(dict(reversed(list(doc.items()))), indent=4, ensure_ascii=True)
    again = store.ingest([Document(shuffled.encode())]).results[0]
    assert (again.new, again.digest) == (False, first.digest)
    assert snapshot(store) == before


def test_package_id_reuse_is_rejected(store: evstore.Store, snapshot: Any) -> None:
    stored = ingest(store, package()).results[0]
    other = package()
    other["diagnostics"] = []
    err = rejected(store, snapshot, other)
    assert (err.code, err.pointer) == ("package.id-reuse", "/id")
    assert isinstance(err, E.PackageBindingError)
    assert err.details["stored"] == stored.digest.address
    # A UUID is case-insensitive: the upper-case id is the same id.
    upper = package()
    upper["id"] = upper["id"].upper()
    assert rejected(store, snapshot, upper).code == "package.id-reuse"


def test_revision_rebound_by_a_later_package_is_rejected(
    store: evstore.Store, snapshot: Any
) -> None:
    ingest(store, package())
    doc = newer()
    doc["id"] = OTHER_ID
    # Board revision 3 again, with revision 4's digests: the first write (revision 3's) wins.
    for item in doc["items"]:
        if item["reference"]["recording_revision"] == "4":
            item["reference"]["recording_revision"] = "3"
    err = rejected(store, snapshot, finish(doc))
    assert (err.code, err.pointer) == ("package.revision-conflict", "/items/0/reference")
    assert err.details["bound_by"] == store.find(P.ATTR_PACKAGE_ID, package()["id"])[0].address
    assert set(err.details["differs"]) == {
        "document_digest",
        "source_map_digest",
        "identity_digest",
    }


def test_revision_conflict_inside_one_package_is_rejected(
    store: evstore.Store, snapshot: Any
) -> None:
    doc = package()
    doc["items"][3]["reference"]["source_digest"] = "0" * 64
    err = rejected(store, snapshot, doc)
    assert (err.code, err.pointer) == ("package.revision-conflict", "/items/3/reference")


def test_same_revision_same_digests_in_another_package(store: evstore.Store) -> None:
    ingest(store, package())
    doc = package()
    doc["id"] = OTHER_ID
    doc["state"] = "partial"
    assert ingest(store, doc).results[0].new


def test_batch_is_one_transaction(store: evstore.Store, snapshot: Any) -> None:
    bad = envelope()
    bad["claims"][0]["citations"][0]["quote"] = "not in the cue"
    err = rejected(store, snapshot, package(), newer(), bad)
    assert (err.code, err.pointer) == (
        "envelope.citation-quote",
        "/claims/0/citations/0/quote",
    )
    # A later binding fault rolls back the earlier, valid packages as well.
    clash = package()
    clash["diagnostics"] = []
    assert rejected(store, snapshot, newer(), package(), clash).code == "package.id-reuse"


@pytest.mark.parametrize(
    ("mutate", "code", "pointer"),
    [
        (
            lambda d: d["items"].append(copy.deepcopy(d["items"][0])),
            "package.item-id-duplicate",
            "/items/12/id",
        ),
        (
            lambda d: d["context"].__setitem__("question", "?"),
            "package.context-question",
            "/context/question",
        ),
        (
            lambda d: d["conflicts"][0]["evidence_ids"].append("ev:none"),
            "package.conflict-unknown-evidence",
            "/conflicts/0/evidence_ids/2",
        ),
        (lambda d: d.__setitem__("id", "not-a-uuid"), "package.schema", "/id"),
    ],
    ids=["item-id", "question", "conflict", "schema"],
)
def test_contract_faults_reject_and_write_nothing(
    store: evstore.Store, snapshot: Any, mutate: Callable[[dict], Any], code: str, pointer: str
) -> None:
    doc = package()
    mutate(doc)
    err = rejected(store, snapshot, finish(doc))
    assert (err.code, err.pointer) == (code, pointer)


# --------------------------------------------------------------------------- context size


def test_context_bytes_warning_is_recorded_and_shown(store: evstore.Store) -> None:
    doc = package()
    doc["context"]["bytes"] += 1
    result = ingest(store, doc).results[0]
    assert [(w.code, w.pointer) for w in result.warnings] == [
        ("package.context-bytes", "/context/bytes"),
        ("package.context-tokens", "/context/tokens"),
    ]
    shown = store.warnings(result.digest.address)
    assert [w["code"] for w in shown] == ["package.context-bytes", "package.context-tokens"]
    exported = json.loads(store.packages.export(doc["id"]))
    assert exported["observations"]["warnings"] == shown
    assert list(store.check()) == []  # accepted with the warning; check agrees


def test_strict_context_bytes_rejects(store: evstore.Store, snapshot: Any) -> None:
    store.set_config(R.STRICT_CONTEXT_BYTES, "true")
    doc = package()
    doc["context"]["tokens"] = doc["context"]["bytes"] = doc["context"]["bytes"] - 1
    err = rejected(store, snapshot, doc)
    assert (err.code, err.pointer) == ("package.context-bytes", "/context/bytes")
    assert ingest(store, package()).results[0].new  # a right one is accepted


# --------------------------------------------------------------------------- envelopes


def test_envelope_needs_its_package(store: evstore.Store, snapshot: Any) -> None:
    err = rejected(store, snapshot, envelope())
    assert (err.code, err.pointer) == ("envelope.unknown-package", "/package_id")
    assert isinstance(err, E.PackageBindingError)
    # Package and envelope in one call: the envelope sees the package written before it.
    report = ingest(store, package(), envelope())
    env_address = report.results[1].digest.blake3
    pkg_address = report.results[0].digest.blake3
    with store.reading() as txn:
        assert txn.edges_from(env_address) == [("package", pkg_address)]
    found = store.packages.find(package()["id"], kind="envelope")
    assert [a.address for a in found] == [report.results[1].digest.address]


@pytest.mark.parametrize(
    ("mutate", "code", "pointer"),
    [
        (
            lambda e: e["claims"][0]["citations"][1].__setitem__("evidence_id", "ev:board:b-099"),
            "envelope.citation-unknown-evidence",
            "/claims/0/citations/1/evidence_id",
        ),
        (
            lambda e: e["claims"][2]["citations"][1]["reference"].__setitem__("ordinal", "23"),
            "envelope.citation-reference",
            "/claims/2/citations/1/reference",
        ),
        (
            lambda e: e["claims"][3]["citations"][0].__setitem__("quote", "ist noch offen!"),
            "envelope.citation-quote",
            "/claims/3/citations/0/quote",
        ),
        (lambda e: e.update(state="complete"), "envelope.schema", "/claims/1/support"),
    ],
    ids=["unknown-evidence", "reference", "quote", "complete-needs-support"],
)
def test_envelope_faults_against_the_stored_package(
    store: evstore.Store, snapshot: Any, mutate: Callable[[dict], Any], code: str, pointer: str
) -> None:
    ingest(store, package())
    env = envelope()
    mutate(env)
    err = rejected(store, snapshot, env)
    assert (err.code, err.pointer) == (code, pointer)


def test_envelope_cites_the_package_of_its_id_not_another(store: evstore.Store) -> None:
    ingest(store, package(), newer())
    env = envelope()
    env["package_id"] = newer()["id"]
    # The same item ids exist in the newer package, but board references differ (revision 4).
    report = store.validate([Document(raw(env))])
    assert {(f.code, f.pointer) for f in report.faults} == {
        ("envelope.citation-reference", "/claims/0/citations/0/reference"),
        ("envelope.citation-reference", "/claims/0/citations/1/reference"),
        ("envelope.citation-reference", "/claims/2/citations/0/reference"),
        ("envelope.citation-reference", "/claims/2/citations/1/reference"),
    }


def test_validate_lists_every_fault_and_writes_nothing(store: evstore.Store, snapshot: Any) -> None:
    ingest(store, package())
    before = snapshot(store)
    clash = package()
    clash["diagnostics"] = []
    env = envelope()
    env["package_id"] = OTHER_ID
    report = store.validate([Document(raw(clash)), Document(raw(env))])
    assert [f.code for f in report.faults] == ["package.id-reuse", "envelope.unknown-package"]
    assert snapshot(store) == before


# --------------------------------------------------------------------------- lookup


def test_find_and_ls(store: evstore.Store) -> None:
    a, b = ingest(store, package(), newer()).results
    pid = package()["id"]
    assert [x.address for x in store.packages.find(pid)] == [a.digest.address]
    assert [x.address for x in store.packages.find(pid.upper())] == [a.digest.address]
    assert [x.address for x in store.find("package_id", pid)] == [a.digest.address]
    assert [x.address for x in store.packages.by_key(package()["key"])] == [a.digest.address]
    ws = package()["workspace_id"]
    listed = {x.address for x in store.packages.in_workspace(ws)}
    assert listed == {a.digest.address, b.digest.address}
    assert {x.address for x in store.ls("package", attr=("workspace_id", ws))} == listed
    assert store.packages.load(pid) == loads(dumps(package()))
    with pytest.raises(NotFound):
        store.packages.load(OTHER_ID)


# --------------------------------------------------------------------------- export


def test_export_wraps_the_unchanged_package_with_current_observations(
    store: evstore.Store,
) -> None:
    first = ingest(store, package()).results[0]
    data = store.packages.export(first.digest.address)
    # The package bytes are the stored bytes, verbatim, and the whole export is canonical.
    assert b'"package":' + store.get(first.digest.address) + b"}" in data
    assert dumps(loads(data)) == data
    out = loads(data)
    assert out["format"] == P.EXPORT_FORMAT
    assert out["address"] == first.digest.address
    obs = out["observations"]
    assert obs["accepted_at"]
    assert obs["envelopes"] == [] and obs["warnings"] == []
    assert [f["current"] for f in obs["freshness"]] == [True, True, True]
    assert "accepted_at" not in out["package"]

    # A newer board revision arrives, and an envelope citing the first package.
    report = ingest(store, newer(), envelope())
    obs = loads(store.packages.export(package()["id"]))["observations"]
    board = obs["freshness"][0]
    assert (board["recording_revision"], board["newest_known_revision"], board["current"]) == (
        "3",
        "4",
        False,
    )
    assert board["items"] == ["/items/0", "/items/1", "/items/2", "/items/3", "/items/11"]
    assert [f["current"] for f in obs["freshness"][1:]] == [True, True]
    assert [e["address"] for e in obs["envelopes"]] == [report.results[1].digest.address]
    # The package itself never changes.
    assert loads(store.packages.export(package()["id"]))["package"] == out["package"]


def test_freshness_compares_revisions_as_integers(store: evstore.Store) -> None:
    doc = package()
    for item in doc["items"]:
        ref = item["reference"]
        if ref["recording_revision"] == "3":
            ref["recording_revision"] = "9007199254740993"
    ingest(store, finish(doc))
    later = newer()
    later["id"] = OTHER_ID
    for item in later["items"]:
        ref = item["reference"]
        if ref["recording_revision"] == "4":
            ref["recording_revision"] = "9007199254740992"  # older: equal as floats
    ingest(store, finish(later))
    board = loads(store.packages.export(doc["id"]))["observations"]["freshness"][0]
    assert board["newest_known_revision"] == "9007199254740993"
    assert board["current"] is True
    board = loads(store.packages.export(OTHER_ID))["observations"]["freshness"][0]
    assert board["current"] is False


def test_export_of_something_else(store: evstore.Store) -> None:
    req = ingest(store, example("03-request-launch.json")).results[0]
    with pytest.raises(NotFound):
        store.packages.export(req.digest.address)
    with pytest.raises(NotFound):
        store.packages.export(OTHER_ID)
    with pytest.raises(EvstoreError) as info:
        store.packages.export("launch")
    assert info.value.code == "ref.syntax"


# --------------------------------------------------------------------------- check


def test_check_finds_tampered_bindings_and_edges(store: evstore.Store) -> None:
    pkg, env = ingest(store, package(), envelope()).results
    assert list(store.check()) == []
    with store.db.engine.begin() as conn:
        conn.execute(sa.delete(edges).where(edges.c.src == env.digest.blake3))
        conn.execute(
            sa.update(bindings)
            .where(bindings.c.namespace == P.REVISION_NAMESPACE)
            .where(bindings.c.key.like("%/3"))
            .values(value="/".join(["f" * 64] * 4))
        )
        conn.execute(sa.delete(bindings).where(bindings.c.namespace == P.ID_NAMESPACE))
    found = {(f.code, f.pointer, f.details["address"]) for f in store.check()}
    assert found == {
        ("envelope.package-edge", "/package_id", env.digest.address),
        ("package.binding-missing", "/id", pkg.digest.address),
        ("package.revision-conflict", "/items/0/reference", pkg.digest.address),
    }


def test_ops_ingest_validate_and_helpers(store: evstore.Store, snapshot: Any) -> None:
    ops = store.packages
    before = snapshot(store)
    report = ops.validate(raw(envelope()), name="env.json")
    assert [(f.code, f.pointer, f.path) for f in report.faults] == [
        ("envelope.unknown-package", "/package_id", "env.json")
    ]
    assert snapshot(store) == before
    result = ops.ingest(raw(package()))
    assert (result.kind, result.new) == ("package", True)
    assert ops.ingest(raw(envelope()), kind="envelope").kind == "envelope"
    with pytest.raises(E.PackageError) as info:
        ops.ingest(raw(envelope()), kind="request")
    assert info.value.code == "request.schema"
    verdict = ops.context_size(raw(package()))
    assert verdict.ok and verdict.measured == package()["context"]["bytes"]
    assert ops.normalize_uuid(package()["id"].upper()) == package()["id"].lower()


def test_strict_setting_is_typed(store: evstore.Store) -> None:
    doc = package()
    doc["context"]["tokens"] = doc["context"]["bytes"] = doc["context"]["bytes"] - 1
    with store.reading() as txn:
        assert R.validate(doc, txn.settings).warnings  # default: a warning
    store.set_config(R.STRICT_CONTEXT_BYTES, True)
    with store.reading() as txn:
        assert codes_of(R.validate(doc, txn.settings).errors) == [
            ("package.context-bytes", "/context/bytes")
        ]


def codes_of(faults: list[EvstoreError]) -> list[tuple[str, str]]:
    return [(f.code, f.pointer) for f in faults]


# --------------------------------------------------------------------------- CLI


def test_cli(store_url: str, tmp_path: Path) -> None:
    def run(*args: str) -> Any:
        return CliRunner().invoke(cli, ["--store", store_url, *args], catch_exceptions=False)

    files = [str(f) for f in sorted(EXAMPLES.glob("*.json"))]
    assert run("ingest", *files).exit_code == 0
    pid = package()["id"]
    res = run("export", pid)
    assert res.exit_code == 0
    out = loads(res.stdout_bytes.rstrip(b"\n"))
    assert out["package"]["id"] == pid
    assert out["observations"]["freshness"][0]["current"] is False
    target = tmp_path / "export.json"
    assert run("export", out["address"], "-o", str(target)).exit_code == 0
    assert target.read_bytes() == res.stdout_bytes.rstrip(b"\n")
    res = run("--json", "export", OTHER_ID)
    assert res.exit_code == 1
    assert json.loads(res.stdout)["error"]["code"] == "not-found.artifact"
    res = run("--json", "find", "--package-id", pid)
    assert [a["kind"] for a in json.loads(res.stdout)["artifacts"]] == ["package", "envelope"]
    res = run("--json", "ls", "--kind", "package", "--workspace", package()["workspace_id"])
    assert len(json.loads(res.stdout)["artifacts"]) == 2
    assert run("check").exit_code == 0

    res = run("--json", "package", "context-size", files[0])
    assert res.exit_code == 0
    assert json.loads(res.stdout)["measured"] == package()["context"]["bytes"]
    wrong = package()
    wrong["context"]["bytes"] = 7
    (tmp_path / "wrong.json").write_bytes(raw(wrong))
    res = run("--json", "package", "context-size", str(tmp_path / "wrong.json"))
    assert res.exit_code == 1
    assert json.loads(res.stdout)["fixed_point"] == package()["context"]["bytes"]
    right = package()["context"]["bytes"]
    res = run("package", "context-size", str(tmp_path / "wrong.json"))
    assert res.exit_code == 1
    assert res.stdout == (
        f"measured {C.measure_context(wrong['context'])} bytes; claimed bytes 7, "
        f"tokens {right}; right value {right}\n"
    )
    res = CliRunner().invoke(cli, ["--json", "package", "context-size", "-"], input=b"[1]")
    assert res.exit_code == 1
    err = json.loads(res.stdout)["error"]
    assert (err["code"], err["path"]) == ("input.invalid", "-")
