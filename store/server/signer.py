"""Checkpoints signed on a schedule by the server (issue 13, docs/log.md#checkpoints).

``evstore serve --log-key PATH`` signs a checkpoint of every served store's log every
``--checkpoint-every`` seconds (default 60), from a task of the server's event loop: the
signing itself (:meth:`evstore.log.ops.LogOps.checkpoint`) runs in a worker thread, checks that
the new tree is consistent with the previous checkpoint before it signs, and signs nothing
when the log has not grown. A store whose log has no verifier key, or another one, is logged
once per reason and skipped; the other stores are still signed. The private key stays a
file: its path is all the server holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

from starlette.concurrency import run_in_threadpool

from .. import EvstoreError

__all__ = ["DEFAULT_EVERY_S", "signing"]

#: Seconds between two signing rounds when ``--checkpoint-every`` is not given.
DEFAULT_EVERY_S = 60.0

log = logging.getLogger("server")


async def _rounds(stores: Sequence[tuple[str | None, Any]], key_path: str, every_s: float) -> None:
    said: set[tuple[str | None, str]] = set()
    while True:
        for name, store in stores:
            try:
                done = await run_in_threadpool(store.log.checkpoint, key_path)
            except EvstoreError as err:
                if (name, err.code) not in said:  # once per store and reason, not every round
                    said.add((name, err.code))
                    log.warning("checkpoint of /%s not signed: %s", name or "", err)
                continue
            if done.get("new"):
                log.info("signed checkpoint of /%s at size %s", name or "", done.get("size"))
        await asyncio.sleep(every_s)


@contextlib.asynccontextmanager
async def signing(
    stores: Sequence[tuple[str | None, Any]], key_path: str | None, every_s: float
) -> AsyncIterator[None]:
    """Run the signing rounds while the app is up (nothing when ``key_path`` is None).

    Args:
        stores: ``(name, Store)`` of every served store (name None for an unnamed one).
        key_path: the Ed25519 private key file (``evstore log init-key``), or None.
        every_s: seconds between rounds (> 0).
    """
    if key_path is None:
        yield
        return
    task = asyncio.create_task(_rounds(stores, key_path, every_s))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
