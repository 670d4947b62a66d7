"""Generated docs are current; every code is documented once; the README commands hold."""

import importlib.util
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
