"""The HTTP server: evstore's API v1 over FastAPI on uvicorn (issue 11, docs/http.md).

:func:`evstore.create_app` (evstore.server.app) builds the ASGI app for one or several
stores; :func:`evstore.serve` (evstore.server.run) runs it on uvicorn. This package is a
layer above the facade: it imports evstore's public API only, and nothing in evstore imports
it except the lazy public names.
"""
