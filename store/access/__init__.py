"""Access: the HTTP server's bearer tokens, made, listed and revoked per store.

Terms: token (a secret shown once), scope (read, ingest, admin), token id.
"""
