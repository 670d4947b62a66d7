"""Read-only audit pages for reviewers (issue 15), served by ``evstore serve`` under ``P/ui``.

Server-rendered HTML (Jinja2 templates and one stylesheet shipped in this package; the one
small script only adds copy buttons), working without JavaScript, with a strict
Content-Security-Policy. :func:`create_router` builds the FastAPI router; the server includes
it under each store's prefix. This package sits above the facade: it imports the public
``evstore`` API only (tests/test_architecture.py). docs/pages.md describes every page.
"""

from __future__ import annotations

from .router import COOKIE, CSP, create_router

__all__ = ["COOKIE", "CSP", "create_router"]
