"""Docs that cannot drift: every command block of README.md and docs/*.md (but the generated
cli.md, errors.md and settings.md) marked runnable is run against a scratch store, and what it
prints must match what the docs show.

Markup (in the style of sqlite-utils' cog-checked docs): a fenced ```console block preceded by
``<!-- runnable -->`` or ``<!-- not runnable: WHY -->`` (blocks that install, serve, run the
suite or hold placeholders). Every ```console block must carry one of the two markers. In a
runnable block, ``$ `` starts a command (one line, run by bash; stdout and stderr together);
the lines up to the next command are its expected output, compared exactly; a line ``...``
matches any lines. A command shown without output is not compared. Each command must exit 0,
unless it ends with ``# exit N``. All runnable blocks of one file run in order in one shell,
in one scratch directory holding a copy of examples/, with the default store ./evstore.db.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GENERATED = {"cli.md", "errors.md", "settings.md"}  # written by tools/gen_docs.py
DOCS = [
    ROOT / "README.md",
    *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name not in GENERATED),
]
FENCE = re.compile(r"^```console\n(.*?)^```$", re.M | re.S)
MARKER = re.compile(r"<!-- (runnable|not runnable: [^>]+) -->\s*$")
EXIT = re.compile(r"#\s*exit (\d+)\s*$")


def blocks(path: Path) -> list[tuple[str, str]]:
    """``(marker, body)`` of every ```console block of ``path`` (marker "" when unmarked)."""
    text = path.read_text()
    out = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = MARKER.search(before)
        out.append((mark.group(1) if mark else "", m.group(1)))
    return out


def commands(body: str) -> list[tuple[str, list[str]]]:
    """``(command, expected output lines)`` of a runnable block."""
    out: list[tuple[str, list[str]]] = []
    for line in body.rstrip("\n").split("\n"):
        if line.startswith("$ "):
            out.append((line[2:], []))
        else:
            assert out, f"output before any command: {line!r}"
            out[-1][1].append(line)
    return out


def matches(expected: list[str], got: list[str]) -> bool:
    """Exact line match, where a line ``...`` matches any lines (none included)."""
    if not expected:
        return not got
    if expected[0] == "...":
        return any(matches(expected[1:], got[i:]) for i in range(len(got) + 1))
    return bool(got) and got[0] == expected[0] and matches(expected[1:], got[1:])


def test_every_console_block_is_marked():
    for path in DOCS:
        for mark, body in blocks(path):
            assert mark, f"{path.name}: a ```console block has no runnable marker:\n{body}"


def test_no_command_outside_a_fenced_block():
    """An indented block showing a command would escape the markers: it must be ```console."""
    for path in DOCS:
        fenced = False
        for n, line in enumerate(path.read_text().split("\n"), 1):
            if line.startswith("```"):
                fenced = not fenced
            elif not fenced and re.match(r"(    |\t)\s*(\$ |evstore |python bench/)", line):
                raise AssertionError(f"{path.name}:{n}: a command outside a ```console block")


RUNNABLE = [p for p in DOCS if any(m == "runnable" for m, _ in blocks(p))]


def test_readme_has_runnable_blocks():
    assert ROOT / "README.md" in RUNNABLE


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.name)
def test_runnable_blocks_print_what_the_docs_show(path, tmp_path):
    cmds = [c for m, body in blocks(path) if m == "runnable" for c in commands(body)]
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    script = ["set +e"]
    for i, (cmd, _) in enumerate(cmds):
        # the command on its own line, so that a trailing comment (# exit N) cannot swallow 2>&1
        script += [f"echo '@@cmd {i}@@'", "{", cmd, "} 2>&1", f'echo "@@rc {i} $?@@"']
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVSTORE_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONUNBUFFERED"] = "1"
    r = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = r.stdout
    for i, (cmd, expected) in enumerate(cmds):
        part = out.split(f"@@cmd {i}@@\n", 1)[1].split(f"@@rc {i} ", 1)
        printed, rc = part[0], int(part[1].split("@@", 1)[0])
        want = EXIT.search(cmd)
        assert rc == (int(want.group(1)) if want else 0), f"{path.name}: $ {cmd}\n{printed}"
        if expected:
            got = printed.rstrip("\n").split("\n") if printed else []
            assert matches(expected, got), (
                f"{path.name}: $ {cmd}\nshown:\n" + "\n".join(expected) + f"\nprinted:\n{printed}"
            )


def test_matcher():
    assert matches(["a", "...", "z"], ["a", "b", "c", "z"])
    assert matches(["a", "..."], ["a"])
    assert not matches(["a"], ["a", "b"])
    assert not matches(["a", "...", "z"], ["a", "b"])
