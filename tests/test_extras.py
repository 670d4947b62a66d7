"""Extras (issue 23): the library and CLI on SQLite need none; a missing one is a typed error.

`pip install .` installs the core (SQLite); `[server]`, `[client]` and `[postgresql]` add the
HTTP server, the HTTP client and PostgreSQL (`[all]` the three, `[test]` all and the tools).
The typed error is tested in process by making the extra's imports fail (None in
sys.modules), with evstore's own modules that would import them unloaded first.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

import evstore
from evstore.cli.main import cli
from evstore.core.extras import EXTRAS

ROOT = Path(__file__).resolve().parents[1]
#: Distribution name (pyproject) -> the module evstore imports from it.
MODULE_OF = {name: name for name in ("fastapi", "uvicorn", "jinja2", "httpx", "psycopg", "obstore")}
#: evstore's packages that import an extra's modules, and the public names they define.
GATED = ("evstore.server", "evstore.pages", "evstore.client")


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower()


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_core_install_holds_no_extra_and_test_holds_them_all():
    project = _pyproject()
    core = {_name(r) for r in project["dependencies"]}
    extras = project["optional-dependencies"]
    for extra, (_, modules) in EXTRAS.items():
        names = {_name(r) for r in extras[extra]}
        assert {MODULE_OF[n] for n in names} == set(modules), extra  # the table is pyproject's
        assert not names & core, f"{extra}'s packages are in the core dependencies"
    assert extras["all"] == ["evidence-store[server,client,postgresql,s3]"]
    assert "evidence-store[all]" in extras["test"]  # the README's test command needs them all


def test_the_installed_distribution_declares_the_same_split():
    """What pip installed (its metadata) splits as pyproject.toml does: a stale build fails."""
    from importlib import metadata

    dist = metadata.distribution("evidence-store")
    assert set(dist.metadata.get_all("Provides-Extra")) >= {*EXTRAS, "all", "test"}
    core = {_name(r) for r in dist.requires or [] if "extra ==" not in r}
    gated = {m for _, modules in EXTRAS.values() for m in modules}
    assert core and not core & gated, core & gated


@pytest.fixture
def without(monkeypatch):
    """Make ``modules`` unimportable and unload evstore's modules that would import them."""

    def hide(*modules: str) -> None:
        for name in modules:
            monkeypatch.setitem(sys.modules, name, None)
        for name in list(sys.modules):
            if name.startswith(GATED):
                monkeypatch.delitem(sys.modules, name)
        for public in ("serve", "create_app", "ServerLimits", "RemoteStore"):
            monkeypatch.delitem(evstore.__dict__, public, raising=False)

    return hide


def _json_error(result) -> dict:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    return json.loads(result.stdout)["error"]


@pytest.mark.parametrize("module", ["fastapi", "uvicorn", "jinja2"])
def test_serve_without_the_server_extra_names_it(without, tmp_path, monkeypatch, module):
    monkeypatch.chdir(tmp_path)
    without(module)
    err = _json_error(CliRunner().invoke(cli, ["--json", "serve", "--port", "0"]))
    assert err["code"] == "install.extra-missing" and err["family"] == "store"
    assert err["details"] == {"extra": "server", "module": module}
    assert "pip install 'evidence-store[server]'" in err["message"]
    assert list(tmp_path.iterdir()) == []  # nothing created, nothing served
    with pytest.raises(evstore.StoreStateError) as ei:
        evstore.create_app({None: f"sqlite:///{tmp_path / 'x.db'}"})
    assert ei.value.code == "install.extra-missing" and ei.value.details["extra"] == "server"


def test_a_postgresql_url_without_psycopg_names_the_postgresql_extra(without, tmp_path):
    without("psycopg")
    url = "postgresql://postgres@127.0.0.1:5432/evstore_no_such_db"
    for args in (["--json", "--store", url, "ls"], ["--json", "--store", url, "init"]):
        err = _json_error(CliRunner().invoke(cli, args))
        assert err["code"] == "install.extra-missing", err
        assert err["details"] == {"extra": "postgresql", "module": "psycopg"}
    with pytest.raises(evstore.StoreStateError) as ei:
        evstore.open(url)
    assert ei.value.details["extra"] == "postgresql"


def test_an_http_url_without_httpx_names_the_client_extra(without):
    without("httpx")
    url = "http://127.0.0.1:9/acme"  # never contacted: the extra is missing first
    err = _json_error(CliRunner().invoke(cli, ["--json", "--store", url, "ls"]))
    assert err["code"] == "install.extra-missing"
    assert err["details"] == {"extra": "client", "module": "httpx"}
    for call in (lambda: evstore.open(url), lambda: evstore.RemoteStore):
        with pytest.raises(evstore.StoreStateError) as ei:
            call()
        assert ei.value.details["extra"] == "client"


def test_an_s3_blob_backend_without_obstore_names_the_s3_extra_before_credentials(
    without, tmp_path, monkeypatch
):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    without("obstore")
    args = ["--json", "init", "--blobs", "s3://bucket/prefix"]
    err = _json_error(CliRunner().invoke(cli, args))
    assert err["code"] == "install.extra-missing", err
    assert err["details"] == {"extra": "s3", "module": "obstore"}
    assert list(tmp_path.iterdir()) == []  # nothing created


def test_the_main_job_on_sqlite_needs_no_extra(without, tmp_path):
    without(*(m for _, modules in EXTRAS.values() for m in modules))
    url = f"sqlite:///{tmp_path / 'core.db'}"
    note = tmp_path / "note.json"
    note.write_text('{"note": "core only"}')
    (tmp_path / "hello.txt").write_bytes(b"hello\n")
    for args in (["init"], ["put", str(tmp_path / "hello.txt")], ["ingest", str(note)], ["check"]):
        r = CliRunner().invoke(cli, ["--store", url, *args])
        assert r.exit_code == 0, (args, r.output)
