"""Fragment commands via the CLI (both backends): ingest-source, ingest --source, quote."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evstore.cli.main import cli

CRM3 = Path("fixtures/templiqx/examples/crm3/evals")
MIXED = "aé€𝄞z".encode()
S1 = ("--host-id", "H", "--tenant-id", "T", "--authorization-scope-id", "A")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def run(store_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVSTORE_URL", raising=False)

    def _run(*args, input=None):
        return CliRunner().invoke(
            cli, ["--store", store_url, *args], input=input, catch_exceptions=False
        )

    return _run


def write(tmp_path: Path, name: str, data: bytes | dict) -> str:
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())
    return str(path)


def frag(start: int, end: int, **over) -> dict:
    return {
        "document_id": "D",
        "fragment_id": "F",
        "start_offset": start,
        "end_offset": end,
        "quote_sha256": sha(MIXED[start:end]),
        **over,
    }


@pytest.mark.shared
def test_bli61_end_to_end(run, tmp_path, shared_dir):
    inputs = json.loads((shared_dir / CRM3 / "bli-61-request.json").read_text())["inputs"]
    text = inputs["document_text"].encode()
    src = write(tmp_path, "bli61.txt", text)
    output = str(shared_dir / CRM3 / "bli-61-output.json")
    r = run("--json", "ingest", output, "--source", "SYN-DOC-0001", "clause-2", src)
    assert r.exit_code == 0, r.output
    (art,) = json.loads(r.stdout)["artifacts"]
    assert (art["kind"], art["fragments"], art["new_fragments"]) == ("fragment-batch", 4, 4)
    r = run(
        "--json",
        "find",
        "--quote-sha256",
        "4520d61c576b45c2fdaf7351002217dcee1f93eefa11615451c008750c5e842f",
    )
    (found,) = json.loads(r.stdout)["artifacts"]
    q = run("quote", found["address"])
    assert q.exit_code == 0 and q.stdout_bytes == text[130:141] == b"31 mei 2027"
    r = run("--json", "fragments", "--document-id", "SYN-DOC-0001")
    assert len(json.loads(r.stdout)["fragments"]) == 4
    r = run(
        "--json", "fragment-sources", "--document-id", "SYN-DOC-0001", "--fragment-id", "clause-2"
    )
    (version,) = json.loads(r.stdout)["sources"]
    assert version["record"]["content_sha256"] == sha(text)
    assert run("check").exit_code == 0


def test_ingest_source_then_fragment_and_quote(run, tmp_path):
    r = run("--json", "ingest-source", "--document-id", "D", "--fragment-id", "F", "-", input=MIXED)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["content_sha256"] == sha(MIXED) and out["size"] == len(MIXED) and out["new"]
    assert run("get", "sha256:" + sha(MIXED)).stdout_bytes == MIXED
    r = run("--json", "ingest", write(tmp_path, "f.json", frag(6, 10)))
    assert r.exit_code == 0, r.output
    addr = json.loads(r.stdout)["artifacts"][0]["address"]
    assert run("quote", addr).stdout_bytes == "𝄞".encode()
    assert json.loads(run("--json", "quote", addr).stdout)["quote"] == "𝄞"


@pytest.mark.parametrize(
    ("fragment", "code", "pointer"),
    [
        pytest.param(frag(7, 10), "fragment.boundary", "/start_offset", id="boundary"),
        pytest.param(
            frag(1, 3, fragment_id="G"), "fragment.unknown-content", "/fragment_id", id="unknown"
        ),
        pytest.param(
            frag(1, 3, quote_sha256=sha(b"x").upper()),
            "fragment.digest-format",
            "/quote_sha256",
            id="digest",
        ),
    ],
)
def test_rejections_exit_1_with_code(run, tmp_path, fragment, code, pointer):
    assert (
        run("ingest-source", "--document-id", "D", "--fragment-id", "F", "-", input=MIXED).exit_code
        == 0
    )
    r = run("--json", "ingest", write(tmp_path, "f.json", fragment))
    assert r.exit_code == 1
    err = json.loads(r.stdout)["error"]
    assert (err["code"], err["pointer"]) == (code, pointer)
    assert err["rule"].startswith("templiqx-evidence-fragment-v1alpha1#")
    assert json.loads(run("--json", "ls", "--kind", "fragment").stdout)["artifacts"] == []


def test_scope_options(run, tmp_path):
    assert (
        run("ingest-source", "--document-id", "D", "--fragment-id", "F", "-", input=MIXED).exit_code
        == 0
    )
    f = write(tmp_path, "f.json", frag(1, 3))
    r = run("--json", "ingest", f, "--host-id", "H")
    assert r.exit_code == 1 and json.loads(r.stdout)["error"]["code"] == "fragment.scope-incomplete"
    assert run("ingest", f, *S1).exit_code == 0
    r = run("--json", "ingest", f)
    assert r.exit_code == 1 and json.loads(r.stdout)["error"]["code"] == "fragment.scope-reuse"
    r = run(
        "--json",
        "ingest",
        f,
        "--host-id",
        "H",
        "--tenant-id",
        "T2",
        "--authorization-scope-id",
        "A",
    )
    assert r.exit_code == 1 and json.loads(r.stdout)["error"]["code"] == "fragment.scope-reuse"
    assert run("ingest", f, *S1).exit_code == 0


def test_ingest_source_revision_conflict(run):
    rev = "c3" * 32
    args = ("ingest-source", "--fragment-id", "F", "--revision-checksum", rev, "-")
    assert run(args[0], "--document-id", "D", *args[1:], input=MIXED).exit_code == 0
    r = run("--json", args[0], "--document-id", "D2", *args[1:], input=MIXED)
    assert r.exit_code == 1
    assert json.loads(r.stdout)["error"]["code"] == "fragment.revision-mismatch"
    r = run("--json", args[0], "--document-id", "D", *args[1:], input=b"\xff")
    assert json.loads(r.stdout)["error"]["code"] == "fragment.source-encoding"


def test_quote_not_a_fragment(run):
    put = json.loads(run("--json", "put", "-", input=b"x").stdout)
    r = run("--json", "quote", put["address"])
    assert r.exit_code == 1 and json.loads(r.stdout)["error"]["code"] == "not-found.fragment"


def test_scope_incomplete_from_the_library_through_the_cli_is_contract(run, tmp_path):
    """A scope with an empty member reaches the library: fragment.scope-incomplete, contract."""
    assert run("ingest-source", "--document-id", "D", "--fragment-id", "F", "-", input=MIXED)
    f = write(tmp_path, "f.json", frag(1, 3))
    r = run(
        "--json", "ingest", f, "--host-id", "", "--tenant-id", "T", "--authorization-scope-id", "A"
    )
    assert r.exit_code == 1
    err = json.loads(r.stdout)["error"]
    assert (err["code"], err["family"], err["pointer"]) == (
        "fragment.scope-incomplete",
        "contract",
        "",
    )
    assert err["rule"] == "templiqx-evidence-fragment-v1alpha1#host-scope-metadata"


def test_scope_options_all_or_none_is_a_contract_fault(run, tmp_path):
    """The CLI's all-or-none scope rule: same code, pointer and message, family contract."""
    f = write(tmp_path, "f.json", frag(1, 3))
    for given in (("--host-id", "H"), ("--tenant-id", "T", "--authorization-scope-id", "A")):
        r = run("--json", "ingest", f, *given)
        assert r.exit_code == 1
        err = json.loads(r.stdout)["error"]
        assert (err["code"], err["pointer"]) == ("fragment.scope-incomplete", "")
        assert err["message"] == (
            "--host-id, --tenant-id and --authorization-scope-id go together: all or none"
        )
        assert err["rule"] == "templiqx-evidence-fragment-v1alpha1#host-scope-metadata"
        assert err["family"] == "contract"
