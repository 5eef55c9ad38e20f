"""The session commands: new, load, fork, resume, close, sessions, show, export.

new/load/fork/resume/close run in :mod:`acpcli.cli.commands`; sessions/show/export in
:mod:`acpcli.cli.history`.

Each command parses its arguments and calls one function, imported inside the command so
``--help`` stays fast; :func:`acpcli.cli.main` maps what it returns or raises to an exit code.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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
    NoAddDirs,
    NoCheckpoints,
    NoFs,
    NoMcp,
    NoRepl,
    NoTerminal,
    NoWait,
    Permissions,
    Protocol,
    SessionId,
    Timeout,
)

if TYPE_CHECKING:
    from acpcli.env import Environment
    from acpcli.session.context import Invocation, Lifecycle
    from acpcli.session.inputs import Options

app = typer.Typer()

NewIfMissing = Annotated[
    bool,
    typer.Option(
        "--new-if-missing",
        help="If the agent cannot find the session, start a new one instead of failing "
        "(the explicit, visible fallback; the old context is not carried over).",
    ),
]
#: load and resume: the id, or none to pick one on a terminal (:mod:`acpcli.cli.recent`).
PickedSessionId = Annotated[
    str | None,
    typer.Argument(
        metavar="SESSION_ID",
        help="Session id (a unique prefix of a locally recorded id is enough). Without it, on a "
        "terminal: pick one of the recent sessions.",
        autocompletion=completers.session_ids,
        show_default=False,
    ),
]
Title = Annotated[str | None, typer.Option("--title", metavar="TEXT", help="A title for the session (shown by `acpcli sessions`).", show_default=False)]


def _run(
    no_repl: bool,
    title: str | None = None,
    permissions: str | None = None,
    no_fs: bool = False,
    no_terminal: bool = False,
    timeout: str | None = None,
    no_wait: bool = False,
    no_checkpoints: bool = False,
) -> Invocation:
    """The run of a lifecycle command: the REPL when there is a terminal (and no --no-repl)."""
    from acpcli.cli.streams import environment
    from acpcli.config import parse_timeout
    from acpcli.session.context import Invocation

    seconds = parse_timeout(timeout)  # before anything starts
    env = environment()
    person = None
    if env.interactive and not no_repl:
        from acpcli.repl.person import AtTerminal

        person = AtTerminal(env)
    return Invocation(
        env=env, person=person, title=title, permissions=permissions, fs=not no_fs, terminal=not no_terminal,
        timeout=seconds, checkpoints=not no_checkpoints,
        wait=not no_wait,
        created=lambda session_id: _print_id(env, session_id),
    )


def _picked(command: Lifecycle, session_id: str | None, invocation: Invocation) -> str:
    """The session ``load``/``resume`` is about: the id given; else, on a terminal, the one
    the person picks (none picked: exit 0, nothing started); else a usage error."""
    if session_id is not None:
        return session_id
    env = invocation.env
    if not env.interactive:
        from acpcli.errors import UsageError

        raise UsageError(
            f"{command} needs a SESSION_ID here (no terminal to pick one on)",
            hint=f"`acpcli {command} SESSION_ID`; `acpcli sessions` lists them",
        )
    from acpcli.cli.recent import pick_session
    from acpcli.text.safe import safe_line, shown_id

    record = pick_session(env, command)
    if record is None:
        env.note(f"no session chosen: nothing to {command}")
        raise typer.Exit(0)
    env.note(f"{'loading' if command == 'load' else 'resuming'} {shown_id(record.id)}: {safe_line(record.shown_title or '')}")
    return record.id


def _print_id(env: Environment, session_id: str) -> None:
    """A session a script created (``new``, ``fork``): its id alone on a line of stdout, so
    that ``ID=$(acpcli new --no-repl ...)`` works (:class:`~acpcli.errors.UnprintableId`: an
    id with control characters is refused, not printed)."""
    from acpcli.errors import UnprintableId
    from acpcli.text.safe import safe_line

    if safe_line(session_id) != session_id:  # the agent chose it
        raise UnprintableId(session_id)
    env.stdout.write(session_id + "\n")
    env.stdout.flush()


@app.command(short_help="Start a new session with an agent.")
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
    no_checkpoints: NoCheckpoints = False,
    log_file: LogFile = None,
    timeout: Timeout = None,
    keep_alive: KeepAlive = None,
    first: Annotated[str | None, typer.Option("--prompt", metavar="TEXT", help="Send TEXT first, as if typed at the prompt (the interactive prompt only).", show_default=False)] = None,
) -> None:
    """Start a new session with an agent.

    On a terminal the interactive prompt opens; otherwise (or with --no-repl) the new session
    id is printed alone on stdout, so `ID=$(acpcli new --agent demo --no-repl)` works. Either
    way the agent runs in a background host (--keep-alive) and stays for the prompts that
    follow, from here or from other terminals (`acpcli attach ID`).

    Examples:

    \b
      acpcli new --agent demo
      acpcli new --agent claude --prompt "fix the failing test"
      acpcli new --cmd 'my-agent --acp' --cwd ~/src/app --add-dir ~/src/lib
    """
    from acpcli.cli import commands
    from acpcli.session.inputs import Options

    options = Options(
        agent=agent, cmd=cmd, cwd=cwd, add_dir=add_dir, mcp_config=mcp_config, mcp=mcp, protocol=protocol,
        log_file=log_file,
    )
    invocation = _run(no_repl, title, permissions, no_fs, no_terminal, timeout, no_checkpoints=no_checkpoints)
    if first is not None:
        if invocation.person is None:
            from acpcli.errors import UsageError

            raise UsageError(
                "--prompt sends a first prompt in the interactive prompt; there is no terminal here",
                hint="in a script: acpcli prompt --agent NAME TEXT",
            )
        invocation.person.first_prompt = first  # type: ignore[attr-defined]
    from acpcli.config import keep_alive as configured_keep_alive

    seconds = configured_keep_alive(keep_alive)
    if seconds:
        from acpcli.host import client

        inputs = options.inputs()  # checked here: a bad option is this command's error
        if invocation.person is None:
            raise typer.Exit(client.new_session(options, invocation, agent=inputs.agent, keep_alive=seconds))
        from acpcli.repl.hosted import run_hosted

        sid = client.hosted_session(options, invocation, agent=inputs.agent, keep_alive=seconds)
        raise typer.Exit(run_hosted(invocation.env, invocation, sid, inputs.agent, transcript=False))
    raise typer.Exit(commands.new(options, invocation).exit_code)


@app.command(short_help="Reopen a session with its replay, then the prompt opens.")
def load(
    session_id: PickedSessionId = None,
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
    no_checkpoints: NoCheckpoints = False,
    log_file: LogFile = None,
    timeout: Timeout = None,
    no_wait: NoWait = False,
    keep_alive: KeepAlive = None,
) -> None:
    """Load a session: the agent replays the conversation, then the prompt opens.

    Needs an agent that supports loading (v1 loadSession, v2 session.load). Without a
    terminal (or with --no-repl) the replayed transcript is printed to stdout.
    The stored cwd and extra roots are sent again; a session not in the local index (made by
    another client) needs --agent or --cmd, and is recorded from then on.
    While another acpcli runs a turn on the session, the load (and each turn in the prompt)
    waits for it to end; with --no-wait it does not wait (the command exits 18; in the prompt
    the line is not sent).
    With keep-alive on (--keep-alive SECONDS, default 300; 0: off) a background host does the
    load and keeps the agent for the prompts that follow; a session whose host runs already
    is joined instead (no second agent).

    Without SESSION_ID, on a terminal: pick one of the recent sessions (this directory's
    first; arrow keys or type to filter, then Enter). Escape picks none: nothing is started,
    exit 0. Without a terminal SESSION_ID is needed (exit 2).

    Examples:

    \b
      acpcli load demo-1f2e
      acpcli load
      acpcli load demo-1f2e --no-repl > transcript.txt
    """
    from acpcli.cli import commands
    from acpcli.session.inputs import Options

    options = Options(
        agent=agent, cmd=cmd, cwd=cwd, add_dir=add_dir, no_add_dirs=no_add_dirs, mcp_config=mcp_config, mcp=mcp,
        no_mcp=no_mcp, protocol=protocol, log_file=log_file,
    )
    invocation = _run(
        no_repl, permissions=permissions, no_fs=no_fs, no_terminal=no_terminal, timeout=timeout, no_wait=no_wait,
        no_checkpoints=no_checkpoints,
    )
    session_id = _picked("load", session_id, invocation)
    from acpcli.config import keep_alive as configured_keep_alive

    seconds = configured_keep_alive(keep_alive)
    if seconds:
        raise typer.Exit(_hosted_reattach("load", session_id, options, invocation, seconds, new_if_missing=new_if_missing))
    raise typer.Exit(commands.reattach("load", session_id, options, invocation, new_if_missing=new_if_missing).exit_code)


@app.command(short_help="Start a session from a copy of another's conversation.")
def fork(
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
    title: Title = None,
    no_repl: NoRepl = False,
    permissions: Permissions = None,
    no_fs: NoFs = False,
    no_terminal: NoTerminal = False,
    no_checkpoints: NoCheckpoints = False,
    log_file: LogFile = None,
    timeout: Timeout = None,
) -> None:
    """Fork a session: a new session on the same agent that starts with the conversation so
    far (session/fork), while the original stays as it is.

    Needs an agent that advertises session forking (sessionCapabilities.fork; the method is
    still unstable upstream: claude-agent-acp has it). The fork is recorded with its parent
    (`acpcli sessions` and `show` name it), and its local transcript starts with a copy of the
    parent's. On a terminal the prompt opens on the fork, the conversation so far drawn first;
    otherwise (or with --no-repl) the new id is printed alone on stdout, as `new` does.
    The stored cwd, extra roots and MCP servers of the parent are used unless given.

    Examples:

    \b
      acpcli fork claude-5c1d
      FORK=$(acpcli fork "$ID" --no-repl)
      acpcli prompt --session "$FORK" 'try the other way'
    """
    from acpcli.cli import commands
    from acpcli.session.inputs import Options

    options = Options(
        agent=agent, cmd=cmd, cwd=cwd, add_dir=add_dir, no_add_dirs=no_add_dirs, mcp_config=mcp_config, mcp=mcp,
        no_mcp=no_mcp, protocol=protocol, log_file=log_file,
    )
    invocation = _run(no_repl, title, permissions, no_fs, no_terminal, timeout, no_checkpoints=no_checkpoints)
    raise typer.Exit(commands.fork(session_id, options, invocation).exit_code)


@app.command(short_help="Reopen a session without a replay, then the prompt opens.")
def resume(
    session_id: PickedSessionId = None,
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
    no_checkpoints: NoCheckpoints = False,
    log_file: LogFile = None,
    timeout: Timeout = None,
    no_wait: NoWait = False,
    keep_alive: KeepAlive = None,
) -> None:
    """Resume a session without replay; the locally stored transcript is shown for context.

    Needs an agent that supports resuming (v1 sessionCapabilities.resume, v2 session.resume).
    Without a terminal (or with --no-repl) nothing is printed on stdout.
    While another acpcli runs a turn on the session, the resume (and each turn in the prompt)
    waits for it to end; with --no-wait it does not wait (the command exits 18; in the prompt
    the line is not sent).
    With keep-alive on (--keep-alive SECONDS, default 300; 0: off) a background host does the
    resume and keeps the agent; a session whose host runs already is joined instead.

    Without SESSION_ID, on a terminal: pick one of the recent sessions (this directory's
    first; arrow keys or type to filter, then Enter). Escape picks none: nothing is started,
    exit 0. Without a terminal SESSION_ID is needed (exit 2).

    Examples:

    \b
      acpcli resume claude-5c1d
      acpcli resume
      acpcli resume claude-5c1d --keep-alive 0
    """
    from acpcli.cli import commands
    from acpcli.session.inputs import Options

    options = Options(
        agent=agent, cmd=cmd, cwd=cwd, add_dir=add_dir, no_add_dirs=no_add_dirs, mcp_config=mcp_config, mcp=mcp,
        no_mcp=no_mcp, protocol=protocol, log_file=log_file,
    )
    invocation = _run(
        no_repl, permissions=permissions, no_fs=no_fs, no_terminal=no_terminal, timeout=timeout, no_wait=no_wait,
        no_checkpoints=no_checkpoints,
    )
    session_id = _picked("resume", session_id, invocation)
    from acpcli.config import keep_alive as configured_keep_alive

    seconds = configured_keep_alive(keep_alive)
    if seconds:
        raise typer.Exit(_hosted_reattach("resume", session_id, options, invocation, seconds, new_if_missing=new_if_missing))
    raise typer.Exit(commands.reattach("resume", session_id, options, invocation, new_if_missing=new_if_missing).exit_code)


def _hosted_reattach(
    command: Lifecycle, session_id: str, options: Options, invocation: Invocation, seconds: float, *, new_if_missing: bool
) -> int:
    """``load``/``resume`` with keep-alive on: a host does the load or resume and keeps the
    agent (or the session's running host is joined); then the REPL over it, or without one
    what the command prints (``load``: the transcript; ``resume``: nothing)."""
    from acpcli.errors import ExitCode, HostReported
    from acpcli.host import client
    from acpcli.session.hostwire import address
    from acpcli.session.inputs import for_reattach, refuse_unadvertised
    from acpcli.text.safe import shown_id

    inputs, record = for_reattach(command, session_id, options)
    sid = record.id if record is not None else session_id
    if record is not None and address.holder(address.lock_path(sid)) is None:  # no host to join
        refuse_unadvertised(record, options, f"session/{command}")  # before a host or agent starts
    try:
        client.hosted_reattach(command, sid, options, invocation, agent=inputs.agent, keep_alive=seconds)
    except HostReported as err:
        if not new_if_missing or err.exit_code != ExitCode.AGENT_ERROR:
            raise
        invocation.say(f"acpcli: {command} of {shown_id(sid)} failed ({err.message}); starting a new session (--new-if-missing)")
        sid = client.hosted_session(options, invocation, agent=inputs.agent, keep_alive=seconds)
        if invocation.person is None:
            return int(ExitCode.OK)
        from acpcli.repl.hosted import run_hosted

        return run_hosted(invocation.env, invocation, sid, inputs.agent, transcript=False)
    if record is not None and record.state == "closed":  # the host's attach reopened it, and said so to nobody
        from acpcli.session.outcome import reopened_line

        invocation.say(reopened_line(sid))
    if invocation.person is None:
        if command == "load":
            client.print_stored(sid, invocation)
        return int(ExitCode.OK)
    from acpcli.repl.hosted import run_hosted

    return run_hosted(invocation.env, invocation, sid, inputs.agent, transcript=True, resumed=command == "resume")


@app.command(short_help="Close a session on the agent and mark it closed.")
def close(
    session_id: SessionId,
    agent: Agent = None,
    cmd: Cmd = None,
    protocol: Protocol = None,
    log_file: LogFile = None,
    timeout: Timeout = None,
) -> None:
    """Close a session on the agent (resuming it first when needed) and mark it closed. A live
    session's host is stopped first.

    Needs an agent that supports closing. What the agent answered is reported on stderr.
    Marking it closed waits up to ACPCLI_LOCK_WAIT seconds (default 15) for another
    process's lock on the local index, then exits 18 naming it.

    Examples:

    \b
      acpcli close claude-5c1d
    """
    from acpcli.cli import commands
    from acpcli.session.inputs import Options

    options = Options(agent=agent, cmd=cmd, protocol=protocol, log_file=log_file)
    invocation = _run(True, timeout=timeout)
    commands.refuse_close(session_id, options, _stopped_host)  # an agent that cannot close it: at once
    _stop_host_of(session_id, invocation)
    raise typer.Exit(commands.close(session_id, options, invocation))


def _stopped_host(full_id: str) -> int | None:
    """Stop the session's host, if one runs: its pid (None: there was none)."""
    from acpcli.cli.hosts import stop_quietly

    stopped = stop_quietly(full_id, why="close")
    return stopped[0] if stopped is not None else None


def _stop_host_of(session_id: str, invocation: Invocation) -> None:
    """A live session is closed with its host stopped first (a turn it runs is cancelled):
    closing is the end of the conversation, and the agent is then asked by this command."""
    from acpcli.errors import SessionNotFound
    from acpcli.session.inputs import lookup

    try:
        full_id = lookup(session_id).id
    except SessionNotFound:
        return  # commands.close says so
    from acpcli.cli.hosts import stop_quietly

    stopped = stop_quietly(full_id, why="close")
    if stopped is not None:
        invocation.say(f"acpcli: stopped the live session's host (pid {stopped[0]})")


@app.command(short_help="List the recorded sessions, or remove them (rm, prune).")
def sessions(
    action: Annotated[list[str] | None, typer.Argument(metavar="rm ID... | prune", help="`rm ID…`: delete these sessions' local records; `prune --older-than AGE`: delete those of every session last used before (see below).", autocompletion=completers.session_action, show_default=False)] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="rm, prune: do not ask first on a terminal.")] = False,
    older_than: Annotated[str | None, typer.Option("--older-than", metavar="AGE", help="prune: sessions last used longer ago than AGE (30d, 12h, 2w) or before a date (2026-11-01).", show_default=False)] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="prune: list what would be deleted, delete nothing.")] = False,
    agent: Annotated[str | None, typer.Option("--agent", "-a", metavar="NAME", help="Only this agent's sessions.", autocompletion=completers.agent_names, show_default=False)] = None,
    cwd: Cwd = None,
    state: Annotated[str | None, typer.Option("--state", metavar="active|closed|any", help="Only sessions in this state (default: active; --all: any).", show_default=False)] = None,
    since: Annotated[str | None, typer.Option("--since", metavar="WHEN", help="Only sessions used since WHEN: an age (30m, 12h, 7d, 2w) or a date (2026-11-01, 2026-11-01T09:30).", show_default=False)] = None,
    # a str, parsed by history.sessions: acpcli's own coercer (no pydantic) takes str, Path, bool
    limit: Annotated[str | None, typer.Option("--limit", "-n", metavar="N", help="Show the N most recent (default 20; 0: no limit). A note on stderr says how many more there are.", show_default=False)] = None,
    all_sessions: Annotated[bool, typer.Option("--all", help="Every session: closed ones and those never prompted too, and no limit (an explicit --state or --limit still applies).")] = False,
    remote: Annotated[bool, typer.Option("--remote", help="Ask the agent (session/list) instead of the local index; needs --agent or --cmd. With rm: delete on the agent's side too (session/delete), then locally.")] = False,
    cmd: Cmd = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
    wide: Annotated[bool, typer.Option("--wide", "-w", help="On a terminal: whole ids and working directories, the protocol version and both dates, however wide the lines get.")] = False,
    protocol: Protocol = None,
    timeout: Timeout = None,
    live: Annotated[bool, typer.Option("--live", help="Only live sessions (a background host keeps their agent running): host pid, busy or idle, queued prompts, clients attached, idle time.")] = False,
) -> None:
    """List sessions, most recently used first: the local index by default, or the agent's own
    list with --remote.

    The 20 most recent active sessions are shown; a note on stderr says how many more match
    and how to see them. Sessions never prompted (created and left: a REPL opened and closed
    at once) are not listed; a note says how many, and --all lists them. On a terminal, one
    line a session in its width: the shortest unique prefix of the id (every command takes
    it), the agent, the title, the working directory and when it was last used (--wide:
    whole ids, both dates). Piped: tab-separated lines with whole ids; --json: JSON lines.
    Filters combine: --agent, --cwd, --state, --since.

    `acpcli sessions rm ID…` deletes sessions from the local index: their index rows and
    stored events (and the demo agent's state for demo sessions); nothing on the agent's
    side. `acpcli sessions rm ID --remote` first asks the agent that runs it to delete it too
    (session/delete, so its own list drops it), then deletes the local record, one line for
    each side; an agent without that capability is refused (exit 6) and the local record kept.
    On a terminal it lists them and asks first (--yes skips that); without one it acts.
    `acpcli sessions prune --older-than 30d` does the same for every session (active or
    closed) last used longer ago than that; --dry-run only lists them. While another process
    holds the index's write lock, both wait up to ACPCLI_LOCK_WAIT seconds (default 15),
    then exit 18 naming it.

    Examples:

    \b
      acpcli sessions --since 7d --agent demo
      acpcli sessions --all --json
      acpcli sessions rm demo-1f2e demo-9a8b --yes
      acpcli sessions rm claude-5c1d --remote
      acpcli sessions prune --older-than 30d --dry-run
    """
    from acpcli.cli import history

    if action:
        from acpcli.errors import UsageError

        if action[0] == "rm":
            raise typer.Exit(history.remove(
                action[1:], yes=yes, remote=remote, agent=agent if remote else None, cmd=cmd, protocol=protocol,
                timeout=timeout,
            ))
        if action[0] == "prune":
            if action[1:]:
                raise UsageError("sessions prune takes no session ids: it picks by --older-than AGE")
            raise typer.Exit(history.prune(older_than, dry_run=dry_run, yes=yes))
        raise UsageError(
            f"unknown action {action[0]!r}: the actions are `acpcli sessions rm ID…` and "
            "`acpcli sessions prune --older-than AGE`"
        )
    if older_than is not None or dry_run:
        from acpcli.errors import UsageError

        raise UsageError("--older-than and --dry-run go with `acpcli sessions prune`")
    if live:
        from acpcli.cli.hosts import list_live

        raise typer.Exit(list_live(as_json=as_json))

    raise typer.Exit(history.sessions(
        agent=agent, cmd=cmd, cwd=cwd, all_sessions=all_sessions, remote=remote, as_json=as_json, protocol=protocol,
        state=state, since=since, limit=limit, timeout=timeout, wide=wide,
    ))


@app.command(short_help="Print a session's stored transcript; no agent is started.")
def show(
    session_id: SessionId,
    more_words: Annotated[list[str] | None, typer.Argument(metavar="WORD", help="More words for --grep: `--grep flaky test` is `--grep 'flaky test'`.", show_default=False)] = None,
    grep: Annotated[str | None, typer.Option("--grep", "-g", metavar="WORD", help="Only the messages and tool calls holding every word given (case-insensitive; word* for a prefix), each under the prompt it answers.", show_default=False)] = None,
    no_pager: Annotated[bool, typer.Option("--no-pager", help="Print it all even when it is longer than the terminal.")] = False,
) -> None:
    """Print a session's stored transcript (no agent is started).

    With --grep, only the entries holding every word, each under the prompt it belongs to,
    and a note on stderr saying how many of how many: the jump from `acpcli search` to the
    messages that matched. The words are those of `acpcli search`: every one, in any
    order; quotes do not make a phrase (`--grep flaky test` and `--grep 'flaky test'` are
    the same). On a terminal, a transcript longer than the screen goes through a pager
    ($PAGER, else less -R).

    Examples:

    \b
      acpcli show demo-1f2e
      acpcli show demo-1f2e --grep flaky test
    """
    from acpcli.cli import history

    if more_words:
        if grep is None:
            from acpcli.errors import UsageError

            raise UsageError(
                "show takes one SESSION_ID; words after it go with --grep",
                hint=f"`acpcli show {session_id} --grep WORD…`",
            )
        grep = " ".join([grep, *more_words])
    raise typer.Exit(history.show(session_id, grep, pager=not no_pager))


@app.command(short_help="Find past conversations by the words in their messages.")
def search(
    text: Annotated[list[str], typer.Argument(metavar="WORD", help="Words every matching message holds, in any order (case-insensitive; word* matches a prefix; quotes do not make a phrase).", show_default=False)],
    agent: Annotated[str | None, typer.Option("--agent", "-a", metavar="NAME", help="Only this agent's sessions.", autocompletion=completers.agent_names, show_default=False)] = None,
    cwd: Annotated[Path | None, typer.Option("--cwd", "-C", metavar="DIR", help="Only sessions whose working directory is DIR.", show_default=False)] = None,
    since: Annotated[str | None, typer.Option("--since", metavar="WHEN", help="Only sessions used since WHEN: an age (30m, 12h, 7d, 2w) or a date (2026-11-01).", show_default=False)] = None,
    limit: Annotated[str | None, typer.Option("--limit", "-n", metavar="N", help="Show the N best sessions (default 20; 0: all).", show_default=False)] = None,
    thoughts: Annotated[bool, typer.Option("--thoughts", help="Search the agents' thoughts too.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Find past conversations: every session (active or closed) with a message holding all
    the words -- your prompts, agents' answers, tool call titles, and with --thoughts the
    agents' thoughts.

    Best match first (newest first on ties), with the session's id, agent, last use, title
    and a snippet of its best matching message. Nothing is sent to an agent. The first search
    indexes the sessions recorded before search existed (a progress bar on a terminal).

    Examples:

    \b
      acpcli search flaky test
      acpcli search "retry*" --agent codex --since 2w
      acpcli search deploy --json | jq -r .id
    """
    from acpcli.cli import history

    raise typer.Exit(history.search(
        " ".join(text), agent=agent, cwd=cwd, since=since, limit=limit, thoughts=thoughts, as_json=as_json
    ))


@app.command(short_help="Write a session's transcript to a file or to stdout.")
def export(
    session_id: SessionId,
    output_format: Annotated[str, typer.Option("--format", metavar="markdown|jsonl|text", help="Transcript format.", autocompletion=completers.formats)] = "markdown",
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write to FILE instead of stdout.", dir_okay=False, show_default=False)] = None,
) -> None:
    """Export a session's transcript from the local index (no agent is started).

    markdown: a readable transcript; jsonl: one normalized event per line; text: plain text.
    Exporting after `acpcli load ID` gives the same messages as before it.

    Examples:

    \b
      acpcli export demo-1f2e -o session.md
      acpcli export demo-1f2e --format jsonl | jq .type
    """
    from acpcli.cli import history

    raise typer.Exit(history.export(session_id, output_format, output))
