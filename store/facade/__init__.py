"""The facade: :class:`~.api.Store` and the ingest pipeline every front end calls.

Terms: store (one database and its blobs), ingest (validate, bind and write documents in
one transaction), validate (the same checks, always rolled back).
"""
