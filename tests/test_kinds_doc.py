"""docs/kinds.md mirrors the kind registry: every field of every record."""

import re
from pathlib import Path

from evstore.objects.kinds import (
    DEFAULT_IMPORT_RANK,
    detection_order,
    get_handler,
    kind_records,
    known_kinds,
)

DOC = (Path(__file__).resolve().parents[1] / "docs" / "kinds.md").read_text()


def test_every_registered_kind_is_documented_with_its_handler():
    rows = re.findall(r"^\| `([a-z-]+)` \| [^|]+ \| (evstore\.[a-z_.]+:[A-Za-z]+) \|", DOC, re.M)
    assert rows == [(r.name, r.handler) for r in kind_records()]


def test_every_record_is_documented_field_by_field():
    rows = re.findall(
        r"^\| `([a-z-]+)` \| ([a-z_.-]+) \| (\d+|-) \| (yes|no) \| (\d+) \| `?([a-z-]+)`? \|$",
        DOC,
        re.M,
    )
    want = [
        (
            r.name,
            r.rules or "-",
            "-" if r.detection is None else str(r.detection),
            "yes" if r.number_tokens else "no",
            str(r.import_rank),
            r.page or "-",
        )
        for r in kind_records()
    ]
    assert rows == want
    assert f"default {DEFAULT_IMPORT_RANK}" in DOC


def test_every_handler_is_available_and_named_as_registered():
    assert known_kinds() == [r.name for r in kind_records()]
    for name in known_kinds():
        assert get_handler(name).name == name


def test_detection_order_is_documented():
    rows = re.findall(r"^\| (\d+) \| `([a-z-]+)` \|", DOC, re.M)
    assert [k for _, k in rows] == list(detection_order())
    assert [int(n) for n, _ in rows] == list(range(1, len(rows) + 1))
    assert detection_order()[-1] == "json"
