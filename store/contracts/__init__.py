"""The contracts: one folder per artifact family, every folder the same shape.

Each ``contracts/<name>/`` holds ``rules.py`` (pure: detect, shape, rules; no database),
``schema.py`` where a JSON Schema states the shape, further pure ``rules_*.py`` where the
rules are long, ``store.py`` (the kind handlers and the ``store.<name>`` namespace) and,
where part of that namespace runs on any :class:`evstore.StoreProtocol`, ``portable.py``
(no database: the HTTP client's namespace inherits it).
A contract never imports another contract; ``runs`` may import the others' pure rules.
docs/contract-modules.md walks through adding one.
"""
