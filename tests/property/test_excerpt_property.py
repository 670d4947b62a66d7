"""Property: select_excerpt is the contract's selection rule, and its output is a valid excerpt.

For any source document (ids unique but in no numeric order), any ranges and any window, the
output satisfies the payload rules and the source-consistency rules, and equals a brute-force
selection: position p is selected iff lo - window <= p <= hi + window for some range whose
endpoints sit at positions lo <= hi.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from evstore.contracts.contexts.rules import (
    check_against_source,
    select_excerpt,
    validate_payload,
    validate_source_document,
)
from evstore.core.errors import ContextError

SOURCE_ID = "session-alpha"

json_scalars = (
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=8)
)
metadata = st.dictionaries(
    st.text(max_size=6),
    st.recursive(
        json_scalars,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
        ),
        max_leaves=6,
    ),
    max_size=3,
)


def _unit(uid: int, kind: str, text: str, meta: dict[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": uid,
        "kind": kind,
        "text": text,
        "ref": {"source_id": SOURCE_ID, "start_unit_id": uid, "end_unit_id": uid},
    }
    if meta is not None:
        out["metadata"] = meta
    return out


@st.composite
def source_documents(draw: st.DrawFn) -> list[dict[str, Any]]:
    ids = draw(st.lists(st.integers(-(2**53) + 1, 2**53 - 1), unique=True, max_size=14))
    return [
        _unit(
            uid,
            draw(st.sampled_from(["transcript_segment", "narration", "k"])),
            draw(st.text(max_size=10)),
            draw(st.none() | metadata),
        )
        for uid in ids
    ]


@st.composite
def documents_and_ranges(
    draw: st.DrawFn,
) -> tuple[list[dict[str, Any]], list[tuple[int, int]], int]:
    doc = draw(source_documents())
    n = len(doc)
    spans: list[tuple[int, int]] = []
    if n:
        pairs = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
        spans = [tuple(sorted(p)) for p in draw(st.lists(pairs, max_size=5))]  # type: ignore[misc]
    window = draw(st.integers(0, n + 2) | st.integers(0, 2**31))
    return doc, spans, window


def brute_force(doc: list[Any], spans: list[tuple[int, int]], window: int) -> list[Any]:
    return [
        u for p, u in enumerate(doc) if any(lo - window <= p <= hi + window for lo, hi in spans)
    ]


@settings(max_examples=300, deadline=None)
@given(documents_and_ranges())
@example(
    (
        [_unit(3, "k", "a", None), _unit(1, "k", "b", {}), _unit(2, "k", "c", None)],
        [(1, 1), (0, 0), (1, 1)],
        0,
    )
)
@example(([_unit(9, "k", "a", None)], [], 5))
def test_excerpt_is_the_selection_rule(case: tuple[list[Any], list[tuple[int, int]], int]) -> None:
    doc, spans, window = case
    assert validate_source_document(doc) == []
    ranges = [(doc[lo]["id"], doc[hi]["id"]) for lo, hi in spans]

    out = select_excerpt(doc, ranges, window)

    assert validate_payload(out) == []
    assert check_against_source(out, doc) == []
    assert out == brute_force(doc, spans, window)
    # Each unit is the document's own unit, once, in position order.
    positions = [next(p for p, u in enumerate(doc) if u is x) for x in out]
    assert positions == sorted(set(positions))
    # Reordering or repeating the references changes nothing.
    assert select_excerpt(doc, list(reversed(ranges)) + ranges, window) == out


@settings(max_examples=200, deadline=None)
@given(source_documents().filter(lambda d: len(d) >= 2), st.data())
def test_reversed_range_is_rejected(doc: list[Any], data: st.DataObject) -> None:
    lo = data.draw(st.integers(0, len(doc) - 2))
    hi = data.draw(st.integers(lo + 1, len(doc) - 1))
    with pytest.raises(ContextError) as info:
        select_excerpt(doc, [(doc[hi]["id"], doc[lo]["id"])], data.draw(st.integers(0, 3)))
    assert (info.value.code, info.value.pointer) == ("context.range-order", "/0")
