"""The export's manifest text built by formatting equals what ``dumps`` gives (issue 29).

``closure.layers_json`` writes the members' descriptors without the generic canonical
encoder; ``layout.manifest_from_json`` splices them into the manifest. Both must give the
bytes ``manifest_bytes`` (``dumps`` of the whole manifest) gives, or hand the case back.
"""

from __future__ import annotations

import pytest

from evstore.archive.closure import Obj, layer, layers_json
from evstore.archive.layout import manifest_bytes, manifest_from_json
from evstore.core.canonical import MAX_SAFE_INTEGER, dumps
from evstore.core.digests import Digest
from evstore.core.errors import JSONFormError
from evstore.objects.blobs import BlobRow

HEX = "0123456789abcdef" * 4


def _obj(n: int, kinds=(), edges=(), size=10, b3=None, sha=None) -> Obj:
    digest = Digest(b3 or f"{n:064x}", sha or f"{n + 7:064x}"[::-1], size)
    return Obj(BlobRow(digest, None), tuple(kinds), list(edges))


def _both(cache: dict[str, Obj], members: list[tuple[str, str]]) -> tuple[str | None, str]:
    slow = dumps([layer(cache[a], role) for a, role in members])[1:-1].decode()
    return layers_json(cache, members), slow


CASES = {
    "plain blobs": [(_obj(1), "root"), (_obj(2), "mentions"), (_obj(3, size=0), "x")],
    "kinds and edges": [
        (_obj(1, ("json",), [("mentions", f"{2:064x}"), ("mentions", f"{3:064x}")]), "root"),
        (_obj(2, ("fragment", "fragment-source")), "source"),
        (_obj(3, ("a",), [("content-version", HEX)]), "content-version"),
    ],
    "escapes in roles and kinds": [
        (_obj(1, ('ki"nd', "back\\slash"), [('ro"le', HEX), ("tab\there", HEX)]), "root"),
        (_obj(2, ("ctl\x01\x1f",)), 'quote"role\\'),
        (_obj(3), "new\nline"),
    ],
    "large and negative sizes": [
        (_obj(1, size=MAX_SAFE_INTEGER), "root"),
        (_obj(2, size=-MAX_SAFE_INTEGER), "r"),
        (_obj(3, size=8 << 30), "r"),
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_fast_text_is_the_canonical_text(name):
    objs = CASES[name]
    cache = {o.row.digest.blake3: o for o, _ in objs}
    members = [(o.row.digest.blake3, role) for o, role in objs]
    fast, slow = _both(cache, members)
    assert fast == slow
    layers = [layer(cache[a], role) for a, role in members]
    root = "blake3:" + members[0][0]
    assert manifest_from_json(root, "json", len(layers), fast) == manifest_bytes(
        root, "json", layers
    )


@pytest.mark.parametrize(
    "obj",
    [
        _obj(1, ("kïnd",)),  # not ASCII: dumps writes it (the caller falls back to it)
        _obj(1, ("\ud800",)),  # a lone surrogate: dumps refuses it
        _obj(1, edges=[("r\u00e9le", HEX)]),
        _obj(1, size=MAX_SAFE_INTEGER + 1),  # dumps refuses it
        _obj(1, b3="ABC" + HEX[3:]),  # not lowercase hex
        _obj(1, sha='"' + HEX[1:]),
        _obj(1, edges=[("mentions", 'x"y')]),
    ],
)
def test_what_the_fast_text_leaves_to_dumps(obj):
    cache = {obj.row.digest.blake3: obj}
    members = [(obj.row.digest.blake3, "root")]
    assert layers_json(cache, members) is None
    try:
        expected = dumps([layer(obj, "root")])
    except JSONFormError:
        return  # dumps refuses: the export raises as it did
    assert expected.startswith(b"[")


def test_the_manifest_slot_ignores_lookalike_annotations():
    tricky = '"layers":[]'
    layers = [layer(_obj(1), "root")]
    text = dumps(layers)[1:-1].decode()
    assert manifest_from_json(tricky, tricky, 1, text) == manifest_bytes(tricky, tricky, layers)
