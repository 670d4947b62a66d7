"""The evstore CLI: exit codes, exact bytes, --json shape, store creation rules."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from evstore.cli.main import cli


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVSTORE_URL", raising=False)
    url = f"sqlite:///{tmp_path / 'cli.db'}"

    def _run(*args, input=None, url=url):
        r = CliRunner().invoke(cli, ["--store", url, *args], input=input, catch_exceptions=False)
        return r

    _run.url = url
    _run.path = tmp_path / "cli.db"
    return _run


def test_commands_other_than_init_put_ingest_do_not_create_a_store(run):
    for args in (
        ["ls"],
        ["check"],
        ["stat", "blake3:" + "0" * 64],
        ["has", "blake3:" + "0" * 64],
        ["config"],
        ["migrate"],
        ["find", "--key", "k"],
        ["get", "blake3:" + "0" * 64],
    ):
        r = run("--json", *args)
        assert r.exit_code == 1, (args, r.output)
        assert json.loads(r.stdout)["error"]["code"] == "store.missing"
        assert not run.path.exists()


def test_put_get_exact_bytes_and_digests(run, tmp_path):
    data = b"\xef\xbb\xbfline one\r\nline two\x00\xff"  # BOM, CRLF, NUL, invalid UTF-8: kept raw
    f = tmp_path / "blob.bin"
    f.write_bytes(data)
    r = run("put", str(f), "--digests")
    assert r.exit_code == 0
    address, sha_hex, sha_b64 = r.stdout.splitlines()
    assert address.startswith("blake3:") and sha_hex.startswith("sha256:") and len(sha_b64) == 50
    for ref in (address, sha_hex, sha_b64, "object-store:" + sha_b64):
        g = run("get", ref)
        assert g.exit_code == 0 and g.stdout_bytes == data
    out = tmp_path / "out.bin"
    assert run("get", address, "-o", str(out)).exit_code == 0
    assert out.read_bytes() == data
    st = run("--json", "stat", address)
    assert json.loads(st.stdout)["size"] == len(data)


def test_put_from_stdin(run):
    r = run("--json", "put", "-", input=b"from stdin")
    assert r.exit_code == 0
    addr = json.loads(r.stdout)["address"]
    assert run("get", addr).stdout_bytes == b"from stdin"


def test_has_exit_codes(run):
    run("put", "-", input=b"x")
    present = json.loads(run("--json", "put", "-", input=b"x").stdout)["address"]
    assert run("has", present).exit_code == 0
    missing = "blake3:" + "1" * 64
    r = run("has", present, missing)
    assert r.exit_code == 1 and r.stdout.strip() == missing
    r = run("--json", "has", "sha256:" + "Ab" * 32)
    assert r.exit_code == 1 and json.loads(r.stdout)["error"]["code"] == "ref.syntax"


def test_ingest_twice_is_not_new_and_one_transaction(run, tmp_path):
    a = tmp_path / "a.json"
    a.write_text('{"b": 1, "a": 2}')
    b = tmp_path / "b.json"
    b.write_text('{"a": 2,\n "b": 1}')
    r1 = json.loads(run("--json", "ingest", str(a)).stdout)
    r2 = json.loads(run("--json", "ingest", str(b)).stdout)
    assert r1["artifacts"][0]["new"] and not r2["artifacts"][0]["new"]
    assert r1["artifacts"][0]["address"] == r2["artifacts"][0]["address"]
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"x": NaN}')
    c = tmp_path / "c.json"
    c.write_text('{"new": true}')
    r = run("--json", "ingest", str(c), str(bad))
    assert r.exit_code == 1
    err = json.loads(r.stdout)["error"]
    assert err["code"] == "json.non-finite" and err["path"] == str(bad)
    ls = json.loads(run("--json", "ls").stdout)["artifacts"]
    assert len(ls) == 1  # c.json was not stored


def test_validate_lists_every_fault_and_writes_nothing(run, tmp_path):
    run("init")
    files = []
    for name, body in (
        ("dup.json", b'{"a":1,"a":2}'),
        ("bom.json", b"\xef\xbb\xbf{}"),
        ("ok.json", b"[]"),
    ):
        p = tmp_path / name
        p.write_bytes(body)
        files.append(str(p))
    r = run("--json", "validate", *files)
    assert r.exit_code == 1
    codes = [f["code"] for f in json.loads(r.stdout)["faults"]]
    assert codes == ["json.duplicate-key", "json.bom"]
    assert json.loads(run("--json", "ls").stdout)["artifacts"] == []


def test_json_flag_prints_exactly_one_object(run):
    run("init")
    for args in (["ls"], ["check"], ["config"], ["init"], ["stat", "nope"], ["find", "--key", "k"]):
        r = run("--json", *args)
        obj = json.loads(r.stdout)  # exactly one JSON document
        assert isinstance(obj, dict)


def test_config_roundtrip_and_errors(run):
    run("init")
    assert run("config", "packages.strict_context_bytes", "true").exit_code == 0
    assert json.loads(run("--json", "config", "packages.strict_context_bytes").stdout) == {
        "packages.strict_context_bytes": True
    }
    r = run("--json", "config", "no.such", "1")
    assert r.exit_code == 1 and json.loads(r.stdout)["error"]["code"] == "config.unknown"
    r = run("--json", "config", "packages.strict_context_bytes", "maybe")
    assert json.loads(r.stdout)["error"]["code"] == "config.value"


def test_usage_errors_exit_2(run):
    assert run("get").exit_code == 2
    assert run("nonsense").exit_code == 2
    run("init")
    assert run("find").exit_code == 2


def test_unreadable_file_is_an_input_error(run, tmp_path):
    r = run("--json", "ingest", str(tmp_path / "absent.json"))
    assert r.exit_code == 1
    assert json.loads(r.stdout)["error"]["code"] == "input.unreadable"


def test_console_script_no_traceback_on_bad_input(tmp_path):
    exe = Path(sys.executable).with_name("evstore")
    if not exe.exists():
        pytest.skip("console script not installed next to this interpreter")
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe")
    p = subprocess.run(
        [str(exe), "--store", f"sqlite:///{tmp_path}/s.db", "ingest", str(bad)],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 1
    assert "Traceback" not in p.stderr and "json.utf8" in p.stderr


def test_check_lists_recorded_warnings_without_failing(run):
    import evstore
    from evstore.objects.artifacts import Warning_

    run("init")
    with evstore.open(run.url) as s:
        s.transaction(
            lambda t: t.put_artifact(
                "json", "rfc8785", b"{}", warnings=[Warning_("test.warn", "w", "/x")]
            )
        )
    r = run("--json", "check")
    assert r.exit_code == 0
    out = json.loads(r.stdout)
    assert out["ok"] and [w["code"] for w in out["warnings"]] == ["test.warn"]
    assert "test.warn" in run("check").stdout


def test_validate_reports_unused_content_like_ingest(run, tmp_path):
    run("init")
    doc = tmp_path / "d.json"
    doc.write_text("{}")
    extra = tmp_path / "extra.bin"
    extra.write_bytes(b"not used by anything")
    for cmd in ("validate", "ingest"):
        r = run("--json", cmd, "--content", str(extra), str(doc))
        assert r.exit_code == 1
        out = json.loads(r.stdout)
        codes = [f["code"] for f in out["faults"]] if cmd == "validate" else [out["error"]["code"]]
        assert codes == ["input.unused-content"]


def test_unknown_kind_on_read_commands(run):
    run("init")
    for args in (["ls", "--kind", "nosuch"], ["find", "--kind", "", "--key", "k"]):
        r = run("--json", *args)
        assert r.exit_code == 1 and json.loads(r.stdout)["error"]["code"] == "kind.unknown"


_STARTUP = """
import json, sys
import evstore.cli.main
loaded = {"import": sorted(sys.modules)}
from evstore.cli.main import main
sys.argv = ["evstore", "--store", sys.argv[1], *sys.argv[2:]]
try:
    main()
except SystemExit as exc:
    loaded["exit"] = exc.code
loaded["command"] = sorted(sys.modules)
sys.stderr.write("\\nMODULES " + json.dumps(loaded) + "\\n")
"""

#: Modules no everyday command needs: Alembic (init/migrate only) and the contracts.
_HEAVY = (
    "alembic",
    "jsonschema_rs",
    "evstore.contracts.fragments.store",
    "evstore.contracts.manifests.store",
    "evstore.contracts.packages.store",
    "evstore.contracts.packages.rules",
    "evstore.contracts.contexts.store",
    "evstore.contracts.runs.store",
    "evstore.cli.fragments",
    "evstore.cli.manifests",
    "evstore.cli.packages",
    "evstore.cli.contexts",
    "evstore.cli.runs",
)


def test_everyday_commands_import_neither_alembic_nor_the_contracts(tmp_path):
    import evstore

    url = f"sqlite:///{tmp_path / 'startup.db'}"
    evstore.init(url)
    with evstore.open(url) as store:
        address = store.put(b"startup").digest.address
    for args in (
        ["put", "-"],
        ["get", address],
        ["stat", address],
        ["has", address],
        ["ls"],
        ["config"],
        ["find", "--key", "k"],
    ):
        r = subprocess.run(
            [sys.executable, "-c", _STARTUP, url, *args],
            input=b"bytes",
            capture_output=True,
            timeout=120,
        )
        line = r.stderr.decode().rsplit("MODULES ", 1)[-1]
        loaded = json.loads(line)
        assert loaded.get("exit") in (0, 1, None), (args, r.stderr)
        for phase in ("import", "command"):
            heavy = [m for m in loaded[phase] if m.split(".")[0] in _HEAVY or m in _HEAVY]
            assert heavy == [], (args, phase, heavy)
        if args[0] != "find":
            assert loaded.get("exit") in (0, None), (args, r.stdout, r.stderr)
    # The public package itself loads nothing until a name is used.
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            "import evstore, sys; print(len([m for m in sys.modules "
            "if m.startswith(('evstore.', 'sqlalchemy'))]))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.stdout.strip() == "0", r.stdout + r.stderr


def test_version_reads_no_database_module_and_no_server_extra():
    """`evstore --version` is the start-up floor of docs/benchmarks.md: the CLI, no database."""
    code = (
        "import sys\n"
        "sys.argv = ['evstore', '--version']\n"
        "from evstore.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('sqlalchemy', 'alembic', 'fastapi', 'httpx', 'psycopg')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy), file=sys.stderr)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.startswith("evstore ") and "(schema " in r.stdout, r.stdout + r.stderr
    assert r.stderr.strip() == "[]", r.stderr


def test_core_cli_modules_use_only_the_public_surface():
    import ast

    import evstore

    public = set(evstore.__all__)
    cli_dir = Path(__file__).resolve().parents[2] / "cli"
    for name in ("main", "common", "objects", "ingest", "admin"):
        tree = ast.parse((cli_dir / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    assert a.name == "evstore" or not a.name.startswith("evstore"), (name, a.name)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module == "evstore":
                    assert {a.name for a in node.names} <= public, name
                else:
                    assert not node.module.startswith("evstore") or node.module.startswith(
                        "evstore.cli"
                    ), (name, node.module)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "evstore"
            ):
                assert node.attr in public, (name, node.attr)
