"""The documents of an ``ingest`` or ``validate`` input: :func:`as_documents`.

A local :class:`~evstore.Store` and a :class:`~evstore.RemoteStore` read their input with
this one function, so both accept the same forms, refuse the same values with the same
error and hand the same bytes on (a parsed value is written as ``json.dumps`` text, which
the strict reader then reads: ``1.0`` stays a float token). Pure: no database.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .errors import error
from .results import Document

__all__ = ["as_documents"]


def _one_document(obj: Any) -> Document | None:
    """The :class:`Document` of one input value, or None when ``obj`` is no single document."""
    if isinstance(obj, Document):
        return obj
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return Document(bytes(obj))
    if isinstance(obj, os.PathLike):
        path = os.fspath(obj)
        try:
            return Document(Path(path).read_bytes(), name=str(path))
        except OSError as exc:
            raise error(
                "input.unreadable", f"cannot read {path}: {exc.strerror}", path=str(path)
            ) from None
    if isinstance(obj, dict) or (isinstance(obj, list) and obj):
        try:
            text = json.dumps(obj, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise error("input.invalid", f"the value is not JSON: {exc}") from None
        return Document(text.encode("utf-8"))
    return None


def _each_document(items: Iterable[Any]) -> Iterator[Document]:
    for i, obj in enumerate(items):
        doc = _one_document(obj) if not isinstance(obj, (dict, list)) else None
        if doc is None:
            raise error(
                "input.invalid",
                f"item {i} of the documents is a {type(obj).__name__}: each item must be a "
                "Document, JSON text as bytes or a pathlib.Path",
                item=i,
            )
        yield doc


def as_documents(obj: Any) -> Iterable[Document]:
    """The documents of an ``ingest``/``validate`` input (streamed when ``obj`` is).

    One document: a :class:`Document`; a parsed JSON value (a ``dict``, or a non-empty
    ``list`` that is not a list of Documents: one array document); JSON text as ``bytes``;
    a ``pathlib.Path`` (any ``os.PathLike``) read as it is. Many documents: a list of
    Documents, or any other iterable (tuple, generator) whose items are Documents, bytes or
    paths (read one at a time). An empty list is no document.

    Raises:
        InputError: ``input.invalid`` for anything else (a ``str`` is refused: pass JSON
            text as bytes or a path as ``pathlib.Path``), or a value that is not JSON;
            ``input.unreadable`` for a path that cannot be read.
    """
    if isinstance(obj, list) and obj and all(isinstance(d, Document) for d in obj):
        return obj
    if isinstance(obj, list) and not obj:
        return obj
    doc = _one_document(obj)
    if doc is not None:
        return [doc]
    if isinstance(obj, (str, int, float, bool)) or obj is None or not isinstance(obj, Iterable):
        raise error(
            "input.invalid",
            f"cannot ingest a {type(obj).__name__}: give a Document, a dict or list (a parsed "
            "JSON value), JSON text as bytes, a pathlib.Path, or an iterable of Documents",
        )
    return _each_document(obj)
