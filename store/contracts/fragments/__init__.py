"""Evidence fragments (templiqx v1alpha1): a quoted UTF-8 byte range of a document.

Terms: fragment, quote (the exact bytes), source (a content version of a document),
scope (who may reuse a fragment identity), revision (the document revision checksum).
"""
