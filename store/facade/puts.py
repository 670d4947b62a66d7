"""The body of :meth:`evstore.Store.put_many`: one transaction or batches; a list or a sink.

With a sink (``results=``), each transaction's results wait for its commit in a
:class:`~evstore.objects.blob_batches.ResultSpool` (a temporary file), then go to the sink in
order: a retried attempt starts its spool again, so the sink never sees a result of an
attempt that rolled back, and memory does not grow with the number of items (issue 28).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import sqlalchemy as sa

from ..db.engine import Database
from ..objects import blobs as _blobs
from ..objects.blob_batches import ResultSpool, put_stream_many, rereadable
from .ingest import offset_progress, one_shot, run_batches

__all__ = ["put_many"]

Sink = Callable[[_blobs.PutResult], object]


def put_many(
    db: Database,
    items: Iterable[Any],
    batch: int | None,
    on_batch: Callable[[int, int], None] | None,
    progress: Callable[[int], None] | None,
    results: Sink | None,
) -> list[_blobs.PutResult] | int:
    """Store ``items`` as :meth:`evstore.Store.put_many` documents.

    Returns:
        The results in order; with ``results`` (a sink), the number of items stored.

    Raises:
        As :meth:`evstore.Store.put_many`.
    """
    if results is None:
        return _run(db, items, batch, on_batch, progress, None)
    with ResultSpool() as spool:
        counted = [0]

        def sink(res: _blobs.PutResult) -> None:
            counted[0] += 1
            results(res)

        _run(db, items, batch, on_batch, progress, (spool, sink))
        return counted[0]


def _run(
    db: Database,
    items: Iterable[Any],
    batch: int | None,
    on_batch: Callable[[int, int], None] | None,
    progress: Callable[[int], None] | None,
    sink: tuple[ResultSpool, Sink] | None,
) -> list[_blobs.PutResult]:
    def one(chunk: Iterable[Any], tick: Callable[[int], None] | None) -> list[_blobs.PutResult]:
        take = one_shot(chunk)
        streams: dict[int, rereadable] = {}
        if sink is None:
            out: list[_blobs.PutResult] = []

            def listed(conn: sa.Connection) -> None:
                out.clear()  # a retried attempt starts from no result
                put_stream_many(conn, take(), tick, streams, out)

            db.run_transaction(listed)
            return out
        spool, call = sink

        def spooled(conn: sa.Connection) -> None:
            spool.reset()
            put_stream_many(conn, take(), tick, streams, spool)

        db.run_transaction(spooled)
        spool.replay(call)
        spool.reset()
        return []

    if batch is None:
        return one(items, progress)
    committed = [0]

    def each(chunk: list[Any]) -> list[_blobs.PutResult]:
        return one(chunk, offset_progress(progress, committed[0]))

    def after(batches: int, done: int) -> None:
        committed[0] = done
        if on_batch is not None:
            on_batch(batches, done)

    return [r for rs in run_batches(items, batch, each, after) for r in rs]
