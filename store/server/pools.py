"""Thread capacity by class of work: validations, writes, and reads keep the rest (issue 23).

Store work runs in worker threads. Starlette's ``run_in_threadpool`` (and FastAPI's plain
``def`` routes: every read) share one limiter of 40 threads, so 45 concurrent validations
used to leave ``GET P/v1/ls`` waiting for a thread. Validations and writes now take their
own :class:`anyio.CapacityLimiter` (``Limits.validate_threads``, ``Limits.write_threads``):
past those, more of them wait for one of their own class, never for a reader's thread.
The limiters are made on first use, inside the event loop, once per store app.

Point reads (issue 29: a bearer token's lookup, ``GET P/v1/objects/{ref}``) take a third
class, ``read``, of ``Limits.read_threads`` (default 4): each is one short statement, and
spreading them over up to 40 threads only passed the GIL around (92 futex calls a request
against 8 on the ceiling). Longer reads (``ls``, closures, streamed bodies) keep Starlette's
shared limiter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeVar

import anyio
import anyio.to_thread
from fastapi import Request

from .app import served

__all__ = ["Work", "in_pool"]

T = TypeVar("T")

#: The classes of work with their own thread capacity.
Work = Literal["validate", "write", "read"]


def _limiter(request: Request, work: Work) -> anyio.CapacityLimiter:
    state = request.app.state
    limiters: dict[str, anyio.CapacityLimiter] | None = getattr(state, "limiters", None)
    if limiters is None:
        limits = served(request).limits
        limiters = state.limiters = {
            "validate": anyio.CapacityLimiter(limits.validate_threads),
            "write": anyio.CapacityLimiter(limits.write_threads),
            "read": anyio.CapacityLimiter(limits.read_threads),
        }
    return limiters[work]


async def in_pool(request: Request, work: Work, fn: Callable[[], T]) -> T:
    """``fn()`` in a worker thread, holding one of the ``work`` class's thread tokens."""
    return await anyio.to_thread.run_sync(fn, limiter=_limiter(request, work))
