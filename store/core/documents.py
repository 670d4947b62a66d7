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

from .canonical import MAX_DEPTH, dumps, loads
from .errors import JSONFormError, error, join_pointer
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
        return Document(_value_bytes(obj))
    return None


def _value_bytes(value: Any) -> bytes:
    """The JSON text of a parsed value built in Python, held to :func:`evstore.dumps`'s domain.

    The value is what ``evstore.dumps`` (RFC 8785) takes, and is refused where it refuses:
    a member name that is not a ``str`` is never converted (``json.dumps`` would store
    ``{1: "a"}`` as ``{"1":"a"}``), and a lone surrogate is a typed JSON fault, not a
    UnicodeEncodeError.

    Returns:
        The value's ``json.dumps`` text (numbers as Python writes them, so ``1.0`` stays a
        float token for the kinds that read numbers as written); for a value outside the
        JSON domain (a lone surrogate, a
        NaN, an integer beyond 2**53-1, nesting beyond 128), ASCII JSON text the pipeline's
        strict reader refuses with that ``json.*`` code and pointer (``ingest`` raises it,
        ``validate`` lists it).

    Raises:
        JSONFormError: ``json.*`` for such a value no JSON text can be written for (one
            nested too deep for Python's encoder).
        InputError: ``input.invalid`` at the object holding a member name that is not a
            ``str`` (RFC 8259 section 4: a name is a string), or at a value of no JSON type.
    """
    try:
        dumps(value)  # the domain check: what RFC 8785 refuses is no JSON value
        return json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except TypeError:
        pointer, what, key = _first_non_json(value)
        details = {} if key is None else {"key": key}
        raise error("input.invalid", f"the value is not JSON: {what}", pointer, **details) from None
    except JSONFormError as exc:
        # Outside the domain: written as ASCII JSON text all the same when the strict reader
        # refuses that text, so the fault is found where every document's JSON faults are
        # (ingest raises it, validate lists it); else raised here.
        try:
            text = json.dumps(value, ensure_ascii=True, allow_nan=True).encode("ascii")
            loads(text)
        except JSONFormError:
            return text
        except (TypeError, ValueError, RecursionError):
            pass
        raise exc from None


def _first_non_json(value: Any) -> tuple[str, str, str | None]:
    """``(pointer, what, repr of the key or None)`` of the first part of ``value`` that is no
    JSON, in document order (:func:`_value_bytes` calls it once ``dumps`` has bounded the depth).
    """  # noqa: D205
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        node, ptr, depth = stack.pop()
        if depth > MAX_DEPTH:
            continue
        if isinstance(node, dict):
            for key in node:
                if not isinstance(key, str):
                    return (
                        ptr,
                        f"a member name is a {type(key).__name__} ({key!r}), and JSON member "
                        "names are strings (RFC 8259 section 4)",
                        repr(key),
                    )
            items = [(join_pointer(ptr, k), v) for k, v in node.items()]
        elif isinstance(node, (list, tuple)):
            items = [(join_pointer(ptr, i), v) for i, v in enumerate(node)]
        elif node is None or isinstance(node, (str, int, float)):  # bool is an int
            continue
        else:
            return ptr, f"a {type(node).__name__} is no JSON value", None
        stack.extend((v, p, depth + 1) for p, v in reversed(items))
    return "", "a value of no JSON type", None


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
            text as bytes or a path as ``pathlib.Path``), or a value that is not JSON (a
            member name that is not a ``str``, a value of no JSON type: with its pointer);
            ``input.unreadable`` for a path that cannot be read.
        JSONFormError: a parsed value outside the JSON domain ``evstore.dumps`` holds it to
            and no JSON text can be written for (nesting too deep for Python's encoder).
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
