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


def test_errors_about_no_document_name_no_place():
    # The log's key file and the store's state are no JSON document: an empty pointer says
    # nothing there; a contract fault keeps "at the document root".
    import evstore
    from evstore.core.errors import error

    key = error("log.key-file", "cannot read k.key: No such file or directory", path="k.key")
    assert str(key) == "k.key: log.key-file: cannot read k.key: No such file or directory"
    state = evstore.StoreStateError("the log has a key already", code="log.key-exists")
    assert str(state) == "log.key-exists: the log has a key already"
    assert str(error("manifest.schema", "x is required")).startswith(
        "manifest.schema at the document root"
    )
