"""Write the shell completion scripts from the program: ``completions/acpcli.{bash,zsh,fish}``.

Usage::

    python tools/gen_completions.py            # rewrite the three committed scripts
    python tools/gen_completions.py --out DIR  # write them into DIR instead
    python tools/gen_completions.py --check    # exit 1 if a committed script is stale

The text is :func:`acpcli.cli.completion.script`, the same that ``acpcli completion SHELL``
prints; ``tests/cli/test_completion.py`` fails when the committed files differ from it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from acpcli.cli.completion import SHELLS, script  # noqa: E402 - after the sys.path line above


def target(directory: Path, shell: str) -> Path:
    """Where the script for ``shell`` lives in ``directory``."""
    return directory / f"acpcli.{shell}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the shell completion scripts.")
    parser.add_argument("--out", type=Path, default=REPO / "completions", help="output directory")
    parser.add_argument("--check", action="store_true", help="exit 1 if a script differs, write nothing")
    args = parser.parse_args(argv)

    stale = []
    for shell in SHELLS:
        path = target(args.out, shell)
        text = script(shell)
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(str(path))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        # newline="\n": the scripts are for Unix shells, whatever platform writes them
        with open(path, "w", encoding="utf-8", newline="\n") as out:
            out.write(text)
        print(f"wrote {path}")
    if stale:
        print("stale (run python tools/gen_completions.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
