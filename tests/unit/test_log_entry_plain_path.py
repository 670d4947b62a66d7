"""parse_entry's quick path (issue 29) answers exactly as the strict reader and writer.

Entries the module writes are matched by a pattern instead of being read and written again;
the answer must be the strict path's object, and bytes the pattern does not take (or takes
wrongly, if it were loose) must still be judged by the strict path.
"""

from __future__ import annotations

import pytest

from evstore.core.canonical import loads
from evstore.core.errors import InputError
from evstore.objects import log_entries as le

A = "ab" * 32
S = "cd" * 32
AT = "2026-12-04T05:37:07.250695Z"


def entries() -> list[bytes]:
    out = []
    for op in le.OPS:
        for kind, root in ((None, None), ("json", None), (None, "nightly run"), ("k", "r")):
            for size in (0, 7, 10**15 - 1, 10**15, 2**53 - 1):
                out.append(le.entry_bytes(op, A, S, size, AT, kind=kind, root=root))
    out.append(le.entry_bytes("retain", A, S, 1, AT, root='caf\u00e9 \\ "q"'))  # escapes
    return out


@pytest.mark.parametrize("data", entries())
def test_an_entry_the_module_writes_parses_as_the_strict_reader_reads_it(data):
    got = le.parse_entry(data)
    assert got == loads(data)
    assert list(got) == list(loads(data))  # the same member order too


def test_the_pattern_takes_the_plain_entries_and_leaves_the_others():
    plain = le.entry_bytes("put", A, S, 5, AT)
    assert le._PLAIN_ENTRY.fullmatch(plain)
    for other in (
        le.entry_bytes("put", A, S, 10**15, AT),  # 16 digits
        le.entry_bytes("retain", A, S, 1, AT, root="caf\u00e9"),  # not ASCII
        le.entry_bytes("retain", A, S, 1, AT, root='a"b'),  # an escape
        plain.replace(b'"v":1', b'"v":2'),
        plain.replace(A.encode(), A.upper().encode()),
    ):
        assert le._PLAIN_ENTRY.fullmatch(other) is None


@pytest.mark.parametrize(
    "bad",
    [
        b" " + le.entry_bytes("put", A, S, 5, AT),  # not canonical
        le.entry_bytes("put", A, S, 5, AT).replace(b'"size":5', b'"size":05'),
        le.entry_bytes("put", A, S, 5, AT).replace(b'"v":1', b'"v":2'),
        le.entry_bytes("put", A, S, 5, AT).replace(b'"op":"put"', b'"op":"get"'),
        le.entry_bytes("put", A, S, 5, AT).replace(b'"size":5', b'"size":-5'),
        le.entry_bytes("put", A, S, 5, AT).replace(b'"accepted_at"', b'"accepted_on"'),
    ],
)
def test_bytes_off_the_pattern_are_still_refused_by_the_strict_path(bad):
    with pytest.raises(InputError) as exc:
        le.parse_entry(bad)
    assert exc.value.code == "log.entry-malformed"
