"""``python -m evstore``: the ``evstore`` command, for environments without the console script."""

from evstore.cli.main import main

__all__: list[str] = []

if __name__ == "__main__":
    main()
