"""Shared fixtures: the ../shared reference folder, backends and stores."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

import evstore

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO.parent / "shared").resolve()


def _require(var: str) -> bool:
    return os.environ.get(var, "") not in ("", "0")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The public reference folder ../shared (contracts and fixtures).

    Skips with a reason where it is absent; fails instead when EVSTORE_REQUIRE_SHARED=1 (CI).
    """
    if not (SHARED / "contracts" / "README.md").is_file():
        msg = f"../shared is absent (looked in {SHARED}); contract fixture tests need it"
        if _require("EVSTORE_REQUIRE_SHARED"):
            pytest.fail(msg + " and EVSTORE_REQUIRE_SHARED=1")
        pytest.skip(msg)
    return SHARED


@pytest.fixture(scope="session")
def require_tool():
    """`require_tool(name)` -> the path of a third-party command-line tool (skopeo, b3sum, jq).

    Skips with a reason where the tool is not installed; fails instead when
    EVSTORE_REQUIRE_TOOLS=1 (CI installs them: see .ci/run).
    """

    def need(name: str) -> str:
        found = shutil.which(name)
        if found is None:
            msg = f"{name} is not installed (apt-get install {name})"
            if _require("EVSTORE_REQUIRE_TOOLS"):
                pytest.fail(msg + " and EVSTORE_REQUIRE_TOOLS=1")
            pytest.skip(msg)
        return found

    return need


# ---------------------------------------------------------------------------------------
# Backends: every test that takes `store` runs on SQLite and on PostgreSQL.
# ---------------------------------------------------------------------------------------
PG_ADMIN = os.environ.get("EVSTORE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def _pg_reachable() -> str | None:
    try:
        import psycopg

        with psycopg.connect(
            PG_ADMIN.replace("postgresql+psycopg", "postgresql"), connect_timeout=3
        ):
            return None
    except Exception as exc:  # any failure means: no PostgreSQL here
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}"


def _pg_exec(sql: str) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(sql)


def _pg_url(dbname: str) -> str:
    base = PG_ADMIN.rsplit("/", 1)[0]
    return f"{base}/{dbname}"


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tmpl") / "template.db"
    evstore.open(f"sqlite:///{path}", create=True).close()
    return path


@pytest.fixture(scope="session")
def pg_template() -> str:
    why = _pg_reachable()
    if why is not None:
        msg = f"PostgreSQL is not reachable at {PG_ADMIN} ({why})"
        if _require("EVSTORE_REQUIRE_PG"):
            pytest.fail(msg + " and EVSTORE_REQUIRE_PG=1")
        pytest.skip(msg)
    # One template per test process: pytest-xdist workers (gw0, gw1, ...) each build their own,
    # and several checkouts may run the suite against one server at once.
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = f"evstore_tmpl_{worker}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    _pg_exec(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    _pg_exec(f"CREATE DATABASE {name}")
    evstore.open(_pg_url(name), create=True).close()
    yield name
    _pg_exec(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


def _fresh_url(backend: str, request: pytest.FixtureRequest, directory: Path) -> str:
    """URL of a fresh, migrated, empty store on ``backend`` (a SQLite file in ``directory``);
    a PostgreSQL database is dropped when ``request``'s scope ends."""
    if backend == "sqlite":
        template = request.getfixturevalue("sqlite_template")
        path = directory / "store.db"
        shutil.copyfile(template, path)
        return f"sqlite:///{path}"
    template = request.getfixturevalue("pg_template")
    name = f"evt_{uuid.uuid4().hex[:16]}"
    _pg_exec(f"CREATE DATABASE {name} TEMPLATE {template}")
    request.addfinalizer(lambda: _pg_exec(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    return _pg_url(name)


@pytest.fixture
def store_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """URL of a fresh, migrated, empty store on the current backend."""
    return _fresh_url(backend, request, tmp_path)


@pytest.fixture(scope="session")
def fresh_store_url():
    """`fresh_store_url(backend, request, directory)` -> a fresh store's URL, for fixtures of a
    wider scope than `store_url` (tests/behaviour/ builds one store per module)."""
    return _fresh_url


@pytest.fixture
def store(store_url: str):
    """A fresh store (evstore.Store) on each backend."""
    s = evstore.open(store_url)
    yield s
    s.close()


@pytest.fixture
def empty_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """URL where no store exists yet (a missing SQLite file, or an empty PostgreSQL database)."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'new.db'}"
    request.getfixturevalue("pg_template")  # skips or fails without PostgreSQL
    name = f"evt_{uuid.uuid4().hex[:16]}"
    _pg_exec(f"CREATE DATABASE {name}")
    request.addfinalizer(lambda: _pg_exec(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    return _pg_url(name)


def store_snapshot(store: evstore.Store) -> dict[str, list[tuple]]:
    """Every row of every evstore table (bytes included), sorted: for "store unchanged" checks."""
    import sqlalchemy as sa

    from evstore.db.tables import metadata

    out: dict[str, list[tuple]] = {}
    with store.db.engine.connect() as conn:
        for name, table in sorted(metadata.tables.items()):
            rows = conn.execute(sa.select(table)).all()
            out[name] = sorted(
                (tuple(bytes(v) if isinstance(v, memoryview) else v for v in r) for r in rows),
                key=repr,
            )
    return out


@pytest.fixture
def snapshot():
    """`snapshot(store)` -> every row and byte of the store, for unchanged-store assertions."""
    return store_snapshot


from tamperkit import tampering  # noqa: E402 - a helper module (see tamperkit.py)


@pytest.fixture
def tamper():
    """`with tamper(store) as conn:` writes damage past the foreign keys (see tampering)."""
    return tampering
