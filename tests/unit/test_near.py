"""Near member names (store/core/near.py) against a one-name-at-a-time reference.

``near_member`` and ``near_members`` look names up in an index of a document's member
spellings, memoised per tuple of names (issue 29). The reference below is the search they
replaced: the exact name first, else the first member in document order whose spelling
matches. Every answer must be the reference's.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evstore.core import near
from evstore.core.near import near_member, near_members, spelling


def _reference(doc: dict[Any, Any], name: str) -> tuple[Any, Any] | None:
    if name in doc:
        return name, doc[name]
    key = spelling(name)
    for actual, value in doc.items():
        if spelling(actual) == key:
            return actual, value
    return None


_NAMES = ["kind", "schema", "record", "quote_sha256", "package_id", "claims", "question"]
_SPELLINGS = st.sampled_from(
    [
        "Kind",
        "KIND",
        "k-ind",
        "schema",
        "Schema_",
        "re_cord",
        "quoteSha256",
        "quote-sha-256",
        "packageId",
        "PACKAGE_ID",
        "claims",
        "Question",
        "x",
        "",
        "-",
        "é",
        "Ünit",
        "id",
    ]
)
_KEYS = st.one_of(_SPELLINGS, st.text(max_size=8))


@given(
    keys=st.lists(_KEYS, max_size=80),
    names=st.lists(st.one_of(st.sampled_from(_NAMES), _KEYS), min_size=1, max_size=6),
)
def test_near_member_and_near_members_agree_with_the_reference(
    keys: list[str], names: list[str]
) -> None:
    doc = {k: i for i, k in enumerate(keys)}  # a repeated key keeps its first place
    for name in names:
        assert near_member(doc, name) == _reference(doc, name)
    assert near_members(doc, names) == sum(_reference(doc, n) is not None for n in names)


def test_the_first_near_name_in_document_order_wins_on_every_path() -> None:
    doc = {"Schema": 1, "schema_": 2, "SCHEMA": 3}
    assert near_member(doc, "schema") == ("Schema", 1)
    big = {f"m{i}": i for i in range(near._INDEXED_UP_TO + 5)} | doc  # the unindexed search
    assert near_member(big, "schema") == ("Schema", 1)
    assert near_members(big, ["schema", "m3", "nope"]) == 2


def test_the_index_answers_again_for_another_document_of_the_same_names() -> None:
    near._index.cache_clear()
    assert near_member({"Kind": "a", "b": 1}, "kind") == ("Kind", "a")
    assert near_member({"Kind": "z", "b": 2}, "kind") == ("Kind", "z")  # the value is read anew
    info = near._index.cache_info()
    assert (info.hits, info.misses) == (1, 1)


@pytest.mark.parametrize("doc", [{1: "a", "Kind": "b"}, {"kind_": 0, (1, 2): 1}])
def test_member_names_that_are_not_strings_behave_as_before(doc: dict[Any, Any]) -> None:
    # Parsed JSON has only str names; a Python dict may not. Whatever the reference does
    # (an answer, or AttributeError from spelling a non-str), the lookups do the same.
    for name in ("kind", "schema"):
        try:
            want: Any = _reference(doc, name)
        except AttributeError:
            with pytest.raises(AttributeError):
                near_member(doc, name)
            with pytest.raises(AttributeError):
                near_members(doc, [name])
            continue
        assert near_member(doc, name) == want
        assert near_members(doc, [name]) == (want is not None)
