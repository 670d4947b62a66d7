"""store/tlog/checkpoint.py: C2SP signed notes, checkpoints, keys and tlog-proof files."""

import base64
import hashlib
import os
import stat

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from evstore.core.errors import InputError
from evstore.tlog import checkpoint as cp
from evstore.tlog.checkpoint import (
    Checkpoint,
    CheckpointError,
    Signer,
    TlogProof,
    Verifier,
    format_tlog_proof,
    key_id,
    parse_checkpoint,
    parse_tlog_proof,
    parse_vkey,
    read_private_key,
    sign_checkpoint,
    sign_note,
    verify_checkpoint,
    verify_note,
    verify_tlog_proof,
)
from evstore.tlog.merkle import MemoryTree, leaf_hash

ORIGIN = "evstore.example/log"

# The published example of golang.org/x/mod/sumdb/note (the reference implementation).
GO_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
GO_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
GO_TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
GO_NOTE = (
    GO_TEXT + "\n\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZ"
    "SNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
)


@pytest.fixture(scope="module")
def signer():
    return Signer.generate(ORIGIN)


@pytest.fixture(scope="module")
def tree():
    return MemoryTree([f"entry {i}".encode() for i in range(13)])


@pytest.fixture(scope="module")
def note(signer, tree):
    return sign_checkpoint(Checkpoint(ORIGIN, 13, tree.root()), signer)


def _code(call):
    with pytest.raises(CheckpointError) as info:
        call()
    assert isinstance(info.value, InputError)
    return info.value.code


def _write_key_file(path, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(line + "\n")


# ---------------------------------------------------------------------------------------
# Known answers from the reference implementation
# ---------------------------------------------------------------------------------------


def test_go_reference_note_signs_and_verifies_byte_for_byte(tmp_path):
    _write_key_file(tmp_path / "go.key", GO_SKEY)
    go = read_private_key(tmp_path / "go.key")
    assert go.verifier.vkey() == GO_VKEY
    assert go.private_key_line() == GO_SKEY
    assert go.verifier.key_id.hex() == "c74f20a3"
    assert sign_note(GO_TEXT, go) == GO_NOTE  # Ed25519 is deterministic (RFC 8032)
    assert verify_note(GO_NOTE, parse_vkey(GO_VKEY)) == GO_TEXT
    assert verify_note(GO_NOTE.encode(), parse_vkey(GO_VKEY)) == GO_TEXT


def test_key_id_is_the_signed_note_hash():
    public = bytes(range(32))
    want = hashlib.sha256(b"name\n\x01" + public).digest()[:4]
    assert key_id("name", public) == want
    assert Verifier("name", public).key_id == want


# ---------------------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------------------


def test_checkpoint_round_trip(signer, tree, note):
    lines = note.split("\n")
    assert lines[:3] == [ORIGIN, "13", base64.b64encode(tree.root()).decode()]
    assert lines[3] == "" and lines[4].startswith(f"\u2014 {ORIGIN} ") and lines[5] == ""
    raw = base64.b64decode(lines[4].split(" ")[2])
    assert raw[:4] == signer.verifier.key_id and len(raw) == 68
    got = verify_checkpoint(note, signer.verifier)
    assert got == Checkpoint(ORIGIN, 13, tree.root())
    assert verify_checkpoint(note, parse_vkey(signer.verifier.vkey()), origin=ORIGIN) == got


def test_checkpoint_signature_verifies_with_plain_ed25519(signer, note):
    """The note format checked with nothing of evstore's but base64 and the key bytes."""
    text, _, sig_line = note.rpartition("\n\n")
    name, blob = sig_line.rstrip("\n").removeprefix("\u2014 ").split(" ")
    raw = base64.b64decode(blob)
    public = base64.b64decode(signer.verifier.vkey().split("+", 2)[2])[1:]
    Ed25519PublicKey.from_public_bytes(public).verify(raw[4:], (text + "\n").encode())
    assert name == ORIGIN


def test_extensions_and_size_zero_round_trip(signer):
    empty = hashlib.sha256(b"").digest()
    c = Checkpoint(ORIGIN, 0, empty, ("ext one", "ext two"))
    assert c.text().endswith("ext one\next two\n")
    assert verify_checkpoint(sign_checkpoint(c, signer), signer.verifier) == c
    assert parse_checkpoint(c.text()) == c


def test_vkey_round_trip(signer):
    vkey = signer.verifier.vkey()
    name, hex_id, encoded = vkey.split("+", 2)
    assert name == ORIGIN and hex_id == signer.verifier.key_id.hex()
    assert base64.b64decode(encoded)[0] == 1
    assert parse_vkey(vkey) == signer.verifier
    assert parse_vkey(vkey + "\n") == signer.verifier
    assert parse_vkey(vkey).vkey() == vkey


def test_other_signatures_are_ignored(signer, note):
    witness = Signer.generate("witness.example")
    text = note[: note.rindex("\n\n") + 1]
    extra = sign_note(text, witness).split("\n\n")[-1]
    cosigned = note + extra
    assert verify_checkpoint(cosigned, signer.verifier).size == 13
    assert verify_note(cosigned, witness.verifier) == text
    # A line by another key that shares the name (not the key ID) is ignored too.
    impostor = Signer.generate(ORIGIN)
    assert verify_checkpoint(note + sign_note(text, impostor).split("\n\n")[-1], signer.verifier)


# ---------------------------------------------------------------------------------------
# Tampering and malformed input: each fails with its typed reason
# ---------------------------------------------------------------------------------------


def test_tampered_checkpoints_fail(signer, tree, note):
    text, sig = note.split("\n\n", 1)
    lines = text.split("\n")
    root = base64.b64decode(lines[2])
    other_root = base64.b64encode(bytes([root[0] ^ 1]) + root[1:]).decode()
    tampered = {
        "size": [lines[0], "14", lines[2]],
        "size-down": [lines[0], "12", lines[2]],
        "root": [lines[0], lines[1], other_root],
        "extension": [*lines, "extra line"],
    }
    for what, new in tampered.items():
        bad = "\n".join(new) + "\n\n" + sig
        assert _code(lambda bad=bad: verify_checkpoint(bad, signer.verifier)) == (
            "checkpoint.signature"
        ), what
    origin = "\n".join(["other.example/log", *lines[1:]]) + "\n\n" + sig
    assert _code(lambda: verify_checkpoint(origin, signer.verifier)) == "checkpoint.signature"


def test_every_signature_byte_matters(signer, note):
    head, _, line = note.rstrip("\n").rpartition("\n")
    prefix, blob = line.rsplit(" ", 1)
    raw = base64.b64decode(blob)
    for i in range(len(raw)):
        for bit in (0, 7):
            bad_raw = raw[:i] + bytes([raw[i] ^ (1 << bit)]) + raw[i + 1 :]
            bad = f"{head}\n{prefix} {base64.b64encode(bad_raw).decode()}\n"
            want = "checkpoint.unsigned" if i < 4 else "checkpoint.signature"
            assert _code(lambda bad=bad: verify_checkpoint(bad, signer.verifier)) == want, i
    short = f"{head}\n{prefix} {base64.b64encode(raw[:-1]).decode()}\n"
    assert _code(lambda: verify_checkpoint(short, signer.verifier)) == "checkpoint.signature"


def test_wrong_key_and_wrong_origin(signer, tree, note):
    stranger = Signer.generate("stranger.example")
    assert _code(lambda: verify_checkpoint(note, stranger.verifier)) == "checkpoint.unsigned"
    same_name = Signer.generate(ORIGIN)  # the same name, another key: another key ID
    assert _code(lambda: verify_checkpoint(note, same_name.verifier)) == "checkpoint.unsigned"
    assert (
        _code(lambda: verify_checkpoint(note, signer.verifier, origin="evstore.example/other"))
        == "checkpoint.origin"
    )
    # Correctly signed by the key, but for another log's origin.
    elsewhere = sign_checkpoint(Checkpoint("other.example/log", 13, tree.root()), signer)
    assert _code(lambda: verify_checkpoint(elsewhere, signer.verifier)) == "checkpoint.origin"


@pytest.mark.parametrize(
    "mangle",
    [
        lambda n: n.rstrip("\n"),  # no final newline
        lambda n: n.replace("\n\n", "\n"),  # no blank line
        lambda n: n.split("\n\n")[0] + "\n\n",  # no signature line
        lambda n: n.replace("\u2014 ", "- "),  # not an em dash
        lambda n: n.replace("\u2014 ", "\u2014  "),  # two spaces
        lambda n: n.replace("=\n", "=\r\n"),  # a control character
        lambda n: n.replace("\n\u2014", "\n\u2014 \n\u2014"),  # an empty signature line
        lambda n: n[:-3] + "!=\n",  # not base64
        lambda n: n.replace("\n\u2014", "\n\u2014 x AAAA\n\u2014"),  # shorter than a key ID
        lambda n: n.encode("utf-16"),  # not UTF-8
        lambda n: n + ("\u2014 " + n.split("\u2014 ")[1]) * cp.MAX_SIGNATURES,  # too many
        lambda n: 42,
    ],
)
def test_malformed_notes(signer, note, mangle):
    assert _code(lambda: verify_checkpoint(mangle(note), signer.verifier)) == (
        "checkpoint.malformed"
    )


@pytest.mark.parametrize(
    "text",
    [
        "origin\n12\n",  # two lines
        "origin\n012\nAAAA\n",  # leading zero
        "origin\n-1\nAAAA\n",
        "origin\n1_000\nAAAA\n",
        "origin\n\u0661\nAAAA\n",  # a non-ASCII digit
        "origin\n18446744073709551616\n" + base64.b64encode(bytes(32)).decode() + "\n",
        "origin\n1\n" + base64.b64encode(bytes(31)).decode() + "\n",  # 31-byte root
        "origin\n1\n" + base64.b64encode(bytes(32)).decode().rstrip("=") + "\n",  # no padding
        "origin\n1\n" + base64.b64encode(bytes(32)).decode()[:-2] + "B=\n",  # non-canonical
        "origin\n1\n" + base64.b64encode(bytes(32)).decode() + "\n\n",  # empty extension
        "\n1\n" + base64.b64encode(bytes(32)).decode() + "\n",  # empty origin
        "origin\n1\n" + base64.b64encode(bytes(32)).decode(),  # no final newline
    ],
)
def test_malformed_checkpoint_text_fails_even_when_signed(signer, text):
    assert _code(lambda: parse_checkpoint(text)) == "checkpoint.malformed"
    if text.endswith("\n") and "\n\n" not in text:
        signed = sign_note(text, signer)
        assert _code(lambda: verify_checkpoint(signed, signer.verifier)) == ("checkpoint.malformed")


def test_checkpoint_fields_are_checked():
    for args in [
        ("", 1, bytes(32)),
        ("a\nb", 1, bytes(32)),
        ("o", -1, bytes(32)),
        ("o", True, bytes(32)),
        ("o", 2**64, bytes(32)),
        ("o", 1, bytes(31)),
        ("o", 1, bytes(32), ("",)),
        ("o", 1, bytes(32), ("a\nb",)),
    ]:
        assert _code(lambda args=args: Checkpoint(*args)) == "checkpoint.malformed", args


@pytest.mark.parametrize(
    "vkey",
    [
        "",
        "name",
        "name+c74f20a3",
        "+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # empty name
        "Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # a space
        "PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # wrong key ID
        "PeterNeumann+c74f20a+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # 7 hex digits
        "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10T",  # not base64
        "PeterNeumann+c74f20a3+AhpC2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # type 0x02
        "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==",
        "PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
    ],
)
def test_malformed_vkeys(vkey):
    assert _code(lambda: parse_vkey(vkey)) == "checkpoint.key"


def test_every_single_character_change_of_a_vkey_fails():
    for i, char in enumerate(GO_VKEY):
        bad = GO_VKEY[:i] + chr(ord(char) + 1) + GO_VKEY[i + 1 :]
        with pytest.raises(CheckpointError):
            parse_vkey(bad)


def test_key_names_are_checked():
    for name in ["", "a b", "a+b", "a\tb", "a\u00a0b", "a\nb"]:
        assert _code(lambda name=name: Signer.generate(name)) == "checkpoint.key", name


# ---------------------------------------------------------------------------------------
# Private key files
# ---------------------------------------------------------------------------------------


def test_private_key_file_is_0600_and_round_trips(tmp_path, signer):
    path = tmp_path / "log.key"
    old = os.umask(0)
    try:
        signer.write_private_key(path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = read_private_key(path)
    assert again.verifier == signer.verifier
    assert again.private_key_line() == signer.private_key_line()
    with pytest.raises(FileExistsError):
        signer.write_private_key(path)  # never overwritten
    assert read_private_key(str(path)).verifier == signer.verifier


def test_exposed_or_malformed_private_key_files_are_refused(tmp_path, signer):
    path = tmp_path / "open.key"
    signer.write_private_key(path)
    os.chmod(path, 0o644)
    assert _code(lambda: read_private_key(path)) == "checkpoint.key"
    assert read_private_key(path, require_private=False).verifier == signer.verifier
    line = signer.private_key_line()
    for i, bad in enumerate(
        [
            "",
            line.replace("PRIVATE+KEY+", "PRIVATE+KEE+"),
            line.replace(signer.verifier.key_id.hex(), "00000000"),
            line[:-4],
            GO_VKEY,
            "\xff",
        ]
    ):
        p = tmp_path / f"bad{i}.key"
        _write_key_file(p, bad)
        assert _code(lambda p=p: read_private_key(p)) == "checkpoint.key", bad


# ---------------------------------------------------------------------------------------
# tlog-proof files
# ---------------------------------------------------------------------------------------


def _proof(tree, note, index, extra=None):
    return TlogProof(index, tuple(tree.inclusion_proof(index, 13)), note, extra)


def test_tlog_proof_round_trip_and_verify(signer, tree, note):
    for index in range(13):
        entry = f"entry {index}".encode()
        for extra in (None, entry):
            proof = _proof(tree, note, index, extra)
            text = format_tlog_proof(proof)
            lines = text.split("\n")
            assert lines[0] == "c2sp.org/tlog-proof@v1"
            assert (lines[1] == f"index {index}") == (extra is None)
            assert text.endswith("\n\n" + note)
            parsed = parse_tlog_proof(text)
            assert parsed == proof
            assert parse_tlog_proof(text.encode()) == proof
            got = verify_tlog_proof(parsed, leaf_hash(entry), signer.verifier)
            assert got.size == 13 and got.root_hash == tree.root()


def test_tlog_proof_of_the_published_example_shape():
    text = (
        "c2sp.org/tlog-proof@v1\nextra YWdl\nindex 73894\n"
        "gSKyXoYZUgZ6jduWYrkDOARinOMGJveXjgMkBTcdPlQ=\n"
        "B95lDa8R83lS8n0eG+o0buTxRKQTYFi//1U8anccXmA=\n\n"
        "example.com/fancylog\n109482\nsFodV/vSp5O8n9a8QpW6PRY97tfOSW5bsc2Xl/EQi08=\n\n"
        "\u2014 example.com/fancylog AAAAAAAA\n"
    )
    proof = parse_tlog_proof(text)
    assert proof.index == 73894 and proof.extra == b"age" and len(proof.hashes) == 2
    assert proof.checkpoint.startswith("example.com/fancylog\n109482\n")
    assert format_tlog_proof(proof) == text


def test_tlog_proof_tampering_fails(signer, tree, note):
    entry = b"entry 5"
    proof = _proof(tree, note, 5)
    assert verify_tlog_proof(proof, leaf_hash(entry), signer.verifier)
    for bad in [
        TlogProof(6, proof.hashes, note),
        TlogProof(5, proof.hashes[:-1], note),
        TlogProof(5, (*proof.hashes, proof.hashes[0]), note),
        TlogProof(5, (bytes(32), *proof.hashes[1:]), note),
    ]:
        code = _code(lambda bad=bad: verify_tlog_proof(bad, leaf_hash(entry), signer.verifier))
        assert code == "tlog-proof.inclusion"
    code = _code(lambda: verify_tlog_proof(proof, leaf_hash(b"entry 6"), signer.verifier))
    assert code == "tlog-proof.inclusion"
    stranger = Signer.generate("stranger.example")
    code = _code(lambda: verify_tlog_proof(proof, leaf_hash(entry), stranger.verifier))
    assert code == "checkpoint.unsigned"
    forged = TlogProof(5, proof.hashes, note.replace("\n13\n", "\n14\n"))
    code = _code(lambda: verify_tlog_proof(forged, leaf_hash(entry), signer.verifier))
    assert code == "checkpoint.signature"


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t.replace("c2sp.org/tlog-proof@v1", "c2sp.org/tlog-proof@v2"),
        lambda t: t.replace("index 5", "index 05"),
        lambda t: t.replace("index 5", "index -5"),
        lambda t: t.replace("index 5", "idx 5"),
        lambda t: t.replace("index 5\n", ""),
        lambda t: t.replace("index 5\n", "index 5\nAAAA\n"),  # a 3-byte hash
        lambda t: t.replace("index 5\n", "index 5\n!!!!\n"),
        lambda t: t.replace("index 5\n", "index 5\nextra YWdl\n"),  # extra after the index
        lambda t: t.replace("\n\n", "\n", 1),  # no blank line before the checkpoint
        lambda t: t.split("\n\n")[0] + "\n\n",  # no checkpoint
        lambda t: t.encode("utf-16"),
    ],
)
def test_malformed_tlog_proofs(tree, note, mangle):
    text = format_tlog_proof(_proof(tree, note, 5))
    assert _code(lambda: parse_tlog_proof(mangle(text))) == "tlog-proof.malformed"


def test_all_is_sorted_and_complete():
    assert list(cp.__all__) == sorted(cp.__all__)
    for name in cp.__all__:
        assert hasattr(cp, name)


def test_sixteen_signatures_are_accepted(signer, note):
    text = note[: note.rindex("\n\n") + 1]
    lines = "".join(
        sign_note(text, Signer.generate(f"w{i}.example")).split("\n\n")[-1] for i in range(15)
    )
    assert verify_checkpoint(note + lines, signer.verifier).size == 13
