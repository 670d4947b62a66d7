"""The core: pure values and rules every other layer builds on. No database, no I/O.

Terms:
    digest: size, BLAKE3 and SHA-256 of exact bytes (:mod:`.digests`).
    content ref: a text naming bytes by one digest form (:mod:`.refs`).
    canonical form: the RFC 8785 bytes of a JSON value, the only bytes an artifact is
        stored as (:mod:`.canonical`).
    code: a stable dotted error code with its family and rule (:mod:`.error_codes`,
        :mod:`.errors`); a fault is one error at a JSON Pointer.
    setting: a declared store option with its type and default (:mod:`.settings`).
    cursor: the last item of a listing page, where the next page starts (:mod:`.cursors`).

Imports nothing else of evstore.
"""
