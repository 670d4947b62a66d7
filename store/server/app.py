"""The app factory: one FastAPI app per served store, mounted under its prefix.

``create_app({None: URL})`` serves one unnamed store at the root (prefix P is empty);
``create_app({"acme": URL1, "beta": URL2})`` serves each named store under ``/NAME``. Every
store is its own database and its own app (its own OpenAPI document at
``P/openapi.json``); nothing is shared between them but the process.

Routers are pluggable: :data:`ROUTER_MODULES` names the modules of this package whose
``router`` (a ``fastapi.APIRouter``) every store's app includes. A feature adds a module and
one line there.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import math
import re
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, get_origin

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.routing import Mount

from .. import (
    CorruptionError,
    Cosigner,
    EvstoreError,
    Store,
    error,
    open_loop_reads,
    read_cosigner_key,
)
from .. import open as open_store
from .headers import SecurityHeaders
from .limits import (
    BodyTimeout,
    BodyTooLarge,
    Guard,
    Limits,
    TransferAborted,
    closing,
    timed_out,
    too_large,
)
from .problems import problem
from .signer import DEFAULT_EVERY_S, signing

__all__ = [
    "ROUTER_MODULES",
    "STORE_NAME",
    "Served",
    "create_app",
    "served",
    "version",
]

log = logging.getLogger("server")

#: The modules (under server) whose ``router`` every served store includes, in order.
#: Add a feature's routes as a module here with one line.
ROUTER_MODULES: tuple[str, ...] = (
    # first: a registry push or pull is thousands of small requests, each matched against
    # the routes in this order (no other module's path starts with /v2)
    "registry",  # the OCI distribution API under /v2 (issue 27, docs/registry.md)
    "meta",  # GET P/v1
    "objects",  # objects: GET/HEAD, stat, PUT/POST, missing
    "queries",  # artifacts, refs, closure, find, ls
    "writes",  # ingest, validate, bundles
    "tokens_routes",  # tokens managed remotely (admin)
    "retention_routes",  # roots, their history, gc (issue 12)
    "contract_routes",  # contract read commands: quote, excerpt, fragments, ... (client)
    "log_routes",  # the tamper-evident log: checkpoint, entries, proofs (docs/log.md)
    "admin_routes",  # settings, a checkpoint signed on request (issue 28)
    "archive_routes",  # archive export and import (issue 28)
    "bulk_routes",  # many objects in one transaction (issue 28)
    "check_routes",  # check run by the server, streamed (issue 28)
    "audit_routes",  # audit run by the server, streamed; recorded runs (issue 28)
    "tile_routes",  # the log as C2SP tlog-tiles: P/checkpoint, P/tile/... (issue 26)
    "witness_routes",  # the store as a C2SP tlog-witness: POST P/add-checkpoint (issue 26)
    "ui",  # HTML pages under P/ui (issue 15, evstore.pages)
)

#: A store name in ``evstore serve NAME=URL``: its URL prefix is ``/NAME``.
STORE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
_RESERVED = {"v1", "v2", "ui", "openapi.json", "docs", "redoc"}


@dataclass
class Served:
    """One served store: its name (None when unnamed), open Store and read policy."""

    name: str | None
    store: Store
    public_read: bool
    limits: Limits
    #: The private key file of ``--log-key`` (``POST P/v1/log/checkpoint`` signs with it).
    log_key: str | None = None
    #: The witness key of ``--witness-key`` (``POST P/add-checkpoint`` cosigns with it).
    witness: Cosigner | None = None

    #: Called when the app shuts down, before the store is closed (the OCI upload spool).
    closers: list[Callable[[], None]] = field(default_factory=list)
    #: The store's point reads on the event loop (``evstore.open_loop_reads``), made when
    #: the app starts and closed when it stops; None outside the app's lifespan (the
    #: routes then take their worker-thread paths).
    reads: Any = None

    @property
    def backend(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return "sqlite" if self.store.path is not None else "postgresql"


def served(request: Request) -> Served:
    """The :class:`Served` store of the app that handles ``request`` (a FastAPI dependency)."""
    value: Served = request.app.state.served
    return value


def version() -> str:
    """The installed evstore version (``"0"`` in a source tree that is not installed)."""
    try:
        return metadata.version("evidence-store")
    except metadata.PackageNotFoundError:  # pragma: no cover - a source tree not installed
        return "0"


def _check_names(stores: Mapping[str | None, str]) -> None:
    if not stores:
        raise error("input.invalid", "serve needs at least one store")
    if None in stores and len(stores) > 1:
        raise error(
            "input.invalid", "serve takes one unnamed store URL, or NAME=URL for every store"
        )
    for name in stores:
        if name is not None and (not STORE_NAME.fullmatch(name) or name in _RESERVED):
            raise error(
                "input.invalid",
                f"{name!r} is no store name (letters, digits, '_', '.', '-'; not "
                f"{', '.join(sorted(_RESERVED))})",
                name=name,
            )


def _query_params(dependant: Any) -> Iterator[Any]:
    yield from dependant.query_params
    for sub in dependant.dependencies:
        yield from _query_params(sub)


def _route_params(route: Any) -> tuple[frozenset[str] | None, tuple[str, ...]]:
    """The query parameters of ``route``: ``(names it takes, names that may not repeat)``.

    The first is None off the API (``/v1/``). Worked out once per route, at its first
    request (``app.state.query_params``, keyed by the route's id: routes live as long as
    their app); later requests only look them up.
    """
    params = list(_query_params(route.dependant))
    known = frozenset(p.alias for p in params) if route.path.startswith("/v1/") else None
    scalar = tuple(
        p.alias for p in params if get_origin(p.field_info.annotation) not in (list, tuple, set)
    )
    return known, scalar


async def single_valued(request: Request) -> None:
    """Refuse what would otherwise be read one way silently, or not at all.

    ``?limit=1&limit=2`` (FastAPI would take the last) and two ``Authorization`` headers
    (the first would count) are ``http.request`` (400), with the parameter's name; a
    parameter the route takes as a list (``range``) may repeat. On the API's routes
    (``/v1/...``) a query parameter the route does not take is refused too: a misspelt
    ``expect`` would otherwise turn a digest check off without a word. (The pages under
    ``/ui`` keep ignoring what they do not know, as web pages do.) An ``async``
    dependency: it reads headers only, so it runs on the event loop (issue 29: as a plain
    ``def`` it took a worker thread on every request).

    Raises:
        InputError: ``http.request``.
    """
    if len(request.headers.getlist("authorization")) > 1:
        raise error("http.request", "the request has more than one Authorization header")
    route = request.scope.get("route")
    if not request.query_params or getattr(route, "dependant", None) is None:
        return
    specs = request.app.state.query_params
    spec = specs.get(id(route))
    if spec is None:  # first request of this route (the id is the route's while the app lives)
        spec = specs[id(route)] = _route_params(route)
    known, scalar = spec
    for name in request.query_params:
        if known is not None and name not in known:
            listed = ", ".join(sorted(known)) or "none"
            raise error(
                "http.request",
                f"unknown query parameter {name!r} (this route takes: {listed})",
                parameter=name,
            )
    for name in scalar:
        if len(request.query_params.getlist(name)) > 1:
            raise error(
                "http.request",
                f"the query parameter {name!r} is given more than once",
                parameter=name,
            )


def _store_app(one: Served) -> FastAPI:
    """The FastAPI app of one store: its routers, its error handlers, its OpenAPI document."""
    app = FastAPI(
        dependencies=[Depends(single_valued)],
        title="evstore" if one.name is None else f"evstore: {one.name}",
        version=version(),
        summary="evstore HTTP API v1 (docs/http.md)",
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
        redirect_slashes=False,
    )
    app.state.served = one
    for name in ROUTER_MODULES:
        module = importlib.import_module(f"{__package__}.{name}")
        app.include_router(module.router)
    app.state.query_params = {}  # id(route) -> _route_params(route), filled on first use
    install_handlers(app)
    _warm_routes(app)
    return app


def _warm_routes(app: FastAPI) -> None:
    """Build the routing tables now, not in the first request.

    FastAPI builds each included router's route contexts (their dependants and parameter
    models) the first time a request is matched against it: 0.1-0.5 s of CPU, paid by the
    first client of a server (a registry push's first blob). Matching a path no route has
    builds them all.
    """
    scope = {"type": "http", "path": "/", "method": "GET", "root_path": "", "headers": []}
    for route in app.router.routes:
        route.matches(dict(scope))


def install_handlers(app: Starlette) -> None:
    """Answer every error as problem+json: evstore errors, FastAPI's own, anything else."""

    async def on_evstore(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, EvstoreError)
        if isinstance(exc, CorruptionError):
            log.error("corruption on %s %s: %s", request.method, request.url.path, exc)
        return problem(exc)

    async def on_validation(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        faults = []
        for e in exc.errors():
            loc = [str(p) for p in e.get("loc", ())]
            pointer = "/" + "/".join(loc) if loc else ""
            faults.append(error("http.request", str(e.get("msg", "invalid")), pointer))
        first = faults[0] if faults else error("http.request", "invalid request")
        return problem(first, 400, errors=faults or None)

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            err = error("http.route", f"no route {request.method} {request.url.path}")
        elif exc.status_code == 405:
            err = error("http.method", f"{request.url.path} does not take {request.method}")
            return problem(err, 405, headers=exc.headers)
        else:
            err = error("http.request", str(exc.detail))
            return problem(err, exc.status_code, headers=exc.headers)
        return problem(err)

    async def on_too_large(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, BodyTooLarge)
        return problem(too_large(exc.limit))

    async def on_timeout(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, BodyTimeout)
        return closing(problem(timed_out("body")))

    async def on_gone(request: Request, exc: Exception) -> Response:
        # the client closed the connection before its body ended: nothing was read whole,
        # so nothing was stored; an expected event, not an internal error (no traceback)
        log.info("client went away during %s %s", request.method, request.url.path)
        return closing(problem(error("http.request", "the client closed the request early"), 400))

    async def on_any(request: Request, exc: Exception) -> Response:
        if not isinstance(exc, TransferAborted):
            log.error("internal error on %s %s", request.method, request.url.path, exc_info=exc)
        err = error("http.internal", "internal server error (logged by the server)")
        return problem(err, 500)

    app.add_exception_handler(EvstoreError, on_evstore)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(HTTPException, on_http)
    app.add_exception_handler(BodyTooLarge, on_too_large)
    app.add_exception_handler(BodyTimeout, on_timeout)
    app.add_exception_handler(ClientDisconnect, on_gone)
    app.add_exception_handler(Exception, on_any)


def _witness_key(path: str) -> Cosigner:
    try:
        return read_cosigner_key(path)
    except OSError as exc:
        raise error(
            "witness.key",
            f"cannot read the witness key file {path}: {exc.strerror or exc}",
            path=path,
        ) from None


def create_app(
    stores: Mapping[str | None, str],
    *,
    public_read: bool = False,
    limits: Limits | None = None,
    log_key: str | None = None,
    checkpoint_every: float = DEFAULT_EVERY_S,
    witness_key: str | None = None,
) -> Any:
    """The ASGI app serving ``stores`` (docs/http.md).

    Args:
        stores: ``{None: URL}`` for one unnamed store at the root, or ``{NAME: URL, ...}``
            for named stores, each under ``/NAME``. Every store is opened now (it must
            exist and be at the current schema) and closed when the app shuts down.
        public_read: reads need no token (writes and admin still do).
        limits: request limits (:class:`~evstore.server.limits.Limits`; defaults when None).
        log_key: an Ed25519 private key file (``evstore log init-key``): while the app is up,
            a checkpoint of each store's log is signed every ``checkpoint_every`` seconds
            (evstore.server.signer). None: the server signs nothing.
        checkpoint_every: seconds between two signing rounds (> 0); each signing round
            also asks the ``log.witness_policy`` witnesses to cosign (docs/log.md#witnesses).
        witness_key: a witness key file (``evstore witness init-key``): each store answers
            ``POST P/add-checkpoint`` for the logs of its ``witness.logs`` setting. None:
            that route answers 404 ``witness.disabled``.

    Returns:
        An ASGI application (Starlette), wrapped in the limits guard.

    Raises:
        InputError: ``input.invalid`` (no store, a bad name, unnamed mixed with named);
            ``log.key-file``, ``checkpoint.key`` (``log_key`` cannot be read or is
            malformed: checked once the stores are open, before anything is served);
            ``witness.key`` (``witness_key`` malformed, not 0600 or cannot be read).
        StoreStateError: a store cannot be opened (``store.missing``, ...); every store
            opened before it is closed again.
    """
    _check_names(stores)
    if not (math.isfinite(checkpoint_every) and checkpoint_every > 0):
        raise error(
            "input.invalid", f"checkpoint_every {checkpoint_every!r} is not a finite number > 0 s"
        )
    limits = limits or Limits()
    opened: list[Served] = []
    cosigner = None if witness_key is None else _witness_key(witness_key)
    try:
        for name, url in stores.items():
            opened.append(Served(name, open_store(url), public_read, limits, log_key, cosigner))
        if log_key is not None:  # a key the server could never sign with fails now
            opened[0].store.log.check_key(log_key)
    except BaseException:
        for one in opened:
            one.store.close()
        raise

    named = [(one.name, one.store) for one in opened]

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        try:
            for one in opened:  # on this loop: the token and object reads await here
                one.reads = open_loop_reads(one.store, limits.read_threads)
            async with signing(named, log_key, checkpoint_every):
                yield
        finally:
            for one in opened:
                reads, one.reads = one.reads, None
                if reads is not None:
                    await reads.aclose()
            for one in opened:
                for close in one.closers:
                    close()
                one.store.close()

    root: Starlette
    if opened[0].name is None:
        root = _store_app(opened[0])
        root.router.lifespan_context = lifespan
    else:
        routes = [Mount(f"/{one.name}", app=_store_app(one)) for one in opened]
        root = Starlette(routes=routes, lifespan=lifespan)
        install_handlers(root)
    root.add_middleware(SecurityHeaders)
    if opened[0].name is None:
        return Guard(root, limits)
    from .registry_named import NamedRegistry  # /v2/STORE/NAME: docs/registry.md#named-stores

    return Guard(NamedRegistry(root, opened), limits)
