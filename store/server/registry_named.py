"""``/v2/`` at the root of a server of named stores (``evstore serve NAME=URL ...``).

Registry tools look for the distribution API at ``/v2/`` of a host, never under a path, so
each named store's registry (store/server/registry.py, served under ``/NAME/v2/``) is also
reachable at the root, its repositories named with the store's name in front: the
repository ``team/evidence`` of the store ``lab`` is ``lab/team/evidence``
(``docker://HOST/lab/team/evidence:latest``). docs/registry.md#named-stores.

:class:`NamedRegistry` wraps the root app: a request to ``/v2/STORE/REST`` is handed to the
store's app as ``/STORE/v2/REST`` with ``STORE/`` recorded in the ASGI scope
(:data:`PREFIX_KEY`), so that the answers' ``Location``, ``Link`` and tags-list ``name`` and
the bearer challenge's scope name the repository as the client does. ``/v2/`` (the version
check) and ``/v2/token`` go to the first store, with every store's tokens accepted
(:data:`ANY_KEY`). A first segment that is no store's name is the OCI ``NAME_UNKNOWN``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .limits import ASGIApp, Receive, Scope, Send

__all__ = ["ANY_KEY", "NamedRegistry", "PREFIX_KEY"]

#: The ASGI scope key holding the repository prefix (``"STORE/"``) of a request to ``/v2/``.
PREFIX_KEY = "evstore.oci_prefix"
#: The ASGI scope key holding every served store (a version check or token at the root).
ANY_KEY = "evstore.oci_any"


class NamedRegistry:
    """ASGI middleware: ``/v2/STORE/...`` of the root served by the store ``STORE``.

    Args:
        app: the root app (the named stores mounted under ``/NAME``).
        served: the :class:`~evstore.server.app.Served` stores, in the order given.
    """

    def __init__(self, app: ASGIApp, served: Sequence[Any]) -> None:
        self.app = app
        self.served = list(served)
        self.names = {one.name for one in self.served}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Hand ``/v2/...`` to the store it names; anything else to the root app as it is."""
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path not in ("/v2", "/v2/") and not path.startswith("/v2/"):
            await self.app(scope, receive, send)
            return
        rest = path[4:]
        first = self.served[0].name
        extra: dict[str, Any]
        if rest in ("", "token"):
            target, extra = f"/{first}/v2/{rest}", {ANY_KEY: self.served}
        else:
            store, _, tail = rest.partition("/")
            if store not in self.names or not tail:
                await _unknown(scope, send, store)
                return
            target, extra = f"/{store}/v2/{tail}", {PREFIX_KEY: store + "/"}
        await self.app(
            {**scope, **extra, "path": target, "raw_path": target.encode("utf-8")},
            receive,
            send,
        )


async def _unknown(scope: Scope, send: Send, store: str) -> None:
    """The OCI ``NAME_UNKNOWN`` of a repository whose first segment is no store's name."""
    message = f"no store named {store!r} is served here: name a repository STORE/NAME"
    detail = {"code": "not-found.root", "rule": "docs/registry.md#named-stores", "pointer": ""}
    body = json.dumps(
        {"errors": [{"code": "NAME_UNKNOWN", "message": message, "detail": detail}]},
        sort_keys=True,
    ).encode("utf-8")
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"docker-distribution-api-version", b"registry/2.0"),
        (b"x-content-type-options", b"nosniff"),
    ]
    await send({"type": "http.response.start", "status": 404, "headers": headers})
    body_out = b"" if scope.get("method") == "HEAD" else body
    await send({"type": "http.response.body", "body": body_out})
