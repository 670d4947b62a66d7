"""`evstore archive` through the real console script, and the archive read by third-party tools
(skopeo, sha256sum, b3sum, jq): the one-liners of docs/archive.md, run as written there."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from archive_helpers import Layout

import evstore

EXE = shutil.which("evstore") or str(Path(sys.executable).parent / "evstore")
DOC = (Path(__file__).resolve().parents[2] / "docs" / "archive.md").read_text()

SHA256_ONE_LINER = (
    "(cd DIR/blobs/sha256 && ls | sed 's/.*/&  &/' | sha256sum --check --quiet --strict)"
)
B3_ONE_LINER = (
    "jq -r '.manifests[].digest[7:]' DIR/index.json | while read -r m; do jq -r '.layers[] | "
    '"\\(.annotations["dev.evstore.address"][7:])  blobs/sha256/\\(.digest[7:])"\' '
    '"DIR/blobs/sha256/$m"; done | sort -u | (cd DIR && b3sum --check --quiet)'
)
CLOSURE_ONE_LINER = (
    "for m in $(jq -r '.manifests[].digest[7:]' DIR/index.json); do jq -e "
    '\'[.layers[].annotations["dev.evstore.address"]] as $m | '
    '([.layers[].annotations["dev.evstore.edges"] // "[]" | fromjson | .[][1]] - $m) == []\' '
    '"DIR/blobs/sha256/$m" >/dev/null || echo "incomplete: $m"; done'
)


def ev(*args: str, cwd: Path, timeout: int = 120) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([EXE, *args], cwd=cwd, capture_output=True, timeout=timeout, check=False)


def sh(script: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["bash", "-c", script], cwd=cwd, capture_output=True, timeout=120, check=False
    )


@pytest.fixture
def exported(source, tmp_path: Path):
    """``(url, roots, dir)``: store A (every kind), exported whole by the CLI."""
    _, url, roots = source
    r = ev("--store", url, "--json", "archive", "export", *roots, "-o", "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["ok"] and len(report["roots"]) == len(roots)
    return url, roots, tmp_path / "out"


def test_the_documented_one_liners_are_the_ones_tested():
    for line in (SHA256_ONE_LINER, B3_ONE_LINER, CLOSURE_ONE_LINER):
        assert line in DOC


def test_skopeo_lists_the_manifest_and_blob_digests(exported, tmp_path, require_tool):
    skopeo = require_tool("skopeo")
    url, roots, out = exported
    layout = Layout(out)
    r = ev("--store", url, "archive", "export", *roots, "-o", "out.tar", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with evstore.open(url) as store:
        (run,) = [i.address for i in store.ls("run")]
        closure = store.runs.closure(run)
    i = next(
        n
        for n, e in enumerate(layout.index["manifests"])
        if e["annotations"]["dev.evstore.address"] == run
    )
    entry = layout.index["manifests"][i]
    name = run.removeprefix("blake3:")
    for ref in (f"oci:{out}:{name}", f"oci-archive:{tmp_path / 'out.tar'}:{name}"):
        r = subprocess.run(
            [skopeo, "inspect", "--raw", ref], capture_output=True, timeout=120, check=False
        )
        assert r.returncode == 0, r.stderr
        # The manifest skopeo reads is the one the index names, byte for byte ...
        assert "sha256:" + hashlib.sha256(r.stdout).hexdigest() == entry["digest"]
        manifest = json.loads(r.stdout)
        # ... and it lists every object of the run's closure by its SHA-256.
        listed = {layer["digest"] for layer in manifest["layers"]}
        with evstore.open(url) as store:
            want = {store.stat(item["address"])["sha256"] for item in closure.items}
        assert want <= listed
        assert manifest["config"]["digest"] == "sha256:" + hashlib.sha256(b"{}").hexdigest()


def test_sha256sum_checks_every_byte(exported, tmp_path):
    _, _, out = exported
    line = SHA256_ONE_LINER.replace("DIR", str(out))
    assert sh(line, tmp_path).returncode == 0
    blob = sorted((out / "blobs" / "sha256").iterdir())[3]
    blob.write_bytes(blob.read_bytes() + b"\n")
    r = sh(line, tmp_path)
    assert r.returncode != 0 and blob.name.encode() in r.stdout + r.stderr


def test_b3sum_and_jq_check_addresses_and_closures(exported, tmp_path, require_tool):
    require_tool("b3sum")
    require_tool("jq")
    _, _, out = exported
    assert sh(B3_ONE_LINER.replace("DIR", str(out)), tmp_path).returncode == 0
    r = sh(CLOSURE_ONE_LINER.replace("DIR", str(out)), tmp_path)
    assert r.returncode == 0 and r.stdout == b""
    layout = Layout(out)
    i = layout.find("run")
    doc = layout.manifest(i)
    dropped = doc["layers"].pop()
    layout.save_manifest(doc, i)
    r = sh(CLOSURE_ONE_LINER.replace("DIR", str(out)), tmp_path)
    assert b"incomplete: " + layout.index["manifests"][i]["digest"][7:].encode() in r.stdout
    assert dropped


def test_verify_and_import_through_the_cli(exported, tmp_path, fresh):
    url, roots, out = exported
    empty_url = fresh().url
    r = ev("--json", "archive", "verify", "out", cwd=tmp_path)
    assert r.returncode == 0, r.stdout
    assert json.loads(r.stdout)["ok"] is True
    r = ev("archive", "verify", "out", "--key", "some.vkey", cwd=tmp_path)
    assert r.returncode == 1 and b"archive.no-proofs" in r.stdout
    r = ev("--store", empty_url, "--json", "archive", "import", "out", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    first = json.loads(r.stdout)
    assert first["new_artifacts"] > 0
    r = ev("--store", empty_url, "archive", "import", "out", cwd=tmp_path)
    assert r.returncode == 0 and b"0 new blobs, 0 new artifacts" in r.stdout
    r = ev(
        "--store",
        url,
        "--json",
        "archive",
        "export",
        roots[0],
        "-o",
        "p",
        "--with-proofs",
        cwd=tmp_path,
    )
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["code"] == "log.no-checkpoint"
    assert not (tmp_path / "p").exists()


def test_faults_name_their_files_and_refuse_the_import(exported, tmp_path):
    _, _, out = exported
    blobs = sorted((out / "blobs" / "sha256").iterdir())
    for blob in blobs[:2]:
        blob.write_bytes(b"tampered")
    r = ev("--json", "archive", "verify", "out", cwd=tmp_path)
    assert r.returncode == 1
    faults = json.loads(r.stdout)["faults"]
    assert {f["path"] for f in faults} >= {f"blobs/sha256/{b.name}" for b in blobs[:2]}
    target = tmp_path / "b.db"
    r = ev("--store", f"sqlite:///{target}", "archive", "import", "out", cwd=tmp_path)
    assert r.returncode == 1
    err = r.stderr.decode()
    assert err.count("archive.digest-mismatch") >= 2 and "Traceback" not in err
    assert not target.exists()  # a refused import leaves no new store behind
    r = ev("archive", "verify", "missing-dir", cwd=tmp_path)
    assert r.returncode == 1 and b"input.unreadable" in r.stderr
    r = ev("archive", "verify", "out", "--max-bytes", "10", cwd=tmp_path)
    assert r.returncode == 1 and b"archive.too-large" in r.stdout


def test_a_name_that_is_not_utf8_is_reported_in_valid_utf8_json(exported, tmp_path):
    _, _, out = exported
    os.mkdir(os.path.join(os.fsencode(out), b"blobs", b"\xff"))  # a stray directory
    r = ev("--json", "archive", "verify", "out", cwd=tmp_path)
    assert r.returncode == 1
    report = json.loads(r.stdout.decode("utf-8"))  # strict: raises on invalid UTF-8
    (fault,) = report["faults"]
    assert fault["code"] == "archive.layout" and fault["path"] == "blobs/\udcff"


def test_proofs_through_the_cli(tmp_path, fresh):
    store = fresh()
    url = store.url
    put = store.put(b"evidence bytes")
    assert (
        ev("--store", url, "log", "init-key", str(tmp_path / "k.key"), cwd=tmp_path).returncode == 0
    )
    r = ev("--store", url, "log", "checkpoint", "--key", str(tmp_path / "k.key"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (tmp_path / "v.key").write_bytes(ev("--store", url, "log", "key", cwd=tmp_path).stdout)
    r = ev("--store", url, "archive", "export", put.digest.address, "-o", "p.tar", "--with-proofs",
           cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = ev("archive", "verify", "p.tar", "--key", "v.key", cwd=tmp_path)
    assert r.returncode == 0 and b"signed by the key given" in r.stdout, r.stdout
    r = ev("archive", "verify", "p.tar", cwd=tmp_path)
    assert r.returncode == 0 and b"give --key" in r.stdout
    r = ev("--json", "archive", "verify", "p.tar", "--key", "x+00000000+AA", cwd=tmp_path)
    assert r.returncode == 1 and json.loads(r.stdout)["proofs"] == "failed"
