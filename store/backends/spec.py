"""Blob backend specs: ``inline``, ``file:DIR`` and ``s3://BUCKET/PREFIX``, parsed and opened.

The spec is what ``evstore init --blobs`` takes and the ``blobs.backend`` setting stores. An
S3 spec may carry the endpoint and region as query options
(``s3://evidence/prod?endpoint=http://127.0.0.1:8333&region=us-east-1``); credentials are
never part of it (docs/settings.md, docs/design.md "Blob bytes outside the database").
Opened backends are kept per spec for the life of the process (one client, one connection
pool per bucket).
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from ..core.errors import error
from ..core.extras import require
from .base import BlobBackend
from .credentials import S3Credentials, missing_credentials, s3_credentials

__all__ = ["BackendSpec", "INLINE", "open_backend", "parse_spec", "same_place"]

#: The spec of "bytes in the database" (inline rows and chunk rows).
INLINE = "inline"

#: Longest spec accepted (the database columns hold 512 characters).
_MAX_SPEC = 400

_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_OPTIONS = {"endpoint", "region"}


@dataclass(frozen=True)
class BackendSpec:
    """A parsed spec: ``kind`` (inline, file or s3) and its parts.

    Attributes:
        text: the spec in its normal form (a file spec's directory made absolute).
        kind: ``"inline"``, ``"file"`` or ``"s3"``.
        path: the directory of a file spec. bucket, prefix: an S3 spec's.
        endpoint, region: an S3 spec's options, or None.
    """

    text: str
    kind: str
    path: str = ""
    bucket: str = ""
    prefix: str = ""
    endpoint: str | None = None
    region: str | None = None


def _bad(text: str, why: str) -> Exception:
    return error(
        "blobs.spec",
        f"{text!r} is not a blob backend ({why}); use inline, file:DIR or s3://BUCKET/PREFIX",
        spec=text,
    )


def parse_spec(text: str) -> BackendSpec:
    """Parse a blob backend spec.

    Raises:
        InputError: ``blobs.spec`` for anything else (an empty directory, a bucket name
            S3 refuses, an unknown option, credentials in the URL).
    """
    if not isinstance(text, str) or not text.strip():
        raise _bad(str(text), "empty")
    text = text.strip()
    if len(text) > _MAX_SPEC:
        raise _bad(text[:80] + "...", f"longer than {_MAX_SPEC} characters")
    if any(c in text for c in "%#\r\n\t "):
        raise _bad(text, "no %, #, space or control characters")
    if text == INLINE:
        return BackendSpec(INLINE, INLINE)
    if text.startswith("file:"):
        where = text[len("file:") :]
        if not where:
            raise _bad(text, "no directory")
        path = os.path.abspath(os.path.expanduser(where))  # symlinks kept as named
        return BackendSpec(f"file:{path}", "file", path=path)
    if text.startswith("s3://"):
        parts = urlsplit(text)
        if parts.username or parts.password or "@" in parts.netloc:
            raise _bad(text, "credentials never go in a spec: use AWS_ACCESS_KEY_ID")
        bucket = parts.netloc
        if not _BUCKET.fullmatch(bucket):
            raise _bad(text, "a bucket name is 3-63 lowercase letters, digits, . and -")
        prefix = parts.path.strip("/")
        if any(seg in ("", ".", "..") for seg in prefix.split("/")) and prefix:
            raise _bad(text, "a prefix has no empty, . or .. segment")
        query = parse_qs(parts.query, keep_blank_values=True, strict_parsing=False)
        unknown = set(query) - _OPTIONS
        if unknown:
            raise _bad(text, f"unknown option {sorted(unknown)[0]!r}; known: endpoint, region")
        if any(len(v) != 1 for v in query.values()):
            raise _bad(text, "an option is given twice")
        endpoint = query.get("endpoint", [None])[0]
        region = query.get("region", [None])[0]
        if endpoint is not None:
            ep = urlsplit(endpoint)
            if ep.scheme.lower() not in ("http", "https") or not ep.hostname:
                raise _bad(text, "the endpoint is an http(s)://HOST[:PORT] URL")
            if ep.username or ep.password or "@" in ep.netloc or ep.query or ep.fragment:
                raise _bad(text, "the endpoint carries no credentials, query or fragment")
        if region is not None and not re.fullmatch(r"[a-z0-9-]{1,40}", region):
            raise _bad(text, "a region is lowercase letters, digits and -")
        norm = f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"
        opts = "&".join(
            f"{k}={v}" for k, v in (("endpoint", endpoint), ("region", region)) if v is not None
        )
        return BackendSpec(
            norm + (f"?{opts}" if opts else ""),
            "s3",
            bucket=bucket,
            prefix=prefix,
            endpoint=endpoint,
            region=region,
        )
    raise _bad(text, "unknown scheme")


def same_place(a: str, b: str) -> bool | None:
    """Whether two backend specs may name one place (so a key deleted in one is gone in both).

    ``False`` only when they certainly do not: different kinds; two directories that both
    exist and are not the same directory (``os.path.samefile``: symlinks and bind mounts are
    one place); two buckets or two prefixes. ``None`` when it cannot be told (a directory
    that is missing now). Two spellings of one bucket and prefix with other options (an
    added region, another endpoint) count as one place: a deletion is never risked on a
    guess (docs/design.md, "Moving bytes between backends").

    Raises:
        InputError: ``blobs.spec`` for a malformed spec.
    """
    x, y = parse_spec(a), parse_spec(b)
    if x.kind != y.kind:
        return False
    if x.kind == INLINE:
        return True
    if x.kind == "s3":
        return x.bucket == y.bucket and x.prefix == y.prefix
    if x.path == y.path:
        return True
    try:
        return os.path.samefile(x.path, y.path)
    except OSError:
        return None


_OPENED: dict[tuple[str, float | None, S3Credentials | None], BlobBackend] = {}
_LOCK = threading.Lock()


def open_backend(text: str, *, timeout: float | None = None) -> BlobBackend:
    """The backend a spec names, opened once per process, timeout and S3 credentials.

    ``inline`` has none. An S3 backend is opened with the credentials of
    :func:`~.credentials.configure_s3` and nothing else (no instance-metadata lookup).

    Args:
        text: the spec.
        timeout: an S3 backend's connect and read timeout in seconds (the store's
            ``blobs.timeout_seconds``); None: that setting's default.

    Raises:
        InputError: ``blobs.spec`` (a malformed spec, ``inline``, or no S3 client).
        StoreStateError: ``blobs.backend`` (a directory that cannot be created),
            ``install.extra-missing`` (an S3 spec without the ``s3`` extra),
            ``blobs.credentials`` (an S3 spec and no credentials configured).
    """
    spec = parse_spec(text)
    if spec.kind == INLINE:
        raise _bad(text, "inline bytes live in the database, not in a backend")
    creds = None
    if spec.kind == "file":
        timeout = None  # a directory has no timeouts: one backend per spec
    else:
        require("s3")  # the missing extra is named first: credentials would not help
        creds = s3_credentials()
        if creds is None:
            raise missing_credentials(spec.text)
    with _LOCK:
        found = _OPENED.get((spec.text, timeout, creds))
        if found is not None:
            return found
        backend: BlobBackend
        if spec.kind == "file":
            from .file import FileBackend

            backend = FileBackend(spec.path)
        else:
            from .s3 import S3Backend

            assert creds is not None
            backend = S3Backend(
                spec.bucket,
                spec.prefix,
                credentials=creds,
                endpoint=spec.endpoint,
                region=spec.region,
                timeout=timeout,
            )
        _OPENED[(spec.text, timeout, creds)] = backend
        return backend
