"""Administration of a remote store (issue 28): tokens and settings over HTTP.

:class:`RemoteTokens` is ``store.tokens`` of a :class:`~evstore.client.remote.RemoteStore`;
``evstore.create_token``, ``list_tokens`` and ``revoke_token`` hand a remote store to it, so
the one function serves both store types. Every call needs an ``admin`` token (docs/http.md#auth);
the answers are the local functions' dicts, errors the same codes (``token.scope``,
``not-found.token``, ``input.invalid``).

:func:`read_settings` and :func:`write_setting` are ``config`` and ``set_config``: reads need a
``read`` token, a write ``admin``.
"""

from __future__ import annotations

import urllib.parse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .http import Http
    from .log import RemoteLog

__all__ = ["RemoteAdmin", "RemoteTokens", "read_settings", "write_setting"]


class RemoteAdmin:
    """What a :class:`~evstore.client.remote.RemoteStore` administers over HTTP: settings,
    tokens and the log (a mixin; ``http`` and ``_live`` are the store's).
    """  # noqa: D205

    http: Http

    def _live(self) -> None:  # the store's own check (RemoteStore._live)
        raise NotImplementedError

    def config(self, name: str | None = None) -> dict[str, Any]:
        """Every setting, or ``{name: value}`` (``GET /v1/config``; read scope), as
        :meth:`Store.config`. Raises ``config.unknown``.
        """  # noqa: D205
        self._live()
        return read_settings(self, name)

    def set_config(self, name: str, value: Any) -> Any:
        """Set a setting on the server (``PUT /v1/config/{name}``; admin scope), as
        :meth:`Store.set_config`: a str is parsed as the CLI parses it. The stored value.
        """  # noqa: D205
        self._live()
        return write_setting(self, name, value)

    @property
    def tokens(self) -> RemoteTokens:
        """The server's tokens (``P/v1/tokens``, admin): ``create``, ``list``, ``revoke``."""
        self._live()
        return RemoteTokens(self)

    @property
    def log(self) -> RemoteLog:
        """The tamper-evident log over HTTP (store/client/log.py): status, entries, proofs,
        a checkpoint signed by the server (admin).
        """  # noqa: D205
        self._live()
        from .log import RemoteLog

        return RemoteLog(self)


class RemoteTokens:
    """The tokens of a served store (``P/v1/tokens``, admin scope)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def create(self, scope: str, name: str = "") -> dict[str, Any]:
        """``POST /v1/tokens`` -> ``{"id", "token", "scope", "name", "created_at"}``.

        Not retried once the server may have seen it (a resent request would make a second
        token). Raises ``token.scope``, ``input.invalid``, ``http.forbidden``.
        """
        out: dict[str, Any] = self.store.http.json(
            "POST", "v1/tokens", idempotent=False, json={"scope": scope, "name": name}
        )
        return out

    def list(self) -> list[dict[str, Any]]:
        """``GET /v1/tokens``: ``[{"id", "scope", "name", "created_at", "revoked_at"}]``."""
        out = self.store.http.json("GET", "v1/tokens")
        rows = out.get("tokens") if isinstance(out, dict) else None
        if not isinstance(rows, list):
            raise self.store.http.protocol("GET v1/tokens: the answer holds no tokens list")
        return rows

    def revoke(self, token_id: str) -> dict[str, Any]:
        """``DELETE /v1/tokens/{id}`` -> ``{"id", "revoked": true, "revoked_at"}``.

        Revoking twice answers the same, so it is retried. Raises ``not-found.token``.
        """
        out: dict[str, Any] = self.store.http.json(
            "DELETE", "v1/tokens/" + urllib.parse.quote(token_id, safe=""), idempotent=True
        )
        return out


def read_settings(store: Any, name: str | None = None) -> dict[str, Any]:
    """``GET /v1/config[/{name}]``: every setting, or ``{name: value}`` (``config.unknown``)."""
    path = "v1/config" if name is None else "v1/config/" + urllib.parse.quote(name, safe="")
    out = store.http.json("GET", path)
    if not isinstance(out, dict):
        raise store.http.protocol(f"GET {path}: the answer is not the settings")
    return out


def write_setting(store: Any, name: str, value: Any) -> Any:
    """``PUT /v1/config/{name}`` ``{"value": V}``: the stored value (admin).

    Raises ``config.unknown``, ``config.value``, ``blobs.spec`` (checked by the server).
    """
    path = "v1/config/" + urllib.parse.quote(name, safe="")
    out = store.http.json("PUT", path, idempotent=True, json={"value": value})
    if not isinstance(out, dict) or name not in out:
        raise store.http.protocol(f"PUT {path}: the answer is not the setting")
    return out[name]
