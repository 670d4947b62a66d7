"""The oras client of ``bench/oci.py --client oras`` (issue 27): layers moved concurrently.

Debian's skopeo 1.9.3 moves the layers of one image one after another, at a cost per layer
that grows with the layer count (docs/benchmarks.md). This moves the same closures with the
``oras`` SDK from PyPI (its HTTP, its authentication: basic credentials traded for a bearer
token on the first 401), ``--jobs`` layers at a time, each thread with its own client::

    python bench/oci_oras.py pull --host H:P --name N --manifest sha256:... --out DIR
    python bench/oci_oras.py copy --layout DIR --manifest sha256:... --out DIR
    python bench/oci_oras.py push --host H:P --name N --layout DIR --manifest sha256:... \
        --tag TAG --token T

``pull`` writes an OCI layout like ``skopeo copy docker://... oci:DIR``: the manifest (its
bytes checked against the digest asked for) and every blob, each hashed as it arrives and
refused unless its SHA-256 is its digest. ``copy`` is its ceiling: the same work from a
layout on disk (read, hash, write), the same threads, no server. ``push`` uploads every blob
(``HEAD``, then ``POST`` and a monolithic ``PUT``: the SDK's ``upload_blob``) and then the
manifest to ``NAME:TAG``. Run by bench/oci.py, which times each command; exits non-zero on
any refusal.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import oras.client
import oras.container

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CHUNK = 1 << 20


def _descriptors(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The config and every layer of a manifest, each blob once."""
    seen: dict[str, dict[str, Any]] = {}
    for desc in [doc["config"], *doc["layers"]]:
        seen.setdefault(desc["digest"], desc)
    return list(seen.values())


def _each(jobs: int, work: Callable[[dict[str, Any]], None], items: list[dict[str, Any]]) -> None:
    """``work`` on every item, ``jobs`` threads at a time; the first error is raised."""
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for _ in pool.map(work, items):
            pass


def _clients(host: str, token: str | None) -> Callable[[], oras.client.OrasClient]:
    """This thread's oras client (one per thread: a requests session is not shared)."""
    local = threading.local()

    def get() -> oras.client.OrasClient:
        client = getattr(local, "client", None)
        if client is None:
            client = local.client = oras.client.OrasClient(hostname=host, insecure=True)
            if token:
                client.auth.set_basic_auth("evstore", token)
        return client

    return get


def _write_verified(chunks: Iterator[bytes], digest: str, target: Path) -> None:
    """Write ``chunks`` to ``target`` if their SHA-256 is ``digest``, else raise."""
    sha = hashlib.sha256()
    part = target.with_suffix(".part")
    with part.open("wb") as fh:
        for chunk in chunks:
            sha.update(chunk)
            fh.write(chunk)
    if "sha256:" + sha.hexdigest() != digest:
        part.unlink()
        raise SystemExit(f"{digest}: the bytes received have SHA-256 {sha.hexdigest()}")
    part.rename(target)


def _layout(out: Path, manifest: bytes, digest: str) -> Path:
    """Start an OCI layout in ``out`` holding the manifest; return its blob directory."""
    blobs = out / "blobs" / "sha256"
    blobs.mkdir(parents=True)
    (out / "oci-layout").write_text('{"imageLayoutVersion":"1.0.0"}')
    entry = {"mediaType": MANIFEST, "digest": digest, "size": len(manifest)}
    (out / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [entry]}))
    (blobs / digest[7:]).write_bytes(manifest)
    return blobs


def _file_chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            yield chunk


def pull(a: argparse.Namespace) -> None:
    """The manifest ``--manifest`` of ``--name`` and its blobs into the layout ``--out``."""
    client = _clients(a.host, a.token)
    container = oras.container.Container(f"{a.name}@{a.manifest}", registry=a.host)
    r = client().do_request(
        f"http://{container.manifest_url()}", "GET", headers={"Accept": MANIFEST}
    )
    if r.status_code != 200 or "sha256:" + hashlib.sha256(r.content).hexdigest() != a.manifest:
        raise SystemExit(f"manifest {a.manifest}: {r.status_code} {r.text[:500]}")
    blobs = _layout(Path(a.out), r.content, a.manifest)

    def fetch(desc: dict[str, Any]) -> None:
        with client().get_blob(container, desc["digest"], stream=True) as got:
            if got.status_code != 200:
                raise SystemExit(f"{desc['digest']}: {got.status_code} {got.text[:500]}")
            chunks = got.iter_content(chunk_size=CHUNK)
            _write_verified(chunks, desc["digest"], blobs / desc["digest"][7:])

    _each(a.jobs, fetch, _descriptors(json.loads(r.content)))


def copy(a: argparse.Namespace) -> None:
    """The ceiling of :func:`pull`: the same layout written from ``--layout`` on disk."""
    source = Path(a.layout) / "blobs" / "sha256"
    manifest = (source / a.manifest[7:]).read_bytes()
    if "sha256:" + hashlib.sha256(manifest).hexdigest() != a.manifest:
        raise SystemExit(f"manifest {a.manifest}: not what the layout holds")
    blobs = _layout(Path(a.out), manifest, a.manifest)

    def fetch(desc: dict[str, Any]) -> None:
        name = desc["digest"][7:]
        _write_verified(_file_chunks(source / name), desc["digest"], blobs / name)

    _each(a.jobs, fetch, _descriptors(json.loads(manifest)))


def push(a: argparse.Namespace) -> None:
    """Every blob of the manifest ``--manifest`` of ``--layout``, then it, to NAME:TAG."""
    client = _clients(a.host, a.token)
    source = Path(a.layout) / "blobs" / "sha256"
    doc = json.loads((source / a.manifest[7:]).read_bytes())
    container = oras.container.Container(f"{a.name}:{a.tag}", registry=a.host)

    def upload(desc: dict[str, Any]) -> None:
        r = client().upload_blob(str(source / desc["digest"][7:]), container, desc)
        if r.status_code not in (200, 201):
            raise SystemExit(f"{desc['digest']}: {r.status_code} {r.text[:500]}")

    _each(a.jobs, upload, _descriptors(doc))
    r = client().upload_manifest(doc, container)
    if r.status_code != 201:
        raise SystemExit(f"manifest: {r.status_code} {r.text[:2000]}")


def main() -> None:
    """Parse the command line and run one command."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["pull", "copy", "push"])
    ap.add_argument("--host", help="HOST:PORT of the registry")
    ap.add_argument("--name", help="the repository")
    ap.add_argument("--manifest", required=True, help="sha256:<hex> of the manifest")
    ap.add_argument("--layout", help="the layout read (copy, push)")
    ap.add_argument("--out", help="the layout written (pull, copy)")
    ap.add_argument("--tag", help="the tag pushed to (push)")
    ap.add_argument("--token", default=os.environ.get("EVSTORE_TOKEN"), help="an evstore token")
    ap.add_argument("--jobs", type=int, default=4, help="layers in flight at once")
    a = ap.parse_args()
    {"pull": pull, "copy": copy, "push": push}[a.command](a)


if __name__ == "__main__":
    main()
