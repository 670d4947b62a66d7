"""docs/kinds.md mirrors the kind registry."""

import re
from pathlib import Path

from evstore.objects.kinds import DETECTION_ORDER, KINDS, known_kinds

DOC = (Path(__file__).resolve().parents[1] / "docs" / "kinds.md").read_text()


def test_every_registered_kind_is_documented_with_its_handler():
    rows = dict(
        re.findall(r"^\| `([a-z-]+)` \| [^|]+ \| (evstore\.[a-z_.]+:[A-Za-z]+) \|", DOC, re.M)
    )
    assert rows == KINDS


def test_every_handler_is_available():
    assert known_kinds() == list(KINDS)


def test_detection_order_is_documented():
    rows = re.findall(r"^\| (\d+) \| `([a-z-]+)` \|", DOC, re.M)
    assert [k for _, k in rows] == list(DETECTION_ORDER)
