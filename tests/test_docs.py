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
    blocks = re.findall(r"^    (python3 -m venv .*)$", readme, flags=re.M)
    assert len(blocks) >= 2, "README opens with the two fresh-machine commands"
    main_job, tests = blocks[0], blocks[1]
    assert "pip install ." in main_job and "examples/run.sh" in main_job
    test_cmd = tests.split("&& ", 2)[-1]  # after creating and activating the venv
    assert test_cmd in ci, f"{test_cmd!r} must appear in .ci/run"
    assert "examples/run.sh" in ci


def _commands(text: str) -> list[str]:
    """The non-comment lines of a shell script."""
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def test_ci_runs_the_suite_once_through_scripts_check():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    check = ROOT / "scripts" / "check"
    tests = re.findall(r"^    (python3 -m venv .*)$", readme, flags=re.M)[1]
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
