"""A hypothesis state machine over blob bytes outside the database (issue 25).

Rules, interleaved step by step: put (rooted), retain, release, the clocks (leases on the
database clock, the deletion delay on the drain's), collect (gc deletes rows and queues
their bytes; its own drain never finds anything due, the delay being longer than a run),
drain (the delayed delete step, at the model's time) and ``blobs move`` between two
directories and the database. Invariants after every step:

* every object a live root or lease holds reads back, verified;
* every committed row's bytes exist where the row says (a backend object of its size);
* gc deletes exactly the rows no live root or lease reaches (the model's garbage);
* a drained deletion whose row is gone, or moved elsewhere, leaves no object behind.

The put-vs-pending-deletion protocol (docs/design.md, "Blob bytes outside the database")
is exercised by sequences hypothesis finds: put, release, collect (queued), put again
(cancelled), drain (must keep the bytes); and collect, drain (deleted), put (uploaded again).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path

import sqlalchemy as sa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

import evstore
from evstore.backends.base import blob_key
from evstore.backends.spec import open_backend
from evstore.db.tables import blobs
from evstore.objects.external import drain_deletions

INLINE_MAX = 64
LEASE = 100  # seconds, on the database clock (gc.lease-seconds)
STEP = 120  # seconds per tick, on both clocks: a tick ends a lease and a delay
DELAY = 60  # blobs.deletion_delay_seconds: due after a tick (a run takes far less)
DATA = [bytes([i]) * (200 + 37 * i) for i in range(3)]  # all over INLINE_MAX
ROOTS = ["default", "run-a"]
_TABLES = (
    "retention_history",
    "roots",
    "leases",
    "verified",
    "edges",
    "artifacts",
    "blob_chunks",
    "blobs",
    "blob_deletions",
)


def _address(data: bytes) -> str:
    return evstore.digest_bytes(data).address


def _set_clock(seconds: float) -> None:
    from evstore.objects.leases import CLOCK

    CLOCK.offset = dt.timedelta(seconds=seconds)


class BlobLifecycle(RuleBasedStateMachine):
    def __init__(self, store: evstore.Store, places: list[Path]) -> None:
        super().__init__()
        self.store = store
        self.places = places
        _set_clock(0)
        with store.db.engine.begin() as conn:
            for table in _TABLES:
                conn.execute(sa.text(f"DELETE FROM {table}"))
        for p in places:
            shutil.rmtree(p, ignore_errors=True)
            p.mkdir()
        store.set_config("blobs.backend", f"file:{places[0]}")
        self.now = 0
        self.objects: set[str] = set()
        self.roots: dict[str, set[str]] = {}
        self.leases: dict[str, int] = {}

    def _live(self) -> set[str]:
        live = {a for r in self.roots.values() for a in r}
        live |= {a for a, t in self.leases.items() if t > self.now}
        return live & self.objects

    @rule(i=st.integers(0, len(DATA) - 1), root=st.sampled_from([*ROOTS, None]))
    def put(self, i: int, root: str | None) -> None:
        """Put under ``root``; None: under a scratch root released at once (only the
        put's lease holds it then).
        """
        with self.store.retention.rooting(root or "scratch"):
            self.store.put(DATA[i])
        a = _address(DATA[i])
        self.objects.add(a)
        self.leases[a] = max(self.leases.get(a, 0), self.now + LEASE)
        if root is None:
            self.store.retention.release("scratch")
        else:
            self.roots.setdefault(root, set()).add(a)

    @rule(pick=st.integers(0, 20), root=st.sampled_from(ROOTS))
    def retain(self, pick: int, root: str) -> None:
        if not self.objects:
            return
        a = sorted(self.objects)[pick % len(self.objects)]
        self.store.retention.retain([a], root)
        self.roots.setdefault(root, set()).add(a)
        self.leases[a] = max(self.leases.get(a, 0), self.now + LEASE)

    @rule(root=st.sampled_from(ROOTS))
    def release(self, root: str) -> None:
        if not self.roots.get(root):
            return
        self.store.retention.release(root)
        del self.roots[root]

    @rule()
    def tick(self) -> None:
        self.now += STEP
        _set_clock(self.now)

    @rule(later=st.booleans())
    def collect(self, later: bool) -> None:
        """Collect now, or (``later``) after a tick."""
        if later:
            self.tick()
        live = self._live()
        report = self.store.retention.gc()
        assert {o["address"] for o in report.objects} == self.objects - live
        self.objects = live
        self.leases = {a: t for a, t in self.leases.items() if a in live}

    @rule(wait=st.booleans())
    def drain(self, wait: bool) -> None:
        """The delayed delete step at the model's time, or (``wait``) once every deletion
        queued so far is due.
        """
        at = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=self.now + (DELAY if wait else 0))
        settled, deleted = drain_deletions(self.store.transactions, now=at)
        assert 0 <= deleted <= settled
        # Every object no row needs any more, whose deletion was due, is gone.
        with self.store.db.engine.connect() as conn:
            queued = {r[0] for r in conn.execute(sa.text("SELECT key FROM blob_deletions"))}
        rows = self._rows()
        for p in self.places:
            for x in open_backend(f"file:{p}").list("blake3"):
                a = "blake3:" + x.key.rsplit("/", 1)[-1]
                assert x.key in queued or rows.get(a) == f"file:{p}", (p, a)

    @rule(to=st.integers(0, 2))
    def move(self, to: int) -> None:
        spec = "inline" if to == 2 else f"file:{self.places[to]}"
        report = self.store.retention.move_blobs(spec, batch=2)
        assert report.remaining == 0 and report.faults == []

    def _rows(self) -> dict[str, str | None]:
        with self.store.db.engine.connect() as conn:
            return {
                "blake3:" + r.address: r.stored_in
                for r in conn.execute(sa.select(blobs.c.address, blobs.c.stored_in))
            }

    @invariant()
    def held_objects_read_back(self) -> None:
        if not hasattr(self, "store"):
            return
        for a in self._live():
            assert _address(self.store.get(a)) == a

    @invariant()
    def every_row_has_its_bytes(self) -> None:
        if not hasattr(self, "store"):
            return
        rows = self._rows()
        assert set(rows) == self.objects
        sizes = {_address(d): len(d) for d in DATA}
        for a, spec in rows.items():
            if spec is not None:
                assert open_backend(spec).stat(blob_key(a[7:])) == sizes[a], (a, spec)

    def teardown(self) -> None:
        _set_clock(0)


def _configured(store: evstore.Store) -> evstore.Store:
    store.set_config("gc.lease-seconds", LEASE)
    store.set_config("blobs.inline_max", INLINE_MAX)
    store.set_config("blobs.deletion_delay_seconds", DELAY)
    return store


def test_blob_lifecycle_state_machine(store, tmp_path):
    """Derandomized in CI (the house profile); ``HYPOTHESIS_PROFILE=dev`` explores at random."""
    dev = os.environ.get("HYPOTHESIS_PROFILE") == "dev"
    places = [tmp_path / "a", tmp_path / "b"]
    run_state_machine_as_test(
        lambda: BlobLifecycle(_configured(store), places),
        settings=settings(
            max_examples=300 if dev else 60,
            stateful_step_count=30,
            deadline=None,
            derandomize=not dev,
            database=None,
            suppress_health_check=list(HealthCheck),
        ),
    )


#: Sequences random runs found against broken variants of the protocol (a put that does
#: not cancel the queued deletion of its key together with a drain that ignores rows; a
#: drain that keeps an old copy after a move), replayed on every run.
FOUND = [
    [
        ("put", {"i": 1, "root": "default"}),
        ("tick", {}),
        ("release", {"root": "default"}),
        ("collect", {"later": False}),
        ("put", {"i": 1, "root": "default"}),
        ("drain", {"wait": False}),
    ],
    [
        ("put", {"i": 0, "root": None}),
        ("collect", {"later": True}),
        ("put", {"i": 0, "root": "run-a"}),
        ("drain", {"wait": True}),
    ],
    [
        ("put", {"i": 0, "root": "default"}),
        ("move", {"to": 1}),
        ("drain", {"wait": True}),
        ("put", {"i": 2, "root": None}),
        ("move", {"to": 2}),
        ("drain", {"wait": True}),
        ("move", {"to": 0}),
        ("collect", {"later": True}),
        ("drain", {"wait": True}),
    ],
]


def test_found_sequences_replayed(store, tmp_path):
    for steps in FOUND:
        machine = BlobLifecycle(_configured(store), [tmp_path / "a", tmp_path / "b"])
        try:
            for name, args in steps:
                getattr(machine, name)(**args)
                machine.held_objects_read_back()
                machine.every_row_has_its_bytes()
        finally:
            machine.teardown()
