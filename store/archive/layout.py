"""The archive's on-disk form: an OCI Image Layout (directory or tar), read without trust.

Layout (docs/archive.md; OCI Image Layout Specification v1.1):

    oci-layout               {"imageLayoutVersion":"1.0.0"}
    index.json               an OCI image index: one entry per exported root
    blobs/sha256/<hex>       every object exactly as stored, named by its SHA-256; one OCI image
                             manifest per root (its members); the empty config ``{}``

Every JSON file evstore writes is canonical (RFC 8785), with no timestamp anywhere, and a tar
is written with fixed metadata (USTAR, mtime 0, uid/gid 0, no user names, modes 0644/0755,
entries sorted), so one closure gives byte-identical output from any store.

Reading (:func:`open_source`) trusts nothing: every entry is checked before any byte is used,
and each refusal is a typed fault naming the entry: ``archive.unsafe-path`` (absolute, ``..``,
empty or ``.`` segments, backslash, NUL), ``archive.link`` (symbolic or hard links),
``archive.special-file`` (devices, FIFOs, anything not a regular file or directory),
``archive.duplicate-entry``, ``archive.too-large`` (declared sizes or entry count beyond
:class:`Limits`: a tar bomb is refused from its headers, before any data is read) and
``archive.truncated`` (a tar member whose declared data runs past the end of the file).
"""

from __future__ import annotations

import os
import stat
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..core.canonical import dumps
from ..core.errors import EvstoreError, error
from ..core.json_schema import MAX_SCHEMA_FAULTS

__all__ = [
    "ANN_ADDRESS",
    "ANN_EDGES",
    "ANN_KIND",
    "ANN_OBJECTS",
    "ANN_REF_NAME",
    "ANN_ROLE",
    "ANN_ROOT",
    "ARTIFACT_TYPE",
    "BLOB_DIR",
    "CHUNK",
    "EMPTY_CONFIG",
    "EMPTY_CONFIG_DIGEST",
    "FaultList",
    "INDEX_FILE",
    "INDEX_MEDIA_TYPE",
    "LAYOUT_FILE",
    "LAYOUT_VERSION",
    "Limits",
    "MANIFEST_MEDIA_TYPE",
    "MAX_FAULTS",
    "MEDIA_ARTIFACT",
    "MEDIA_BLOB",
    "MEDIA_EMPTY",
    "Source",
    "blob_name",
    "config_descriptor",
    "index_bytes",
    "layout_bytes",
    "manifest_bytes",
    "manifest_from_json",
    "open_source",
    "tar_end",
    "tar_header",
    "tar_info",
    "tar_padding",
]

LAYOUT_FILE = "oci-layout"
INDEX_FILE = "index.json"
LAYOUT_VERSION = "1.0.0"
BLOB_DIR = "blobs/sha256/"
INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"
MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
#: The manifests' ``artifactType`` (OCI 1.1): an evstore closure.
ARTIFACT_TYPE = "application/vnd.evstore.closure.v1"
#: Media type of a member stored as one or more artifact kinds (canonical JSON).
MEDIA_ARTIFACT = "application/vnd.evstore.artifact.v1+json"
#: Media type of a member that is a plain blob.
MEDIA_BLOB = "application/octet-stream"
MEDIA_EMPTY = "application/vnd.oci.empty.v1+json"
#: The OCI empty descriptor's bytes and digest (image-spec manifest.md, "Guidance for an
#: Empty Descriptor").
EMPTY_CONFIG = b"{}"
EMPTY_CONFIG_DIGEST = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"

ANN_REF_NAME = "org.opencontainers.image.ref.name"
ANN_ADDRESS = "dev.evstore.address"
ANN_KIND = "dev.evstore.kind"
ANN_ROLE = "dev.evstore.role"
ANN_EDGES = "dev.evstore.edges"
ANN_ROOT = "dev.evstore.root"
ANN_OBJECTS = "dev.evstore.objects"

#: Bytes read or written at a time while streaming (1 MiB).
CHUNK = 1 << 20


@dataclass(frozen=True)
class Limits:
    """What a reader accepts before refusing an archive as a bomb (docs/archive.md#limits).

    Attributes:
        max_entries: entries (files and directories) in the archive.
        max_bytes: the sum of the declared sizes of every file (bytes).
        max_json: the size of ``oci-layout``, ``index.json`` and each manifest (bytes).
    """

    max_entries: int = 1_000_000
    max_bytes: int = 64 << 30
    max_json: int = 64 << 20


#: Faults an archive's verification lists; the rest are counted and named by one last fault
#: (the cap of schema faults, evstore.core.json_schema.MAX_SCHEMA_FAULTS).
MAX_FAULTS = MAX_SCHEMA_FAULTS


class FaultList(list[EvstoreError]):
    """The faults of one archive: at most :data:`MAX_FAULTS` kept, the rest only counted.

    An archive of 200,000 bad entries once cost a fault object each (437 MiB). ``full``
    tells a producer to count instead of building the fault (:meth:`skip`); :meth:`finish`
    adds the one fault that says how many more were cut (the code of the first one cut,
    with details ``truncated``, ``limit`` and ``more``).
    """

    def __init__(self, faults: list[EvstoreError] | None = None) -> None:
        super().__init__()
        self.cut = 0
        self._first_cut: str | None = None
        self._finished = False
        self.extend(faults or [])

    @property
    def full(self) -> bool:
        """True once :data:`MAX_FAULTS` faults are kept."""
        return len(self) >= MAX_FAULTS

    def skip(self, code: str) -> None:
        """Count a fault of ``code`` that is not kept."""
        self.cut += 1
        if self._first_cut is None:
            self._first_cut = code

    def append(self, fault: EvstoreError) -> None:
        """Keep ``fault``, or count it once the list is full."""
        if self.full:
            self.skip(fault.code)
        else:
            super().append(fault)

    def extend(self, faults: Any) -> None:
        """Append each of ``faults``."""
        for fault in faults:
            self.append(fault)

    def __iadd__(self, faults: Any) -> FaultList:  # type: ignore[override,misc]
        self.extend(faults)
        return self

    def finish(self) -> None:
        """Add the fault naming how many were cut (once; nothing when none was)."""
        if self.cut and not self._finished:
            self._finished = True
            super().append(
                error(
                    self._first_cut or "archive.layout",
                    f"{self.cut} more faults than the {MAX_FAULTS} listed; fix these first",
                    truncated=True,
                    limit=MAX_FAULTS,
                    more=self.cut,
                )
            )


def blob_name(sha256_hex: str) -> str:
    """The path of a blob inside the layout: ``blobs/sha256/<hex>``."""
    return BLOB_DIR + sha256_hex


def layout_bytes() -> bytes:
    """The ``oci-layout`` file (canonical JSON)."""
    return dumps({"imageLayoutVersion": LAYOUT_VERSION})


def config_descriptor() -> dict[str, Any]:
    """The descriptor of the empty config every evstore manifest carries."""
    return {"mediaType": MEDIA_EMPTY, "digest": EMPTY_CONFIG_DIGEST, "size": len(EMPTY_CONFIG)}


def manifest_bytes(root: str, kind: str, layers: list[dict[str, Any]]) -> bytes:
    """One root's OCI image manifest (canonical JSON).

    Args:
        root: the root's address (``blake3:<hex>``).
        kind: the root's kinds, comma-joined and sorted, or ``blob``.
        layers: one descriptor per member, root first (``mediaType``, ``digest``, ``size``,
            ``annotations``).
    """
    return manifest_from_json(root, kind, len(layers), dumps(layers)[1:-1].decode())


#: Where the layers go in a manifest's canonical bytes (the one ``"layers":[]`` of
#: :func:`manifest_from_json`'s skeleton: a JSON string holds ``"`` only as ``\"``, so no
#: annotation value can hold that text).
_LAYERS_SLOT = b'"layers":[]'


def manifest_from_json(root: str, kind: str, count: int, layers: str) -> bytes:
    """:func:`manifest_bytes` from its layers' canonical JSON, comma-joined, no brackets.

    A canonical list is ``[`` + its members' canonical JSON joined by ``,`` + ``]``, so
    splicing ``layers`` into the skeleton's empty list gives the bytes ``dumps`` gives for
    the whole manifest. ``count`` is the number of layers (in the annotations).
    """
    skeleton = dumps(
        {
            "schemaVersion": 2,
            "mediaType": MANIFEST_MEDIA_TYPE,
            "artifactType": ARTIFACT_TYPE,
            "config": config_descriptor(),
            "layers": [],
            "annotations": {ANN_ROOT: root, ANN_KIND: kind, ANN_OBJECTS: str(count)},
        }
    )
    at = skeleton.index(_LAYERS_SLOT) + len(_LAYERS_SLOT) - 1
    return skeleton[:at] + layers.encode() + skeleton[at:]


def index_bytes(entries: list[dict[str, Any]]) -> bytes:
    """``index.json``: an OCI image index of the manifests (canonical JSON)."""
    return dumps({"schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE, "manifests": entries})


def tar_info(name: str, size: int | None) -> tarfile.TarInfo:
    """A tar header with fixed metadata: a file of ``size`` bytes, or a directory (None)."""
    info = tarfile.TarInfo(name)
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if size is None:
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
    else:
        info.size = size
        info.mode = 0o644
    return info


_BLOCK = tarfile.BLOCKSIZE
_RECORD = tarfile.RECORDSIZE
#: The USTAR header of a file named "" of size 0 (what :func:`tar_info` gives), with the
#: checksum field blank: the writer fills in name, size and checksum.
_FILE_TEMPLATE = tar_info("", 0).tobuf(tarfile.USTAR_FORMAT)
_CHECKSUM_BLANK = sum(
    (_FILE_TEMPLATE[:100] + b" " * 8)
    + _FILE_TEMPLATE[100:124]
    + _FILE_TEMPLATE[136:148]
    + _FILE_TEMPLATE[156:]
)


def tar_header(name: str, size: int) -> bytes:
    """The USTAR header of a regular file (``name`` at most 100 bytes, ASCII; ``size`` in
    bytes, 0 or more).

    Byte for byte what ``tarfile`` writes for :func:`tar_info`, without its per-call cost.
    A size of 8 GiB or more does not fit the field's 11 octal digits: it is written as a
    GNU base-256 number (0x80, then 11 bytes big-endian), as ``tarfile``'s GNU and PAX
    formats do and as tarfile, GNU tar and bsdtar read it (the 11 digits would have made a
    513-byte header and every later member unreadable).
    """  # noqa: D205
    raw = name.encode("ascii")
    if len(raw) > 100:
        raise ValueError(f"tar name over 100 bytes: {name!r}")
    if size < _OCTAL_MAX:
        size_field = b"%011o\0" % size
    else:
        size_field = b"\x80" + size.to_bytes(11, "big")
    checksum = _CHECKSUM_BLANK + sum(raw) + sum(size_field)
    return b"".join(
        (
            raw.ljust(100, b"\0"),
            _FILE_TEMPLATE[100:124],
            size_field,
            _FILE_TEMPLATE[136:148],
            b"%06o\0 " % checksum,
            _FILE_TEMPLATE[156:],
        )
    )


#: The first size the header's 11 octal digits cannot hold (8 GiB, bytes).
_OCTAL_MAX = 8**11


def tar_padding(size: int) -> bytes:
    """The NUL bytes that complete a member of ``size`` bytes to a 512-byte block."""
    return b"\0" * (-size % _BLOCK)


def tar_end(offset: int) -> bytes:
    """The end of a tar whose members end at ``offset``.

    Two zero blocks, then padding to a whole 10240-byte record (as ``tarfile`` closes one).
    """
    end = offset + 2 * _BLOCK
    return b"\0" * (2 * _BLOCK + (-end % _RECORD))


# --------------------------------------------------------------------------- reading


def _unsafe(name: str) -> str | None:
    """Why ``name`` (an entry path, ``/``-separated) is unsafe, or None."""
    if not name:
        return "an empty name"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "an absolute path"
    if "\\" in name or "\x00" in name:
        return "a backslash or NUL in the name"
    parts = name.rstrip("/").split("/")
    if any(p == ".." for p in parts):
        return "a '..' segment"
    if any(p in ("", ".") for p in parts):
        return "an empty or '.' segment"
    return None


@dataclass
class Source:
    """The regular files of an archive, read without trust.

    Attributes:
        where: the directory or tar path (for messages).
        files: entry name -> declared size (bytes), only entries that passed every check.
        faults: the refusals met while listing (typed, each with ``path`` = the entry;
            at most :data:`MAX_FAULTS`, the rest counted: :class:`FaultList`).
    """

    where: str
    files: dict[str, int] = field(default_factory=dict)
    faults: FaultList = field(default_factory=FaultList)
    dirs: set[str] = field(default_factory=set)
    _tar: tarfile.TarFile | None = None
    _members: dict[str, tarfile.TarInfo] = field(default_factory=dict)

    def close(self) -> None:
        """Release the tar file (a directory holds nothing open)."""
        if self._tar is not None:
            self._tar.close()
            self._tar = None

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fault(self, code: str, message: str, name: str, **details: Any) -> None:
        if self.faults.full:  # counted, not built: a bomb of bad entries costs no memory
            self.faults.skip(code)
            return
        self.faults.append(error(code, f"{name}: {message}", path=name, **details))

    def _open(self, name: str) -> IO[bytes]:
        if self._tar is not None:
            fh = self._tar.extractfile(self._members[name])
            assert fh is not None  # a regular member (checked when listed)
            return fh
        return Path(self.where, name).open("rb")

    def chunks(self, name: str) -> Iterator[bytes]:
        """The bytes of file ``name``, :data:`CHUNK` at a time, never past its declared size.

        Raises:
            InputError: ``input.unreadable`` when the file cannot be read.
        """
        left = self.files[name]
        try:
            with self._open(name) as fh:
                while left > 0:
                    chunk = fh.read(min(CHUNK, left))
                    if not chunk:
                        break
                    left -= len(chunk)
                    yield chunk
        except (OSError, tarfile.TarError) as exc:
            raise error(
                "input.unreadable", f"cannot read {name} in {self.where}: {exc}", path=name
            ) from None

    def read(self, name: str) -> bytes:
        """The whole file ``name`` (for the JSON files; their size is checked by the caller)."""
        return b"".join(self.chunks(name))


def _add(src: Source, name: str, size: int, limits: Limits, total: list[int]) -> bool:
    """Record a regular file; False once the archive is over its limits (stop listing)."""
    if name in src.files:
        src._fault("archive.duplicate-entry", "the archive holds this entry twice", name)
        return True
    total[0] += size
    if total[0] > limits.max_bytes:
        src._fault(
            "archive.too-large",
            f"the declared sizes exceed the limit of {limits.max_bytes} bytes",
            name,
            limit=limits.max_bytes,
        )
        return False
    src.files[name] = size
    return True


def _list_tar(src: Source, limits: Limits) -> None:
    path = src.where
    end = os.path.getsize(path)
    try:
        tf = tarfile.open(path, "r:")  # closed by Source.close
    except (OSError, tarfile.TarError) as exc:
        raise error("archive.layout", f"{path} is not an uncompressed tar file ({exc})") from None
    src._tar = tf
    total = [0]
    seen: set[str] = set()
    count = 0
    try:
        # ``TarFile.next`` rather than iterating: the iterator keeps every member read in
        # ``tf.members``; only the members kept below stay alive, and reading stops at the
        # first entry past the count limit.
        while (member := tf.next()) is not None:
            tf.members.clear()  # type: ignore[attr-defined]
            count += 1
            raw = member.name
            name = raw[2:] if raw.startswith("./") else raw
            if count > limits.max_entries:
                src._fault(
                    "archive.too-large",
                    f"more than {limits.max_entries} entries",
                    name,
                    limit=limits.max_entries,
                )
                return
            why = _unsafe(name)
            if why is not None:
                src._fault("archive.unsafe-path", f"unsafe entry name ({why})", raw)
                continue
            name = name.rstrip("/")
            if member.issym() or member.islnk():
                src._fault("archive.link", "links are refused", name, target=member.linkname)
                continue
            if member.isdir():
                if name in seen:
                    src._fault(
                        "archive.duplicate-entry", "the archive holds this entry twice", name
                    )
                seen.add(name)
                src.dirs.add(name)
                continue
            if not member.isreg():
                src._fault("archive.special-file", "only regular files are accepted", name)
                continue
            if member.size <= limits.max_bytes and member.offset_data + member.size > end:
                src._fault("archive.truncated", "its data runs past the end of the tar", name)
                continue
            if name in seen:
                src._fault("archive.duplicate-entry", "the archive holds this entry twice", name)
                continue
            seen.add(name)
            src._members[name] = member
            if not _add(src, name, member.size, limits, total):
                return
    except tarfile.TarError as exc:
        src.faults.append(error("archive.truncated", f"{path}: the tar is damaged ({exc})"))


def _list_dir(src: Source, limits: Limits) -> None:
    root = src.where
    total = [0]
    count = 0
    for here, dirs, files in os.walk(root, followlinks=False):
        rel = os.path.relpath(here, root)
        prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        for entry in sorted(dirs) + sorted(files):
            count += 1
            name = prefix + entry
            if count > limits.max_entries:
                src._fault(
                    "archive.too-large",
                    f"more than {limits.max_entries} entries",
                    name,
                    limit=limits.max_entries,
                )
                return
            st = os.lstat(os.path.join(here, entry))
            if stat.S_ISLNK(st.st_mode):
                src._fault("archive.link", "links are refused", name)
                if entry in dirs:
                    dirs.remove(entry)
            elif stat.S_ISDIR(st.st_mode):
                src.dirs.add(name)
            elif not stat.S_ISREG(st.st_mode):
                src._fault("archive.special-file", "only regular files are accepted", name)
            elif st.st_nlink > 1:
                src._fault("archive.link", "hard links are refused", name)
            elif not _add(src, name, st.st_size, limits, total):
                return


def open_source(path: str | os.PathLike[str], limits: Limits | None = None) -> Source:
    """List an archive (a layout directory or an uncompressed tar of one) without trusting it.

    Returns:
        A :class:`Source` whose ``faults`` hold every refused entry (the entry is then not in
        ``files``). Use it as a context manager.

    Raises:
        InputError: ``input.unreadable`` (no such file or directory), ``archive.layout`` (a
            file that is not an uncompressed tar).
    """
    where = os.fspath(path)
    limits = limits or Limits()
    src = Source(where)
    try:
        st = os.stat(where)
    except OSError as exc:
        raise error(
            "input.unreadable", f"cannot read {where}: {exc.strerror}", path=where
        ) from None
    if stat.S_ISDIR(st.st_mode):
        _list_dir(src, limits)
    else:
        _list_tar(src, limits)
    return src
