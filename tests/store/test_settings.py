"""Settings on both backends: typed values, defaults, and rows evstore did not write."""

import pytest
import sqlalchemy as sa

import evstore
from evstore.db.tables import settings


def test_set_and_read_back(store):
    assert store.config()["packages.strict_context_bytes"] is False
    assert store.set_config("packages.strict_context_bytes", "yes") is True
    assert store.set_config("fragments.revision_extension_keys", "a.rev, b.rev") == [
        "a.rev",
        "b.rev",
    ]
    cfg = store.config()
    assert cfg["packages.strict_context_bytes"] is True
    assert cfg["fragments.revision_extension_keys"] == ["a.rev", "b.rev"]


@pytest.mark.parametrize("value", ["b.rev, a.rev,b.rev", '["b.rev", "a.rev", "b.rev"]'])
def test_a_list_setting_keeps_each_item_once(store, value):
    key = "fragments.revision_extension_keys"
    assert store.set_config(key, value) == ["b.rev", "a.rev"]
    assert store.set_config(key, ["x", "x", "y"]) == ["x", "y"]
    assert store.config()[key] == ["x", "y"]


@pytest.mark.parametrize(
    "name,value",
    [
        ("packages.strict_context_bytes", "maybe"),
        ("fragments.revision_extension_keys", '[""]'),
        ("fragments.revision_extension_keys", "{}"),
    ],
)
def test_bad_values_are_refused(store, name, value):
    with pytest.raises(evstore.InputError) as exc:
        store.set_config(name, value)
    assert exc.value.code == "config.value"


@pytest.mark.parametrize("raw", ["notjson", "5", '"true"'])
def test_a_stored_setting_of_the_wrong_type_is_corruption(store, raw):
    with store.db.engine.begin() as conn:
        conn.execute(sa.insert(settings), {"name": "packages.strict_context_bytes", "value": raw})
    with pytest.raises(evstore.CorruptionError) as exc:
        store.config()
    assert exc.value.code == "corruption.setting"
    with pytest.raises(evstore.CorruptionError):
        store.ingest([evstore.Document(b"{}")])
