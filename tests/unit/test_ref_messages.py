"""A bad content ref given on its own: a short message that names no document place."""

from __future__ import annotations

import pytest

from evstore.core.errors import RefSyntaxError
from evstore.core.refs import parse_ref


def test_a_long_bad_ref_is_named_by_its_start_and_length():
    with pytest.raises(RefSyntaxError) as ei:
        parse_ref("x" * 100_000)
    text = str(ei.value)
    assert len(text) < 400 and "(100000 characters)" in text
    assert text.startswith("ref.syntax: ")  # no "at the document root" for an argument


def test_a_bad_ref_inside_a_document_still_names_its_place():
    with pytest.raises(RefSyntaxError) as ei:
        parse_ref("blake3:zz")
    err = ei.value
    err.pointer = "/items/0/ref"
    assert str(err).startswith("ref.syntax at /items/0/ref: 'blake3:zz' is not a content ref")
