"""Bearer tokens of the HTTP server: made, listed and revoked per store (issue 11).

A token is ``evst_<id>_<secret>``: ``id`` is 12 hex characters (shown by ``token ls``, used by
``token revoke``), ``secret`` 43 base64url characters from :func:`secrets.token_urlsafe`
(256 bits). Only the SHA-256 hex of the whole token text is stored (table ``tokens``,
revision 0005); the token itself is returned once, by :func:`create_token`, and never again.
A high-entropy secret needs no slow password hash: SHA-256 preimages are out of reach.

Scopes are ordered ``read < ingest < admin``: a token grants its scope and every lower one.
Each store's tokens live in its own database: a token of one store is unknown to another.

A browser signed in to the audit pages holds a session value, never the token (issue 23):
``s1.<id>.<expires>.<mac>``, where ``mac`` is HMAC-SHA256 (RFC 2104), keyed with the token's
stored SHA-256, of the token id, the expiry (Unix seconds) and an audience (the pages' path).
Nothing more is stored: :func:`session_scope` recomputes the MAC from the token's row, so a
revoked token's sessions die with it, an expired or re-targeted value is refused, and a
stolen cookie grants neither the token nor any API call (the API takes bearer tokens only).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import time
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from ..db.rawread import FALLBACK, point_row
from ..db.tables import tokens
from ..facade.admin import SCOPES, token_sha256

if TYPE_CHECKING:
    from ..facade.api import Store

__all__ = [
    "SCOPES",
    "SCOPE_SQL",
    "SESSION_SECONDS",
    "create_session",
    "create_token",
    "list_tokens",
    "live_scope",
    "revoke_token",
    "scope_allows",
    "session_scope",
    "token_hash",
    "token_scope",
]

_TOKEN = re.compile(r"evst_([0-9a-f]{12})_[A-Za-z0-9_-]{43}")
#: The statement a token's scope is read by (its one parameter: the token's SHA-256 hex).
SCOPE_SQL = "SELECT scope, revoked_at FROM tokens WHERE secret_sha256 = ?"
_SESSION = re.compile(r"s1\.([0-9a-f]{12})\.([0-9]{1,12})\.([A-Za-z0-9_-]{43})")
#: How long a pages session lasts (seconds) unless its token is revoked first.
SESSION_SECONDS = 12 * 3600


def scope_allows(have: str, need: str) -> bool:
    """True when a token of scope ``have`` may do what scope ``need`` allows.

    Raises:
        ValueError: either name is not one of :data:`SCOPES` (a programming error).
    """
    return SCOPES.index(have) >= SCOPES.index(need)


def create_token(store: Store, scope: str, name: str = "") -> dict[str, Any]:
    """Make a token of ``scope`` on ``store``; the only time its text is returned.

    ``store.tokens.create`` of either store (StoreProtocol): a local store writes its table
    (store/facade/admin.py), a remote one (``evstore.open("http://...")``) asks its server
    (admin scope).

    Returns:
        ``{"id", "token", "scope", "name", "created_at"}`` (``token`` is the bearer secret).

    Raises:
        InputError: ``token.scope`` (no such scope), ``input.invalid`` (a label with U+0000
            or over 200 characters); StoreStateError as any write.
    """
    return store.tokens.create(scope, name)


def list_tokens(store: Store) -> list[dict[str, Any]]:
    """Every token of ``store``, oldest first, without secrets (``store.tokens.list``).

    Returns:
        ``[{"id", "scope", "name", "created_at", "revoked_at"}]`` (``revoked_at`` None while
        the token is live). A remote store asks its server (admin scope).
    """
    return store.tokens.list()


def revoke_token(store: Store, token_id: str) -> dict[str, Any]:
    """Revoke the token ``token_id`` (``store.tokens.revoke``); revoking again answers the same.

    Returns:
        ``{"id", "revoked": True, "revoked_at"}``.

    Raises:
        NotFound: ``not-found.token`` (no token with that id in this store). A remote store
        asks its server (admin scope).
    """
    return store.tokens.revoke(token_id)


def token_hash(token: str) -> str | None:
    """The SHA-256 hex a token's row is found by (``tokens.secret_sha256``); None when
    ``token`` is not of the token form (``evst_<id>_<secret>``), so no row can match.
    """  # noqa: D205
    return token_sha256(token) if _TOKEN.fullmatch(token) else None


def token_scope(store: Store, token: str) -> str | None:
    """The scope of a live token of ``store``, or None (unknown, malformed or revoked).

    One indexed lookup by the token's SHA-256 (one statement, no transaction: it runs on
    every request); the token text is never compared directly.
    """
    digest = token_hash(token)
    if digest is None:
        return None
    tx = store.transactions
    row = point_row(tx, SCOPE_SQL, (digest,))
    if row is FALLBACK:  # the general path, inside the error boundary
        with tx.read() as conn:
            found = conn.execute(
                sa.select(tokens.c.scope, tokens.c.revoked_at).where(
                    tokens.c.secret_sha256 == digest
                )
            ).one_or_none()
        row = None if found is None else tuple(found)
    return live_scope(row)


def live_scope(row: Any) -> str | None:
    """The scope of a token row ``(scope, revoked_at)`` when live, else None (no row)."""
    if row is None or row[1] is not None or row[0] not in SCOPES:
        return None
    return str(row[0])


def _session_mac(secret_sha256: str, token_id: str, expires: int, audience: str) -> str:
    message = f"evstore-session/1\n{token_id}\n{expires}\n{audience}".encode()
    key = secret_sha256.encode("ascii")
    mac = hmac.new(key, message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode("ascii")


def create_session(
    store: Store,
    token: str,
    audience: str,
    *,
    seconds: int = SESSION_SECONDS,
    now: float | None = None,
) -> str | None:
    """A session value standing for a live ``token`` of ``store`` (the pages' sign-in cookie).

    Args:
        store: an open store.
        token: a bearer token of the store.
        audience: what the session may open (the pages use their path, ``P/ui``): a value
            made for one audience is refused for another.
        seconds: lifetime; :data:`SESSION_SECONDS` by default.
        now: the Unix time to count from (tests); the clock by default.

    Returns:
        ``s1.<token id>.<expires>.<HMAC-SHA256 base64url>`` (module docstring), or None
        when ``token`` is not a live token of ``store``.
    """
    if token_scope(store, token) is None:
        return None
    token_id = token[5:17]
    expires = int(time.time() if now is None else now) + max(1, int(seconds))
    mac = _session_mac(token_sha256(token), token_id, expires, audience)
    return f"s1.{token_id}.{expires}.{mac}"


def session_scope(
    store: Store, value: str, audience: str, *, now: float | None = None
) -> str | None:
    """The scope of the token behind a live session value, or None.

    None when ``value`` is malformed, expired, made for another audience, forged, or its
    token is unknown or revoked: the MAC is recomputed from the token's stored row and
    compared in constant time (:func:`hmac.compare_digest`).
    """
    m = _SESSION.fullmatch(value or "")
    if m is None:
        return None
    token_id, expires, mac = m.group(1), int(m.group(2)), m.group(3)
    if expires <= (time.time() if now is None else now):
        return None
    with store.transactions.read() as conn:
        row = conn.execute(
            sa.select(tokens.c.secret_sha256, tokens.c.scope, tokens.c.revoked_at).where(
                tokens.c.id == token_id
            )
        ).one_or_none()
    if row is None or row.revoked_at is not None or row.scope not in SCOPES:
        return None
    if not hmac.compare_digest(mac, _session_mac(row.secret_sha256, token_id, expires, audience)):
        return None
    return str(row.scope)
