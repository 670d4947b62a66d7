"""Blob backends: where the bytes of large blobs live when not in the database.

Terms:
    backend: a place that keeps bytes under keys: a directory (:mod:`.file`) or an
        S3-compatible bucket (:mod:`.s3`); both implement :class:`.base.BlobBackend` and pass
        one conformance suite (tests/backends/).
    spec: the text that names a backend (``file:DIR``, ``s3://BUCKET/PREFIX``; :mod:`.spec`).
        Credentials are never part of a spec and never stored in the database.
    key: where one blob's bytes lie in a backend, derived from its address and fanned out
        (:func:`.base.blob_key`); a repeated upload under a key is harmless.
    object: the bytes under one key. A backend never judges what exists: the database does
        (docs/design.md, "Blob bytes outside the database").

Imports :mod:`evstore.core` only (and the S3 client, loaded when an S3 backend is opened).
"""
