"""The S3-compatible bucket backend (``s3://BUCKET/PREFIX``), through obstore.

obstore (the Python binding of Rust's ``object_store``) speaks the S3 protocol; evstore
writes no protocol code. It was chosen over boto3 for speed (bench/blobstore.py measures
both on the same server). Credentials are always given to the client (:mod:`.credentials`:
the CLI reads ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``), so
it never searches for them and never asks an instance-metadata service; the endpoint and
region come from the spec's options, else from those credentials (``AWS_ENDPOINT_URL``,
``AWS_REGION``). Nothing secret is ever stored in the database. Uploads are single PUTs or
multipart uploads the server completes atomically: a key holds a whole object or none.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..core.errors import EvstoreError, error
from ..core.extras import require
from .base import CHUNK, Listed, missing, unreachable
from .credentials import S3Credentials

__all__ = ["S3Backend"]

#: Retries of one request before ``blobs.unreachable``: short, so a client of a store whose
#: object server is down gets a typed, retryable error in seconds, not minutes.
_RETRY = {
    "max_retries": 3,
    "backoff": {
        "init_backoff": _dt.timedelta(milliseconds=50),
        "max_backoff": _dt.timedelta(seconds=1),
        "base": 2,
    },
    "retry_timeout": _dt.timedelta(seconds=10),
}


#: Bytes of each part of a multipart upload (S3's minimum part is 5 MiB).
UPLOAD_PART = 8 * CHUNK

#: ``blobs.timeout_seconds``' default: seconds to connect, and between two reads of an answer.
DEFAULT_TIMEOUT = 5.0


class S3Backend:
    """A :class:`~evstore.backends.base.BlobBackend` over ``bucket``, keys under ``prefix``.

    Args:
        bucket: the bucket's name (it must exist).
        prefix: a key prefix inside the bucket ("" for none), without slashes at its ends.
        credentials: the access key (:class:`~.credentials.S3Credentials`); its endpoint and
            region are used when ``endpoint`` and ``region`` are None.
        endpoint: the S3 endpoint URL (None: the credentials', else AWS itself).
        region: the region (None: the credentials', else the client's default).
        timeout: seconds to connect and between two reads of an answer (None:
            :data:`DEFAULT_TIMEOUT`); a hung server is ``blobs.unreachable`` after about
            twice this.

    Raises:
        StoreStateError: ``install.extra-missing`` without the ``s3`` extra (obstore).
    """

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        credentials: S3Credentials,
        endpoint: str | None = None,
        region: str | None = None,
        timeout: float | None = None,
    ) -> None:
        require("s3")
        from obstore.store import S3Store

        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.spec = f"s3://{bucket}/{self.prefix}" if self.prefix else f"s3://{bucket}"
        # The key pair always given: the client never searches the environment's chain,
        # which ends at the instance-metadata service (a hang off that cloud).
        config: dict[str, Any] = {
            "access_key_id": credentials.access_key_id,
            "secret_access_key": credentials.secret_access_key,
        }
        if credentials.session_token:
            config["session_token"] = credentials.session_token
        endpoint = endpoint or credentials.endpoint
        region = region or credentials.region
        if endpoint:
            config["endpoint"] = endpoint
        if region:
            config["region"] = region
        wait = _dt.timedelta(seconds=DEFAULT_TIMEOUT if timeout is None else max(timeout, 0.1))
        retry = {**_RETRY, "retry_timeout": 2 * wait}
        self._store = S3Store(
            bucket,
            prefix=self.prefix or None,
            config=config,  # type: ignore[arg-type]
            # Plain http is allowed for an endpoint named in the spec or in AWS_ENDPOINT_URL
            # (a server on the same host or network); https is used whenever it is named.
            # A hung server is noticed within `wait` (connect, or between two reads of an
            # answer); a whole request may take long (a large part of a slow upload).
            client_options={
                "allow_http": True,
                "connect_timeout": wait,
                "read_timeout": wait,
                "timeout": _dt.timedelta(minutes=30),
            },
            retry_config=retry,  # type: ignore[arg-type]
        )

    def _fault(self, what: str, exc: Exception) -> EvstoreError:
        text = str(exc).split("\n", 1)[0]
        low = str(exc).lower()
        if "error sending request" in low or "connect" in low or "timed out" in low:
            return unreachable(self.spec, f"{what}: {text[:200]}")
        return error(
            "blobs.backend",
            f"the blob backend {self.spec} failed to {what}: {text[:300]}",
            backend=self.spec,
        )

    def put_file(self, key: str, path: str) -> None:
        """Upload the local file at ``path`` under ``key`` (multipart above 10 MiB)."""
        import obstore

        with open(path, "rb") as src:
            try:
                obstore.put(self._store, key, src, chunk_size=UPLOAD_PART)
            except Exception as exc:  # obstore's errors, typed here
                raise self._fault(f"upload {key}", exc) from None

    def put_chunks(self, key: str, chunks: Iterable[bytes]) -> None:
        """Upload the bytes ``chunks`` yields under ``key`` (a multipart upload of
        :data:`UPLOAD_PART` parts, completed only after ``chunks`` has ended). An exception
        raised by ``chunks`` propagates unchanged: the upload is never completed, so the key
        keeps whatever it held (the parts sent are left to the bucket's lifecycle rule for
        incomplete uploads, as after a crash).
        """  # noqa: D205
        import obstore

        raised: list[BaseException] = []

        def feed() -> Iterator[bytes]:
            try:
                yield from chunks
            except BaseException as exc:  # the caller's own error, raised again below
                raised.append(exc)
                raise

        try:
            obstore.put(self._store, key, feed(), chunk_size=UPLOAD_PART)
        except Exception as exc:
            if raised:
                raise raised[0] from None
            raise self._fault(f"upload {key}", exc) from None

    def put_bytes(self, key: str, data: bytes) -> None:
        """Upload ``data`` under ``key`` (one PUT)."""
        import obstore

        try:
            obstore.put(self._store, key, data)
        except Exception as exc:
            raise self._fault(f"upload {key}", exc) from None

    def create_bytes(self, key: str, data: bytes) -> bool:
        """Upload ``data`` under ``key`` unless it exists (a conditional PUT, ``If-None-Match:
        *``); True when made here, False when the server refused it as existing.
        """  # noqa: D205
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        try:
            obstore.put(self._store, key, data, mode="create")
        except (AlreadyExistsError, PreconditionError):
            return False
        except Exception as exc:
            raise self._fault(f"upload {key}", exc) from None
        return True

    def get_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the object (fewer at its end; ``corruption.blob-missing``)."""
        import obstore

        if end <= start:
            if self.stat(key) is None:
                raise missing(self.spec, key)
            return b""
        try:
            return bytes(obstore.get_range(self._store, key, start=start, end=end))
        except FileNotFoundError:
            raise missing(self.spec, key) from None
        except Exception as exc:
            size = self.stat(key)
            if size is None:
                raise missing(self.spec, key) from None
            if start >= size:
                return b""
            raise self._fault(f"read {key}", exc) from None

    def iter_chunks(self, key: str, size: int = CHUNK) -> Iterator[bytes]:
        """The whole object, streamed (chunks of at least ``size`` bytes but the last)."""
        import obstore

        try:
            result = obstore.get(self._store, key)
        except FileNotFoundError:
            raise missing(self.spec, key) from None
        except Exception as exc:
            raise self._fault(f"read {key}", exc) from None
        return self._chunks(result, key, size)

    def _chunks(self, result: Any, key: str, size: int) -> Iterator[bytes]:
        try:
            for chunk in result.stream(min_chunk_size=size):
                yield bytes(chunk)
        except Exception as exc:
            raise self._fault(f"read {key}", exc) from None

    def stat(self, key: str) -> int | None:
        """The object's size in bytes, or None."""
        import obstore

        try:
            return int(obstore.head(self._store, key)["size"])
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise self._fault(f"stat {key}", exc) from None

    def delete(self, key: str) -> None:
        """Remove the object (nothing when it is absent)."""
        import obstore

        try:
            obstore.delete(self._store, key)
        except FileNotFoundError:
            return
        except Exception as exc:
            raise self._fault(f"delete {key}", exc) from None

    def delete_many(self, keys: Sequence[str]) -> dict[str, EvstoreError]:
        """Remove the objects ``keys`` with DeleteObjects (obstore sends up to 1,000 keys a
        request); those that could not be deleted, with their errors.

        DeleteObjects answers per key, and obstore reports only that some key failed: after
        such an answer each key is deleted again by itself (a key already gone is no error
        on S3), so exactly the keys that still fail are returned.

        Raises:
            StoreStateError: ``blobs.unreachable`` (the keys' state is unknown).
        """  # noqa: D205
        import obstore

        if not keys:
            return {}
        try:
            obstore.delete(self._store, list(keys))
            return {}
        except FileNotFoundError:
            pass  # a store that reports absent keys: settled below, key by key
        except Exception as exc:
            fault = self._fault(f"delete {len(keys)} keys", exc)
            if fault.code == "blobs.unreachable":
                raise fault from None
        failed: dict[str, EvstoreError] = {}
        for key in keys:
            try:
                self.delete(key)
            except EvstoreError as err:
                if err.code == "blobs.unreachable":
                    raise
                failed[key] = err
        return failed

    def presign_get(self, key: str, seconds: int) -> str:
        """A URL that GETs the object for ``seconds`` without credentials (AWS SigV4 query
        signing, by obstore: no request is made). Ranges work on it (``Range`` is not signed).

        Raises:
            StoreStateError: ``blobs.backend`` when the client cannot sign.
        """  # noqa: D205
        import obstore

        try:
            return obstore.sign(self._store, "GET", key, _dt.timedelta(seconds=seconds))
        except Exception as exc:
            raise self._fault(f"sign a GET of {key}", exc) from None

    def list(self, prefix: str) -> Iterator[Listed]:
        """Every object under the directory ``prefix`` (``""``: all), in pages."""
        import obstore

        try:
            for page in obstore.list(self._store, prefix=prefix or None, chunk_size=1000):
                for meta in page:
                    yield Listed(str(meta["path"]), int(meta["size"]), meta["last_modified"])
        except Exception as exc:
            raise self._fault(f"list {prefix or '/'}", exc) from None
