"""The contracts: one folder per artifact family, every folder the same shape.

Each ``contracts/<name>/`` holds ``rules.py`` (pure: detect, shape, rules; no database),
``schema.py`` where a JSON Schema states the shape, further pure ``rules_*.py`` where the
rules are long, and ``store.py`` (the kind handlers and the ``store.<name>`` namespace).
A contract never imports another contract; ``runs`` may import the others' pure rules.
docs/contract-modules.md walks through adding one.
"""
