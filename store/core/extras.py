"""The optional parts of evstore: which extra of the ``evidence-store`` distribution each needs.

``pip install evidence-store`` (``pip install .`` from a checkout) installs the library and the
``evstore`` command on SQLite. Four parts need more, each from an extra (pyproject.toml):

    server       ``evstore serve``, ``evstore.create_app`` / ``serve`` and the audit pages:
                 FastAPI, uvicorn, Jinja2
    client       stores served over HTTP (``http://`` and ``https://`` store URLs): httpx
    postgresql   PostgreSQL stores (``postgresql://`` URLs): psycopg 3
    s3           blob bytes in an S3-compatible bucket (``s3://`` blob backends): obstore

``all`` is the four; ``test`` is ``all`` plus the test tools. Where a missing extra is met,
:func:`require` imports its modules first and fails with the typed error that names the
extra (``install.extra-missing``, :func:`extra_missing`), never a bare ImportError.
"""

from __future__ import annotations

import importlib

from .errors import EvstoreError, error

__all__ = ["DISTRIBUTION", "EXTRAS", "extra_missing", "require"]

#: The distribution name pip knows evstore by.
DISTRIBUTION = "evidence-store"

#: Extra -> (what it provides, for people; the modules it installs that evstore imports).
EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "server": (
        "the HTTP server (evstore serve, evstore.create_app, the audit pages)",
        ("fastapi", "uvicorn", "jinja2"),
    ),
    "client": ("a store served over HTTP (an http:// or https:// store URL)", ("httpx",)),
    "postgresql": ("a PostgreSQL store (a postgresql:// store URL)", ("psycopg",)),
    "s3": ("blob bytes in an S3-compatible bucket (an s3:// blob backend)", ("obstore",)),
}


def extra_missing(extra: str, exc: ImportError) -> EvstoreError:
    """The typed error for a part of evstore whose extra is not installed.

    Args:
        extra: a key of :data:`EXTRAS`.
        exc: the ImportError met (its ``name`` is the missing module).

    Returns:
        A StoreStateError ``install.extra-missing`` (not raised) whose message names the
        extra and the pip command; details ``extra`` and ``module``.
    """
    module = exc.name or str(exc)
    return error(
        "install.extra-missing",
        f"{EXTRAS[extra][0]} needs the {extra!r} extra, which is not installed here (no module "
        f"{module!r}): pip install '{DISTRIBUTION}[{extra}]' (from a checkout: pip install "
        f"'.[{extra}]')",
        extra=extra,
        module=module,
    )


def require(extra: str) -> None:
    """Import the modules of ``extra`` (:data:`EXTRAS`), or fail typed when one is missing.

    Called before a part that needs the extra is loaded, so a missing module (or one that
    cannot be imported: a dependency of it is missing) is named before any work starts.

    Raises:
        StoreStateError: ``install.extra-missing`` (details ``extra``, ``module``).
    """
    for name in EXTRAS[extra][1]:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise extra_missing(extra, exc) from exc
