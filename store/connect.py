"""The entry points that take a store URL: a database URL opens a local :class:`Store`, an
``http(s)://`` URL a :class:`~evstore.client.RemoteStore` (docs/http.md#the-client).

:func:`open`, :func:`init` and :func:`migrate` are ``evstore.open``, ``evstore.init`` and
``evstore.migrate``: each dispatches on the URL and calls the facade (store/facade/) or the
client (store/client/). Schema commands need the database itself, so over HTTP they raise
``remote.unsupported``.
"""  # noqa: D205

from __future__ import annotations

from typing import Any

from .core.errors import error

__all__ = ["init", "migrate", "open"]


def _remote(url: str) -> bool:
    return url[:8].lower().startswith(("http://", "https://"))


def _client() -> Any:
    """The client package (evstore.client), or ``install.extra-missing`` without httpx."""
    from .core.extras import require

    require("client")
    from . import client

    return client


def open(url: str, *, create: bool = False, token: str | None = None, **remote: Any) -> Any:
    """Open the store at ``url``: a local :class:`~evstore.Store` or a remote one.

    Args:
        url: a SQLAlchemy URL or SQLite path (a local store), or ``http(s)://HOST:PORT[/NAME]``
            (a store served by ``evstore serve``).
        create: local stores only: create and migrate a missing store. A remote store
            exists on its server; the flag is ignored there.
        token: a bearer token for a remote store (``read``, ``ingest`` or ``admin`` scope);
            the library never reads it from the environment (the CLI reads EVSTORE_TOKEN).
        remote: remote stores only: ``timeout`` (seconds), ``policy`` (a
            :class:`~evstore.client.RetryPolicy`), ``transport`` (an httpx transport).

    Returns:
        A :class:`~evstore.Store`, or a :class:`~evstore.client.RemoteStore` with the same
        methods (and ``remote.unsupported`` for those that need the database).

    Raises:
        StoreStateError: as :func:`evstore.facade.api.open`; ``store.url``: a malformed HTTP URL;
            ``install.extra-missing``: an HTTP URL without the ``client`` extra (httpx), a
            ``postgresql://`` URL without the ``postgresql`` extra (psycopg).
        InputError: ``input.invalid`` for a token or remote option with a database URL.
    """
    if _remote(url):
        return _client().RemoteStore(url, token=token, **remote)
    if token is not None or remote:
        raise error("input.invalid", "a token and HTTP options are for http(s):// store URLs")
    from .facade.api import open as open_local

    return open_local(url, create=create)


def init(url: str, *, blobs: str | None = None) -> dict[str, Any]:
    """``evstore init`` (:func:`evstore.facade.api.init`); ``remote.unsupported`` over HTTP."""
    if _remote(url):
        raise _client().unsupported("init")
    from .facade.api import init as init_local

    return init_local(url, blobs=blobs)


def migrate(url: str) -> dict[str, Any]:
    """``evstore migrate`` (:func:`evstore.facade.api.migrate`); HTTP: ``remote.unsupported``."""
    if _remote(url):
        raise _client().unsupported("migrate")
    from .facade.api import migrate as migrate_local

    return migrate_local(url)
