"""SQLite's writers of one process queue on a lock, not in SQLite's sleeping busy handler."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import event

SQLITE_ONLY = pytest.mark.parametrize("backend", ["sqlite"])


def _overlap_of_writers(store, threads: int = 4, rounds: int = 3) -> int:
    """The most threads seen at once between asking to begin a write and its end."""
    inside: set[int] = set()
    most = [0]
    lock = threading.Lock()

    def asking(conn) -> None:  # a connection made for a transaction: before its BEGIN
        with lock:
            inside.add(threading.get_ident())
            most[0] = max(most[0], len(inside))

    def ended(conn) -> None:
        with lock:
            inside.discard(threading.get_ident())

    engine = store.db.engine
    event.listen(engine, "engine_connect", asking)
    event.listen(engine, "commit", ended)
    event.listen(engine, "rollback", ended)

    def work(conn) -> None:
        time.sleep(0.02)  # a write transaction that takes a while

    def writer() -> None:
        for _ in range(rounds):
            store.db.run_transaction(work)

    try:
        ts = [threading.Thread(target=writer) for _ in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    finally:
        event.remove(engine, "engine_connect", asking)
        event.remove(engine, "commit", ended)
        event.remove(engine, "rollback", ended)
    return most[0]


@SQLITE_ONLY
def test_writers_of_one_process_wait_their_turn_before_begin(store):
    assert _overlap_of_writers(store) == 1


@SQLITE_ONLY
def test_without_the_queue_writers_meet_in_the_busy_handler(store, monkeypatch):
    # The measure above can see writers meet: with the queue passed, they do.
    monkeypatch.setattr(type(store.db), "_queued", lambda self: _nothing())
    assert _overlap_of_writers(store) > 1


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
