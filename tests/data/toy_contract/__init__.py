"""A toy contract, ``toy-note``: the smallest contract folder (tests/test_contract_path.py).

It has the shape of store/contracts/<name>/ (docs/contract-modules.md): a pure ``rules.py``
and a ``store.py`` holding the kind handler. The test puts tests/data on sys.path and adds
one registry line for it; nothing else in evstore knows it.

Terms:
    note: ``{"toy": "note/v1", "text": str, "count": int}``; the discriminator is ``toy``.
"""
