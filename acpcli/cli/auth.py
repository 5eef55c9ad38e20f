"""``acpcli auth``: log in to (or out of) an agent outside a session."""

from __future__ import annotations

from typing import Annotated

import typer

from acpcli.cli import completers
from acpcli.cli.options import Agent, Cmd, LogFile, Protocol, Timeout

app = typer.Typer()


@app.command(short_help="Log in to an agent, or log out of it.")
def auth(
    agent_name: Annotated[
        str | None,
        typer.Argument(
            metavar="AGENT",
            help="The agent to log in to (see `acpcli agents`); or --agent NAME, or --cmd.",
            autocompletion=completers.agent_names,
            show_default=False,
        ),
    ] = None,
    agent: Agent = None,
    cmd: Cmd = None,
    method: Annotated[
        str | None,
        typer.Option("--method", "-m", metavar="ID", help="The login method to use (see --list).", show_default=False),
    ] = None,
    list_only: Annotated[bool, typer.Option("--list", help="Only list the agent's login methods.")] = False,
    logout: Annotated[bool, typer.Option("--logout", help="Log out instead (when the agent supports it).")] = False,
    protocol: Protocol = None,
    log_file: LogFile = None,
    timeout: Timeout = None,
) -> None:
    """Log in to an agent, using one of the login methods it advertises.

    With one method, that one is used; with several, you are asked (on a terminal) or must
    pass --method. A method of type "terminal" runs the agent's own login program in this
    terminal (the agent's command line plus the arguments the method names). Sessions need
    no restart afterwards: `acpcli resume ID` picks up where you were.

    Examples:

    \b
      acpcli auth claude             # asks which way when there are several
      acpcli auth codex --list       # the login methods
      acpcli auth gemini --logout
    """
    from acpcli.cli import login
    from acpcli.errors import UsageError

    if agent_name and agent and agent_name != agent:
        raise UsageError(f"two agents named: {agent_name!r} and --agent {agent!r}")
    raise typer.Exit(login.run_auth(
        agent_name or agent, cmd, method, list_only=list_only, logout=logout, protocol=protocol, log_file=log_file,
        timeout=timeout,
    ))
