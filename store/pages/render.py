"""HTML pieces the page templates cannot say simply: evidence text, byte windows, JSON trees.

Every function here escapes every piece of evidence it is given (markupsafe) and returns
:class:`markupsafe.Markup`; nothing from the store ever reaches a page unescaped, and no value
from the store becomes an ``href`` except a content ref that :func:`evstore.parse_ref` accepts
(then percent-encoded into a path of ours).

Evidence text keeps its exact characters (so a highlighted range's text is exactly the quoted
bytes decoded), but each bidirectional formatting character and each C0/C1 control other
than tab and newline is wrapped in ``<span class="ctl" data-cp="U+202E">``: the stylesheet
isolates it (``unicode-bidi: isolate``) and shows its code point beside it, so a right-to-left
override can neither reorder the page nor hide what it does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode

from markupsafe import Markup, escape

from .. import EvstoreError, dumps, parse_ref

__all__ = [
    "JsonBudget",
    "ev_text",
    "highlight_window",
    "is_ref",
    "json_tree",
    "object_url",
    "pointer_get",
    "pointer_join",
    "query",
    "utf8_floor",
]

#: Characters shown as marked controls: C0 (but tab, newline), DEL, C1, bidi formatting.
_CONTROLS = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]"
)
#: JSON strings longer than this (characters) are cut on the page, with their full length.
STRING_MAX = 2000


def ev_text(text: str, limit: int | None = None) -> Markup:
    """Evidence text as safe HTML: escaped, controls marked (module docstring), optionally cut.

    Args:
        text: any string.
        limit: cut after this many characters and say how many were left out.
    """
    cut = 0
    if limit is not None and len(text) > limit:
        cut = len(text) - limit
        text = text[:limit]
    out: list[str] = []
    pos = 0
    for m in _CONTROLS.finditer(text):
        out.append(str(escape(text[pos : m.start()])))
        cp = f"U+{ord(m.group()):04X}"
        out.append(f'<span class="ctl" data-cp="{cp}" title="{cp}">{escape(m.group())}</span>')
        pos = m.end()
    out.append(str(escape(text[pos:])))
    if cut:
        out.append(f'<span class="cut"> … {cut:,} more characters not shown</span>')
    return Markup("".join(out))


def is_ref(value: Any) -> bool:
    """True when ``value`` is a content ref in one of the accepted forms."""
    if not isinstance(value, str) or len(value) > 90 or ":" not in value:
        return False
    try:
        parse_ref(value)
    except EvstoreError:
        return False
    return True


def object_url(base: str, ref: str) -> str:
    """The page that shows whatever ``ref`` names (``base`` is the pages' prefix)."""
    return f"{base}/object/{quote(ref, safe=':')}"


def utf8_floor(data: bytes, offset: int) -> int:
    """The largest UTF-8 character boundary at or before ``offset`` (bytes)."""
    offset = max(0, min(offset, len(data)))
    steps = 0
    while 0 < offset < len(data) and (data[offset] & 0xC0) == 0x80 and steps < 3:
        offset -= 1
        steps += 1
    return offset


def highlight_window(
    data: bytes,
    start: int,
    end: int,
    context: int = 2048,
    mark_max: int = 65536,
    *,
    shift: int = 0,
    size: int | None = None,
) -> dict[str, Any]:
    """A window of ``data`` around bytes ``[start, end)``, with that range in a ``<mark>``.

    The window starts and ends on UTF-8 character boundaries; the marked range is exactly
    ``data[start:end]`` decoded (``errors="replace"``: stored sources are well-formed), cut
    after ``mark_max`` bytes on the page (the page says so). ``data`` may be a part of a
    larger object: it starts at byte ``shift`` of an object of ``size`` bytes (offsets in
    and out of this function stay relative to ``data``, but the mark's ``data-start`` and
    ``data-end`` and the returned ``from``/``to`` are the object's).

    Returns:
        ``{"html": Markup, "from": first byte shown, "to": end byte shown, "cut": bytes of
        the range not shown}``.
    """
    total = len(data) + shift if size is None else size
    lo = utf8_floor(data, start - context)
    if end + context < len(data):
        hi = utf8_floor(data, end + context)
    else:
        hi = len(data) if shift + len(data) >= total else utf8_floor(data, len(data) - 1)
    shown_end = end if end - start <= mark_max else utf8_floor(data, start + mark_max)
    before = data[lo:start].decode("utf-8", "replace")
    marked = data[start:shown_end].decode("utf-8", "replace")
    after = data[end:hi].decode("utf-8", "replace")
    cut = end - shown_end
    note = f'<span class="cut"> … {cut:,} more bytes of the range not shown</span>' if cut else ""
    html = Markup(
        f'{ev_text(before)}<mark id="hl" data-start="{start + shift}" data-end="{end + shift}">'
        f"{ev_text(marked)}</mark>{note}{ev_text(after)}"
    )
    return {"html": html, "from": lo + shift, "to": hi + shift, "cut": cut}


def pointer_join(base: str, token: str | int) -> str:
    """RFC 6901: ``base`` + ``/`` + the escaped token."""
    return base + "/" + str(token).replace("~", "~0").replace("/", "~1")


def pointer_get(doc: Any, pointer: str) -> Any:
    """The value at an RFC 6901 pointer; KeyError when there is none."""
    if pointer == "":
        return doc
    if not pointer.startswith("/"):
        raise KeyError(pointer)
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(doc, dict) and token in doc:
            doc = doc[token]
        elif isinstance(doc, list) and token.isdigit() and int(token) < len(doc):
            doc = doc[int(token)]
        else:
            raise KeyError(pointer)
    return doc


class JsonBudget:
    """How much of a JSON value one page renders: a node budget and children per container."""

    def __init__(self, nodes: int = 1500, children: int = 100, open_depth: int = 2) -> None:
        self.nodes = nodes
        self.children = children
        self.open_depth = open_depth


def _scalar(value: Any, link: Callable[[str], str]) -> str:
    if isinstance(value, str):
        if is_ref(value):
            return f'<a class="ref" href="{escape(link(value))}">"{escape(value)}"</a>'
        return f'<span class="s">"{ev_text(value, STRING_MAX)}"</span>'
    if value is None or isinstance(value, bool):
        return (
            f'<span class="k">{escape(str(value).lower() if value is not None else "null")}</span>'
        )
    return f'<span class="n">{escape(dumps(value).decode())}</span>'


def json_tree(
    value: Any,
    *,
    pointer: str,
    offset: int,
    budget: JsonBudget,
    more: Callable[[str, int], str],
    link: Callable[[str], str],
) -> Markup:
    """``value`` (found at ``pointer``) as nested ``<details>`` lists, bounded by ``budget``.

    A container shows at most ``budget.children`` children from ``offset`` (only at the top),
    with a link to the next ones; once ``budget.nodes`` nodes are drawn, each further
    container becomes a link to its own page. ``more(pointer, offset)`` builds those links,
    ``link(ref)`` the link of a content ref found in a string.
    """
    left = [budget.nodes]
    return Markup(_node(value, "", pointer, offset, 0, budget, left, more, link))


def _node(
    value: Any,
    label: str,
    pointer: str,
    offset: int,
    depth: int,
    budget: JsonBudget,
    left: list[int],
    more: Callable[[str, int], str],
    link: Callable[[str], str],
) -> str:
    left[0] -= 1
    key = f'<span class="key">{ev_text(label, 200)}</span>: ' if label else ""
    if not isinstance(value, dict | list):
        return f"<li>{key}{_scalar(value, link)}</li>"
    items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
    brackets = "{}" if isinstance(value, dict) else "[]"
    what = "members" if isinstance(value, dict) else "items"
    summary = f'{key}<span class="br">{brackets[0]}…{brackets[1]}</span> {len(items):,} {what}'
    if left[0] <= 0 and depth > 0:
        href = escape(more(pointer, 0))
        return f'<li>{summary} <a href="{href}">open {escape(pointer)}</a></li>'
    page = items[offset : offset + budget.children]
    parts = []
    for k, v in page:
        parts.append(
            _node(v, str(k), pointer_join(pointer, k), 0, depth + 1, budget, left, more, link)
        )
    if offset:
        parts.insert(
            0,
            f'<li><a href="{escape(more(pointer, max(0, offset - budget.children)))}">'
            f"previous {budget.children} {what}</a></li>",
        )
    if offset + budget.children < len(items):
        nxt = offset + budget.children
        parts.append(
            f'<li><a href="{escape(more(pointer, nxt))}">next {what} from {nxt:,} of '
            f"{len(items):,}</a></li>"
        )
    opened = " open" if depth < budget.open_depth else ""
    return (
        f"<li><details{opened}><summary>{summary}</summary>"
        f'<ul class="json">{"".join(parts)}</ul></details></li>'
    )


def query(**params: Any) -> str:
    """A query string of the non-None params (``?a=1&b=2``, or empty)."""
    kept = {k: v for k, v in params.items() if v is not None}
    return "?" + urlencode(kept, doseq=True) if kept else ""
