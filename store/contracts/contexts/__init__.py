"""Published evidence contexts (notarius v1) and generic source documents.

Terms: evidence context (an excerpt of source units), source document (a source's
complete unit list), descriptor (the ``index.json`` entry of a context in a run bundle).
"""
