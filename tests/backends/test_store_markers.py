"""The store marker: a blob backend's place belongs to one store (issue 25).

Two stores pointed at one directory or bucket prefix would each delete the other's bytes
(a drain deletes an object no row *of its own* needs), so the second is refused with
``blobs.shared`` whichever way it names the place (init, config, blobs move, a symlink),
and ``check`` reports a marker of another store. Both databases, a directory and SeaweedFS.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import evstore
from evstore.backends.spec import open_backend, parse_spec
from evstore.objects.markers import MARKER_KEY, read_marker, store_id


@pytest.fixture(params=["file", "s3"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "file":
        (tmp_path / "blobs").mkdir()
        return f"file:{tmp_path / 'blobs'}"
    sw = request.getfixturevalue("s3_server")
    return f"s3://{sw.bucket}/m{uuid.uuid4().hex[:12]}?endpoint={sw.endpoint}"


def _other_store(tmp_path: Path, name: str = "other") -> str:
    url = f"sqlite:///{tmp_path / (name + '.db')}"
    evstore.init(url)
    return url


def test_the_first_store_claims_the_place_and_a_second_is_refused(store_url, spec, tmp_path):
    out = evstore.init(store_url, blobs=spec)
    assert out["blobs"] == parse_spec(spec).text
    with evstore.open(store_url) as a:
        ours = store_id(a.db)
        assert read_marker(open_backend(spec)) == ours
        big = os.urandom(2 << 20)
        addr = a.put(big).digest.address
        # Naming the place again (another spelling too) is this store's own claim: fine.
        a.set_config("blobs.backend", spec)
        assert list(a.check()) == []

    # A new store: refused before anything is created.
    new = tmp_path / "new.db"
    with pytest.raises(evstore.StoreStateError) as info:
        evstore.init(f"sqlite:///{new}", blobs=spec)
    assert info.value.code == "blobs.shared"
    assert ours in str(info.value)
    assert not new.exists()

    # An existing store: config and blobs move are refused, its setting unchanged.
    other = _other_store(tmp_path)
    with evstore.open(other) as b:
        with pytest.raises(evstore.StoreStateError) as info:
            b.set_config("blobs.backend", spec)
        assert info.value.code == "blobs.shared"
        with pytest.raises(evstore.StoreStateError) as info:
            b.retention.move_blobs(spec)
        assert info.value.code == "blobs.shared"
        assert b.config("blobs.backend") == {"blobs.backend": "inline"}
    assert read_marker(open_backend(spec)) == ours  # never overridden
    with evstore.open(store_url) as a:
        assert a.get(addr) == big


def test_a_symlink_to_a_claimed_directory_is_the_same_place(store, tmp_path):
    (tmp_path / "real").mkdir()
    store.set_config("blobs.backend", f"file:{tmp_path / 'real'}")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with evstore.open(_other_store(tmp_path)) as b, pytest.raises(evstore.StoreStateError) as info:
        b.set_config("blobs.backend", f"file:{tmp_path / 'link'}")
    assert info.value.code == "blobs.shared"


def test_check_reports_a_marker_of_another_store(store, spec):
    store.set_config("blobs.backend", spec)
    backend = open_backend(spec)
    assert list(store.check()) == []
    # Another store took the place behind this one's back (or the marker was rewritten).
    backend.put_bytes(MARKER_KEY, json.dumps({"store": "f" * 32}).encode())
    faults = list(store.check())
    assert [f.code for f in faults] == ["check.blob-marker"], faults
    assert faults[0].details["marker"] == "f" * 32
    # Damaged: counted as another store's, and a new claim of the place is refused.
    backend.put_bytes(MARKER_KEY, b"not json")
    assert [f.code for f in store.check()] == ["check.blob-marker"]
    with pytest.raises(evstore.StoreStateError) as info:
        store.set_config("blobs.backend", spec)
    assert info.value.code == "blobs.shared"


def test_two_stores_racing_for_one_place_one_wins(spec, tmp_path):
    """The marker is written create-only: of two claims, exactly one succeeds."""
    urls = [_other_store(tmp_path, f"s{i}") for i in range(2)]
    stores = [evstore.open(u) for u in urls]
    try:
        ids = [store_id(s.db) for s in stores]
        doc = [json.dumps({"store": i}).encode() for i in ids]
        backend = open_backend(spec)
        made = [backend.create_bytes(MARKER_KEY, doc[0]), backend.create_bytes(MARKER_KEY, doc[1])]
        assert made == [True, False]
        assert read_marker(backend) == ids[0]
        stores[0].set_config("blobs.backend", spec)
        with pytest.raises(evstore.StoreStateError):
            stores[1].set_config("blobs.backend", spec)
    finally:
        for s in stores:
            s.close()


def test_the_cli_refuses_a_shared_place_with_a_typed_error(spec, tmp_path):
    def init(name: str) -> subprocess.CompletedProcess[str]:
        url = f"sqlite:///{tmp_path / name}"
        return subprocess.run(
            [sys.executable, "-m", "evstore", "--json", "--store", url, "init", "--blobs", spec],
            capture_output=True,
            text=True,
            timeout=120,
        )

    first = init("a.db")
    assert first.returncode == 0, first.stderr
    second = init("b.db")
    assert second.returncode == 1, (second.stdout, second.stderr)
    assert json.loads(second.stdout)["error"]["code"] == "blobs.shared"
    assert "Traceback" not in second.stderr
    assert not (tmp_path / "b.db").exists()
