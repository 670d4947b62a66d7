"""Run the server: :func:`serve` puts :func:`~evstore.server.app.create_app` on uvicorn.

One worker by default, several with ``workers`` (uvicorn's supervisor, one process per
worker, each opening its own connections). SIGTERM and SIGINT shut down cleanly: the
listening socket closes, requests in flight finish (up to ``graceful_s`` seconds), then the
stores are closed. Every write is one database transaction, so a request cut short by the
timeout leaves nothing half-written.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from uvicorn.supervisors import Multiprocess

from .app import create_app
from .limits import Limits
from .signer import DEFAULT_EVERY_S

__all__ = ["AppFactory", "serve"]


@dataclass(frozen=True)
class AppFactory:
    """A picklable app factory, so that each worker process builds its own app."""

    stores: dict[str | None, str]
    public_read: bool = False
    limits: Limits = field(default_factory=Limits)
    log_key: str | None = None
    checkpoint_every: float = DEFAULT_EVERY_S

    def __call__(self) -> Any:
        """Build the app (opens every store)."""
        return create_app(
            self.stores,
            public_read=self.public_read,
            limits=self.limits,
            log_key=self.log_key,
            checkpoint_every=self.checkpoint_every,
        )


def serve(
    stores: Mapping[str | None, str],
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    workers: int = 1,
    public_read: bool = False,
    limits: Limits | None = None,
    access_log: bool = True,
    graceful_s: float = 30.0,
    log_key: str | None = None,
    checkpoint_every: float = DEFAULT_EVERY_S,
) -> None:
    """Serve ``stores`` over HTTP until SIGTERM or SIGINT (docs/http.md).

    Args:
        stores: as :func:`evstore.create_app`.
        host: the address to listen on (loopback by default).
        port: the TCP port (0: any free one).
        workers: server processes (1: this process).
        public_read: reads need no token.
        limits: request limits (defaults when None).
        access_log: log one line per request (uvicorn's access log).
        graceful_s: how long requests in flight may take to finish at shutdown (seconds).
        log_key: sign each store's log on a schedule with this key file, as
            :func:`evstore.create_app` (with several workers, each worker signs; a round that
            finds the log not grown signs nothing).
        checkpoint_every: seconds between two signing rounds.

    Raises:
        InputError, StoreStateError: as :func:`evstore.create_app` (checked before the
            socket is bound: a store that cannot be opened fails the command at once).
    """
    factory = AppFactory(dict(stores), public_read, limits or Limits(), log_key, checkpoint_every)
    first = factory()  # every store opens now, or the command fails with its typed error
    config = uvicorn.Config(
        factory if workers > 1 else first,
        host=host,
        port=port,
        workers=workers,
        factory=workers > 1,
        access_log=access_log,
        timeout_graceful_shutdown=int(graceful_s),
        lifespan="on",
        server_header=False,
    )
    server = uvicorn.Server(config)
    # uvicorn re-raises the signal that stopped it once it has shut down; a no-op handler
    # makes that a normal return (exit 0) instead of a kill or a KeyboardInterrupt.
    old = {s: signal.signal(s, lambda *_: None) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        if workers > 1:
            _close(first)
            sock = config.bind_socket()
            Multiprocess(config, sockets=[sock]).run()
        else:
            server.run()
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def _close(app: Any) -> None:
    """Close the stores of an app built only to check that they open."""
    import asyncio

    async def shutdown() -> None:
        inner = app.app
        async with inner.router.lifespan_context(inner):
            pass

    asyncio.run(shutdown())
