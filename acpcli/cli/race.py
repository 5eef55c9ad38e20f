"""``acpcli race``: one task, several agents at once, each in its own worktree; then show,
apply or drop what they did. The work is :mod:`acpcli.racing`; this module parses, draws and
maps the outcome to an exit code."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from acpcli.cli import completers
from acpcli.cli.options import Permissions

if TYPE_CHECKING:
    from acpcli.env import Environment
    from acpcli.history.index import SessionRecord
    from acpcli.racing.record import Race

app = typer.Typer()

ACTIONS = ("show", "apply", "drop")


@app.command(short_help="Give one task to several agents at once; keep the best result.")
def race(
    text: Annotated[list[str] | None, typer.Argument(metavar="PROMPT… | show RACE [NAME] | apply RACE NAME | drop RACE", help="The prompt (else -f FILE, else stdin); or an action on a race.", show_default=False)] = None,
    agent: Annotated[list[str] | None, typer.Option("--agent", "-a", metavar="NAME", help="A candidate agent (repeatable; the same agent twice runs twice).", autocompletion=completers.agent_names, show_default=False)] = None,
    cmd: Annotated[list[str] | None, typer.Option("--cmd", metavar="COMMAND", help="A candidate agent command line (repeatable).", show_default=False)] = None,
    file: Annotated[Path | None, typer.Option("--file", "-f", metavar="FILE", help="Read the prompt from FILE ('-' for stdin).", show_default=False)] = None,
    check: Annotated[str | None, typer.Option("--check", metavar="CMD", help="Run CMD (a shell line) in each candidate's tree after its turn; exit 0 passes.", show_default=False)] = None,
    check_timeout: Annotated[str | None, typer.Option("--check-timeout", metavar="SECONDS", help="Stop a check after SECONDS (default 600).", show_default=False)] = None,
    timeout: Annotated[str | None, typer.Option("--timeout", metavar="SECONDS", help="Bound each candidate's setup steps and turn: past it the turn is cancelled (its agent killed if it does not stop) and its row says timed out.", show_default=False)] = None,
    permissions: Permissions = None,
    session: Annotated[str | None, typer.Option("--session", "-s", metavar="SESSION_ID", help="Start from this conversation: candidates of its agent fork it (session/fork, where offered), the others get its transcript as context.", autocompletion=completers.session_ids, show_default=False)] = None,
    keep: Annotated[bool, typer.Option("--keep", help="Keep each candidate's worktree and live session (continue one with prompt --session).")] = False,
    cwd: Annotated[Path | None, typer.Option("--cwd", "-C", metavar="DIR", help="Where the race starts (default: the current directory).", file_okay=False, show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The summary as one JSON object.")] = False,
) -> None:
    """Give one task to several agents at once, each in its own copy of the tree.

    In a git repository each candidate gets a worktree at HEAD (git worktree add
    --detach, under ACPCLI_HOME) with your uncommitted changes copied in; in a plain
    folder, a copy. Your branch, index, refs and stash are never touched. Each
    candidate runs its turn as `acpcli prompt` would, recorded in the history with
    the race's id (acpcli sessions --race RACE).

    On a terminal a board shows each candidate as it works; then the summary: stop
    reason, time, files changed (+/- lines), the --check result, usage. Exit 0 when a
    candidate ended its turn (and its check passed), else 21.

    Without --keep the worktrees are removed at the end (the results stay for show
    and apply until drop); Ctrl-C cancels every candidate and removes everything.

    Then: `race show RACE [NAME]` (the summary; one candidate's diff), `race apply
    RACE NAME` (into your tree, 3-way; refused on a conflict with your changes,
    naming the files), `race drop RACE`. `acpcli race` alone lists the races kept.

    Examples:

    \b
      acpcli race --agent claude --agent codex "fix the failing test"
      acpcli race -a claude -a claude -f task.md --check 'make test'
      acpcli race show r1a2b3c4 codex
      acpcli race apply r1a2b3c4 codex
      acpcli race drop r1a2b3c4
    """
    from acpcli.cli.streams import environment
    from acpcli.config import parse_timeout
    from acpcli.errors import UsageError

    env = environment()
    words = list(text or [])
    if not agent and not cmd:
        if words and words[0] in ACTIONS:
            raise typer.Exit(_action(words[0], words[1:], env, as_json))
        if words or file is not None:
            raise UsageError("a race needs its candidates: --agent NAME (or --cmd COMMAND), at least once")
        raise typer.Exit(_list(env, as_json))
    seconds = parse_timeout(timeout)
    check_seconds = parse_timeout(check_timeout, "--check-timeout")
    from acpcli.cli.streams import prompt_text

    task = prompt_text(words, file, env)
    code = run(
        env, agents=list(agent or []), cmds=list(cmd or []), task=task, check=check,
        check_timeout=check_seconds or 600.0, timeout=seconds or None, permissions=permissions, session=session,
        keep=keep, cwd=cwd, as_json=as_json,
    )
    raise typer.Exit(code)


def run(
    env: Environment, *, agents: list[str], cmds: list[str], task: str, check: str | None, check_timeout: float,
    timeout: float | None, permissions: str | None, session: str | None, keep: bool, cwd: Path | None,
    as_json: bool,
) -> int:
    """The race itself: prepare, run with a board (a terminal) or quietly, summarize."""
    import signal

    from acpcli.errors import ExitCode, Interrupted, Terminated, UsageError
    from acpcli.racing import board as boards
    from acpcli.racing.run import Runner, Settings, new_race, remove_trees

    if permissions is not None and permissions not in ("ask", "allow", "deny", "read-only"):
        raise UsageError(f"--permissions must be ask, allow, deny or read-only; got {permissions!r}")
    _known_agents(agents)
    record = None
    full = task
    if session is not None:
        from acpcli.session.inputs import lookup

        record = lookup(session)
        full = _with_transcript(record.id, task)
    race, source = new_race(
        Path(cwd) if cwd is not None else Path.cwd(), agents, cmds, full, check=check, keep=keep,
        from_session=record.id if record is not None else None,
    )
    if record is not None:
        _plan_forks(race, record, task, env)
    if source.submodules:
        env.note("this repository has submodules: they are not checked out in the race's worktrees", style="dim")
    settings = Settings(
        permissions=permissions if permissions != "ask" else None, timeout=timeout, check=check,
        check_timeout=check_timeout, keep_alive=None if not keep else os.environ.get("ACPCLI_KEEP_ALIVE") or "",
    )
    if settings.keep_alive == "":
        from acpcli.config import keep_alive

        settings.keep_alive = f"{keep_alive(None):g}"
    on_board = env.stdout_is_terminal and not as_json
    board = boards.Board(race, env.stdout) if on_board else None
    questions = None
    if board is not None and env.stdin_isatty and permissions in (None, "ask"):
        from acpcli.racing.asking import Questions

        questions = Questions()  # each candidate's questions, asked here one at a time
    runner = Runner(race, source, settings, on_change=board.changed if board is not None else None, questions=questions)

    def tick() -> None:
        from acpcli.racing.asking import answer, ask_at_terminal

        assert board is not None
        question = questions.next() if questions is not None else None
        while question is not None:
            board.clear()
            answer(question.answer_fd, ask_at_terminal(question, env.stdout, env.stdin.readline))
            question = questions.next() if questions is not None else None
        board.tick()

    def on_term(signum: int, frame: object) -> None:
        raise Terminated(signum)

    previous = {sig: signal.signal(sig, on_term) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        if board is not None:  # a large tree takes a moment: said, not a blank screen
            kind = "worktrees" if source.kind == "repo" else "copies"
            env.note(f"preparing {len(race.candidates)} {kind} of {source.cwd}…", style="dim")
        runner.prepare()
        env.note(f"race {race.id}: {len(race.candidates)} candidates in {source.cwd}", style="dim")
        runner.start()
        runner.wait(tick=tick if board is not None else None)
    except (KeyboardInterrupt, Interrupted) as exc:
        runner.cancel()
        if board is not None:
            board.tick(force=True)
        if keep:
            race.save()
            env.note(f"race {race.id} cancelled; kept: `acpcli race show {race.id}`, `acpcli race drop {race.id}`")
        else:
            runner.remove()
        raise exc if isinstance(exc, Interrupted) else Interrupted() from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if board is not None:
        board.tick(force=True)
        board.clear()
    if not keep:
        remove_trees(race, source)
    race.save()
    if as_json:
        env.stdout.write(_json_line(race.to_json()) + "\n")
    else:
        env.stdout.write(boards.summary_text(race, boards.terminal_width(env.stdout) if on_board else None))
    env.stdout.flush()
    from acpcli.env import program

    me = program()
    hint = f"`{me} race show {race.id} NAME` shows a candidate's diff; `{me} race apply {race.id} NAME` takes it"
    if keep:
        hint += f"; `{me} prompt --session ID` continues one; `{me} race drop {race.id}` removes them"
    else:
        hint += f"; `{me} race drop {race.id}` forgets the race"
    env.note(hint, style="dim")
    return int(ExitCode.OK) if any(c.succeeded for c in race.candidates) else int(ExitCode.NO_WINNER)


def _known_agents(agents: list[str]) -> None:
    """A name that is no agent is a usage error before any worktree is made."""
    if not agents:
        return
    from acpcli.session.agent import pick_agent

    for name in dict.fromkeys(agents):
        pick_agent(name, None)


def _plan_forks(race: Race, record: SessionRecord, task: str, env: Environment) -> None:
    """With ``--session``: the candidates of the session's own agent fork it (session/fork,
    where that agent offers it); the others, and those whose fork is refused, are sent its
    transcript as context. Said in one line on stderr."""
    from acpcli.text.safe import shown_id

    race.task = task
    forking = []
    for cand in race.candidates:
        same = cand.agent == record.agent if cand.agent is not None else _argv(cand.cmd) == list(record.argv)
        if same:
            cand.fork_of = record.id
            forking.append(cand.name)
    sid = shown_id(record.id)
    if not forking:
        env.note(f"each candidate starts from session {sid}: its transcript is given as context", style="dim")
        return
    others = len(forking) < len(race.candidates)
    env.note(
        f"{', '.join(forking)} fork session {sid} (session/fork, where its agent offers it; else its transcript is "
        "given as context" + (", as it is to the others)" if others else ")"),
        style="dim",
    )


def _argv(cmd: str | None) -> list[str]:
    import shlex

    try:
        return shlex.split(cmd or "")
    except ValueError:
        return []


def _with_transcript(session_id: str, task: str) -> str:
    """The prompt with the conversation of ``session_id`` before it, as context."""
    from acpcli.history.index import Index
    from acpcli.history.records import rebuild

    with Index.open(read_only=True) as index:
        store = rebuild(index, session_id)
    from acpcli.model import Message

    lines = []
    for entry in store.entries:
        if not isinstance(entry, Message) or entry.kind not in ("user", "agent"):
            continue
        text = "".join(str(b.get("text") or "") for b in entry.content if isinstance(b, dict) and b.get("type") == "text")
        if text.strip():
            lines.append(f"{entry.kind}: {text.strip()}")
    context = "\n\n".join(lines)
    return f"The conversation so far (for context):\n\n{context}\n\nThe task now:\n\n{task}" if lines else task


# -- show, apply, drop, the list -------------------------------------------------------------


def _action(action: str, args: list[str], env: Environment, as_json: bool) -> int:
    from acpcli.errors import ExitCode, UsageError
    from acpcli.racing.record import load

    if not args:
        raise UsageError(f"race {action} needs the race's id (`acpcli race` lists them)")
    race = load(args[0])
    if action == "show":
        if len(args) > 2:
            raise UsageError("race show takes RACE and at most one candidate's NAME")
        if len(args) == 2:
            return _show_diff(race, args[1], env)
        if as_json:
            env.stdout.write(_json_line(race.to_json()) + "\n")
        else:
            from acpcli.racing.board import summary_text

            env.stdout.write(summary_text(race))
        return int(ExitCode.OK)
    if action == "apply":
        if len(args) != 2:
            raise UsageError("race apply takes RACE and the candidate's NAME")
        return _apply(race, args[1], env)
    if len(args) != 1:
        raise UsageError("race drop takes the race's id only")
    return _drop(race, env)


def _show_diff(race: Race, name: str, env: Environment) -> int:
    from acpcli.errors import ExitCode, UsageError
    from acpcli.racing import worktrees

    cand = race.candidate(name)
    if not cand.base or not cand.result:
        raise UsageError(f"candidate {name} of race {race.id} has no result to show ({cand.state})")
    patch = worktrees.diff(worktrees.open_store(race.store), cand.base, cand.result)
    if env.stdout_is_terminal:
        from acpcli.text.safe import safe_text

        env.stdout.write(safe_text(patch.decode("utf-8", "replace")))
        env.stdout.flush()
    else:
        env.stdout.flush()
        out = getattr(env.stdout, "buffer", None)
        if out is not None:
            out.write(patch)
            out.flush()
        else:
            env.stdout.write(patch.decode("utf-8", "surrogateescape"))
    return int(ExitCode.OK)


def _apply(race: Race, name: str, env: Environment) -> int:
    from acpcli.errors import ExitCode, UsageError
    from acpcli.racing import worktrees
    from acpcli.racing.apply import apply

    cand = race.candidate(name)
    if not cand.base or not cand.result:
        raise UsageError(f"candidate {name} of race {race.id} has no result to apply ({cand.state})")
    written = apply(worktrees.open_store(race.store), Path(race.top), cand.base, cand.result, race.folder / "merge")
    race.applied = name
    race.save()
    from acpcli.text.safe import safe_line

    for path in written:
        env.stdout.write(safe_line(path) + "\n")
    env.note(f"applied {name} of race {race.id}: {len(written)} file" + ("" if len(written) == 1 else "s"))
    if race.from_session is not None and cand.session is not None:
        _continue_from(race, cand.session, name, env)
    return int(ExitCode.OK)


def _continue_from(race: Race, session_id: str, name: str, env: Environment) -> None:
    """A race that started from a session: the conversation goes on from the winner's, in
    your tree (its session forked there, session/fork, where its agent offers it)."""
    import subprocess

    from acpcli.env import program
    from acpcli.processes import python_module_argv
    from acpcli.text.safe import safe_line, shown_id

    argv = [*python_module_argv("acpcli"), "fork", session_id, "--no-repl", "--cwd", race.cwd]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, check=False, timeout=300)
        made = done.stdout.decode("utf-8", "replace").strip() if done.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        made = ""
    if made and safe_line(made) == made and "\n" not in made:
        env.note(f"{name}'s conversation goes on here as session {made}: `{program()} prompt --session {made}`")
    else:
        where = "in its worktree" if race.keep else "(its worktree is gone: the agent works in your tree only if it was told so)"
        env.note(f"{name}'s conversation: `{program()} prompt --session {shown_id(session_id)}` {where}")


def _drop(race: Race, env: Environment) -> int:
    import contextlib

    from acpcli.errors import ExitCode
    from acpcli.racing import worktrees
    from acpcli.racing.run import remove_race_files

    stopped = 0
    for cand in race.candidates:
        if cand.session:
            from acpcli.cli.hosts import stop_quietly

            with contextlib.suppress(Exception):
                if stop_quietly(cand.session, why="race drop") is not None:
                    stopped += 1
    source = None
    if race.kind == "repo":
        with contextlib.suppress(Exception):
            source = worktrees.inspect(Path(race.top))
    remove_race_files(race, source)
    env.note(f"race {race.id} dropped" + (f" ({stopped} live session{'s' if stopped != 1 else ''} stopped)" if stopped else ""))
    return int(ExitCode.OK)


def _list(env: Environment, as_json: bool) -> int:
    from acpcli.errors import ExitCode
    from acpcli.racing.record import all_ids, load
    from acpcli.text.safe import safe_line

    rows = []
    for rid in all_ids():
        try:
            rows.append(load(rid))
        except Exception:  # noqa: BLE001 - an unreadable race is listed by its id alone
            continue
    if as_json:
        for r in rows:
            env.stdout.write(_json_line({"id": r.id, "created": r.created, "cwd": r.cwd, "candidates": [c.name for c in r.candidates], "prompt": r.prompt[:200]}) + "\n")
        return int(ExitCode.OK)
    if not rows:
        env.note("no races kept — start one with `acpcli race --agent A --agent B PROMPT`")
        return int(ExitCode.OK)
    for r in rows:
        first = " ".join(r.prompt.split())[:60]
        names = ",".join(c.name for c in r.candidates)
        env.stdout.write(f"{r.id}\t{safe_line(names)}\t{safe_line(r.cwd)}\t{safe_line(first)}\n")
    return int(ExitCode.OK)


def _json_line(value: object) -> str:
    """``value`` as one JSON line's text (json is imported here: not at start-up)."""
    import json

    return json.dumps(value)
