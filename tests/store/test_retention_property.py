"""A hypothesis state machine over put, ingest, retain, release, gc and the clock (issue 12).

The model tracks roots (with ``until``), leases and the edges of the manifests it ingests
(manifest -> content), on the model clock (the injected offset). Invariants, after every
step: every object a live root reaches is stored and verifies; the store holds exactly the
objects the model holds. After each gc the model drops exactly the objects that no live
root or live lease reaches: unreachable expired objects are gone, nothing else is.

Times are in steps of 70 s against a 100 s lease and ``until``, so the real seconds a run
takes never decide an outcome.
"""

from __future__ import annotations

import sqlalchemy as sa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from retention_helpers import advance, make_manifest, reset_clock, stored

import evstore
from evstore import Document

LEASE = 100
STEP = 70
BLOBS = [b"alpha bytes", b"beta bytes", b"gamma bytes"]
CONTENTS = [b"content one\n" * 30, b"content two\n" * 30]
ROOTS = ["default", "run-a", "run-b"]
_TABLES = (
    "retention_history",
    "audits",
    "roots",
    "leases",
    "verified",
    "warnings",
    "attrs",
    "edges",
    "artifacts",
    "bindings",
    "blob_chunks",
    "blobs",
)


def _wipe(store: evstore.Store) -> None:
    with store.db.engine.begin() as conn:
        for table in _TABLES:
            conn.execute(sa.text(f"DELETE FROM {table}"))


def _address(data: bytes) -> str:
    return evstore.digest_bytes(data).address


def _canonical_address(doc: bytes) -> str:
    return _address(evstore.dumps(evstore.loads(doc)))


class Retention(RuleBasedStateMachine):
    def __init__(self, store: evstore.Store) -> None:
        super().__init__()
        self.store = store
        reset_clock()
        _wipe(store)
        self.now = 0
        self.objects: set[str] = set()
        self.edges: dict[str, set[str]] = {}
        self.roots: dict[str, dict[str, int | None]] = {}
        self.leases: dict[str, int] = {}

    def _lease(self, *addresses: str) -> None:
        for a in addresses:
            self.leases[a] = max(self.leases.get(a, 0), self.now + LEASE)

    def _root(self, root: str, address: str) -> None:
        self.roots.setdefault(root, {}).setdefault(address, None)

    def _live(self) -> set[str]:
        live = {a for r in self.roots.values() for a, u in r.items() if u is None or u > self.now}
        live |= {a for a, t in self.leases.items() if t > self.now}
        frontier = list(live)
        while frontier:
            for dst in self.edges.get(frontier.pop(), ()):
                if dst not in live:
                    live.add(dst)
                    frontier.append(dst)
        return live & self.objects

    @rule(data=st.sampled_from(BLOBS), root=st.sampled_from(ROOTS))
    def put(self, data: bytes, root: str) -> None:
        with self.store.retention.rooting(root):
            self.store.put(data)
        a = _address(data)
        self.objects.add(a)
        self._root(root, a)
        self._lease(a)

    @rule(
        content=st.sampled_from(CONTENTS),
        tag=st.sampled_from(["q1", "q2"]),
        root=st.sampled_from(ROOTS),
        supply=st.booleans(),
    )
    def ingest(self, content: bytes, tag: str, root: str, supply: bool) -> None:
        doc = make_manifest(content, tag)
        c = _address(content)
        if not supply and c not in self.objects:
            try:
                with self.store.retention.rooting(root):
                    self.store.ingest([Document(doc)])
            except evstore.EvstoreError as err:
                assert err.code == "manifest.content-missing"
                return
            raise AssertionError("an ingest without its content was accepted")
        with self.store.retention.rooting(root):
            (m,) = self.store.ingest([Document(doc)], supplied=[content] if supply else []).results
        assert m.digest.address == _canonical_address(doc)
        self.objects |= {m.digest.address, c}
        self.edges[m.digest.address] = {c}
        self._root(root, m.digest.address)
        self._lease(m.digest.address, c)

    @rule(pick=st.integers(0, 50), root=st.sampled_from(ROOTS), until=st.booleans())
    def retain(self, pick: int, root: str, until: bool) -> None:
        if not self.objects:
            return
        a = sorted(self.objects)[pick % len(self.objects)]
        self.store.retention.retain([a], root, until=f"{LEASE}s" if until else None)
        self.roots.setdefault(root, {})[a] = self.now + LEASE if until else None
        self._lease(a)

    @rule(root=st.sampled_from(ROOTS))
    def release(self, root: str) -> None:
        if not self.roots.get(root):
            try:
                self.store.retention.release(root)
            except evstore.NotFound as err:
                assert err.code == "not-found.root"
                return
            raise AssertionError("releasing an empty root succeeded")
        self.store.retention.release(root)
        del self.roots[root]

    @rule()
    def tick(self) -> None:
        self.now += STEP
        advance(STEP)

    @rule()
    def gc(self) -> None:
        live = self._live()
        report = self.store.retention.gc()
        gone = {o["address"] for o in report.objects}
        assert gone == self.objects - live
        self.objects = live
        for r in self.roots.values():
            for a in [a for a in r if a not in live]:
                del r[a]
        self.leases = {a: t for a, t in self.leases.items() if a in live}

    @invariant()
    def retained_closures_present_and_verified(self) -> None:
        if not hasattr(self, "store"):
            return
        assert stored(self.store) == self.objects
        held = {a for r in self.roots.values() for a, u in r.items() if u is None or u > self.now}
        reach = set(held)
        for a in held:
            reach |= self.edges.get(a, set())
        for a in reach:
            assert evstore.digest_bytes(self.store.get(a)).address == a

    def teardown(self) -> None:
        reset_clock()


def test_retention_state_machine(store):
    store.set_config("gc.lease-seconds", LEASE)
    run_state_machine_as_test(
        lambda: Retention(store),
        settings=settings(
            max_examples=15,
            stateful_step_count=15,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        ),
    )
