"""Store creation, schema versions and migrations on both backends."""

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

import evstore
from evstore.db.engine import Database, head_revision
from evstore.db.tables import metadata


def test_missing_store_is_not_created(empty_url, backend, tmp_path):
    with pytest.raises(evstore.StoreStateError) as exc:
        evstore.open(empty_url)
    assert exc.value.code == "store.missing"
    if backend == "sqlite":
        assert not (tmp_path / "new.db").exists()
    db = Database(empty_url)
    assert not db.exists()
    db.dispose()


def test_create_then_open(empty_url):
    evstore.open(empty_url, create=True).close()
    with evstore.open(empty_url) as s:
        assert s.db.schema_state().current == head_revision()


def test_migrated_schema_matches_metadata(store):
    with store.db.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    assert diff == []


def test_schema_behind_is_refused_then_migrated(store_url):
    db = Database(store_url)
    with db.engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = 'base_placeholder'"))
    # An unknown revision is treated as newer than the code.
    with pytest.raises(evstore.StoreStateError) as exc:
        evstore.open(store_url)
    assert exc.value.code == "store.schema-ahead"
    with db.engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM alembic_version"))
    with pytest.raises(evstore.StoreStateError) as exc:
        evstore.open(store_url)
    assert exc.value.code == "store.missing"
    db.dispose()


def test_behind_store_needs_explicit_migrate_and_keeps_its_data(empty_url):
    from alembic import command

    from evstore.db.engine import _alembic_config
    from evstore.objects.bindings import bind, lookup_binding

    db = Database(empty_url)
    if db.sqlite_path is not None:
        db.sqlite_path.parent.mkdir(parents=True, exist_ok=True)
    cfg = _alembic_config()
    with db.engine.begin() as conn:  # a store made by the first release
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0001")
        bind(conn, "ns", "k", "v")
    with pytest.raises(evstore.StoreStateError) as exc:
        evstore.open(empty_url)
    assert exc.value.code == "store.schema-behind"
    with pytest.raises(evstore.StoreStateError):  # create=True does not migrate silently
        evstore.open(empty_url, create=True)
    assert db.migrate() == ("0001", head_revision())
    with evstore.open(empty_url) as s, s.db.engine.connect() as conn:
        assert lookup_binding(conn, "ns", "k") == "v"
    db.dispose()


def test_unsupported_urls():
    for url in ("mysql://x@y/z", "sqlite://", "sqlite:///:memory:"):
        with pytest.raises(evstore.StoreStateError) as exc:
            evstore.open(url)
        assert exc.value.code == "store.url"


def test_schema_revisions_read_as_text_match_alembic():
    from importlib import resources

    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from evstore.db.engine import schema_revisions

    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("evstore.migrations")))
    script = ScriptDirectory.from_config(cfg)
    chain = [r.revision for r in script.walk_revisions()][::-1]
    assert list(schema_revisions()) == chain
    assert schema_revisions()[-1] == head_revision()
