"""``python -m evstore``: runs the ``evstore`` command (for when the console script is not on PATH).

The one module of the package that reaches up into cli/: an entry point, not a layer. Nothing
in store/ imports it.
"""

from evstore.cli.main import main

__all__ = ["main"]

if __name__ == "__main__":
    main()
