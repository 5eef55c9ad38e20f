"""``acpcli agents``: the agents acpcli knows and whether their commands are installed."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from acpcli.errors import ExitCode

app = typer.Typer()


@app.command()
def agents(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """List built-in and configured agents, and whether each command is found on PATH.

    Configure more in config.toml under [agents.NAME] (see the README); run any other
    command with --cmd.
    """
    raise typer.Exit(_list(as_json))


def _list(as_json: bool) -> int:
    """List built-in and configured agents and whether each command is on PATH."""
    from acpcli.cli.streams import environment
    from acpcli.config import find_executable, load_config

    env = environment()
    cfg = load_config()
    rows = []
    for name, spec in sorted(cfg.agents.items()):
        found = find_executable(spec)
        rows.append((name, spec, found))
    if as_json:
        for name, spec, found in rows:
            env.stdout.write(
                json.dumps(
                    {
                        "name": name,
                        "argv": spec.argv,
                        "builtin": spec.builtin,
                        "description": spec.description,
                        "found": found,
                    }
                )
                + "\n"
            )
        return int(ExitCode.OK)
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("NAME", "COMMAND", "FOUND", "SOURCE", "DESCRIPTION"):
        table.add_column(column)
    for name, spec, found in rows:
        table.add_row(
            name,
            " ".join(spec.argv),
            found or "not on PATH",
            "built-in" if spec.builtin else "config",
            spec.description,
        )
    env.out.print(table)
    return int(ExitCode.OK)
