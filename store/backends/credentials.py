"""S3 credentials for this process: given by the caller, never looked up (issue 25).

An S3 client left to find credentials by itself (obstore's, boto3's) ends its search at the
cloud's instance-metadata service (``http://169.254.169.254``): on a machine outside that
cloud the request hangs until its timeout, or reaches whatever answers there. evstore never
lets it search: an S3 backend is opened only with credentials configured here, and a
missing one is the typed error ``blobs.credentials`` before any connection is made.

The library never reads the environment (docs/design.md, "Layers"): the CLI and ``evstore
serve`` read the standard variables (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_ENDPOINT_URL``, ``AWS_REGION``) with
:meth:`S3Credentials.from_variables` and call :func:`configure_s3`; a program using the
library calls it itself. Credentials are kept in this process only, never in the database.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..core.errors import EvstoreError, error

__all__ = ["S3Credentials", "configure_s3", "missing_credentials", "s3_credentials"]

#: The standard variables :meth:`S3Credentials.from_variables` reads (AWS's own names).
VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_ENDPOINT_URL",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
)


@dataclass(frozen=True)
class S3Credentials:
    """A static S3 access key, and the endpoint and region used when a spec names none.

    Attributes:
        access_key_id: the access key's id (``AWS_ACCESS_KEY_ID``).
        secret_access_key: its secret (``AWS_SECRET_ACCESS_KEY``; never in a repr or log).
        session_token: a temporary session's token, or None (``AWS_SESSION_TOKEN``).
        endpoint: the S3 endpoint URL for specs without ``?endpoint=`` (``AWS_ENDPOINT_URL``).
        region: the region for specs without ``?region=`` (``AWS_REGION``).
    """

    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)
    endpoint: str | None = None
    region: str | None = None

    @classmethod
    def from_variables(cls, env: Mapping[str, str]) -> S3Credentials | None:
        """The credentials the standard variables in ``env`` give, or None unless both
        ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY`` are set (only cli/ passes
        ``os.environ``; an S3 backend then fails with ``blobs.credentials`` when opened).
        """  # noqa: D205
        key = env.get("AWS_ACCESS_KEY_ID") or None
        secret = env.get("AWS_SECRET_ACCESS_KEY") or None
        if key is None or secret is None:
            return None
        return cls(
            key,
            secret,
            env.get("AWS_SESSION_TOKEN") or None,
            env.get("AWS_ENDPOINT_URL") or None,
            env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
        )


_LOCK = threading.Lock()
_CURRENT: list[S3Credentials | None] = [None]


def configure_s3(credentials: S3Credentials | None) -> S3Credentials | None:
    """Set the S3 credentials of this process (None: none; S3 backends are then refused).

    Backends opened before keep the credentials they were opened with; the next
    :func:`~evstore.backends.spec.open_backend` uses these.

    Returns:
        The credentials configured before.
    """
    with _LOCK:
        before = _CURRENT[0]
        _CURRENT[0] = credentials
        return before


def s3_credentials() -> S3Credentials | None:
    """The S3 credentials of this process (:func:`configure_s3`), or None."""
    return _CURRENT[0]


def missing_credentials(spec: str) -> EvstoreError:
    """The typed error for an S3 backend opened with no credentials configured."""
    return error(
        "blobs.credentials",
        f"no S3 credentials for {spec}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
        "(the evstore command reads them), or call evstore.configure_s3; evstore never asks "
        "an instance-metadata service for them",
        backend=spec,
    )
