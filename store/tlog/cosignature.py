r"""Witness cosignatures (C2SP tlog-cosignature, Ed25519), the witness's decision, policies.

Pure: no storage, no network. The parts of issue 26's witness protocol every side needs:

* :class:`Cosigner` / :class:`CosignerKey`: a witness's Ed25519 key. Its key ID is
  ``SHA-256(name || 0x0A || 0x04 || public key)[:4]``; its verifier key string is
  ``<name>+<hex key ID>+<base64(0x04 || public key)>``.
* A cosignature is a signed-note line ``— <name> base64(key ID || u64 timestamp (big-endian)
  || Ed25519 signature)`` whose signed message is ``cosignature/v1\n``, ``time <T>\n`` and
  then the checkpoint's whole note body (its lines up to the blank line, with the final
  newline). It states that, at time T, this is the largest consistent tree the witness saw.
* :func:`format_add_checkpoint` / :func:`parse_add_checkpoint`: the body of C2SP
  tlog-witness ``POST <prefix>/add-checkpoint`` (``old <size>``, at most 63 base64
  consistency proof lines, a blank line, the signed checkpoint).
* :func:`witness_decision`: what a witness answers to one add-checkpoint, given the log key
  it trusts for the origin and the latest checkpoint it cosigned; a refusal is typed with
  the status the protocol names (404 unknown origin, 403 no trusted signature, 400 an old
  size beyond the checkpoint, 409 another old size or a fork at the same size, 422 a
  consistency proof that does not verify).
* :class:`Policy`: which witnesses a verifier trusts and how many must cosign (a
  tlog-policy style text), and :meth:`Policy.check` on a cosigned checkpoint.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import stat
import urllib.parse
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from ..core.errors import error
from . import merkle
from .checkpoint import Checkpoint, Verifier, parse_checkpoint, parse_vkey, verify_note

__all__ = [
    "COSIGNATURE_TYPE",
    "Cosigner",
    "CosignerKey",
    "Policy",
    "cosigned_message",
    "format_add_checkpoint",
    "parse_add_checkpoint",
    "parse_cosignature_lines",
    "parse_cosigner_vkey",
    "read_cosigner_key",
    "verified_cosigners",
    "witness_decision",
]

#: The signature type byte of an Ed25519 cosignature key (tlog-cosignature).
COSIGNATURE_TYPE = 0x04
#: The most consistency proof lines an add-checkpoint request may carry.
MAX_PROOF_LINES = 63
_DASH = "\u2014 "
_PRIVATE_PREFIX = "PRIVATE+KEY+"
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,19}", re.ASCII)
#: The largest tree size a witness records: a signed 64-bit integer column on both backends.
MAX_TREE_SIZE = (1 << 63) - 1


def _key_id(name: str, public_key: bytes) -> bytes:
    return hashlib.sha256(
        name.encode("utf-8") + b"\n" + bytes([COSIGNATURE_TYPE]) + public_key
    ).digest()[:4]


def cosigned_message(note_body: str, timestamp: int) -> bytes:
    """The bytes an Ed25519 cosignature signs: header, time line, the note body."""
    return f"cosignature/v1\ntime {int(timestamp)}\n{note_body}".encode()


@dataclass(frozen=True)
class CosignerKey:
    """A witness's public key: its name and 32-byte Ed25519 key (type 0x04)."""

    name: str
    public_key: bytes

    @property
    def key_id(self) -> bytes:
        """The 4-byte key ID (module docstring)."""
        return _key_id(self.name, self.public_key)

    def vkey(self) -> str:
        """``<name>+<hex key ID>+<base64(0x04 || public key)>``."""
        raw = bytes([COSIGNATURE_TYPE]) + self.public_key
        return f"{self.name}+{self.key_id.hex()}+{base64.b64encode(raw).decode()}"

    def timestamp_of(self, note_body: str, raw: bytes) -> int | None:
        """The timestamp of ``raw`` (key ID || u64 || signature) if it verifies, else None."""
        if len(raw) != 4 + 8 + 64 or raw[:4] != self.key_id:
            return None
        stamp = int.from_bytes(raw[4:12], "big")
        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(
                raw[12:], cosigned_message(note_body, stamp)
            )
        except (InvalidSignature, ValueError):
            return None
        return stamp


def parse_cosigner_vkey(text: str) -> CosignerKey:
    """Parse ``<name>+<hex key ID>+<base64(0x04 || key)>``.

    Raises:
        InputError: ``witness.key`` (malformed, another type, a key ID that does not match).
    """
    parts = str(text).strip().split("+", 2)
    if len(parts) != 3 or not parts[0] or any(c.isspace() for c in parts[0]):
        raise error("witness.key", "a cosigner key is <name>+<key ID>+<base64 key>")
    try:
        raw = base64.b64decode(parts[2], validate=True)
    except (binascii.Error, ValueError):
        raise error("witness.key", "a cosigner key's key is base64") from None
    if len(raw) != 33 or raw[0] != COSIGNATURE_TYPE:
        raise error("witness.key", "a cosigner key is of type 0x04 (Ed25519 cosignature)")
    key = CosignerKey(parts[0], raw[1:])
    if key.key_id.hex() != parts[1].lower():
        raise error("witness.key", "the key ID does not match the name and key")
    return key


class Cosigner:
    """A witness's private key (Ed25519): signs cosignature lines.

    Args:
        name: the witness's name (a schema-less URL by convention).
        private_key: its Ed25519 private key.
    """

    def __init__(self, name: str, private_key: Ed25519PrivateKey) -> None:
        self.name = name
        self._private = private_key
        raw = private_key.public_key().public_bytes_raw()
        self.key = CosignerKey(name, raw)

    @classmethod
    def generate(cls, name: str) -> Cosigner:
        """A new random witness key named ``name``."""
        return cls(name, Ed25519PrivateKey.generate())

    def private_key_line(self) -> str:
        """``PRIVATE+KEY+<name>+<hex key ID>+<base64(0x04 || seed)>`` (the key ID of type 0x04)."""
        seed = self._private.private_bytes_raw()
        raw = base64.b64encode(bytes([COSIGNATURE_TYPE]) + seed).decode()
        return f"{_PRIVATE_PREFIX}{self.name}+{self.key.key_id.hex()}+{raw}"

    def write_private_key(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`private_key_line` to a new file created with mode 0600.

        An existing file is never overwritten (FileExistsError); OSError propagates.
        """
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path, flags, 0o600)
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, 0o600)  # whatever the umask was
            os.write(fd, (self.private_key_line() + "\n").encode("utf-8"))
        finally:
            os.close(fd)

    def cosign(self, note: str, timestamp: int) -> str:
        """The cosignature line (with its newline) over the note's body at ``timestamp``.

        Args:
            note: the signed checkpoint note (its body is what is cosigned).
            timestamp: POSIX seconds, 0 .. 2**63 - 1.
        """
        body = _body(note)
        sig = self._private.sign(cosigned_message(body, timestamp))
        raw = self.key.key_id + int(timestamp).to_bytes(8, "big") + sig
        return f"{_DASH}{self.name} {base64.b64encode(raw).decode()}\n"


def read_cosigner_key(path: str | os.PathLike[str]) -> Cosigner:
    """Load a witness key from a file written by :meth:`Cosigner.write_private_key`.

    Raises:
        InputError: ``witness.key`` (malformed, another key type, a key ID that does not
            match, or a file group or others may read: it must be 0600, as ssh wants).
        OSError: the file cannot be read.
    """
    with open(path, "rb") as handle:
        if os.name == "posix" and stat.S_IMODE(os.fstat(handle.fileno()).st_mode) & 0o077:
            raise error("witness.key", "the witness key file must have mode 0600")
        data = handle.read(4096)
    text = data.decode("utf-8", "replace").removesuffix("\n")
    parts = text.removeprefix(_PRIVATE_PREFIX).split("+", 2)
    if not text.startswith(_PRIVATE_PREFIX) or len(parts) != 3 or not parts[0]:
        raise error("witness.key", "a witness key file is PRIVATE+KEY+<name>+<key ID>+<key>")
    try:
        raw = base64.b64decode(parts[2], validate=True)
    except (binascii.Error, ValueError):
        raise error("witness.key", "a witness key file's key is base64") from None
    if len(raw) != 33 or raw[0] != COSIGNATURE_TYPE:
        raise error("witness.key", "a witness key file holds a type 0x04 Ed25519 seed")
    cosigner = Cosigner(parts[0], Ed25519PrivateKey.from_private_bytes(raw[1:]))
    if cosigner.key.key_id.hex() != parts[1].lower():
        raise error("witness.key", "the witness key file's key ID does not match its key")
    return cosigner


def parse_cosignature_lines(body: bytes) -> list[str]:
    """The note signature lines of a tlog-witness 200 answer (each ending in a newline).

    Raises:
        InputError: ``witness.response`` (not UTF-8, empty, or a line not of the form).
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise error("witness.response", "a witness answer is UTF-8") from None
    if not text.endswith("\n") or len(text) > 64 * 1024:
        raise error("witness.response", "a witness answer is signature lines, each ending in \\n")
    lines = [line + "\n" for line in text[:-1].split("\n")]
    if any(not line.startswith(_DASH) or " " not in line[len(_DASH) :] for line in lines):
        raise error("witness.response", "a witness answer line starts with '\u2014 <name> '")
    return lines


def _body(note: str) -> str:
    cut = note.find("\n\n")
    if cut < 0:
        raise error("checkpoint.malformed", "a signed note separates its body by a blank line")
    return note[: cut + 1]


def _lines(note: str) -> list[tuple[str, bytes]]:
    cut = note.find("\n\n")
    out = []
    for line in note[cut + 2 :].split("\n") if cut >= 0 else []:
        if not line.startswith(_DASH):
            continue
        name, _, encoded = line[len(_DASH) :].partition(" ")
        try:
            out.append((name, base64.b64decode(encoded, validate=True)))
        except (binascii.Error, ValueError):
            continue
    return out


def verified_cosigners(note: str, keys: list[CosignerKey]) -> dict[str, int]:
    """``{witness name: timestamp}`` of the cosignatures in ``note`` that verify by ``keys``.

    Lines of unknown keys, and lines that do not verify, are ignored (signed-note).
    """
    body = _body(note)
    found: dict[str, int] = {}
    for name, raw in _lines(note):
        for key in keys:
            if key.name == name:
                stamp = key.timestamp_of(body, raw)
                if stamp is not None:
                    found[name] = stamp
    return found


def format_add_checkpoint(old_size: int, proof: list[bytes], note: str) -> bytes:
    """The body of a tlog-witness add-checkpoint request."""
    lines = [f"old {int(old_size)}"] + [base64.b64encode(h).decode() for h in proof]
    return ("\n".join(lines) + "\n\n" + note).encode("utf-8")


def parse_add_checkpoint(body: bytes) -> tuple[int, list[bytes], str]:
    """``(old size, consistency proof, signed checkpoint note)`` of an add-checkpoint body.

    Raises:
        InputError: ``witness.request`` (a body not of the format).
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise error("witness.request", "an add-checkpoint body is UTF-8") from None
    head, sep, note = text.partition("\n\n")
    lines = head.split("\n")
    if not sep or not lines[0].startswith("old "):
        raise error("witness.request", "an add-checkpoint body starts with 'old <size>'")
    size = lines[0][4:]
    if not _DECIMAL.fullmatch(size):
        raise error("witness.request", "the old size is a decimal with no leading zero")
    if len(lines) - 1 > MAX_PROOF_LINES:
        raise error("witness.request", f"at most {MAX_PROOF_LINES} consistency proof lines")
    proof = []
    for line in lines[1:]:
        try:
            raw = base64.b64decode(line, validate=True)
        except (binascii.Error, ValueError):
            raise error("witness.request", "a proof line is one base64 hash") from None
        if len(raw) != merkle.HASH_SIZE:
            raise error("witness.request", "a proof line is one 32-byte hash")
        proof.append(raw)
    if int(size) > MAX_TREE_SIZE:
        raise error("witness.request", f"the old size is at most {MAX_TREE_SIZE} (2^63 - 1)")
    return int(size), proof, note


def witness_decision(
    logs: dict[str, Verifier],
    latest: tuple[int, bytes] | None,
    old_size: int,
    proof: list[bytes],
    note: str,
) -> Checkpoint:
    """Decide one add-checkpoint (C2SP tlog-witness): the checkpoint to record and cosign.

    The caller reads ``latest`` and records the result in one transaction (the check and the
    update must be atomic, or two requests could roll the witness back).

    Args:
        logs: the log keys the witness trusts, by origin.
        latest: ``(size, root)`` of the latest checkpoint cosigned for this origin, or None.
        old_size: the request's old size (:func:`parse_add_checkpoint`).
        proof: its consistency proof hashes.
        note: its signed checkpoint.

    Returns:
        The verified checkpoint, consistent with ``latest``.

    Raises:
        NotFound: ``witness.unknown-log`` (404). InputError: ``witness.unsigned`` (403: no
        signature by the trusted key), ``witness.old-size`` (400: beyond the checkpoint),
        ``witness.conflict`` (409: not the size last cosigned, ``details["size"]`` it, or
        another root at that size: a fork), ``witness.inconsistent`` (422: the proof does
        not verify: a fork).
    """
    try:
        origin = parse_checkpoint(note[: note.find("\n\n") + 1]).origin
    except Exception:  # any parse fault: not a checkpoint at all
        raise error("witness.request", "the request carries no checkpoint") from None
    verifier = logs.get(origin)
    if verifier is None:
        raise error("witness.unknown-log", f"this witness does not follow {origin!r}")
    try:
        checkpoint = parse_checkpoint(verify_note(note, verifier))
    except Exception:  # CheckpointError of any kind: not signed by the trusted key
        raise error("witness.unsigned", f"no valid signature by {verifier.vkey()}") from None
    if checkpoint.size > MAX_TREE_SIZE:
        raise error(
            "witness.request",
            f"a tree size this witness keeps is at most {MAX_TREE_SIZE} (2^63 - 1), not "
            f"{checkpoint.size}",
        )
    if old_size > checkpoint.size:
        raise error("witness.old-size", f"old size {old_size} > {checkpoint.size}")
    have_size, have_root = latest if latest is not None else (0, merkle.EMPTY_ROOT)
    if old_size != have_size:
        raise error("witness.conflict", f"the latest cosigned size is {have_size}", size=have_size)
    if old_size == checkpoint.size:
        if checkpoint.root_hash != have_root:
            raise error("witness.conflict", "another root at the cosigned size: a fork")
        return checkpoint
    if old_size == 0:
        if proof:
            raise error("witness.inconsistent", "a proof from size 0 is empty")
        return checkpoint
    if not merkle.verify_consistency(
        old_size, checkpoint.size, have_root, checkpoint.root_hash, proof
    ):
        raise error(
            "witness.inconsistent",
            f"the checkpoint of size {checkpoint.size} does not extend the one of size"
            f" {old_size} this witness cosigned: refused (a fork or a bad proof)",
        )
    return checkpoint


def _submission_url(text: str, number: int) -> str:
    """A witness's submission URL: absolute ``http``/``https`` with a host, else refused."""
    try:
        parts = urllib.parse.urlsplit(text)
        host = parts.hostname
    except ValueError:
        parts, host = None, None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise error(
            "witness.policy",
            f"line {number}: a witness URL is an absolute http:// or https:// URL with a host,"
            f" not {text[:80]!r}",
        )
    if parts.username is not None or parts.password is not None:
        raise error("witness.policy", f"line {number}: a witness URL carries no credentials")
    return text


@dataclass
class Policy:
    """Which witnesses a verifier trusts for a log and how many must cosign.

    The text (in the style of C2SP tlog-policy), one statement a line, ``#`` comments::

        log <log vkey>
        witness <name> <cosigner vkey> [<submission URL>]
        quorum <N>

    ``quorum`` defaults to all the witnesses listed.
    """

    log: Verifier
    witnesses: list[CosignerKey] = field(default_factory=list)
    urls: dict[str, str] = field(default_factory=dict)
    quorum: int = 0

    @classmethod
    def parse(cls, text: str) -> Policy:
        """Read a policy text.

        Raises:
            InputError: ``witness.policy`` (an unknown statement, a missing log, a quorum
                above the witnesses), ``witness.key``, ``checkpoint.key``.
        """
        log: Verifier | None = None
        witnesses: list[CosignerKey] = []
        urls: dict[str, str] = {}
        quorum: int | None = None
        for number, raw in enumerate(text.splitlines(), 1):
            words = raw.split("#", 1)[0].split()
            if not words:
                continue
            if words[0] == "log" and len(words) == 2:
                log = parse_vkey(words[1])
            elif words[0] == "witness" and len(words) in (3, 4):
                key = parse_cosigner_vkey(words[2])
                if key.name != words[1]:
                    raise error("witness.policy", f"line {number}: the key is not {words[1]}'s")
                if any(w.name == key.name for w in witnesses):
                    raise error("witness.policy", f"line {number}: {key.name} is listed twice")
                witnesses.append(key)
                if len(words) == 4:
                    urls[key.name] = _submission_url(words[3], number)
            elif words[0] == "quorum" and len(words) == 2 and _DECIMAL.fullmatch(words[1]):
                quorum = int(words[1])
            else:
                raise error("witness.policy", f"line {number}: not a policy statement: {raw!r}")
        if log is None:
            raise error("witness.policy", "a policy names its log: 'log <vkey>'")
        q = len(witnesses) if quorum is None else quorum
        if q > len(witnesses):
            raise error("witness.policy", f"quorum {q} > the {len(witnesses)} witnesses listed")
        return cls(log, witnesses, urls, q)

    def check(self, note: str) -> dict[str, int]:
        """The verified cosigners of ``note`` (``{name: timestamp}``), at least the quorum.

        The log's own signature is checked by the caller (``verify_checkpoint``).

        Raises:
            InputError: ``witness.quorum`` (fewer cosignatures verify than the quorum).
        """
        found = verified_cosigners(note, self.witnesses)
        if len(found) < self.quorum:
            raise error(
                "witness.quorum",
                f"{len(found)} of the policy's witnesses cosigned; {self.quorum} must",
                cosigned=sorted(found),
                quorum=self.quorum,
            )
        return found
