"""Portable archives of closures: an OCI image layout, exported, verified, imported.

Terms: layout (oci-layout, index.json, blobs by SHA-256), manifest (one per root),
descriptor, member (one object of a closure), proofs (log proofs carried along).
"""
