"""Hypothesis profiles for the property tests.

``ci`` (the default) is reproducible: derandomized, 200 examples, no deadline (CI machines
vary in speed). ``dev`` explores more: 1000 random examples. Pick one with
``HYPOTHESIS_PROFILE=dev``.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, max_examples=200, deadline=None)
settings.register_profile("dev", max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
