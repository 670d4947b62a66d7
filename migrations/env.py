"""Alembic environment: evstore always passes an open connection (see evstore.db.engine.migrate)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from evstore.db.tables import metadata

config = context.config
connection = config.attributes.get("connection")


def _run(conn) -> None:
    context.configure(connection=conn, target_metadata=metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if connection is not None:
    _run(connection)
else:  # plain `alembic -x url=...` use, for developers
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option(
        "sqlalchemy.url"
    )
    engine = create_engine(url)
    with engine.begin() as conn:
        _run(conn)
