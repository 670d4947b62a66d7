"""The client of a store served over HTTP (``evstore serve``): :class:`RemoteStore`.

``evstore.open("http(s)://HOST:PORT[/NAME]", token=...)`` returns one; it implements
:class:`evstore.StoreProtocol` as a local Store does. This package sits above the facade: it
uses evstore's public names and the pure base modules (digests, refs, canonical JSON, errors,
the result types, the ingest input reader), never the database. docs/http.md#the-client
describes retries and verification.
"""

from __future__ import annotations

from .http import Http, RetryPolicy, display_url, is_remote_url, unsupported
from .remote import RemoteStore

__all__ = ["Http", "RemoteStore", "RetryPolicy", "display_url", "is_remote_url", "unsupported"]
