"""``python -m evstore``: runs the ``evstore`` command (for when the console script is not on PATH).

The one module of the package that reaches up into cli/, at run time only: an entry point,
not a layer. Nothing in store/ imports it.
"""

import importlib

__all__ = ["main"]


def main() -> None:
    """Run the ``evstore`` command line (``evstore.cli.main.main``)."""
    importlib.import_module("evstore.cli.main").main()


if __name__ == "__main__":
    main()
