"""``store.log`` of a remote store: the tamper-evident log over HTTP (docs/log.md, issue 28).

The same methods and answers as :class:`evstore.log.ops.LogOps` for ``status``, ``key``,
``latest``, ``entries``, ``prove``, ``prove_consistency`` and ``checkpoint``, from the
server's log routes (docs/http.md#the-tamper-evident-log). A proof file is the server's text
unchanged, so it is byte-identical to the one ``evstore prove`` writes beside the database;
before it is returned the client checks that the inclusion proof leads from the entry to the
root of the checkpoint it carries, signed by the log's verifier key
(:func:`evstore.verify_log_proof`; ``remote.protocol`` otherwise). ``checkpoint`` asks the
server to sign with its own ``--log-key`` (admin scope); ``init_key`` makes a private key
file and stays local (``remote.unsupported``).
"""

from __future__ import annotations

import json
import os
from typing import Any

from .. import verify_log_proof
from ..core.errors import EvstoreError, error
from .http import unsupported

__all__ = ["RemoteLog"]


class RemoteLog:
    """The log of a :class:`~evstore.client.remote.RemoteStore` (``store.log``)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    @property
    def _http(self) -> Any:
        return self.store.http

    def status(self) -> dict[str, Any]:
        """``GET /v1/log``: ``{"size", "root", "vkey", "checkpoint"}`` as :meth:`LogOps.status`."""
        out = self._http.json("GET", "v1/log")
        if not isinstance(out, dict) or not {"size", "root", "vkey", "checkpoint"} <= set(out):
            raise self._http.protocol("GET v1/log: the answer is not the log's status")
        return out

    def key(self) -> str:
        """The log's verifier key (from the status); ``log.no-key`` when it has none."""
        vkey = self.status()["vkey"]
        if not vkey:
            raise error("log.no-key", "the log has no key yet: run `evstore log init-key`")
        return str(vkey)

    def latest(self) -> dict[str, Any] | None:
        """The latest signed checkpoint (as in :meth:`status`), or None."""
        latest: dict[str, Any] | None = self.status()["checkpoint"]
        return latest

    def entries(self, start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
        """``GET /v1/log/entries?start=&end=``: entries ``start .. end - 1`` (``log.range``
        for ``start > end``, checked here before a request, as locally).
        """  # noqa: D205
        if start < 0 or (end is not None and not start <= end):
            raise error("log.range", f"no entries {start}..{end}", start=start, end=end)
        params: dict[str, Any] = {"start": str(start)}
        if end is not None:
            params["end"] = str(end)
        out = self._http.json("GET", "v1/log/entries", params=params)
        rows = out.get("entries") if isinstance(out, dict) else None
        if not isinstance(rows, list):
            raise self._http.protocol("GET v1/log/entries: the answer holds no entries list")
        return rows

    def prove(self, ref: str | None = None, *, index: int | None = None) -> dict[str, Any]:
        """``GET /v1/log/proof/inclusion``: the dict of :meth:`LogOps.prove` (``text`` is the
        server's tlog-proof file, unchanged), checked to lead to its checkpoint's root.

        Raises:
            The server's ``log.*`` and ``ref.syntax`` errors; ``input.invalid`` (neither
            given); ``remote.protocol`` for a proof that does not hold.
        """  # noqa: D205
        if ref is None and index is None:
            raise error("input.invalid", "prove takes a content ref or an entry index")
        params: dict[str, Any] = {}
        if ref is not None:
            params["ref"] = ref
        if index is not None:
            params["index"] = str(index)
        resp = self._http.request("GET", "v1/log/proof/inclusion", idempotent=True, params=params)
        text = resp.text
        vkey = self.status()["vkey"]
        try:
            checked = verify_log_proof(text, str(vkey))
        except EvstoreError as err:
            raise self._http.protocol(
                f"GET v1/log/proof/inclusion: the proof does not verify ({err.code}: {err.message})"
            ) from None
        head, _, note = text.partition("\n\n")
        return {
            "index": checked["index"],
            "size": checked["size"],
            "entry": checked["entry"],
            "proof": [line for line in head.split("\n")[1:] if " " not in line],
            "checkpoint": note,
            "text": text,
        }

    def prove_consistency(self, old_size: int, new_size: int | None = None) -> dict[str, Any]:
        """``GET /v1/log/proof/consistency``: the dict of :meth:`LogOps.prove_consistency`
        (its ``text`` the same JSON text a local store writes).
        """  # noqa: D205
        params: dict[str, Any] = {"old": str(old_size)}
        if new_size is not None:
            params["new"] = str(new_size)
        out = self._http.json("GET", "v1/log/proof/consistency", params=params)
        if not isinstance(out, dict) or "proof" not in out:
            raise self._http.protocol("GET v1/log/proof/consistency: not a consistency proof")
        out["text"] = json.dumps(out, indent=2, sort_keys=True) + "\n"
        return out

    def checkpoint(self, key_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """``POST /v1/log/checkpoint`` (admin): the server signs with its ``--log-key``.

        Args:
            key_path: must be None: the private key stays on the server's machine.

        Returns:
            ``{"size", "root", "origin", "note", "signed_at", "new"}``.

        Raises:
            InputError: ``input.invalid`` (a key path given). StoreStateError:
            ``log.server-no-key`` (a server started without ``--log-key``), the signing's
            errors (``log.inconsistent``, ``log.key-mismatch``, ...).
        """
        if key_path is not None:
            raise error(
                "input.invalid",
                "a served store is signed with the server's own key (evstore serve --log-key);"
                " a key file is not sent",
            )
        out: dict[str, Any] = self._http.json("POST", "v1/log/checkpoint", idempotent=False)
        return out

    def integrate(self, key_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """``POST /v1/log/integrate`` (admin): the server adds queued entries to the tree,
        then signs with its own ``--log-key`` when it has one.

        Args:
            key_path: must be None: the private key stays on the server's machine.

        Returns:
            ``{"integrated", "size", "pending", "checkpoint"}`` as :meth:`LogOps.integrate`.

        Raises:
            InputError: ``input.invalid`` (a key path given); the integration's errors.
        """  # noqa: D205
        if key_path is not None:
            raise error(
                "input.invalid",
                "a served store is signed with the server's own key (evstore serve --log-key);"
                " a key file is not sent",
            )
        out: dict[str, Any] = self._http.json("POST", "v1/log/integrate", idempotent=False)
        return out

    def export_tiles(self, directory: Any) -> dict[str, Any]:
        """``remote.unsupported``: the server serves the tiles itself (``P/tile/...``)."""
        raise unsupported("log tiles export")

    def init_key(self, path: Any, origin: str | None = None) -> dict[str, Any]:
        """``remote.unsupported``: the private key file is made where the signing runs."""
        raise unsupported("log init-key")

    def ask_witnesses(self, timeout_s: float = 5.0) -> dict[str, Any]:
        """``remote.unsupported``: the server asks its witnesses itself (serve --log-key)."""
        raise unsupported("log cosign")

    def witness_add_checkpoint(self, cosigner: Any, body: bytes) -> dict[str, Any]:
        """``remote.unsupported``: a witness answers at the server's ``P/add-checkpoint``."""
        raise unsupported("witness add-checkpoint")

    def witnessed(self) -> list[dict[str, Any]]:
        """``remote.unsupported``: read where the witness runs."""
        raise unsupported("witness status")
