"""Corpus passage evidence manifests (orbidocs v1): what one passage read.

Terms: manifest, read (an exact ref and digest), rendered content (kept by content
address), phase (which revision of the manifest).
"""
