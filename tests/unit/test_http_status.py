"""One table of HTTP statuses (store/core/error_codes.py) for the server, pages and client."""

from __future__ import annotations

import pytest

import evstore
from evstore.client.http import rebuild_error
from evstore.core.error_codes import STATUS_BY_CODE, STATUS_BY_FAMILY
from evstore.core.errors import CODES, family_of_status


def test_every_code_has_a_status_from_its_code_or_family():
    for code, row in CODES.items():
        err = evstore.error(code, "m")
        want = STATUS_BY_CODE.get(code, STATUS_BY_FAMILY[row.family])
        assert evstore.http_status(err) == want, code
    assert set(STATUS_BY_CODE) <= set(CODES)


@pytest.mark.parametrize(
    ("status", "family"),
    [
        (400, "input"),
        (404, "not-found"),
        (409, "binding"),
        (422, "contract"),
        (401, "input"),
        (413, "input"),
        (500, "store"),
        (503, "store"),
        (502, "store"),
    ],
)
def test_a_status_reads_back_to_its_family(status, family):
    assert family_of_status(status) == family
    err = rebuild_error({"code": "future.thing", "message": "m"}, status)
    assert err.family == family and err.code == "future.thing"


def test_a_family_the_table_gives_one_status_reads_back_to_itself():
    for family, status in STATUS_BY_FAMILY.items():
        if list(STATUS_BY_FAMILY.values()).count(status) == 1:
            assert family_of_status(status) == family
