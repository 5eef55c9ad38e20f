"""Session lifecycle commands: new, load, resume, close, sessions, show.

Each command validates its input and delegates to :mod:`acpcli.cli.ops` (imported inside the
function, so ``--help`` stays fast).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from acpcli.cli import completers
from acpcli.cli.options import (
    AddDir,
    Agent,
    Cmd,
    Cwd,
    LogFile,
    Mcp,
    McpConfig,
    NoAddDirs,
    NoFs,
    NoMcp,
    NoRepl,
    NoTerminal,
    Permissions,
    Protocol,
    SessionId,
)

app = typer.Typer()

NewIfMissing = Annotated[
    bool,
    typer.Option(
        "--new-if-missing",
        help="If the agent cannot find the session, start a new one instead of failing "
        "(the explicit, visible fallback; the old context is not carried over).",
    ),
]
Title = Annotated[str | None, typer.Option("--title", help="A title for the session (shown by `acpcli sessions`).", show_default=False)]


def _run(
    no_repl: bool, title: str | None = None, permissions: str | None = None, no_fs: bool = False, no_terminal: bool = False
):
    from acpcli.cli.ops import Run, environment

    env = environment()
    return Run(
        env=env, repl=env.interactive and not no_repl, title=title, permissions=permissions,
        fs=not no_fs, terminal=not no_terminal,
    )


@app.command()
def new(
    agent: Agent = None,
    cmd: Cmd = None,
    cwd: Cwd = None,
    add_dir: AddDir = None,
    mcp_config: McpConfig = None,
    mcp: Mcp = None,
    protocol: Protocol = None,
    title: Title = None,
    no_repl: NoRepl = False,
    permissions: Permissions = None,
    no_fs: NoFs = False,
    no_terminal: NoTerminal = False,
    log_file: LogFile = None,
) -> None:
    """Start a new session with an agent.

    On a terminal the interactive prompt opens; otherwise (or with --no-repl) the new session
    id is printed alone on stdout, so `ID=$(acpcli new --agent demo --no-repl)` works.

    Examples:

      acpcli new --agent demo

      acpcli new --cmd 'my-agent --acp' --cwd ~/src/app --add-dir ~/src/lib
    """
    from acpcli.cli import ops

    inputs = ops.session_inputs(
        agent=agent, cmd=cmd, cwd=cwd, add_dir=add_dir, mcp_config=mcp_config, mcp=mcp,
        protocol=protocol, log_file=log_file,
    )
    raise typer.Exit(ops.run_lifecycle("new", inputs, _run(no_repl, title, permissions, no_fs, no_terminal)))


def _reattach(
    command: str,
    session_id: str,
    agent: str | None,
    cmd: str | None,
    cwd,
    add_dir,
    no_add_dirs: bool,
    mcp_config,
    mcp,
    protocol: str | None,
    log_file,
    new_if_missing: bool,
    run,
    no_mcp: bool = False,
) -> int:
    from acpcli.cli import ops
    from acpcli.errors import RpcError, SessionNotFound, UsageError

    record = ops.lookup_or_none(session_id)
    default_agent = None
    default_cwd = None
    default_dirs: list[str] = []
    if record is not None:
        default_agent = ops.recorded_agent(record)
        default_cwd = record.cwd
        default_dirs = list(record.additional_dirs)
        if cwd is not None and ops.resolve_dir(cwd, "--cwd") != record.cwd:
            raise UsageError(
                f"session {record.id} belongs to {record.cwd}; --cwd {cwd} differs",
                hint="the agent restores a session in its own working directory; drop --cwd, "
                "or start a new session there",
            )
    elif agent is None and cmd is None:
        # Exit 8 like show, close and prompt --session: the id is unknown here.
        raise SessionNotFound(
            f"session {session_id!r} is not in the local index; say which agent holds it",
            hint=f"acpcli {command} {session_id} --agent NAME (or --cmd 'COMMAND') [--cwd DIR]",
        )
    inputs = ops.session_inputs(
        agent=agent, cmd=cmd, cwd=cwd, add_dir=add_dir, mcp_config=mcp_config, mcp=mcp,
        protocol=protocol, log_file=log_file, default_agent=default_agent, default_cwd=default_cwd,
        default_add_dirs=default_dirs, no_add_dirs=no_add_dirs, record=record, no_mcp=no_mcp,
    )
    ops.recorded_mcp(inputs, record)
    sid = record.id if record is not None else session_id
    try:
        return ops.run_lifecycle(command, inputs, run, session_id=sid)
    except RpcError as err:
        if not new_if_missing:
            raise
        run.env.err.print(
            f"acpcli: {command} of {sid} failed ({err}); starting a new session (--new-if-missing)",
            markup=False,
        )
        return ops.run_lifecycle("new", inputs, run)


@app.command()
def load(
    session_id: SessionId,
    agent: Agent = None,
    cmd: Cmd = None,
    cwd: Cwd = None,
    add_dir: AddDir = None,
    no_add_dirs: NoAddDirs = False,
    mcp_config: McpConfig = None,
    mcp: Mcp = None,
    no_mcp: NoMcp = False,
    protocol: Protocol = None,
    new_if_missing: NewIfMissing = False,
    no_repl: NoRepl = False,
    permissions: Permissions = None,
    no_fs: NoFs = False,
    no_terminal: NoTerminal = False,
    log_file: LogFile = None,
) -> None:
    """Load a session: the agent replays the conversation, then the prompt opens.

    Needs an agent that supports loading (v1 loadSession, v2 session.load). Without a
    terminal (or with --no-repl) the replayed transcript is printed to stdout.
    The stored cwd and extra roots are sent again; a session not in the local index (made by
    another client) needs --agent or --cmd, and is recorded from then on.
    """
    raise typer.Exit(
        _reattach("load", session_id, agent, cmd, cwd, add_dir, no_add_dirs, mcp_config, mcp,
                  protocol, log_file, new_if_missing, _run(no_repl, permissions=permissions, no_fs=no_fs, no_terminal=no_terminal),
                  no_mcp)
    )


@app.command()
def resume(
    session_id: SessionId,
    agent: Agent = None,
    cmd: Cmd = None,
    cwd: Cwd = None,
    add_dir: AddDir = None,
    no_add_dirs: NoAddDirs = False,
    mcp_config: McpConfig = None,
    mcp: Mcp = None,
    no_mcp: NoMcp = False,
    protocol: Protocol = None,
    new_if_missing: NewIfMissing = False,
    no_repl: NoRepl = False,
    permissions: Permissions = None,
    no_fs: NoFs = False,
    no_terminal: NoTerminal = False,
    log_file: LogFile = None,
) -> None:
    """Resume a session without replay; the locally stored transcript is shown for context.

    Needs an agent that supports resuming (v1 sessionCapabilities.resume, v2 session.resume).
    Without a terminal (or with --no-repl) nothing is printed on stdout.
    """
    raise typer.Exit(
        _reattach("resume", session_id, agent, cmd, cwd, add_dir, no_add_dirs, mcp_config, mcp,
                  protocol, log_file, new_if_missing, _run(no_repl, permissions=permissions, no_fs=no_fs, no_terminal=no_terminal),
                  no_mcp)
    )


@app.command()
def close(
    session_id: SessionId,
    agent: Agent = None,
    cmd: Cmd = None,
    protocol: Protocol = None,
    log_file: LogFile = None,
) -> None:
    """Close a session on the agent (resuming it first when needed) and mark it closed.

    Needs an agent that supports closing. What the agent answered is reported on stderr.
    """
    from acpcli.cli import ops

    record = ops.lookup(session_id)
    inputs = ops.session_inputs(
        agent=agent, cmd=cmd, cwd=None, add_dir=None, mcp_config=None, mcp=None, protocol=protocol,
        log_file=log_file, default_agent=ops.recorded_agent(record),
        default_cwd=record.cwd, default_add_dirs=record.additional_dirs, record=record,
    )
    ops.recorded_mcp(inputs, record)
    raise typer.Exit(ops.run_close(record, inputs, _run(True)))


@app.command()
def sessions(
    agent: Annotated[str | None, typer.Option("--agent", "-a", help="Only this agent's sessions.", autocompletion=completers.agent_names, show_default=False)] = None,
    cwd: Cwd = None,
    all_states: Annotated[bool, typer.Option("--all", help="Include closed sessions.")] = False,
    remote: Annotated[bool, typer.Option("--remote", help="Ask the agent (session/list) instead of the local index; needs --agent or --cmd.")] = False,
    cmd: Cmd = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
    protocol: Protocol = None,
) -> None:
    """List sessions: the local index by default, or the agent's own list with --remote."""
    from acpcli.cli import listing

    raise typer.Exit(listing.sessions(
        agent=agent, cmd=cmd, cwd=cwd, all_states=all_states, remote=remote, as_json=as_json, protocol=protocol
    ))


@app.command()
def show(session_id: SessionId) -> None:
    """Print a session's stored transcript (no agent is started)."""
    from acpcli.cli import listing

    raise typer.Exit(listing.show(session_id))


@app.command()
def export(
    session_id: SessionId,
    output_format: Annotated[str, typer.Option("--format", metavar="markdown|jsonl|text", help="Transcript format.", autocompletion=completers.formats)] = "markdown",
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write to FILE instead of stdout.", dir_okay=False, show_default=False)] = None,
) -> None:
    """Export a session's transcript from the local index (no agent is started).

    markdown: a readable transcript; jsonl: one normalized event per line; text: plain text.
    Exporting after `acpcli load ID` gives the same messages as before it.
    """
    from acpcli.cli import listing

    raise typer.Exit(listing.export(session_id, output_format, output))
