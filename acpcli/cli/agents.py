"""``acpcli agents``: the agents acpcli knows and whether their commands are installed."""

from __future__ import annotations

from typing import Annotated

import typer

app = typer.Typer()


@app.command()
def agents(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """List built-in and configured agents, and whether each command is found on PATH.

    Configure more in config.toml under [agents.NAME] (see the README); run any other
    command with --cmd.
    """
    from acpcli.cli import listing

    raise typer.Exit(listing.agents(as_json))
