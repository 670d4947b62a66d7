"""What a store administers beside its data: its settings and its bearer tokens.

:class:`~evstore.Store` delegates ``config``/``set_config`` here and answers ``store.tokens``
with a :class:`TokenOps`, the local counterpart of the remote store's tokens
(store/client/admin.py); both satisfy ``TokensProtocol`` (store/protocol.py).

Tokens (issue 11): a token is ``evst_<id>_<secret>``, ``id`` 12 hex characters (shown by
``token ls``, used by ``token revoke``), ``secret`` 43 base64url characters from
:func:`secrets.token_urlsafe` (256 bits). Only the SHA-256 hex of the whole token text is
stored (table ``tokens``, revision 0005); the token itself is returned once, by
:meth:`TokenOps.create`, and never again. Scopes are ordered ``read < ingest < admin``.
Checking a token on a request and the pages' sessions are store/access/tokens.py.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from ..core.errors import error
from ..core.settings import check_setting_value, parse_setting_value
from ..core.times import utc_text
from ..db.settings import load_settings, write_setting
from ..db.tables import tokens
from ..db.transactions import Transactions
from ..log.witness import check_witness_setting
from ..objects.leases import LEASE_SETTING, cap_leases
from ..objects.markers import claim_backend

__all__ = ["SCOPES", "TokenOps", "read_config", "token_sha256", "write_config"]

#: The scopes, lowest first: each grants the ones before it.
SCOPES = ("read", "ingest", "admin")
_ID = re.compile(r"[0-9a-f]{12}")


def token_sha256(token: str) -> str:
    """The stored form of a token's text: the SHA-256 hex of its UTF-8 bytes."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def read_config(db: Transactions, name: str | None) -> dict[str, Any]:
    """Every setting, or ``{name: value}`` (``Store.config``).

    Raises:
        InputError: ``config.unknown``. CorruptionError: ``corruption.setting``.
    """
    with db.read() as conn:
        values = load_settings(conn)
    if name is None:
        return values
    if name not in values:
        parse_setting_value(name, "")  # config.unknown
    return {name: values[name]}


def write_config(db: Transactions, name: str, value: Any) -> Any:
    """Set a setting; the stored value (``Store.set_config`` gives the rules).

    Raises:
        InputError: ``config.unknown`` / ``config.value``; ``blobs.spec``.
        StoreStateError: ``blobs.unreachable``; ``blobs.shared`` (another store's marker).
    """
    if isinstance(value, str):
        parsed = parse_setting_value(name, value)
    else:
        parsed = check_setting_value(name, value)
    if name == "blobs.backend":
        parsed = claim_backend(db, parsed)  # answers, and is this store's
    check_witness_setting(name, parsed)

    def work(conn: Any) -> None:
        write_setting(conn, name, parsed)
        if name == LEASE_SETTING:
            cap_leases(conn, parsed)

    db.run_transaction(work)
    return parsed


class TokenOps:
    """``store.tokens`` of a local store: make, list and revoke the server's bearer tokens."""

    def __init__(self, db: Transactions) -> None:
        self._db = db

    def create(self, scope: str, name: str = "") -> dict[str, Any]:
        """Make a token of ``scope``; the only time its text is returned.

        Args:
            scope: ``read``, ``ingest`` or ``admin``.
            name: a label for people (``token ls`` shows it); not secret, not unique.

        Returns:
            ``{"id", "token", "scope", "name", "created_at"}`` (``token``: the bearer secret).

        Raises:
            InputError: ``token.scope`` (no such scope), ``input.invalid`` (a label with
                U+0000 or over 200 characters); StoreStateError as any write.
        """
        if scope not in SCOPES:
            raise error(
                "token.scope",
                f"no token scope {scope!r}; use one of {', '.join(SCOPES)}",
                scope=scope,
            )
        if "\x00" in name or len(name) > 200:
            raise error("input.invalid", "a token name has at most 200 characters and no U+0000")
        token_id = secrets.token_hex(6)
        text = f"evst_{token_id}_{secrets.token_urlsafe(32)}"
        now = datetime.now(UTC)
        row = {
            "id": token_id,
            "secret_sha256": token_sha256(text),
            "scope": scope,
            "name": name,
            "created_at": now,
            "revoked_at": None,
        }
        self._db.run_transaction(lambda conn: conn.execute(tokens.insert().values(**row)))
        return {
            "id": token_id,
            "token": text,
            "scope": scope,
            "name": name,
            "created_at": utc_text(now),
        }

    def list(self) -> list[dict[str, Any]]:
        """Every token, oldest first, without secrets.

        Returns:
            ``[{"id", "scope", "name", "created_at", "revoked_at"}]`` (``revoked_at`` None
            while the token is live).
        """
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(
                    tokens.c.id,
                    tokens.c.scope,
                    tokens.c.name,
                    tokens.c.created_at,
                    tokens.c.revoked_at,
                ).order_by(tokens.c.created_at, tokens.c.id)
            ).all()
        return [
            {
                "id": r.id,
                "scope": r.scope,
                "name": r.name,
                "created_at": utc_text(r.created_at),
                "revoked_at": None if r.revoked_at is None else utc_text(r.revoked_at),
            }
            for r in rows
        ]

    def revoke(self, token_id: str) -> dict[str, Any]:
        """Revoke the token ``token_id``: it authenticates nothing from the next request on.

        Revoking a revoked token again changes nothing and answers the same.

        Returns:
            ``{"id", "revoked": True, "revoked_at"}``.

        Raises:
            NotFound: ``not-found.token`` (no token with that id in this store).
        """
        if not _ID.fullmatch(token_id):
            raise error("not-found.token", f"no token with id {token_id!r}", id=token_id)

        def work(conn: sa.Connection) -> Any:
            row = conn.execute(
                sa.select(tokens.c.revoked_at).where(tokens.c.id == token_id)
            ).one_or_none()
            if row is None:
                raise error("not-found.token", f"no token with id {token_id!r}", id=token_id)
            if row.revoked_at is not None:
                return row.revoked_at
            now = datetime.now(UTC)
            conn.execute(tokens.update().where(tokens.c.id == token_id).values(revoked_at=now))
            return now

        when = self._db.run_transaction(work)
        return {"id": token_id, "revoked": True, "revoked_at": utc_text(when)}
