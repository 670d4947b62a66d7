"""CLI: excerpt (exact canonical bytes), ingest-bundle, runs, refs, closure; exit codes, --json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

import evstore
from evstore.cli.main import cli
from evstore.contracts.contexts.rules import select_excerpt
from evstore.core.canonical import dumps
from evstore.db.tables import blobs

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "bundle"
SOURCE_FILE = EXAMPLE / "sources" / "session-alpha.json"


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVSTORE_URL", raising=False)
    url = f"sqlite:///{tmp_path / 'cli.db'}"

    def _run(*args: str) -> Any:
        return CliRunner().invoke(cli, ["--store", url, *args], catch_exceptions=False)

    _run.url = url  # type: ignore[attr-defined]
    return _run


@pytest.fixture
def source_ref(run: Any) -> str:
    r = run("--json", "ingest", "--kind", "source-document", str(SOURCE_FILE))
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["artifacts"][0]["address"]


def test_excerpt_prints_exact_canonical_bytes(run: Any, source_ref: str) -> None:
    source = json.loads(SOURCE_FILE.read_text())
    r = run("excerpt", source_ref, "--ref", "31:31", "--ref", "33:33", "--window", "1")
    assert r.exit_code == 0
    assert r.stdout_bytes == dumps(select_excerpt(source, [(31, 31), (33, 33)], 1))
    # The example bundle's excerpt is exactly this selection.
    published = json.loads((EXAMPLE / "evidence-context.json").read_text())
    assert r.stdout_bytes == dumps(published)

    j = run("--json", "excerpt", source_ref, "--ref", "12:12")
    out = json.loads(j.stdout)
    assert out["units"] == 1 and out["excerpt"][0]["id"] == 12 and out["window"] == 0
    assert run("excerpt", source_ref).stdout_bytes == b"[]"


@pytest.mark.parametrize(
    ("args", "code", "exit_code"),
    [
        (["--ref", "99:99"], "context.range-unknown", 1),
        (["--ref", "33:31"], "context.range-order", 1),
        (["--ref", "31-33"], None, 2),
        (["--ref", "31:31", "--window", "-1"], None, 2),
    ],
)
def test_excerpt_errors(
    run: Any, source_ref: str, args: list[str], code: str | None, exit_code: int
) -> None:
    r = run("--json", "excerpt", source_ref, *args)
    assert r.exit_code == exit_code
    if code:
        assert json.loads(r.stdout)["error"]["code"] == code


def test_ingest_with_source_document(run: Any, source_ref: str, tmp_path: Path) -> None:
    ctx = EXAMPLE / "evidence-context.json"
    r = run(
        "--json", "ingest", "--kind", "evidence-context", str(ctx), "--source-document", source_ref
    )
    assert r.exit_code == 0, r.output
    art = json.loads(r.stdout)["artifacts"][0]
    assert art["source_check"] == "checked" and art["source_document"] == source_ref
    bad = json.loads(ctx.read_text())
    bad.reverse()
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    r = run(
        "--json",
        "ingest",
        "--kind",
        "evidence-context",
        "bad.json",
        "--source-document",
        source_ref,
    )
    assert r.exit_code == 1
    assert json.loads(r.stdout)["error"]["code"] == "context.source-order"


def test_bundle_commands(run: Any, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(EXAMPLE, bundle)
    r = run("--json", "ingest-bundle", str(bundle))
    if r.exit_code == 1 and json.loads(r.stdout)["error"]["code"] == "kind.unknown":
        pytest.skip("a kind handler of the example bundle is not in this build yet")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    run_ref = out["run"]["address"]
    assert out["run"]["new"] is True
    assert out["record"]["evidence_context"]["source_check"] == "checked"
    again = run("ingest-bundle", str(bundle))
    assert again.exit_code == 0 and f"{run_ref}  run  (not new)" in again.stdout

    runs = json.loads(run("--json", "runs").stdout)["runs"]
    assert [x["address"] for x in runs] == [run_ref]

    log = out["record"]["files"]["logs/run.log"]["raw"]
    refs = json.loads(run("--json", "refs", log).stdout)["refs"]
    assert [(x["address"], x["role"]) for x in refs] == [(run_ref, "file")]

    closure = run("--json", "closure", run_ref)
    assert closure.exit_code == 0 and json.loads(closure.stdout)["ok"] is True

    with evstore.open(run.url) as store, store.db.engine.begin() as conn:
        address = log.removeprefix("blake3:")
        conn.execute(sa.update(blobs).where(blobs.c.address == address).values(data=b"x"))
    broken = run("closure", run_ref)
    assert broken.exit_code == 1 and "FAILED corruption." in broken.stdout


def test_ingest_bundle_rejection_exit_code(run: Any, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(EXAMPLE, bundle)
    index = json.loads((bundle / "index.json").read_text())
    index["evidence_context"]["schema_version"] = "v2"
    (bundle / "index.json").write_text(json.dumps(index))
    r = run("--json", "ingest-bundle", str(bundle))
    assert r.exit_code == 1
    err = json.loads(r.stdout)["error"]
    assert (err["code"], err["pointer"]) == (
        "context.unsupported-version",
        "/evidence_context/schema_version",
    )
    assert run("refs", "blake3:" + "0" * 64).exit_code == 1
