"""``acpcli prompt``: one turn, scripted. stdout carries only the transcript."""

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
    NoFs,
    NoMcp,
    NoTerminal,
    Permissions,
    Protocol,
)

app = typer.Typer()


@app.command()
def prompt(
    text: Annotated[list[str] | None, typer.Argument(metavar="[TEXT]...", help="The prompt (else -f FILE, else stdin).", show_default=False)] = None,
    file: Annotated[Path | None, typer.Option("--file", "-f", metavar="FILE", help="Read the prompt from FILE ('-' for stdin).", show_default=False)] = None,
    session: Annotated[str | None, typer.Option("--session", "-s", metavar="SESSION_ID", help="Continue this session (resume, or load without printing the replay).", autocompletion=completers.session_ids, show_default=False)] = None,
    last: Annotated[bool, typer.Option("--last", help="Continue the most recent session in this directory: of --agent/--cmd when given, else of any agent (or of default_agent when the config names one).")] = False,
    agent: Agent = None,
    cmd: Cmd = None,
    cwd: Cwd = None,
    add_dir: AddDir = None,
    mcp_config: McpConfig = None,
    mcp: Mcp = None,
    no_mcp: NoMcp = False,
    protocol: Protocol = None,
    output_format: Annotated[str, typer.Option("--format", metavar="text|markdown|jsonl", help="Output format on stdout.", autocompletion=completers.formats)] = "text",
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write the transcript to FILE instead of stdout.", dir_okay=False, show_default=False)] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the agent's answer.")] = False,
    raw: Annotated[bool, typer.Option("--raw", help="Print the JSON-RPC frames both ways instead of the transcript, one JSON object per line (secrets redacted).")] = False,
    mode: Annotated[str | None, typer.Option("--mode", metavar="MODE", help="Switch the session to this mode before the prompt.", show_default=False)] = None,
    model: Annotated[str | None, typer.Option("--model", metavar="MODEL", help="Switch the session to this model before the prompt.", show_default=False)] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", metavar="NAME=VALUE", help="Set one of the agent's session settings before the prompt (repeatable; see /config in the REPL).", show_default=False)] = None,
    permissions: Permissions = None,
    no_fs: NoFs = False,
    no_terminal: NoTerminal = False,
    log_file: LogFile = None,
) -> None:
    """Send one prompt and print the answer; exit with a code for how the turn ended.

    Examples:

      acpcli prompt --agent demo "explain this repo"

      echo "summarize" | acpcli prompt --agent demo > answer.md

      acpcli prompt --last "and now the tests"

      acpcli prompt --agent claude --mode plan --model opus "how would you split this module?"
    """
    from acpcli.cli import ops
    from acpcli.errors import UsageError

    wanted = ops.wanted_settings(mode, model, set_)
    env = ops.environment()
    the_text = ops.prompt_text(text, file, env)
    if session and last:
        raise UsageError("give either --session or --last, not both")
    default_agent = default_cwd = record = None
    default_dirs: list[str] = []
    if last and agent is None and cmd is None:
        # No agent named: the last session here, whatever agent it was made with.
        session = ops.last_session_here(cwd)
        last = session is None
    if session is not None:
        record = ops.lookup(session)
        session = record.id
        default_agent = ops.recorded_agent(record)
        default_cwd, default_dirs = record.cwd, list(record.additional_dirs)
    inputs = ops.session_inputs(
        agent=agent, cmd=cmd, cwd=cwd, add_dir=add_dir, mcp_config=mcp_config, mcp=mcp,
        protocol=protocol, log_file=log_file, default_agent=default_agent, default_cwd=default_cwd,
        default_add_dirs=default_dirs, record=record, no_mcp=no_mcp,
    )
    if last:
        session = ops.last_session(inputs.agent, inputs.cwd)
        record = ops.lookup(session)
        inputs.additional_directories = list(record.additional_dirs) if not add_dir else inputs.additional_directories
        inputs.protocol = ops.choose_protocol(protocol, inputs.agent, record)
    if record is not None:
        ops.recorded_mcp(inputs, record)
    run = ops.Run(env=env, repl=False, permissions=permissions, fs=not no_fs, terminal=not no_terminal, raw=raw)
    if output is not None:
        try:
            out = open(output, "w", encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as err:
            from acpcli.errors import OutputError

            raise OutputError(f"cannot write {output}: {err.strerror or err}") from None
        run.env = ops.Environment(stdin=env.stdin, stdout=out, stderr=env.stderr)
    try:
        code = ops.run_prompt(
            inputs, run, the_text, session_id=session, output_format=output_format, quiet=quiet, settings=wanted
        )
    finally:
        if output is not None:
            ops.close_output(run.env.stdout, str(output))
    raise typer.Exit(code)
