"""Generated docs are current; every code is documented once; the README commands hold."""

import importlib.util
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _gen():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "tools" / "gen_docs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generated_docs_are_current():
    gen = _gen()
    for name, fn in gen.GENERATED.items():
        assert (ROOT / "docs" / name).read_text() == fn(), (
            f"docs/{name} is stale: run python tools/gen_docs.py"
        )


def test_codes_are_unique_dotted_and_documented():
    codes = _gen().all_codes()  # raises on a code defined twice
    assert len(codes) > 20
    text = (ROOT / "docs" / "errors.md").read_text()
    for code in codes:
        assert re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+)+", code), code
        assert f"`{code}`" in text


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    blocks = re.findall(r"^\$ (python3 -m venv .*)$", readme, flags=re.M)
    assert len(blocks) >= 2, "README opens with the two fresh-machine commands"
    main_job, tests = blocks[0], blocks[1]
    assert "pip install ." in main_job and "examples/run.sh" in main_job
    test_cmd = tests.split("&& ", 2)[-1]  # after creating and activating the venv
    assert test_cmd in ci, f"{test_cmd!r} must appear in .ci/run"
    assert "examples/run.sh" in ci


def test_license_is_the_apache_license_pyproject_names():
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License\n") and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert 'license = { text = "Apache-2.0" }' in (ROOT / "pyproject.toml").read_text()


def test_readme_states_the_suite_prerequisites_and_its_wall_time():
    readme = (ROOT / "README.md").read_text()
    for needle in ("CREATE DATABASE", "EVSTORE_TEST_PG", "EVSTORE_REQUIRE_PG"):
        assert needle in readme
    assert re.search(r"took \d+ min", readme), "README reports the suite's measured wall time"


def test_doc_statements_that_once_drifted():
    assert "@@" not in (ROOT / "examples" / "run.sh").read_text()
    assert "(schema 0001)" not in (ROOT / "docs" / "manifests.md").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "every digest form" not in readme and "--ref 10:12" not in readme
    cli_md = " ".join((ROOT / "docs" / "cli.md").read_text().split())
    assert "quote as text and its offsets" not in cli_md
    assert "the quote as text and its size in bytes" in cli_md


def test_doc_statements_the_attack_found_stale():
    """Issue 23: what the docs said after the code had moved on."""
    design = " ".join((ROOT / "docs" / "design.md").read_text().split())
    assert "Not yet wired to the store" not in design  # the log is wired (revision 0007)
    http = " ".join((ROOT / "docs" / "http.md").read_text().split())
    assert "Not yet: the server signing checkpoints" not in http
    assert "evstore serve --log-key" in http
    pages = " ".join((ROOT / "docs" / "pages.md").read_text().split())
    # The artifact page points to the roots pages; it never lists the roots that retain it.
    assert "the roots that retain it" not in pages
    assert "does not search every root" in pages


def test_migration_headers_name_the_revision_they_revise():
    for path in sorted((ROOT / "migrations" / "versions").glob("0*.py")):
        text = path.read_text()
        down = re.search(r"^down_revision[^=]*= *(?:None|\"(\d+)\")", text, flags=re.M)
        header = re.search(r"^Revises: *(.*)$", text, flags=re.M)
        assert down and header, path.name
        assert header.group(1).strip() == (down.group(1) or ""), path.name


def _commands(text: str) -> list[str]:
    """The non-comment lines of a shell script."""
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def test_ci_runs_the_suite_once_through_scripts_check():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    check = ROOT / "scripts" / "check"
    tests = re.findall(r"^\$ (python3 -m venv .*)$", readme, flags=re.M)[1]
    # The README's test command is the check script: lint, types and the suite in one.
    assert tests.endswith("&& scripts/check"), tests
    assert check.is_file() and os.access(check, os.X_OK), "scripts/check must be executable"
    # CI runs pytest only through scripts/check, and scripts/check runs it once.
    assert not [c for c in _commands(ci) if "pytest" in c], "CI must not run pytest itself"
    steps = _commands(check.read_text())
    assert len([c for c in steps if "python -m pytest" in c]) == 1
    script = "\n".join(steps)
    for needed in (
        "ruff check",
        "ruff format --check",
        "mypy store",
        "-n ",
        "--cov=evstore",
        "store cli tests bench tools migrations",
    ):
        assert needed in script, needed
    floor = re.search(r"COVERAGE_FLOOR=(\d+)", script)
    assert floor and int(floor.group(1)) >= 94, "the coverage floor is no lower than 94 %"
    assert '--cov-fail-under="$COVERAGE_FLOOR"' in script


def test_readme_says_how_to_develop_with_an_editable_install():
    readme = (ROOT / "README.md").read_text()
    assert "pip install -e '.[test]'" in readme
    assert "reinstall" in readme


def _releases() -> list[tuple[tuple[int, ...], str, str]]:
    """CHANGELOG.md's released versions, newest first: ``(version, date, schema revision)``."""
    text = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## \[([^\]]+)\](.*)$", text, flags=re.M)
    assert headings[0] == ("Unreleased", ""), "Keep a Changelog: [Unreleased] comes first"
    out = []
    sections = re.split(r"^## \[[^\]]+\].*$", text, flags=re.M)[2:]
    for (version, rest), body in zip(headings[1:], sections, strict=True):
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), version
        date = re.fullmatch(r" - (\d{4}-\d{2}-\d{2})", rest)
        assert date, f"{version}: '## [{version}] - YYYY-MM-DD'"
        schema = re.search(r"Writes schema revision (\d{4})", body.split("###")[0])
        assert schema, f"{version} does not say which schema revision it writes"
        out.append((tuple(map(int, version.split("."))), date.group(1), schema.group(1)))
    return out


def test_the_changelog_is_kept_by_version_each_naming_its_schema():
    """Issue 23: releases are versioned, newest first, a minor version per schema revision."""
    import tomllib

    from evstore.db.revisions import head_revision, schema_revisions

    releases = _releases()
    versions = [v for v, _, _ in releases]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)
    dates = [d for _, d, _ in releases]
    assert dates == sorted(dates, reverse=True)
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert ".".join(map(str, versions[0])) == pyproject, "pyproject names the newest release"
    assert releases[0][2] == head_revision(), "the newest release writes the code's schema"
    chain = list(schema_revisions())
    for (new, _, rev_new), (old, _, rev_old) in zip(releases, releases[1:], strict=False):
        assert chain.index(rev_new) >= chain.index(rev_old), (new, old)
        if rev_new != rev_old:  # a schema change is a new minor (or major) version
            assert new[:2] > old[:2], f"{new} changes the schema in a patch release"
    released = {rev for _, _, rev in releases}
    first = chain.index(releases[-1][2])
    assert set(chain[first:]) <= released, "a schema revision that no release writes"


def test_version_names_the_release_and_the_schema_it_writes():
    import tomllib

    from click.testing import CliRunner

    from evstore.cli.main import cli
    from evstore.db.revisions import head_revision

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    r = CliRunner().invoke(cli, ["--version"])
    assert r.exit_code == 0
    assert r.stdout == f"evstore {version} (schema {head_revision()})\n"
