"""The log as C2SP tlog-tiles over HTTP, checked by a verifier written from the specs alone.

The verifier below uses none of evstore's log code: it follows c2sp.org/tlog-tiles (paths,
widths, tile contents, entry bundles), c2sp.org/signed-note and tlog-checkpoint (the note and
its Ed25519 signature, checked with ``cryptography`` directly) and RFC 9162 section 2.1
(MTH, PATH and the inclusion verification). It fetches every tile of a real ``evstore
serve`` on 127.0.0.1 for several tree sizes, partial tiles included, rebuilds every level
and the root, matches the signed checkpoint and verifies the inclusion of sampled entries.
"""

from __future__ import annotations

import base64
import hashlib
import random
from functools import cache

import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from serverkit import make_tokens, start_process

import evstore
from evstore.cli.main import cli

# -- the independent verifier ----------------------------------------------------------------


def _h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _index_path(n: int) -> str:
    digits = f"{n:d}"
    digits = digits.zfill(-(-len(digits) // 3) * 3)
    groups = [digits[i : i + 3] for i in range(0, len(digits), 3)]
    return "/".join(["x" + g for g in groups[:-1]] + [groups[-1]])


def _path(level: str, n: int, width: int) -> str:
    return f"tile/{level}/{_index_path(n)}" + ("" if width == 256 else f".p/{width}")


def _note(text: str, vkey: str) -> tuple[int, bytes]:
    name, key_id, key_b64 = vkey.split("+", 2)
    key = base64.b64decode(key_b64)
    assert key[0] == 1  # Ed25519
    body, _, sigs = text.rpartition("\n\n")
    body += "\n"
    verified = False
    for line in sigs.strip("\n").split("\n"):
        who, sig_b64 = line.removeprefix("\u2014 ").split(" ")
        sig = base64.b64decode(sig_b64)
        if who == name and sig[:4].hex() == key_id:
            Ed25519PublicKey.from_public_bytes(key[1:]).verify(sig[4:], body.encode())
            verified = True
    assert verified
    origin, size, root = body.split("\n")[:3]
    assert origin == name
    return int(size), base64.b64decode(root)


def _bundle(data: bytes) -> list[bytes]:
    out, at = [], 0
    while at < len(data):
        n = int.from_bytes(data[at : at + 2], "big")
        out.append(data[at + 2 : at + 2 + n])
        at += 2 + n
    assert at == len(data)
    return out


def verify_tiled_log(get, vkey: str, samples: int = 8) -> tuple[int, list[bytes]]:
    """Fetch and check the whole tiled log: returns its size and entries."""
    size, root = _note(get("checkpoint").decode(), vkey)
    # entries and level-0 leaf hashes, every bundle and tile the size has
    entries: list[bytes] = []
    for n in range(-(-size // 256)):
        width = min(256, size - n * 256)
        got = _bundle(get(_path("entries", n, width)))
        assert len(got) == width
        entries += got
    leaves = [_h(b"\x00" + e) for e in entries]

    @cache
    def mth(lo: int, hi: int) -> bytes:  # RFC 9162 2.1.1 over leaves[lo:hi]
        if hi - lo == 1:
            return leaves[lo]
        k = 1 << ((hi - lo - 1).bit_length() - 1)
        return _h(b"\x01" + mth(lo, lo + k) + mth(lo + k, hi))

    level = 0
    while size >> (8 * level):
        count = size >> (8 * level)  # hashes at this tile level: floor(s / 256**l)
        span = 256**level
        for n in range(-(-count // 256)):
            width = min(256, count - n * 256)
            tile = get(_path(str(level), n, width))
            assert len(tile) == 32 * width
            for i in range(width):
                j = n * 256 + i
                assert tile[32 * i : 32 * i + 32] == mth(j * span, (j + 1) * span), (level, n, i)
        level += 1
    assert mth(0, size) == root  # the tiles give the signed root

    def path(m: int, lo: int, hi: int) -> list[bytes]:  # RFC 9162 2.1.3.1
        if hi - lo == 1:
            return []
        k = 1 << ((hi - lo - 1).bit_length() - 1)
        if m < lo + k:
            return [*path(m, lo, lo + k), mth(lo + k, hi)]
        return [*path(m, lo + k, hi), mth(lo, lo + k)]

    for m in random.Random(size).sample(range(size), min(samples, size)):
        fn, sn, r = m, size - 1, leaves[m]  # RFC 9162 2.1.3.2
        for p in path(m, 0, size):
            assert sn != 0
            if fn & 1 or fn == sn:
                r = _h(b"\x01" + p + r)
                while not fn & 1 and fn:
                    fn, sn = fn >> 1, sn >> 1
            else:
                r = _h(b"\x01" + r + p)
            fn, sn = fn >> 1, sn >> 1
        assert sn == 0 and r == root
    return size, entries


# -- the test ---------------------------------------------------------------------------------


@pytest.fixture
def tiled(store_url, tmp_path):
    key = tmp_path / "log.key"
    with evstore.open(store_url) as s:
        s.log.init_key(key, origin="tiles.test/log")
        vkey = s.log.key()
    tokens = make_tokens(store_url)
    server = start_process(
        ["--store", store_url, "serve", "--no-access-log", "--public-read"], tmp_path
    )
    server.tokens = tokens
    yield server, key, vkey
    server.stop()


def test_a_verifier_from_the_specs_rebuilds_the_signed_root_from_served_tiles(
    tiled, store_url, tmp_path
):
    server, key, vkey = tiled
    export = tmp_path / "static"
    with server.client("read") as c:
        assert c.get("/checkpoint").status_code == 404
        assert c.get("/tile/0/000.p/1").json()["code"] == "tiles.missing"
        assert c.get("/tile/0/0").json()["code"] == "tiles.malformed"
        assert c.get("/tile/0/000.p/256").json()["code"] == "tiles.malformed"

        def get(p: str) -> bytes:
            r = c.get("/" + p)
            assert r.status_code == 200, (p, r.text)
            full = p.startswith("tile/") and ".p/" not in p
            assert ("immutable" in r.headers["cache-control"]) == full, p
            return r.content

        written = 0
        with evstore.open(store_url) as s:
            for size in (1, 5, 256, 257, 600, 771):  # partial tiles at levels 0 and 1
                have = s.log.status()["size"]
                s.put_many([b"tiles entry %d" % i for i in range(have, size)])
                assert s.log.checkpoint(key)["size"] == size
                got_size, entries = verify_tiled_log(get, vkey)
                assert got_size == size
                assert entries == [base64.b64decode(e["bytes"]) for e in s.log.entries()]
                # evstore's own verifier, from the URL and from an exported directory
                for m in (0, size // 2, size - 1):
                    r = evstore.verify_log_tiles(server.base, vkey, m)  # public reads: a URL
                    assert (r["index"], r["size"]) == (m, size)
                out = s.log.export_tiles(export)
                assert out["size"] == size
                written += out["written"]
                done = verify_tiled_log(lambda p: (export / p).read_bytes(), vkey)
                assert done[0] == size
        # the exported full tiles were kept, not rewritten, as the log grew
        assert out["kept"] >= 3
        again = CliRunner().invoke(
            cli, ["--store", store_url, "log", "tiles", "export", str(export)]
        )
        assert again.exit_code == 0, again.output
        assert "kept" in again.output


def test_evstore_verifies_an_entry_from_tiles_alone(tiled, store_url, tmp_path):
    server, key, vkey = tiled
    with evstore.open(store_url) as s:
        s.put_many([b"verify %d" % i for i in range(300)])
        target = s.put(b"the evidence")
        s.log.checkpoint(key)
        s.log.export_tiles(tmp_path / "static")
    r = evstore.verify_log_tiles(str(tmp_path / "static"), vkey, 300, b"the evidence")
    assert r["index"] == 300 and r["size"] == 301 and r["content"] is True
    assert r["entry"]["address"] == target.digest.address
    with pytest.raises(evstore.EvstoreError) as exc:
        evstore.verify_log_tiles(str(tmp_path / "static"), vkey, 300, b"other bytes")
    assert exc.value.code == "log.content-mismatch"
    # a tampered tile is caught: the root no longer matches the signed one
    tile = tmp_path / "static" / "tile" / "0" / "000"
    data = bytearray(tile.read_bytes())
    data[40] ^= 1
    tile.write_bytes(bytes(data))
    with pytest.raises(evstore.EvstoreError) as exc:
        evstore.verify_log_tiles(str(tmp_path / "static"), vkey, 3)
    assert exc.value.code == "tlog-proof.inclusion"
    # over HTTP from the server (a URL prefix), and through the CLI
    r = evstore.verify_log_tiles(server.base, vkey, 7)
    assert r["index"] == 7 and r["size"] == 301
    vfile = tmp_path / "vkey"
    vfile.write_text(vkey + "\n")
    ok = CliRunner().invoke(
        cli, ["verify-proof", "--tiles", server.base, "--index", "300", "--key", str(vfile)]
    )
    assert ok.exit_code == 0 and "entry 300" in ok.output, ok.output
    res = CliRunner().invoke(
        cli,
        ["verify-proof", "--tiles", str(tmp_path / "static"), "--index", "5", "--key", str(vfile)],
    )
    assert res.exit_code == 1, res.output


WRITER = r"""
import json, sys, time
import evstore
url, i, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
acked, n = [], 0
with evstore.open(url) as s:
    end = time.monotonic() + seconds  # from the open: starting up is not writing
    while time.monotonic() < end and n < 300:
        r = s.put(b"server test writer %d write %d" % (i, n))
        if r.new:
            acked.append(r.digest.address)
        n += 1
print(json.dumps(acked))
"""


def test_two_signing_servers_and_eight_writers_on_one_database(store_url, tmp_path):
    """Two `evstore serve --log-key` integrate and sign one store while eight processes write."""
    import json
    import subprocess
    import sys

    key = tmp_path / "log.key"
    with evstore.open(store_url) as s:
        s.log.init_key(key)
        vkey = s.log.key()
    servers = [
        start_process(
            ["--store", store_url, "serve", "--no-access-log", "--public-read"]
            + ["--log-key", str(key), "--checkpoint-every", "0.3"],
            tmp_path,
        )
        for _ in range(2)
    ]
    try:
        writers = [
            subprocess.Popen(
                [sys.executable, "-c", WRITER, store_url, str(i), "4"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(8)
        ]
        acked: list[str] = []
        for p in writers:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
            acked += json.loads(out.strip().splitlines()[-1])
        assert len(acked) >= 8
        # both servers keep integrating and signing: wait (bounded) for a checkpoint of all
        import time

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with evstore.open(store_url) as s:
                latest = s.log.latest()
            if latest is not None and latest["size"] == len(acked):
                break
            time.sleep(0.2)
        assert latest is not None and latest["size"] == len(acked)
        for server in servers:  # each serves the same tiles, which verify
            r = evstore.verify_log_tiles(server.base, vkey, len(acked) - 1)
            assert r["size"] >= len(acked)
    finally:
        for server in servers:
            assert server.stop() == 0
    with evstore.open(store_url) as s:
        assert s.log.status()["pending"] == 0
        entries = s.log.entries()
        assert [e["index"] for e in entries] == list(range(len(acked)))
        assert sorted(e["entry"]["address"] for e in entries) == sorted(acked)
        with s.db.read() as conn:
            import sqlalchemy as sa

            from evstore.db.tables import log_checkpoints

            sizes = sorted(int(r[0]) for r in conn.execute(sa.select(log_checkpoints.c.size)))
        for old, new in zip(sizes, sizes[1:], strict=False):
            r = evstore.verify_log_proof(s.log.prove_consistency(old, new)["text"], vkey)
            assert r["old_root_signed"] is True
        assert list(s.check(record=False)) == []
