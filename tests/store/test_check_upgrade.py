"""Revision 0004 (the ``verified`` table): a store at 0003 migrates, checks and records.

tests/test_upgrade.py covers a whole store made by the previous release; this covers the
revision itself both ways on each backend, with objects stored before it.
"""

from __future__ import annotations

from importlib import resources

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config

import evstore
from evstore.db.engine import head_revision
from evstore.objects.artifacts import Document


def _alembic(url: str, verb: str, revision: str) -> None:
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.begin() as conn:
            cfg = Config()
            cfg.set_main_option("script_location", str(resources.files("evstore.migrations")))
            cfg.attributes["connection"] = conn
            getattr(command, verb)(cfg, revision)
    finally:
        engine.dispose()


def _tables(url: str) -> set[str]:
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_a_0003_store_migrates_to_0004_checks_and_records(store_url):
    with evstore.open(store_url) as s:
        s.put_many([b"old %d" % i for i in range(5)])
        s.ingest([Document(b'{"old":true}', kind="json")])
    _alembic(store_url, "downgrade", "0003")
    assert "verified" not in _tables(store_url)
    with pytest.raises(evstore.StoreStateError) as exc:
        evstore.open(store_url)
    assert exc.value.code == "store.schema-behind"
    assert evstore.migrate(store_url)["to"] == head_revision()  # 0004 and any later revision
    with evstore.open(store_url) as s:
        run = s.check(since="1h")  # nothing was ever verified: everything is due
        assert list(run) == [] and run.checked == 7 and run.recorded == 7
        again = s.check(since="1h")
        assert list(again) == [] and again.checked == 0
    _alembic(store_url, "downgrade", "0003")  # the revision goes back down cleanly
    assert "verified" not in _tables(store_url)
