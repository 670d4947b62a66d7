r"""Signed checkpoints (C2SP tlog-checkpoint over signed-note) and tlog-proof files.

The storage-agnostic half of the log's signing: formats and Ed25519 only, no database, no
settings, no environment. Formats, from https://c2sp.org/signed-note,
https://c2sp.org/tlog-checkpoint and https://c2sp.org/tlog-proof::

    checkpoint note text        <origin>\n<size>\n<base64 root hash>\n[<extension>\n]...
    signed note                 <text>\n— <key name> <base64(key ID || signature)>\n...
    key ID                      SHA-256(key name || 0x0A || 0x01 || 32-byte public key)[:4]
    verifier key (vkey)         <key name>+<8 hex key ID>+<base64(0x01 || public key)>
    private key file            PRIVATE+KEY+<key name>+<8 hex key ID>+<base64(0x01 || seed)>
    tlog-proof                  c2sp.org/tlog-proof@v1\n[extra <base64>\n]index <n>\n
                                <base64 hash>\n...\n<signed checkpoint note>

(``—`` is U+2014; base64 is the standard alphabet with padding; the key-file line is the
one golang.org/x/mod/sumdb/note reads.) Ed25519 comes from the ``cryptography`` package.

Errors: every parse or verification failure raises :class:`CheckpointError` (an
:class:`~evstore.core.errors.InputError`) whose ``code`` is the typed reason:

    checkpoint.malformed    the note or its checkpoint text breaks the format
    checkpoint.unsigned     no signature line by the verifier key (a wrong or unknown key)
    checkpoint.signature    a signature line by the verifier key does not verify
    checkpoint.origin       the checkpoint's origin is not the expected one
    checkpoint.key          a verifier key or private key (file) is malformed or exposed
    tlog-proof.malformed    a tlog-proof file breaks its format
    tlog-proof.inclusion    the inclusion proof does not lead to the checkpoint's root

Nothing here returns a boolean for a failed verification: a function that returns has
verified.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ..core.errors import InputError
from .merkle import HASH_SIZE, verify_inclusion

__all__ = [
    "Checkpoint",
    "CheckpointError",
    "ED25519",
    "MAX_SIGNATURES",
    "Signer",
    "TLOG_PROOF_HEADER",
    "TlogProof",
    "Verifier",
    "format_tlog_proof",
    "key_id",
    "parse_checkpoint",
    "parse_tlog_proof",
    "parse_vkey",
    "read_private_key",
    "sign_checkpoint",
    "sign_note",
    "verify_checkpoint",
    "verify_note",
    "verify_tlog_proof",
]

#: Signature type byte of Ed25519 note signatures (signed-note, "Signature types").
ED25519 = 0x01

#: First line of a tlog-proof file (c2sp.org/tlog-proof).
TLOG_PROOF_HEADER = "c2sp.org/tlog-proof@v1"

#: The most signature lines a note may carry here (the spec requires accepting 16).
MAX_SIGNATURES = 64

_DASH = "\u2014 "
_PRIVATE_PREFIX = "PRIVATE+KEY+"
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,19}", re.ASCII)
_HEX8 = re.compile(r"[0-9a-fA-F]{8}", re.ASCII)
_MAX_SIZE = 2**64 - 1
_PRIVATE_KEY_MODE = 0o600


class CheckpointError(InputError):
    """A checkpoint, note, key or tlog-proof failed to parse or verify; ``code`` says why.

    Codes: ``checkpoint.malformed``, ``checkpoint.unsigned``, ``checkpoint.signature``,
    ``checkpoint.origin``, ``checkpoint.key``, ``tlog-proof.malformed``,
    ``tlog-proof.inclusion`` (see the module docstring).
    """

    default_code = "checkpoint.malformed"


def _fail(code: str, message: str) -> CheckpointError:
    return CheckpointError(message, code=code)


def _b64decode(text: str, what: str, code: str) -> bytes:
    """Strict standard base64: the alphabet, padding, and canonical (re-encodes the same)."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error, ValueError):
        raise _fail(code, f"{what} is not base64") from None
    if base64.b64encode(raw).decode("ascii") != text:
        raise _fail(code, f"{what} is not canonical base64")
    return raw


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _check_key_name(name: object, code: str) -> str:
    if not isinstance(name, str) or not name:
        raise _fail(code, "a key name must be a non-empty string")
    if any(c.isspace() or c == "+" or ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise _fail(code, f"key name {name!r} holds a space, a plus sign or a control character")
    return name


def key_id(name: str, public_key: bytes, signature_type: int = ED25519) -> bytes:
    """The 4-byte key ID: SHA-256(name || 0x0A || type || public key)[:4] (signed-note)."""
    return hashlib.sha256(
        name.encode("utf-8") + b"\n" + bytes([signature_type]) + public_key
    ).digest()[:4]


# ---------------------------------------------------------------------------------------
# Keys
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verifier:
    """An Ed25519 note verifier key: a name, its 4-byte key ID and a 32-byte public key."""

    name: str
    public_key: bytes

    def __post_init__(self) -> None:
        _check_key_name(self.name, "checkpoint.key")
        if not isinstance(self.public_key, bytes) or len(self.public_key) != 32:
            raise _fail("checkpoint.key", "an Ed25519 public key is 32 bytes")

    @property
    def key_id(self) -> bytes:
        """The 4-byte key ID of this key (see :func:`key_id`)."""
        return key_id(self.name, self.public_key)

    def vkey(self) -> str:
        """The verifier key string ``<name>+<hex key ID>+<base64(0x01 || public key)>``."""
        return f"{self.name}+{self.key_id.hex()}+{_b64(bytes([ED25519]) + self.public_key)}"

    def verifies(self, message: bytes, signature: bytes) -> bool:
        """Whether ``signature`` (64 bytes, no key ID) is this key's Ed25519 over ``message``."""
        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(signature, message)
        except (InvalidSignature, ValueError):
            return False
        return True


def parse_vkey(text: str) -> Verifier:
    """Parse a verifier key ``<name>+<hex key ID>+<base64(0x01 || public key)>``.

    Raises:
        CheckpointError: ``checkpoint.key`` if it is malformed, of another signature type,
            or its key ID does not match its name and key.
    """
    if not isinstance(text, str):
        raise _fail("checkpoint.key", "a verifier key is a string")
    parts = text.strip().split("+", 2)
    if len(parts) != 3:
        raise _fail("checkpoint.key", "a verifier key is <name>+<key ID>+<key>")
    name, hex_id, encoded = parts
    _check_key_name(name, "checkpoint.key")
    if not _HEX8.fullmatch(hex_id):
        raise _fail("checkpoint.key", "the key ID of a verifier key is 8 hex digits")
    raw = _b64decode(encoded, "the verifier key", "checkpoint.key")
    if len(raw) != 33 or raw[0] != ED25519:
        raise _fail("checkpoint.key", "only Ed25519 verifier keys (type 0x01, 32 bytes) are read")
    verifier = Verifier(name, raw[1:])
    if verifier.key_id != bytes.fromhex(hex_id):
        raise _fail("checkpoint.key", "the key ID does not match the key name and public key")
    return verifier


class Signer:
    """An Ed25519 note signer: a key name and a private key (which never enters a database).

    Make one with :meth:`generate`, store it with :meth:`write_private_key` (a 0600 file),
    load it with :func:`read_private_key`.
    """

    def __init__(self, name: str, private_key: Ed25519PrivateKey) -> None:
        self.name = _check_key_name(name, "checkpoint.key")
        self._key = private_key
        public = private_key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        self.verifier = Verifier(name, public)

    @classmethod
    def generate(cls, name: str) -> Signer:
        """A new key pair for key name ``name`` (a schema-less URL such as the log's origin)."""
        return cls(name, Ed25519PrivateKey.generate())

    def sign(self, message: bytes) -> bytes:
        """``key ID || Ed25519 signature`` over ``message`` (68 bytes)."""
        return self.verifier.key_id + self._key.sign(message)

    def private_key_line(self) -> str:
        """The private key as ``PRIVATE+KEY+<name>+<hex key ID>+<base64(0x01 || seed)>``."""
        seed = self._key.private_bytes(
            serialization.Encoding.Raw,
            serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )
        hex_id = self.verifier.key_id.hex()
        return f"{_PRIVATE_PREFIX}{self.name}+{hex_id}+{_b64(bytes([ED25519]) + seed)}"

    def write_private_key(self, path: str | os.PathLike[str]) -> None:
        """Write the private key line to a new file created with mode 0600.

        The file is created with ``O_CREAT | O_EXCL`` (an existing file is never
        overwritten: FileExistsError) and its mode set to exactly 0600 before any byte is
        written. OSError propagates.
        """
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path, flags, _PRIVATE_KEY_MODE)
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, _PRIVATE_KEY_MODE)  # whatever the umask was
            os.write(fd, (self.private_key_line() + "\n").encode("utf-8"))
        finally:
            os.close(fd)

    def __repr__(self) -> str:
        return f"Signer({self.verifier.vkey()!r})"


def _parse_private_key_line(text: str) -> Signer:
    if not text.startswith(_PRIVATE_PREFIX):
        raise _fail("checkpoint.key", "a private key line starts with PRIVATE+KEY+")
    parts = text[len(_PRIVATE_PREFIX) :].split("+", 2)
    if len(parts) != 3:
        raise _fail("checkpoint.key", "a private key is PRIVATE+KEY+<name>+<key ID>+<key>")
    name, hex_id, encoded = parts
    if not _HEX8.fullmatch(hex_id):
        raise _fail("checkpoint.key", "the key ID of a private key is 8 hex digits")
    raw = _b64decode(encoded, "the private key", "checkpoint.key")
    if len(raw) != 33 or raw[0] != ED25519:
        raise _fail("checkpoint.key", "only Ed25519 private keys (type 0x01, 32 bytes) are read")
    signer = Signer(name, Ed25519PrivateKey.from_private_bytes(raw[1:]))
    if signer.verifier.key_id != bytes.fromhex(hex_id):
        raise _fail("checkpoint.key", "the private key's key ID does not match its key")
    return signer


def read_private_key(path: str | os.PathLike[str], *, require_private: bool = True) -> Signer:
    """Load a :class:`Signer` from a file written by :meth:`Signer.write_private_key`.

    Args:
        path: the key file.
        require_private: refuse a file that group or others may read or write (POSIX),
            as ssh does.

    Raises:
        CheckpointError: ``checkpoint.key`` for a malformed or exposed key file.
        OSError: the file cannot be read.
    """
    with open(path, "rb") as handle:
        if require_private and os.name == "posix":
            mode = os.fstat(handle.fileno()).st_mode
            if stat.S_IMODE(mode) & 0o077:
                raise _fail(
                    "checkpoint.key",
                    f"the private key file has mode {stat.S_IMODE(mode):04o}; it must be 0600",
                )
        data = handle.read(4096)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _fail("checkpoint.key", "the private key file is not UTF-8") from None
    return _parse_private_key_line(text.removesuffix("\n"))


# ---------------------------------------------------------------------------------------
# Checkpoints and signed notes
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Checkpoint:
    """A log's tree head: origin, tree size, 32-byte root hash, optional extension lines."""

    origin: str
    size: int
    root_hash: bytes
    extensions: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        bad = "checkpoint.malformed"
        if not isinstance(self.origin, str) or not self.origin or not _line_ok(self.origin):
            raise _fail(bad, "the origin is a non-empty line without control characters")
        if type(self.size) is not int or not 0 <= self.size <= _MAX_SIZE:
            raise _fail(bad, "the tree size is an integer in 0..2**64-1")
        if not isinstance(self.root_hash, bytes) or len(self.root_hash) != HASH_SIZE:
            raise _fail(bad, f"the root hash is {HASH_SIZE} bytes")
        for line in self.extensions:
            if not isinstance(line, str) or not line or not _line_ok(line):
                raise _fail(bad, "an extension line is non-empty, without control characters")

    def text(self) -> str:
        """The note text: origin, size, base64 root hash, extension lines, each newline-ended."""
        lines = [self.origin, str(self.size), _b64(self.root_hash), *self.extensions]
        return "".join(line + "\n" for line in lines)


def _line_ok(line: str) -> bool:
    return not any(ord(c) < 0x20 or ord(c) == 0x7F for c in line)


def parse_checkpoint(text: str) -> Checkpoint:
    """Parse checkpoint *note text* (no signatures): the body of a signed checkpoint.

    Do not trust the result unless the text came from :func:`verify_checkpoint`.

    Raises:
        CheckpointError: ``checkpoint.malformed``.
    """
    bad = "checkpoint.malformed"
    if not isinstance(text, str) or not text.endswith("\n"):
        raise _fail(bad, "checkpoint text ends with a newline")
    lines = text[:-1].split("\n")
    if len(lines) < 3:
        raise _fail(bad, "checkpoint text has an origin, a size and a root hash line")
    origin, size_text, root_text, *extensions = lines
    if not _DECIMAL.fullmatch(size_text):
        raise _fail(bad, "the tree size is a decimal without leading zeros")
    root = _b64decode(root_text, "the root hash", bad)
    return Checkpoint(origin, int(size_text), root, tuple(extensions))


def sign_note(text: str, signer: Signer) -> str:
    """The signed note of ``text``: the text, a blank line, one signature line by ``signer``.

    Raises:
        CheckpointError: ``checkpoint.malformed`` if ``text`` is not note text (it must end
            with a newline and hold no control character but newline).
    """
    if not isinstance(text, str) or not text.endswith("\n") or not _line_ok(text.replace("\n", "")):
        raise _fail("checkpoint.malformed", "note text ends with a newline, no control characters")
    signature = signer.sign(text.encode("utf-8"))
    return f"{text}\n{_DASH}{signer.name} {_b64(signature)}\n"


def sign_checkpoint(checkpoint: Checkpoint, signer: Signer) -> str:
    """The signed checkpoint note: ``sign_note(checkpoint.text(), signer)``."""
    return sign_note(checkpoint.text(), signer)


def _split_note(note: str | bytes) -> tuple[str, list[tuple[str, bytes]]]:
    """Split a signed note into its text and its ``(key name, key ID || signature)`` lines."""
    bad = "checkpoint.malformed"
    if isinstance(note, bytes):
        try:
            note = note.decode("utf-8")
        except UnicodeDecodeError:
            raise _fail(bad, "a signed note is UTF-8") from None
    if not isinstance(note, str):
        raise _fail(bad, "a signed note is text")
    if any((ord(c) < 0x20 and c != "\n") or ord(c) == 0x7F for c in note):
        raise _fail(bad, "a signed note holds no control character but newline")
    if not note.endswith("\n"):
        raise _fail(bad, "a signed note ends with a newline")
    cut = note.rfind("\n\n")
    if cut < 0:
        raise _fail(bad, "a signed note separates its text from its signatures by a blank line")
    text, block = note[: cut + 1], note[cut + 2 :]
    lines = block[:-1].split("\n") if block else []
    if not lines:
        raise _fail(bad, "a signed note has at least one signature line")
    if len(lines) > MAX_SIGNATURES:
        raise _fail(bad, f"a signed note has at most {MAX_SIGNATURES} signature lines here")
    signatures = []
    for line in lines:
        if not line.startswith(_DASH):
            raise _fail(bad, "a signature line starts with an em dash and a space")
        name, sep, encoded = line[len(_DASH) :].partition(" ")
        if not sep or " " in encoded:
            raise _fail(bad, "a signature line is '\u2014 <key name> <base64 signature>'")
        _check_key_name(name, bad)
        raw = _b64decode(encoded, "a signature", bad)
        if len(raw) < 5:
            raise _fail(bad, "a signature holds a 4-byte key ID and a signature")
        signatures.append((name, raw))
    return text, signatures


def verify_note(note: str | bytes, verifier: Verifier) -> str:
    """Verify a signed note's signature by ``verifier`` and return its text (signed-note).

    Lines by other keys (another name or key ID) are ignored; at least one line must be by
    ``verifier``, and every line by it must verify.

    Raises:
        CheckpointError: ``checkpoint.malformed``, ``checkpoint.unsigned`` (no line by this
            key) or ``checkpoint.signature``.
    """
    text, signatures = _split_note(note)
    message = text.encode("utf-8")
    mine = [raw for name, raw in signatures if name == verifier.name and raw[:4] == verifier.key_id]
    if not mine:
        raise _fail("checkpoint.unsigned", f"the note carries no signature by {verifier.vkey()}")
    for raw in mine:
        if not verifier.verifies(message, raw[4:]):
            raise _fail("checkpoint.signature", f"a signature by {verifier.name} does not verify")
    return text


def verify_checkpoint(
    note: str | bytes, verifier: Verifier, origin: str | None = None
) -> Checkpoint:
    """Verify a signed checkpoint note and return its checkpoint.

    Signature lines of other keys (another name or key ID, e.g. witnesses) are ignored, as
    signed-note requires; at least one line must be by ``verifier`` and every line by it
    must verify. The text is parsed only after that.

    Args:
        note: the signed note (text or UTF-8 bytes).
        verifier: the trusted log key.
        origin: the expected origin line; ``None`` means the verifier's key name.

    Returns:
        The verified :class:`Checkpoint`.

    Raises:
        CheckpointError: ``checkpoint.malformed``, ``checkpoint.unsigned`` (no line by this
            key: a wrong key), ``checkpoint.signature`` or ``checkpoint.origin``.
    """
    checkpoint = parse_checkpoint(verify_note(note, verifier))
    want = verifier.name if origin is None else origin
    if checkpoint.origin != want:
        raise _fail(
            "checkpoint.origin",
            f"the checkpoint is of origin {checkpoint.origin!r}, not {want!r}",
        )
    return checkpoint


# ---------------------------------------------------------------------------------------
# tlog-proof files
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TlogProof:
    """An offline inclusion proof (c2sp.org/tlog-proof@v1).

    Attributes:
        index: the entry's leaf index.
        hashes: the RFC 9162 inclusion proof (32-byte hashes, from the leaf's sibling up).
        checkpoint: the signed checkpoint note the proof was computed at, verbatim.
        extra: optional opaque bytes, *not* authenticated by themselves; evstore puts the
            log entry's bytes here, which the proof authenticates once its leaf hash
            verifies.
    """

    index: int
    hashes: tuple[bytes, ...]
    checkpoint: str
    extra: bytes | None = None

    def __post_init__(self) -> None:
        bad = "tlog-proof.malformed"
        if type(self.index) is not int or not 0 <= self.index <= _MAX_SIZE:
            raise _fail(bad, "the index is an integer in 0..2**64-1")
        if any(not isinstance(h, bytes) or len(h) != HASH_SIZE for h in self.hashes):
            raise _fail(bad, f"every proof hash is {HASH_SIZE} bytes")
        if not isinstance(self.checkpoint, str) or not self.checkpoint.endswith("\n"):
            raise _fail(bad, "the checkpoint is a signed note ending with a newline")
        if self.extra is not None and not isinstance(self.extra, bytes):
            raise _fail(bad, "the extra data is bytes")


def format_tlog_proof(proof: TlogProof) -> str:
    """The tlog-proof text of ``proof``."""
    lines = [TLOG_PROOF_HEADER]
    if proof.extra is not None:
        lines.append(f"extra {_b64(proof.extra)}")
    lines.append(f"index {proof.index}")
    lines += [_b64(h) for h in proof.hashes]
    return "\n".join(lines) + "\n\n" + proof.checkpoint


def parse_tlog_proof(text: str | bytes) -> TlogProof:
    """Parse a tlog-proof file (the checkpoint is kept verbatim, not yet verified).

    Raises:
        CheckpointError: ``tlog-proof.malformed``.
    """
    bad = "tlog-proof.malformed"
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise _fail(bad, "a tlog-proof is UTF-8") from None
    if not isinstance(text, str):
        raise _fail(bad, "a tlog-proof is text")
    head, sep, checkpoint = text.partition("\n\n")
    if not sep or not checkpoint:
        raise _fail(bad, "a tlog-proof has its proof lines, a blank line, then the checkpoint")
    lines = head.split("\n")
    if lines[0] != TLOG_PROOF_HEADER:
        raise _fail(bad, f"a tlog-proof starts with {TLOG_PROOF_HEADER}")
    rest = lines[1:]
    extra = None
    if rest and rest[0].startswith("extra "):
        extra = _b64decode(rest.pop(0)[len("extra ") :], "the extra data", bad)
    if not rest or not rest[0].startswith("index "):
        raise _fail(bad, "a tlog-proof names the entry's index")
    index_text = rest.pop(0)[len("index ") :]
    if not _DECIMAL.fullmatch(index_text):
        raise _fail(bad, "the index is a decimal without leading zeros")
    hashes = []
    for line in rest:
        digest = _b64decode(line, "a proof hash", bad)
        if len(digest) != HASH_SIZE:
            raise _fail(bad, f"a proof hash is {HASH_SIZE} bytes")
        hashes.append(digest)
    return TlogProof(int(index_text), tuple(hashes), checkpoint, extra)


def verify_tlog_proof(
    proof: TlogProof, leaf: bytes, verifier: Verifier, origin: str | None = None
) -> Checkpoint:
    """Verify the checkpoint's signature, then the inclusion of ``leaf`` at ``proof.index``.

    Args:
        proof: a parsed tlog-proof.
        leaf: the 32-byte leaf hash of the entry (``merkle.leaf_hash(entry bytes)``).
        verifier: the trusted log key.
        origin: the expected origin (default: the verifier's key name).

    Returns:
        The verified checkpoint the entry is included in.

    Raises:
        CheckpointError: any code of :func:`verify_checkpoint`, or ``tlog-proof.inclusion``.
    """
    checkpoint = verify_checkpoint(proof.checkpoint, verifier, origin)
    hashes: Sequence[bytes] = proof.hashes
    if not verify_inclusion(leaf, proof.index, checkpoint.size, hashes, checkpoint.root_hash):
        raise _fail(
            "tlog-proof.inclusion",
            f"entry {proof.index} is not proven included in the tree of size {checkpoint.size}",
        )
    return checkpoint
