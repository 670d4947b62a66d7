"""Both stores implement evstore.StoreProtocol member by member, signatures included.

mypy proves it on every `scripts/check` (store/protocol.py and store/client/remote.py return
each class as the protocol); this is the same check at run time, so a drifted signature also
fails the test suite, with the member named. No store is opened.
"""

from __future__ import annotations

import inspect

import pytest

import evstore
from evstore import protocol
from evstore.client.admin import RemoteTokens
from evstore.client.contracts import (
    RemoteContexts,
    RemoteFragments,
    RemoteManifests,
    RemotePackages,
    RemoteRuns,
)
from evstore.client.retention import RemoteRetention
from evstore.contracts.contexts.store import ContextOps
from evstore.contracts.fragments.store import FragmentOps
from evstore.contracts.manifests.store import ManifestOps
from evstore.contracts.packages.store import PackageOps
from evstore.contracts.runs.store import RunOps
from evstore.facade.admin import TokenOps
from evstore.retention.ops import RetentionOps

#: protocol -> (the local class, the remote class)
PAIRS = {
    protocol.StoreProtocol: (evstore.Store, evstore.RemoteStore),
    protocol.FragmentsProtocol: (FragmentOps, RemoteFragments),
    protocol.ManifestsProtocol: (ManifestOps, RemoteManifests),
    protocol.PackagesProtocol: (PackageOps, RemotePackages),
    protocol.ContextsProtocol: (ContextOps, RemoteContexts),
    protocol.RunsProtocol: (RunOps, RemoteRuns),
    protocol.RetentionProtocol: (RetentionOps, RemoteRetention),
    protocol.TokensProtocol: (TokenOps, RemoteTokens),
}


def members(proto: type) -> list[str]:
    own = [n for n in vars(proto) if not n.startswith("_") or n in ("__enter__", "__exit__")]
    return sorted(
        n for n in own if callable(vars(proto)[n]) or isinstance(vars(proto)[n], property)
    )


def set_in_init(cls: type, name: str) -> bool:
    """True when ``cls.__init__`` assigns ``self.<name>`` (an instance attribute)."""
    init = vars(cls).get("__init__")
    return init is not None and f"self.{name} =" in inspect.getsource(init)


def drift(proto: type, cls: type) -> list[str]:
    """Why ``cls`` does not implement ``proto`` (empty when it does)."""
    out = []
    for name in members(proto):
        want = inspect.getattr_static(proto, name)
        try:
            got = inspect.getattr_static(cls, name)
        except AttributeError:
            if not (isinstance(want, property) and set_in_init(cls, name)):
                out.append(f"{cls.__name__}.{name} is missing")
            continue
        if isinstance(want, property):
            if callable(got) and not isinstance(got, property):
                out.append(f"{cls.__name__}.{name} is a method, not a value")
            continue
        if not callable(got) and not isinstance(got, (staticmethod, classmethod)):
            out.append(f"{cls.__name__}.{name} is not a method")
            continue
        params = inspect.signature(getattr(cls, name)).parameters
        for p in inspect.signature(want).parameters.values():
            q = params.get(p.name)
            if q is None and p.kind is not p.VAR_POSITIONAL:
                out.append(f"{cls.__name__}.{name} takes no {p.name}")
            elif q is not None and q.kind is not p.kind:
                out.append(f"{cls.__name__}.{name}: {p.name} is {q.kind.name}, not {p.kind.name}")
            elif q is not None and (p.default is p.empty) != (q.default is q.empty):
                out.append(f"{cls.__name__}.{name}: {p.name} differs in having a default")
        wanted = inspect.signature(want).parameters
        for q in params.values():
            extra = q.name not in wanted and q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD)
            if extra and q.default is q.empty:
                out.append(f"{cls.__name__}.{name} needs {q.name}, which the protocol lacks")
    return out


@pytest.mark.parametrize("proto", list(PAIRS), ids=lambda p: p.__name__)
def test_the_local_and_the_remote_class_implement_the_protocol(proto):
    local, remote = PAIRS[proto]
    assert members(proto), proto
    assert drift(proto, local) == []
    assert drift(proto, remote) == []


def test_the_check_names_a_member_that_drifted():
    class Lacking:
        url = path = created = None

        def get(self, ref: str, extra: int) -> bytes:
            return b""

        def has(self, refs, *, verify: bool = False) -> list[str]:
            return []

    found = drift(protocol.StoreProtocol, Lacking)
    assert "Lacking.put is missing" in found
    assert "Lacking.get needs extra, which the protocol lacks" in found
    assert not any(f.startswith("Lacking.has") for f in found)  # an added keyword with a default


def test_the_namespaces_the_protocol_names_are_the_ones_checked():
    hints = {
        name: inspect.signature(
            inspect.getattr_static(protocol.StoreProtocol, name).fget
        ).return_annotation
        for name in (
            "fragments",
            "manifests",
            "packages",
            "contexts",
            "runs",
            "retention",
            "tokens",
        )
    }
    assert set(hints.values()) == {p.__name__ for p in PAIRS if p is not protocol.StoreProtocol}
