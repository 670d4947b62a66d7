"""The audit pages as a FastAPI router: routes, sign-in, security headers, error pages.

``create_router(store, authorize=..., public_read=...)`` returns an :class:`APIRouter` whose
paths start with ``/ui``; the server mounts it under each store's prefix P (``P/ui/...``).
Every route but the sign-in form's POST and the sign-out is a GET that reads; none writes.

Authentication uses the server's tokens: ``Authorization: Bearer <token>``, or the cookie the
sign-in form sets (HttpOnly, SameSite=Strict, Path=P/ui, Secure over HTTPS, Max-Age the
session's life). The cookie never holds the token: it holds a session value derived from it
(``sessions``: the server's are :func:`evstore.create_session` values, an HMAC keyed with the
token's stored hash, bound to P/ui, expiring, and dead once the token is revoked). The sign-in and
sign-out POSTs are refused unless the request comes from this origin (``Origin`` equal to the
host, or ``Sec-Fetch-Site: same-origin``/``none``): a cross-site form can neither sign a
browser in with another token nor out. ``next`` is only ever a path under the pages.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import importlib.resources
import secrets
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, quote, unquote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from jinja2 import Environment, FunctionLoader, StrictUndefined, select_autoescape

from .. import CorruptionError, EvstoreError, error, http_status
from . import contract_views as cv
from . import keeping, views
from .render import ev_text, is_ref, query

__all__ = ["COOKIE", "CSP", "create_router"]

#: The sign-in cookie's name.
COOKIE = "evstore_ui"
#: Content-Security-Policy of every page: no inline script or style, nothing from elsewhere.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
}
#: Seconds a sign-in lasts when the router mints its own sessions (no ``sessions`` given).
SESSION_SECONDS = 12 * 3600
#: ``(mint, check)``: ``mint(request, token, audience)`` -> a session value or None (not a
#: live token); ``check(request, value, audience)`` -> whether the value still signs in.
Sessions = tuple[Callable[[Request, str, str], str | None], Callable[[Request, str, str], bool]]
_STATIC = {"pages.css": "text/css; charset=utf-8", "pages.js": "text/javascript; charset=utf-8"}


def _template_source(name: str) -> str:
    return (importlib.resources.files("evstore.pages") / "templates" / name).read_text("utf-8")


def _environment() -> Environment:
    env = Environment(
        loader=FunctionLoader(_template_source),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["ev"] = ev_text
    env.filters["q"] = lambda v: quote(str(v), safe="")
    env.globals["is_ref"] = is_ref
    env.globals["query"] = query
    return env


class _Pages:
    """The state behind one router: the store, the token check, the templates."""

    def __init__(
        self,
        store: Callable[[Request], Any],
        authorize: Callable[[Request, str], bool] | None,
        public_read: Callable[[Request], bool],
        extras: Callable[[Any], dict[str, Any]] | None,
        sessions: Sessions | None = None,
    ) -> None:
        self.store_of = store
        self.authorize = authorize
        self.public_read = public_read
        self.extras = extras
        self.sessions = sessions or self._own_sessions()
        self.env = _environment()
        #: endpoint -> the paths this router gave it (see :meth:`base`)
        self.paths: dict[Any, list[str]] = {}

    def base(self, request: Request) -> str:
        """The pages' URL prefix (``P/ui``) as seen by this request.

        The request path is the prefix the router was included under (``/NAME``) followed by
        one of this router's own paths; taking off as many segments as that own path has
        leaves the prefix, whatever the store's name and however FastAPI keeps route paths.
        """
        root = request.scope.get("root_path", "").rstrip("/")
        path = request.scope.get("path", "")
        parts = path.split("/")
        endpoint = request.scope.get("endpoint")
        for own in self.paths.get(endpoint, ()):
            keep = len(parts) - own.count("/")
            prefix = "/".join(parts[:keep]) if keep > 0 else ""
            if keep > 0 and path[len(prefix) :].startswith("/ui"):
                return (prefix if prefix.startswith(root) else root + prefix) + "/ui"
        return root + "/ui"

    def _own_sessions(self) -> Sessions:
        """Sessions signed with a key made for this router (a router built without the
        server's token sessions): an HMAC of the expiry and the audience, never the token.
        """  # noqa: D205
        key = secrets.token_bytes(32)

        def mac(expires: int, audience: str) -> str:
            digest = hmac.new(key, f"{expires}\n{audience}".encode(), hashlib.sha256).digest()
            return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")

        def mint(request: Request, token: str, audience: str) -> str | None:
            if not self.valid(request, token):
                return None
            expires = int(time.time()) + SESSION_SECONDS
            return f"r1.{expires}.{mac(expires, audience)}"

        def check(_request: Request, value: str, audience: str) -> bool:
            kind, _, rest = value.partition(".")
            when, _, got = rest.partition(".")
            if kind != "r1" or not when.isascii() or not when.isdigit() or len(when) > 12:
                return False
            if int(when) <= time.time():
                return False
            return hmac.compare_digest(got, mac(int(when), audience))

        return mint, check

    def token(self, request: Request) -> str | None:
        """The bearer token of the ``Authorization`` header, if any."""
        header = request.headers.get("authorization", "")
        if header[:7].lower() == "bearer ":
            return header[7:].strip()
        return None

    def valid(self, request: Request, token: str) -> bool:
        """Whether ``token`` may read this request's store."""
        return bool(token) and self.authorize is not None and self.authorize(request, token)

    def session_ok(self, request: Request) -> bool:
        """Whether the request's sign-in cookie holds a live session for these pages."""
        value = request.cookies.get(COOKIE)
        if not value or len(value) > 200:
            return False
        return bool(self.sessions[1](request, value, self.base(request)))

    def allowed(self, request: Request) -> bool:
        if self.public_read(request):
            return True
        token = self.token(request)
        if token is not None:
            return self.valid(request, token)
        return self.session_ok(request)

    def render(
        self, request: Request, template: str, status: int = 200, **ctx: Any
    ) -> HTMLResponse:
        base = self.base(request)
        html = self.env.get_template(template).render(
            base=base,
            signed_in=(self.token(request) is not None or COOKIE in request.cookies)
            and not self.public_read(request),
            path=request.url.path,
            **ctx,
        )
        headers = dict(_HEADERS)
        if status == 401:
            headers["WWW-Authenticate"] = 'Bearer realm="evstore"'
        return HTMLResponse(html, status_code=status, headers=headers)

    def fail(self, request: Request, err: EvstoreError) -> HTMLResponse:
        # The status the API gives the same error (one table: evstore.http_status).
        return self.render(request, "error.html", http_status(err), err=err.to_dict())


def _same_origin(request: Request) -> bool:
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site in ("same-origin", "none")
    origin = request.headers.get("origin")
    if origin is None:
        return True  # a non-browser client: no ambient credentials to abuse
    host = request.headers.get("host", "")
    return origin in (f"http://{host}", f"https://{host}")


def create_router(
    store: Any,
    *,
    authorize: Callable[[Request, str], bool] | None = None,
    public_read: bool | Callable[[Request], bool] = False,
    extras: Callable[[Any], dict[str, Any]] | None = None,
    sessions: Sessions | None = None,
) -> APIRouter:
    """The read-only audit pages of a store, as a router with paths under ``/ui``.

    Args:
        store: an open :class:`evstore.Store`, or ``store(request)`` returning the store
            that serves the request (the server's app state).
        authorize: ``authorize(request, token) -> bool``: whether a bearer token may read
            the request's store (the server's token check, read scope). None: no token is
            ever accepted.
        public_read: serve the pages without a token (``evstore serve --public-read``), or
            ``public_read(request)`` deciding per request.
        extras: ``extras(store) -> dict`` overriding what the home page shows beside the
            counts (``roots``, ``audit``, ``log``; by default read from ``store.retention``
            and ``store.log`` where this evstore has them, evstore.pages.keeping).
        sessions: ``(mint, check)`` of the sign-in cookie's session values (:data:`Sessions`;
            the server passes :func:`evstore.create_session` and
            :func:`evstore.session_scope`). None: sessions signed with a key made for this
            router, expiring after :data:`SESSION_SECONDS` (not tied to a token's revocation).

    Returns:
        The router; include it under the store's prefix P to serve ``P/ui/...``.
    """
    get_store = store if callable(store) else (lambda _request: store)
    is_public = public_read if callable(public_read) else (lambda _request: public_read)
    pages = _Pages(get_store, authorize, is_public, extras, sessions)
    router = APIRouter(include_in_schema=False)
    _static_routes(router)
    _auth_routes(router, pages)
    _page_routes(router, pages)
    _contract_routes(router, pages)
    _keeping_routes(router, pages)
    for route in router.routes:
        pages.paths.setdefault(getattr(route, "endpoint", None), []).append(route.path)  # type: ignore[attr-defined]
    return router


def _static_routes(router: APIRouter) -> None:
    @router.get("/ui/static/{name}")
    def static(name: str) -> Response:
        if name not in _STATIC:
            return Response("not found", status_code=404, media_type="text/plain")
        data = (importlib.resources.files("evstore.pages") / "static" / name).read_bytes()
        headers = {**_HEADERS, "Cache-Control": "public, max-age=3600"}
        return Response(data, media_type=_STATIC[name], headers=headers)


def _auth_routes(router: APIRouter, pages: _Pages) -> None:
    @router.get("/ui/signin")
    def signin_form(request: Request, next: str = "") -> HTMLResponse:
        return pages.render(
            request, "signin.html", next=_safe_next(pages, request, next), message=""
        )

    @router.post("/ui/signin")
    async def signin(request: Request) -> Response:
        if not _same_origin(request):
            return pages.render(request, "signin.html", 403, next="", message="cross-site")
        # The body is already bounded: Limits.form_bytes (4 KiB by default) is refused before.
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        token = form.get("token", [""])[0].strip()
        target = _safe_next(pages, request, form.get("next", [""])[0])
        session = pages.sessions[0](request, token, pages.base(request)) if token else None
        if session is None:
            return pages.render(request, "signin.html", 401, next=target, message="bad-token")
        response = RedirectResponse(target, status_code=303, headers=_HEADERS)
        response.set_cookie(
            COOKIE,
            session,
            max_age=SESSION_SECONDS,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path=pages.base(request),
        )
        return response

    @router.post("/ui/signout")
    def signout(request: Request) -> Response:
        if not _same_origin(request):
            return pages.render(request, "signin.html", 403, next="", message="cross-site")
        response = RedirectResponse(pages.base(request) + "/signin", 303, headers=_HEADERS)
        response.delete_cookie(COOKIE, path=pages.base(request), httponly=True, samesite="strict")
        return response


def _safe_next(pages: _Pages, request: Request, target: str) -> str:
    """``target`` when it is a path under the pages that a browser resolves to itself
    (no dot segment, encoded or not, no ``//`` or backslash), else the pages' start."""  # noqa: D205, D209
    base = pages.base(request)
    decoded = unquote(target)
    segments = decoded.split("?", 1)[0].split("/")
    if (
        target.startswith(base + "/")
        and "//" not in decoded
        and "\\" not in decoded
        and not any(s in (".", "..") for s in segments)
    ):
        return target
    return base + "/"


def _guard(
    pages: _Pages,
    request: Request,
    work: Callable[[], Response],
    page: tuple[str, str] | None = None,
) -> Response:
    """Run a page's ``work`` once the request may read; its errors become error pages.

    ``page`` is ``(label, ref)`` of an object's own page: when the object (or what the page
    must read to draw it) does not verify, the page still answers, with the object's
    recorded facts and the damage named (``damaged.html``, 200), never a bare error.
    """
    if not pages.allowed(request):
        nxt = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return pages.render(
            request, "signin.html", 401, next=_safe_next(pages, request, nxt), message=""
        )
    try:
        return work()
    except CorruptionError as err:
        if page is None:
            return pages.fail(request, err)
        try:
            info = views.summary(pages.store_of(request), page[1])
        except EvstoreError:
            return pages.fail(request, err)
        damage = err.to_dict()
        return pages.render(request, "damaged.html", label=page[0], damage=damage, **info)
    except views.DocumentTooLarge as big:
        info = views.summary(pages.store_of(request), big.address)
        label = page[0] if page is not None else "Artifact"
        return pages.render(request, "toolarge.html", label=label, doc_max=views.DOC_MAX, **info)
    except EvstoreError as err:
        return pages.fail(request, err)


def _page_routes(router: APIRouter, pages: _Pages) -> None:
    @router.get("/ui/")
    @router.get("/ui")
    def home(request: Request) -> Response:
        def work() -> Response:
            store = pages.store_of(request)
            extras = keeping.home_extras(store)
            if pages.extras:
                extras.update(pages.extras(store))
            return pages.render(request, "home.html", **views.home_view(store, extras))

        return _guard(pages, request, work)

    @router.get("/ui/search")
    def search(request: Request, q: str = "") -> Response:
        def work() -> Response:
            hits = views.search_hits(pages.store_of(request), pages.base(request), q[:4096])
            if len(hits) == 1 or (hits and hits[0]["what"] == "run by run"):
                return RedirectResponse(hits[0]["url"], 303, headers=_HEADERS)
            return pages.render(request, "search.html", 404 if not hits else 200, q=q, hits=hits)

        return _guard(pages, request, work)

    @router.get("/ui/kind/{kind}")
    def kind(request: Request, kind: str, after: str | None = None) -> Response:
        def work() -> Response:
            ctx = views.kind_view(pages.store_of(request), pages.base(request), kind, after)
            return pages.render(request, "kind.html", **ctx)

        return _guard(pages, request, work)

    @router.get("/ui/object/{ref}")
    def obj(request: Request, ref: str) -> Response:
        def work() -> Response:
            info = views.summary(pages.store_of(request), ref)
            url = views.page_for(pages.base(request), info["address"], info["kinds"])
            return RedirectResponse(url, 303, headers=_HEADERS)

        return _guard(pages, request, work)

    @router.get("/ui/raw/{ref}")
    def raw(request: Request, ref: str) -> Response:
        def work() -> Response:
            store = pages.store_of(request)
            size = int(store.stat(ref)["size"])
            # Verified whole before the first byte (a damaged blob is its error page, no
            # bytes), then streamed in 1 MiB chunks: memory stays one chunk at any size.
            chunks = views.stream_verified(store, ref)
            headers = {
                **_HEADERS,
                "Content-Security-Policy": "sandbox; default-src 'none'",
                "Content-Disposition": "attachment",
                "Content-Length": str(size),
            }
            return StreamingResponse(chunks, media_type="application/octet-stream", headers=headers)

        return _guard(pages, request, work)

    @router.get("/ui/artifact/{ref}")
    def artifact(request: Request, ref: str) -> Response:
        def work() -> Response:
            store = pages.store_of(request)
            ctx = views.artifact_view(store, pages.base(request), ref)
            ctx["keeps_retention"] = keeping.keeps(store, "retention")
            return pages.render(request, "artifact.html", **ctx)

        return _guard(pages, request, work, ("Artifact", ref))

    @router.get("/ui/artifact/{ref}/json")
    def json_page(request: Request, ref: str, at: str = "", offset: int = 0) -> Response:
        def work() -> Response:
            ctx = views.json_view(
                pages.store_of(request), pages.base(request), ref, at, max(0, offset)
            )
            return pages.render(request, "json.html", **ctx)

        return _guard(pages, request, work, ("JSON of artifact", ref))

    @router.get("/ui/blob/{ref}")
    def blob(request: Request, ref: str, offset: int = 0) -> Response:
        def work() -> Response:
            ctx = views.blob_view(pages.store_of(request), pages.base(request), ref, max(0, offset))
            return pages.render(request, "blob.html", **ctx)

        return _guard(pages, request, work, ("Blob", ref))


def _contract_routes(router: APIRouter, pages: _Pages) -> None:
    @router.get("/ui/fragment/{ref}")
    def fragment(request: Request, ref: str, offset: int | None = None) -> Response:
        def work() -> Response:
            at = None if offset is None else max(0, offset)
            ctx = cv.fragment_view(pages.store_of(request), pages.base(request), ref, at)
            return pages.render(request, "fragment.html", **ctx)

        return _guard(pages, request, work, ("Fragment", ref))

    @router.get("/ui/manifest/{ref}")
    def manifest(request: Request, ref: str, offset: int = 0) -> Response:
        def work() -> Response:
            ctx = cv.manifest_view(
                pages.store_of(request), pages.base(request), ref, max(0, offset)
            )
            return pages.render(request, "manifest.html", **ctx)

        return _guard(pages, request, work, ("Manifest", ref))

    @router.get("/ui/package/{ref}")
    def package(request: Request, ref: str, offset: int = 0) -> Response:
        def work() -> Response:
            ctx = cv.package_view(pages.store_of(request), pages.base(request), ref, max(0, offset))
            return pages.render(request, "package.html", **ctx)

        return _guard(pages, request, work, ("Answer evidence package", ref))

    @router.get("/ui/envelope/{ref}")
    def envelope(request: Request, ref: str) -> Response:
        def work() -> Response:
            ctx = cv.envelope_view(pages.store_of(request), pages.base(request), ref)
            return pages.render(request, "envelope.html", **ctx)

        return _guard(pages, request, work, ("Answer envelope", ref))

    @router.get("/ui/context/{ref}")
    def context(request: Request, ref: str, cite: str = "", window: int | None = None) -> Response:
        def work() -> Response:
            ranges = _ranges(cite)
            w = None if window is None else max(0, min(window, 10000))
            ctx = cv.context_view(pages.store_of(request), pages.base(request), ref, ranges, w)
            return pages.render(request, "context.html", cite=cite, **ctx)

        return _guard(pages, request, work, ("Evidence context", ref))

    @router.get("/ui/run/{ref}")
    def run(request: Request, ref: str) -> Response:
        def work() -> Response:
            ctx = cv.run_view(pages.store_of(request), pages.base(request), ref)
            return pages.render(request, "run.html", **ctx)

        return _guard(pages, request, work, ("Run record", ref))


def _ranges(text: str) -> list[tuple[int, int]]:
    """``"31:31 33:40"`` (spaces or commas) as unit-id ranges; malformed ones are refused."""
    out = []
    for part in text.replace(",", " ").split()[:1000]:
        a, sep, b = part.partition(":")
        try:
            out.append((int(a), int(b if sep else a)))
        except ValueError:
            raise error(
                "input.invalid",
                f"a cited range is START:END in unit ids, got {part[:40]!r}",
                "/cite",
            ) from None
    return out


def _keeping_routes(router: APIRouter, pages: _Pages) -> None:
    @router.get("/ui/roots")
    def roots(request: Request) -> Response:
        def work() -> Response:
            ctx = keeping.roots_view(pages.store_of(request), pages.base(request))
            return pages.render(request, "roots.html", **ctx)

        return _guard(pages, request, work)

    @router.get("/ui/roots/{name}")
    def root(request: Request, name: str, offset: int = 0) -> Response:
        def work() -> Response:
            store, base = pages.store_of(request), pages.base(request)
            ctx = keeping.root_view(store, base, name, max(0, offset))
            return pages.render(request, "root.html", **ctx)

        return _guard(pages, request, work)

    @router.get("/ui/audits")
    def audits(request: Request) -> Response:
        def work() -> Response:
            ctx = keeping.audits_view(pages.store_of(request))
            return pages.render(request, "audits.html", **ctx)

        return _guard(pages, request, work)

    @router.get("/ui/audits/{run_id}")
    def audit(request: Request, run_id: int) -> Response:
        def work() -> Response:
            store, base = pages.store_of(request), pages.base(request)
            ctx = keeping.audit_view(store, base, run_id)
            return pages.render(request, "audit.html", **ctx)

        return _guard(pages, request, work)
