"""Run the server: :func:`serve` puts :func:`~evstore.server.app.create_app` on uvicorn.

One worker by default, several with ``workers`` (uvicorn's supervisor, one process per
worker, each opening its own connections). SIGTERM and SIGINT shut down cleanly: the
listening socket closes, requests in flight finish (up to ``graceful_s`` seconds), then the
stores are closed. Every write is one database transaction, so a request cut short by the
timeout leaves nothing half-written.

Nothing is announced before it is true (issue 23): the stores are opened and the log key
read first, then the listening socket is bound (``http.listen`` when the port is taken or
not allowed), and only then does ``announce`` get the address. Connections run
:class:`~evstore.server.protocol.GuardedH11Protocol` (header timeout, connection cap, 431).
"""

from __future__ import annotations

import inspect
import signal
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from uvicorn.supervisors import Multiprocess

from .. import S3Credentials, configure_s3, error, s3_credentials
from .app import create_app
from .limits import Limits
from .protocol import GuardedH11Protocol
from .signer import DEFAULT_EVERY_S

#: Seconds a worker process may take to answer uvicorn's supervisor while it starts and
#: serves (its ``timeout_worker_healthcheck``, 5 by default). A spawned worker imports the
#: whole server before it can answer; on a loaded machine that took over 5 s, and the
#: supervisor killed and respawned every worker in a loop, none ever serving (issue 29).
WORKER_HEALTHCHECK_S = 60

__all__ = ["AppFactory", "serve"]


@dataclass(frozen=True)
class AppFactory:
    """A picklable app factory, so that each worker process builds its own app."""

    stores: dict[str | None, str]
    public_read: bool = False
    limits: Limits = field(default_factory=Limits)
    log_key: str | None = None
    checkpoint_every: float = DEFAULT_EVERY_S
    witness_key: str | None = None
    #: The S3 credentials of the process that made the factory: a worker process is
    #: started fresh (spawned) and configures them before it opens a store.
    s3: S3Credentials | None = None

    def __call__(self) -> Any:
        """Build the app (opens every store)."""
        if self.s3 is not None and s3_credentials() is None:
            configure_s3(self.s3)
        return create_app(
            self.stores,
            public_read=self.public_read,
            limits=self.limits,
            log_key=self.log_key,
            checkpoint_every=self.checkpoint_every,
            witness_key=self.witness_key,
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
    announce: Callable[[str], None] | None = None,
    witness_key: str | None = None,
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
        announce: called with ``http://HOST:PORT`` once the socket listens (the port
            actually bound when ``port`` is 0), before the first request is served.
        witness_key: a witness key file: each store answers ``POST P/add-checkpoint``
            (as :func:`evstore.create_app`).

    Raises:
        InputError, StoreStateError: as :func:`evstore.create_app` (checked before the
            socket is bound: a store that cannot be opened, or a log key that cannot be
            read, fails the command at once: ``log.key-file``, ``checkpoint.key``).
        StoreStateError: ``http.listen`` (the address is in use or not allowed).
    """
    limits = limits or Limits()
    factory = AppFactory(
        dict(stores),
        public_read,
        limits,
        log_key,
        checkpoint_every,
        witness_key,
        s3_credentials(),
    )
    first = factory()  # every store opens now, or the command fails with its typed error
    try:
        sock = listen(host, port)
    except BaseException:
        _close(first)
        raise
    config = uvicorn.Config(
        factory if workers > 1 else first,
        host=host,
        port=sock.getsockname()[1],
        workers=workers,
        factory=workers > 1,
        access_log=access_log,
        timeout_graceful_shutdown=int(graceful_s),
        **_healthcheck_option(),
        lifespan="on",
        server_header=False,
        http=GuardedH11Protocol,
        h11_max_incomplete_event_size=limits.header_bytes,
        timeout_keep_alive=min(5, max(1, int(limits.header_timeout))),
    )
    server = uvicorn.Server(config)
    if announce is not None:
        announce(f"http://{host}:{sock.getsockname()[1]}")
    # uvicorn re-raises the signal that stopped it once it has shut down; a no-op handler
    # makes that a normal return (exit 0) instead of a kill or a KeyboardInterrupt.
    old = {s: signal.signal(s, lambda *_: None) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        if workers > 1:
            _close(first)
            Multiprocess(config, sockets=[sock]).run()
        else:
            server.run(sockets=[sock])
    finally:
        sock.close()
        for sig, handler in old.items():
            signal.signal(sig, handler)


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (0: any free port), listening.

    Raises:
        StoreStateError: ``http.listen`` (the port is in use, the address is not this
            machine's, or binding is not allowed), naming the address.
    """
    sock: socket.socket | None = None
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
        sock.set_inheritable(True)
    except OSError as exc:
        if sock is not None:
            sock.close()
        raise error(
            "http.listen",
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            host=host,
            port=port,
        ) from None
    return sock


def _close(app: Any) -> None:
    """Close the stores of an app built only to check that they open."""
    import asyncio

    async def shutdown() -> None:
        inner = app.app
        async with inner.router.lifespan_context(inner):
            pass

    asyncio.run(shutdown())


def _healthcheck_option() -> dict[str, Any]:
    """``timeout_worker_healthcheck`` for uvicorn versions that have it (older ones had no
    such check to outwait).
    """  # noqa: D205
    if "timeout_worker_healthcheck" in inspect.signature(uvicorn.Config).parameters:
        return {"timeout_worker_healthcheck": WORKER_HEALTHCHECK_S}
    return {}
