"""The log integrated and signed on a schedule by the server (issues 13, 26; docs/log.md).

``evstore serve --log-key PATH`` makes the server the log's operator for every served
store: every :data:`INTEGRATE_EVERY_S` seconds it integrates the queued entries
(:meth:`evstore.log.ops.LogOps.integrate`: dense indices in commit order, one integrator at
a time across servers), and every ``--checkpoint-every`` seconds (default 60) it signs a
checkpoint (:meth:`~evstore.log.ops.LogOps.checkpoint`, which integrates first, checks that
the new tree is consistent with the previous checkpoint, and signs nothing when the log has
not grown), and asks the witnesses of the store's ``log.witness_policy`` to cosign the
latest checkpoint (evstore.log.witness; a witness down or refusing is logged and asked again
next signing round: integration and signing go on). So an entry accepted at time t is in
the tree by about t + INTEGRATE_EVERY_S and in a signed checkpoint by about t +
checkpoint-every + INTEGRATE_EVERY_S. Both run in worker threads from one task of the
server's event loop. A store whose log has no verifier
key, or another one, is logged once per reason and still integrated; the other stores are
still signed. Without ``--log-key`` the server neither integrates nor signs: whoever holds
the key runs ``evstore log integrate`` or ``evstore log checkpoint``. The private key stays
a file: its path is all the server holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from starlette.concurrency import run_in_threadpool

from .. import EvstoreError

__all__ = ["CLOSE_WAIT_S", "DEFAULT_EVERY_S", "INTEGRATE_EVERY_S", "signing"]

#: Seconds between two signing rounds when ``--checkpoint-every`` is not given.
DEFAULT_EVERY_S = 60.0
#: Seconds between two integration rounds (never more than ``checkpoint_every``).
INTEGRATE_EVERY_S = 1.0
#: Seconds shutdown waits for the witnesses being asked to answer (or time out).
CLOSE_WAIT_S = 30.0

log = logging.getLogger("server")


def _say_once(said: set[tuple[str | None, str]], name: str | None, what: str, err: Any) -> None:
    if (name, err.code) not in said:  # once per store and reason, not every round
        said.add((name, err.code))
        log.warning("%s of /%s: %s", what, name or "", err)


class _Witnessing:
    """Asks each store's policy witnesses, in tasks of their own (evstore.log.witness).

    A slow or dead witness (up to its timeout per round) never delays integration or
    signing; one ask per store runs at a time. A witness that is down or refuses is logged
    (a warning when its reason changes), and the next signing round asks it again.
    """

    def __init__(self, said: set[tuple[str | None, str]]) -> None:
        self.said = said
        self.failing: dict[tuple[str | None, str], str] = {}
        self.tasks: dict[str | None, asyncio.Task[None]] = {}

    def start(self, name: str | None, store: Any) -> None:
        running = self.tasks.get(name)
        if running is None or running.done():
            self.tasks[name] = asyncio.create_task(self._ask(name, store))

    async def _ask(self, name: str | None, store: Any) -> None:
        try:
            asked = await run_in_threadpool(store.log.ask_witnesses)
        except EvstoreError as err:  # a policy setting that does not parse: said once
            _say_once(self.said, name, "witnesses not asked", err)
            return
        for witness, why in sorted(asked["failed"].items()):
            same = self.failing.get((name, witness)) == why
            self.failing[(name, witness)] = why
            level = logging.DEBUG if same else logging.WARNING
            log.log(level, "witness %s did not cosign /%s: %s", witness, name or "", why)
        for witness in asked["cosigned"]:
            self.failing.pop((name, witness), None)
        if asked["cosigned"]:
            log.info("cosigned /%s at size %s by %s", name or "", asked["size"], asked["cosigned"])

    async def close(self) -> None:
        """Let the asks in flight end (bounded), then cancel what is left.

        An ask cut off while its worker thread still reads the store would leave that
        thread a connection of a store about to be closed; each HTTP request of an ask is
        bounded by its timeout, so the wait is too (:data:`CLOSE_WAIT_S`).
        """
        running = [task for task in self.tasks.values() if not task.done()]
        if running:
            await asyncio.wait(running, timeout=CLOSE_WAIT_S)
        for task in running:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def _rounds(
    stores: Sequence[tuple[str | None, Any]], key_path: str, every_s: float, integrate_s: float
) -> None:
    said: set[tuple[str | None, str]] = set()
    witnessing = _Witnessing(said)
    last_signed = -float("inf")
    try:
        while True:
            sign = time.monotonic() - last_signed >= every_s
            if sign:
                last_signed = time.monotonic()
            for name, store in stores:
                if sign:
                    try:
                        done = await run_in_threadpool(store.log.checkpoint, key_path)
                    except EvstoreError as err:
                        _say_once(said, name, "checkpoint not signed", err)
                    else:
                        if done.get("new"):
                            size = done["size"]
                            log.info("signed checkpoint of /%s at size %s", name or "", size)
                        witnessing.start(name, store)
                        continue
                try:
                    await run_in_threadpool(store.log.integrate)
                except EvstoreError as err:
                    _say_once(said, name, "log not integrated", err)
            await asyncio.sleep(min(integrate_s, every_s))
    finally:
        await witnessing.close()


@contextlib.asynccontextmanager
async def signing(
    stores: Sequence[tuple[str | None, Any]],
    key_path: str | None,
    every_s: float,
    integrate_s: float = INTEGRATE_EVERY_S,
) -> AsyncIterator[None]:
    """Run the integration and signing rounds while the app is up (none without a key).

    Args:
        stores: ``(name, Store)`` of every served store (name None for an unnamed one).
        key_path: the Ed25519 private key file (``evstore log init-key``), or None.
        every_s: seconds between signing rounds (> 0).
        integrate_s: seconds between integration rounds (> 0).
    """
    if key_path is None:
        yield
        return
    task = asyncio.create_task(_rounds(stores, key_path, every_s, integrate_s))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
