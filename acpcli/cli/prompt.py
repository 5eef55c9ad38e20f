"""``acpcli prompt``: one turn, scripted. stdout carries only the transcript."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from acpcli.cli import completers
from acpcli.cli.options import (
    AddDir,
    Agent,
    Cmd,
    Cwd,
    KeepAlive,
    LogFile,
    Mcp,
    McpConfig,
    NoCheckpoints,
    NoFs,
    NoMcp,
    NoTerminal,
    NoWait,
    Permissions,
    Protocol,
    Timeout,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from acpcli.history.index import SessionRecord
    from acpcli.session.inputs import SessionInputs

app = typer.Typer()


@app.command(short_help="Send one prompt, print the answer, exit with how it ended.")
def prompt(
    text: Annotated[list[str] | None, typer.Argument(metavar="TEXT", help="The prompt (else -f FILE, else stdin).", show_default=False)] = None,
    file: Annotated[Path | None, typer.Option("--file", "-f", metavar="FILE", help="Read the prompt from FILE ('-' for stdin): UTF-8 text, at most 8 MiB (the same holds for a piped stdin; mention larger files with @PATH).", show_default=False)] = None,
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
    no_checkpoints: NoCheckpoints = False,
    log_file: LogFile = None,
    timeout: Timeout = None,
    no_wait: NoWait = False,
    keep_alive: KeepAlive = None,
    answer: Annotated[list[str] | None, typer.Option("--answer", metavar="FIELD=VALUE", help="Answer the agent's forms (elicitation) with VALUE for FIELD, converted to the field's type: true/false, a number, choices joined by commas (repeatable; fields not given take their defaults). A required field left out declines the form.", show_default=False)] = None,
    answers: Annotated[Path | None, typer.Option("--answers", metavar="FILE.json", help="Answer the agent's forms from a JSON object of FIELD: VALUE (--answer wins over it).", dir_okay=False, show_default=False)] = None,
) -> None:
    """Send one prompt and print the answer; exit with a code for how the turn ended.

    Permission requests: on a terminal you are asked (--permissions ask, the default there);
    in a script they are refused unless --permissions allow or read-only says otherwise. Every
    answer given for you is one line on stderr.

    Text piped on stdin beside TEXT or -f FILE is sent with the prompt as context (git diff |
    acpcli prompt "review this"); a terminal on stdin is never read (in a `while read` loop,
    give each prompt </dev/null).

    Requests for input (the agent's forms and links): on a terminal you fill the form in; in a
    script they are declined (one stderr line). --answer/--answers fill forms in, on a
    terminal too. Links are never opened: a script declines them.

    One turn at a time per session: with --session/--last on a session another acpcli is
    running a turn on, it waits for that turn to end (saying so on stderr), or with --no-wait
    exits 18 at once.

    With --session or --last the session's agent stays running for the next prompt (a live
    session, --keep-alive); a new session's does only when --keep-alive is given. With
    --keep-alive 0 on a session that is live already, its running agent takes the turn.

    Examples:

    \b
      acpcli prompt --agent demo "explain this repo"
      acpcli prompt --agent demo -f task.md > answer.md
      acpcli prompt --last "and now the tests"
      acpcli prompt --agent claude --mode plan "how would you split this?"
      acpcli prompt --agent demo --protocol 1 --answer name=Ada "form"
    """
    from acpcli.cli.streams import close_output, environment, piped_context, prompt_text
    from acpcli.config import parse_timeout
    from acpcli.env import Environment
    from acpcli.session.context import Invocation
    from acpcli.session.inputs import Options, for_prompt

    wanted = wanted_settings(mode, model, set_)
    given = _form_answers(answer or [], answers)
    seconds = parse_timeout(timeout)
    env = environment()
    the_text = prompt_text(text, file, env)
    piped = piped_context(text, file, env)  # `git diff | acpcli prompt "review this"`
    options = Options(
        agent=agent, cmd=cmd, cwd=cwd, add_dir=add_dir, mcp_config=mcp_config, mcp=mcp, no_mcp=no_mcp,
        protocol=protocol, log_file=log_file,
    )
    live_seconds = _live_seconds(keep_alive, session is not None or last)
    record: SessionRecord | None
    inputs: SessionInputs | None
    if live_seconds and session is not None and not last:
        from acpcli.session.inputs import lookup

        record = lookup(session)  # a live session needs no more to be found: its host has the rest
        inputs = None
    else:
        inputs, record = for_prompt(options, session, last)
    if last and record is not None:  # say which one: the most recent is not always the one meant
        env.note(_continuing(record), style="dim")
    invocation = Invocation(
        env=env, permissions=permissions, fs=not no_fs, terminal=not no_terminal, raw=raw, timeout=seconds,
        checkpoints=not no_checkpoints,
        wait=not no_wait, answers=given,
    )
    if env.interactive and not raw:  # a person at this terminal answers the questions of `ask`
        from acpcli.repl.person import AtTerminal

        invocation.asker = AtTerminal(env).ask_permission
        invocation.form_filler = AtTerminal(env).elicit
    elif not raw:  # a race's candidate: its questions go to the race's terminal (acpcli race)
        from acpcli.racing.asking import candidate_asker

        invocation.asker = candidate_asker() or invocation.asker
    if output is not None:
        try:
            out = open(output, "w", encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as err:
            from acpcli.errors import OutputError

            raise OutputError(f"cannot write {output}: {err.strerror or err}") from None
        invocation.env = Environment(stdin=env.stdin, stdout=out, stderr=env.stderr)
    joined = None
    if record is not None and not live_seconds:
        from acpcli.host import client

        # --keep-alive 0 on a session whose host runs: its agent takes the turn (an agent of
        # this command's own would never learn of it, nor the host's of this one)
        joined = client.join(record.id)
        if joined is not None:
            from acpcli.text.safe import shown_id

            env.note(f"session {shown_id(record.id)} is live: its agent takes this turn", style="dim")
    try:
        if record is None and live_seconds and inputs is not None:
            # a new session with --keep-alive: made by a host, which keeps it for the next prompt
            from acpcli.host import client
            from acpcli.session.inputs import lookup
            from acpcli.text.safe import shown_id

            made = client.hosted_session(options, invocation, agent=inputs.agent, keep_alive=live_seconds)
            invocation.env.note(f"session {shown_id(made)}", style="dim")
            code = client.prompt(
                lookup(made), options, invocation, the_text, output_format=output_format, quiet=quiet, settings=wanted,
                keep_alive=live_seconds, piped=piped,
            )
        elif record is not None and (live_seconds or joined is not None):
            from acpcli.host import client

            code = client.prompt(
                record, options, invocation, the_text, output_format=output_format, quiet=quiet, settings=wanted,
                keep_alive=live_seconds, piped=piped, channel=joined,
            )
        else:
            from acpcli.cli import commands

            assert inputs is not None
            code = commands.prompt(
                inputs, invocation, the_text, session_id=record.id if record is not None else None,
                output_format=output_format, quiet=quiet, settings=wanted, piped=piped,
            )
    finally:
        if output is not None:
            close_output(invocation.env.stdout, str(output))
    raise typer.Exit(code)


def _continuing(record: SessionRecord) -> str:
    """The line ``--last`` says: the session it continues, and its title when it has one."""
    from acpcli.text.safe import safe_line, shown_id

    title = " ".join((record.title or "").split())
    title = safe_line(title if len(title) <= 60 else title[:59] + "…")
    return f"continuing session {shown_id(record.id)}" + (f": {title}" if title else "")


#: The largest ``--answers`` file read.
_MAX_ANSWERS_FILE = 1024 * 1024


def wanted_settings(mode: str | None, model: str | None, pairs: Sequence[str] | None) -> list[tuple[str, str]]:
    """``--mode``, ``--model`` and ``--set NAME=VALUE`` as (setting, value) pairs, in that
    order; a malformed ``--set`` is a usage error before anything starts."""
    from acpcli.errors import UsageError

    wanted = [(key, value) for key, value in (("mode", mode), ("model", model)) if value is not None]
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise UsageError(f"--set wants NAME=VALUE, got {pair!r}")
        wanted.append((key.strip(), value.strip()))
    return wanted


def _form_answers(pairs: list[str], path: Path | None) -> dict[str, Any] | None:
    """``--answers FILE`` and ``--answer FIELD=VALUE`` as one mapping (None: neither given);
    :class:`~acpcli.errors.UsageError` for a pair without ``=`` or a file that is not a JSON
    object of names to text, numbers, booleans or lists of text."""
    from acpcli.errors import UsageError
    from acpcli.services.elicitation import parse_answers

    if not pairs and path is None:
        return None
    values: dict[str, Any] = {}
    if path is not None:
        import json

        from acpcli.bounded import TooLarge, read_file_capped

        try:
            data = read_file_capped(str(path), _MAX_ANSWERS_FILE)  # a FIFO: not waited on forever
        except OSError as err:
            raise UsageError(f"cannot read --answers {path}: {err.strerror or err}") from None
        except TooLarge:
            raise UsageError(f"--answers {path} is over {_MAX_ANSWERS_FILE // 1024} KiB") from None
        try:
            loaded = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as err:
            raise UsageError(f"--answers {path} is not JSON: {err}") from None
        if not isinstance(loaded, dict):
            raise UsageError(f"--answers {path} must hold a JSON object of FIELD: VALUE")
        for name, value in loaded.items():
            ok = isinstance(value, (str, int, float, bool)) or (
                isinstance(value, list) and all(isinstance(item, str) for item in value)
            )
            if not ok:
                raise UsageError(f"--answers {path}: the value of {name[:60]!r} is not text, a number, true/false or a list of text")
        values = loaded
    try:
        return parse_answers(pairs, values)
    except ValueError as err:
        raise UsageError(str(err)) from None


def _live_seconds(flag: str | None, continuing: bool) -> float:
    """The keep-alive of this prompt: 0 (no host) for a new session unless --keep-alive says
    otherwise. (--raw goes through a host too: it forwards the turn's frames.)"""
    if not continuing and flag is None:
        return 0.0
    from acpcli.config import keep_alive

    return keep_alive(flag)
