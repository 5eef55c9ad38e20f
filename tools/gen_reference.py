"""Write the command reference from the program: ``docs/reference.md``.

Usage::

    python tools/gen_reference.py           # rewrite docs/reference.md
    python tools/gen_reference.py --check   # exit 1 if docs/reference.md is stale

The page holds ``acpcli --help`` and every command's ``--help`` exactly as an 80-column
terminal shows them (the same text, built by the same command tree), so it cannot say anything
the program does not; ``tests/test_docs.py`` fails when the committed page differs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

#: The width the reference is laid out at (and every ``--help`` is checked at).
WIDTH = 80
TARGET = REPO / "docs" / "reference.md"


def helps(width: int = WIDTH) -> list[tuple[str, str]]:
    """``(command line, help text)`` for ``acpcli`` and each of its commands, in the order
    ``acpcli --help`` lists them, as a terminal ``width`` columns wide shows them."""
    from typer._click.core import Context  # (the click typer carries: acpcli pins its typer)

    from acpcli.cli import app
    from acpcli.cli.typer_compat import command_tree, install

    install()
    root = command_tree(app)
    top = Context(root, info_name="acpcli", terminal_width=width, max_content_width=width, **root.context_settings)
    out = [("acpcli", root.get_help(top))]
    for name in root.list_commands(top):
        command = root.get_command(top, name)
        if command is None or command.hidden:
            continue
        ctx = Context(command, info_name=name, parent=top, terminal_width=width, max_content_width=width)
        out.append((f"acpcli {name}", command.get_help(ctx)))
    return out


def reference() -> str:
    """The whole page."""
    parts = [
        "# Command reference",
        "",
        "Every command's `--help`, as an 80-column terminal shows it. Generated from the program",
        "by `tools/gen_reference.py` (`make docs` runs it); a test fails when this page and the",
        "program differ, so it cannot drift. The guide pages say more: start at",
        "[the home page](index.md).",
        "",
    ]
    for line, text in helps():
        parts += [f"## `{line}`", "", "```text", text.rstrip(), "```", ""]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the command reference (docs/reference.md).")
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale, write nothing")
    args = parser.parse_args(argv)
    text = reference()
    current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else None
    if args.check:
        if current != text:
            print(f"{TARGET.relative_to(REPO)} is stale: run `python tools/gen_reference.py`", file=sys.stderr)
            return 1
        return 0
    if current != text:
        TARGET.write_text(text, encoding="utf-8")
        print(f"wrote {TARGET.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
