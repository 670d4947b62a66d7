"""Answer evidence packages (insonic 1.3.0): ranked source spans, conflicts, context.

Terms: package, request, envelope (claims and citations against a stored package),
context size (``context.bytes`` and ``tokens``).
"""
