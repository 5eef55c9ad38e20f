"""``python -m acpcli`` and the ``acpcli`` console script."""

from __future__ import annotations


def main() -> None:
    from acpcli.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
