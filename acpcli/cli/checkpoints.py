"""``acpcli checkpoints``, ``acpcli diff``, ``acpcli rewind``: what each turn did to the files,
and putting them back.

The checkpoints are :mod:`acpcli.worktree`'s (a private git store per session under
ACPCLI_HOME); this module finds the session (a unique prefix of a recorded id), prints what
they say (lists and diffs on stdout, notes on stderr, agent-written text made safe for the
terminal) and leaves errors to :func:`acpcli.cli.main`: no such turn or a refused rewind exit 2,
checkpoints off 3, busy 18, a store that cannot be read 16. Nothing is sent to an agent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from acpcli.cli.options import SessionId

if TYPE_CHECKING:
    from pathlib import Path

    from acpcli.env import Environment
    from acpcli.worktree import Checkpoint, Checkpoints, FileChange, RewindPlan

app = typer.Typer()


@app.command(short_help="List a session's turns and the files each one changed.")
def checkpoints(
    session_id: SessionId,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per checkpoint.")] = False,
) -> None:
    """List a session's checkpoints: each turn, its prompt's first line, when, and the files it
    changed with the lines added and removed.

    A checkpoint of the working tree (the cwd and the extra roots) is taken before the first
    turn (turn 0) and after every turn. See a turn's changes with `acpcli diff`, undo them
    with `acpcli rewind`.

    \b
    Examples:

    \b
      acpcli checkpoints SESSION
      acpcli checkpoints SESSION --json | jq .files
    """
    raise typer.Exit(listing(session_id, as_json=as_json))


@app.command(short_help="Show what a turn did to the files, as a unified diff.")
def diff(
    session_id: SessionId,
    turn: Annotated[str | None, typer.Argument(metavar="TURN", help="The turn (default: the last one).", show_default=False)] = None,
    stat: Annotated[bool, typer.Option("--stat", help="A summary of the changed files instead of the diff.")] = False,
    name_only: Annotated[bool, typer.Option("--name-only", help="Only the changed files' names.")] = False,
) -> None:
    """Show what a turn changed in the files, as a unified diff (coloured on a terminal).

    The turn's checkpoint against the one before it; renames are found; binary files are
    named, not shown.

    \b
    Examples:

    \b
      acpcli diff SESSION
      acpcli diff SESSION 3 --stat
    """
    raise typer.Exit(show_diff(session_id, _number(turn, "TURN"), stat=stat, name_only=name_only))


@app.command(short_help="Go back to before a turn: the files and the conversation.")
def rewind(
    session_id: SessionId,
    to: Annotated[str | None, typer.Option("--to", metavar="TURN", help="Go back to the state before TURN.", show_default=False)] = None,
    undo: Annotated[bool, typer.Option("--undo", help="Put back the files as they were before the last rewind.")] = False,
    files: Annotated[bool, typer.Option("--files", help="Restore the files only (no new session).")] = False,
    conversation: Annotated[bool, typer.Option("--conversation", help="Rewind the conversation only (the files stay as they are).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change; change nothing.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask first on a terminal.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite files changed by hand since the last checkpoint too.")] = False,
) -> None:
    """Go back to the state before a turn: the files, and the conversation as a new session.

    Files: only the paths the turns since changed are written: files they created are
    removed, files they deleted come back. Files you changed by hand after the last
    checkpoint are not overwritten (the rewind refuses and names them) unless --force. The
    present files are checkpointed first: `acpcli rewind SESSION --undo` puts them back. Each
    file is replaced whole, so a rewind stopped half way leaves every file old or new.

    Conversation: a new session on the same agent and folder holds the turns before TURN
    (`show NEW` has them; the next prompt continues there); its id is printed alone on stdout,
    as `new` prints it. The old session stays as it was. The agent forks it (session/fork)
    when it keeps every turn and the agent can fork; otherwise the transcript of the turns
    kept is sent to the agent as context with the new session's first prompt (said on stderr).

    \b
    Examples:

    \b
      acpcli rewind SESSION --to 3 --dry-run
      NEW=$(acpcli rewind SESSION --to 3 --yes)
      acpcli rewind SESSION --to 3 --files
      acpcli rewind SESSION --to 3 --conversation
      acpcli rewind SESSION --undo
    """
    raise typer.Exit(
        rewind_files(
            session_id, to=_number(to, "--to"), undo=undo, files=files, dry_run=dry_run, yes=yes, force=force,
            conversation=conversation,
        )
    )


# -- the bodies ---------------------------------------------------------------------------


def _number(text: str | None, what: str) -> int | None:
    """A turn number as typed (typer's own int parsing would import pydantic: ~250 ms)."""
    if text is None:
        return None
    if not text.strip().isdigit():
        from acpcli.errors import UsageError

        raise UsageError(f"{what} must be a turn number, 0 or more; got {text!r}")
    return int(text.strip())


def _open(session_id: str) -> tuple[str, Checkpoints]:
    """The recorded session ``session_id`` names (a unique prefix is enough) and its checkpoints."""
    from acpcli.errors import SessionNotFound
    from acpcli.history.index import Index
    from acpcli.text.safe import shown_id
    from acpcli.worktree import Checkpoints

    with Index.existing() as index:
        if index is None:
            raise SessionNotFound(f"no session {shown_id(session_id)!r} in the local index")
        record = index.get(session_id)
    return record.id, Checkpoints(record.id)


def _where(change: FileChange, first: Path | None) -> str:
    """A changed file's path as shown: relative to the session's first root, else absolute;
    control characters made visible."""
    import os

    from acpcli.text.safe import safe_line

    path = change.path if first is None or change.root == first else os.path.join(os.fsdecode(change.root), change.path)
    return safe_line(path)


def _files_text(checkpoint: Checkpoint) -> str:
    if checkpoint.turn == 0 or checkpoint.base is None:  # the session's first checkpoint
        return "-"
    n = len(checkpoint.files)
    return f"{n} (+{checkpoint.added} -{checkpoint.removed})" if n else "0"


def listing(session_id: str, *, as_json: bool) -> int:
    import json
    import time

    from acpcli.cli.streams import environment
    from acpcli.errors import ExitCode
    from acpcli.text.safe import safe_line, shown_id

    env = environment()
    sid, cps = _open(session_id)
    found = cps.list()
    first = cps.roots[0] if cps.roots else None
    if as_json:
        for cp in found:
            entry: dict[str, Any] = {
                "turn": cp.turn,
                "prompt": cp.label,
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(cp.time)),
                "added": cp.added,
                "removed": cp.removed,
                "files": [
                    {"path": _where(f, first), "status": f.status, "added": f.added, "removed": f.removed}
                    | ({"from": safe_line(f.old_path)} if f.old_path else {})
                    for f in cp.files
                ],
            }
            env.stdout.write(json.dumps(entry, ensure_ascii=False) + "\n")
        return int(ExitCode.OK)
    if not found:
        env.note(f"session {shown_id(sid)} has no checkpoints")
        return int(ExitCode.OK)
    rows = [
        (str(cp.turn), time.strftime("%Y-%m-%d %H:%M", time.localtime(cp.time)), _files_text(cp),
         cp.label if cp.turn else "(before the first turn)")
        for cp in found
    ]
    heads = ("TURN", "WHEN", "FILES", "PROMPT")
    widths = [max(len(r[i]) for r in [heads, *rows]) for i in range(3)]
    for row in [heads, *rows]:
        env.stdout.write(
            f"{row[0]:>{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:<{widths[2]}}  {safe_line(row[3])}".rstrip() + "\n"
        )
    return int(ExitCode.OK)


#: Colours of a diff's lines on a terminal, by how the line starts (the first match).
_COLOURS = (("diff --git", "\x1b[1m"), ("+++", "\x1b[1m"), ("---", "\x1b[1m"), ("@@", "\x1b[36m"), ("+", "\x1b[32m"), ("-", "\x1b[31m"))


def _coloured(text: str) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        colour = next((c for start, c in _COLOURS if line.startswith(start)), None)
        body = line.rstrip("\n")
        out.append(f"{colour}{body}\x1b[0m" + line[len(body):] if colour and body else line)
    return "".join(out)


def show_diff(session_id: str, turn: int | None, *, stat: bool, name_only: bool) -> int:
    from acpcli.cli.streams import environment
    from acpcli.errors import ExitCode, UsageError
    from acpcli.text.safe import safe_text, shown_id

    if stat and name_only:
        raise UsageError("--stat and --name-only do not go together")
    env = environment()
    sid, cps = _open(session_id)
    text = safe_text(cps.diff(turn, stat=stat, name_only=name_only))  # the files' lines, shown not obeyed
    if not text:
        env.note(f"turn {turn if turn is not None else cps.latest()} of {shown_id(sid)} changed no files")
        return int(ExitCode.OK)
    env.stdout.write(_coloured(text) if env.stdout_is_terminal and not name_only else text)
    return int(ExitCode.OK)


_VERBS = {"A": "restore", "M": "restore", "D": "remove"}


def _plan_lines(env: Environment, plan: RewindPlan, first: Path | None, out: Any = None) -> None:
    """The plan, one line per file: on ``out`` (None: stderr, as notes)."""
    conflicts = {(c.root, c.path) for c in plan.conflicts}
    for change in plan.changes:
        mark = "  (changed by hand since the last checkpoint)" if (change.root, change.path) in conflicts else ""
        line = f"{_VERBS[change.status]:<8} {_where(change, first)}{mark}"
        if out is None:
            env.note(line)
        else:
            out.write(line + "\n")
    for change, why in plan.skipped:
        env.note(f"left alone: {_where(change, first)}: {why}")


def _nothing(env: Environment, plan: RewindPlan, first: Path | None, what: str) -> int:
    from acpcli.errors import ExitCode

    for change, why in plan.skipped:
        env.note(f"left alone: {_where(change, first)}: {why}")
    env.note(f"nothing to change: the files are as they were before {what}")
    return int(ExitCode.OK)


def rewind_files(
    session_id: str, *, to: int | None, undo: bool, files: bool, dry_run: bool, yes: bool, force: bool,
    conversation: bool = False,
) -> int:
    """``acpcli rewind``. The files: the plan is printed first (one line per file,
    ``restore``/``remove``: on stdout, or on stderr when a new session's id goes there), asked
    about on a terminal, then carried out. The conversation (unless ``files`` only): a new
    session holding the turns before ``to``, made before the files are written (a refused
    rewind makes none). The session's turn lock is held throughout: no rewind while a turn of
    the session runs."""
    from acpcli.cli.streams import environment
    from acpcli.errors import ExitCode, SessionBusy, UsageError
    from acpcli.history.lock import SessionLock, busy_message
    from acpcli.text.safe import shown_id

    if (to is None) == (not undo):
        raise UsageError("say where to: --to TURN, or --undo", hint="acpcli checkpoints SESSION lists the turns")
    if undo and conversation:
        raise UsageError("--undo puts files back; a rewound conversation is a new session, the old one is still there")
    do_files = files or not conversation
    do_talk = not undo and (conversation or not files)
    env = environment()
    if do_files:
        sid, cps = _open(session_id)
    else:
        sid, cps = _record_id(session_id), None
    lock = SessionLock(sid)
    if not lock.try_acquire():
        raise SessionBusy(busy_message(sid, lock.holder()))
    try:
        if do_talk:
            assert to is not None
            _check_turn(sid, to)  # before anything changes
        if cps is None:
            assert to is not None
            return _rewind_talk(env, sid, to, dry_run=dry_run, yes=yes)
        first = cps.roots[0] if cps.roots else None
        lines = env.stdout if not do_talk else None  # the new id alone on stdout

        def run(dry: bool) -> RewindPlan:
            if undo:
                return cps.undo(dry_run=dry, force=force)
            assert to is not None
            return cps.rewind(to, dry_run=dry, force=force)

        what = "the last rewind" if undo else f"turn {to}"
        ask = env.interactive and not yes and not dry_run
        shown: RewindPlan | None = None
        if dry_run or ask or do_talk:  # the plan first (to show, to ask about, or to refuse before a new session)
            plan = run(True)
            if not plan.changes and not do_talk:
                return _nothing(env, plan, first, what)
            if plan.conflicts and not force and not dry_run:
                run(False)  # refused (RewindRefused names the files): nothing written, nothing listed
            if dry_run or ask:
                _plan_lines(env, plan, first, lines)
            if dry_run:
                n = len(plan.changes)
                env.note(f"dry run: nothing changed ({n} file{'s' if n != 1 else ''} would be)")
                if do_talk:
                    env.note(f"dry run: no new session (one would hold the turns before turn {to} of {shown_id(sid)})")
                return int(ExitCode.OK)
            if ask:
                n = len(plan.changes)
                them = "nothing in the files" if not n else ("this file" if n == 1 else f"these {n} files")
                question = f"Rewind {them}" + (f" and start a new session from the turns before turn {to}" if do_talk else "")
                answer = env.err.input(f"{question}? [y/N] ", markup=False, emoji=False)
                if answer.strip().lower() not in ("y", "yes"):
                    env.note("nothing changed")
                    return int(ExitCode.OK)
                shown = plan
            elif not plan.changes:
                shown = plan  # nothing to write: said below
        if do_talk:
            assert to is not None
            _new_session(env, sid, to)
        done = run(False)
        if not done.changes:
            if do_talk:
                for change, why in done.skipped:
                    env.note(f"left alone: {_where(change, first)}: {why}")
                env.note(f"the files are as they were before turn {to}: none changed")
                return int(ExitCode.OK)
            return _nothing(env, done, first, what)
        if shown is None:
            _plan_lines(env, done, first, lines)
        else:
            for change, why in done.skipped:
                if (change, why) not in shown.skipped:
                    env.note(f"left alone: {_where(change, first)}: {why}")
        n = len(done.changes)
        if undo:
            env.note(f"put back {n} file{'s' if n != 1 else ''} as they were before the last rewind")
        else:
            from acpcli.env import program

            env.note(
                f"rewound {n} file{'s' if n != 1 else ''} to before turn {to}; "
                f"`{program()} rewind {shown_id(sid)} --undo` puts them back"
            )
        return int(ExitCode.OK)
    finally:
        lock.release()


def _record_id(session_id: str) -> str:
    """The recorded session ``session_id`` names (a unique prefix is enough)."""
    from acpcli.errors import SessionNotFound
    from acpcli.history.index import Index
    from acpcli.text.safe import shown_id

    with Index.existing() as index:
        if index is None:
            raise SessionNotFound(f"no session {shown_id(session_id)!r} in the local index")
        return index.get(session_id).id


def _check_turn(sid: str, turn: int) -> None:
    from acpcli.history.index import Index
    from acpcli.session.rewinding import check_turn

    with Index.existing() as index:
        assert index is not None
        check_turn(index, sid, turn)


def _rewind_talk(env: Environment, sid: str, to: int, *, dry_run: bool, yes: bool) -> int:
    """``rewind --conversation``: only the new session."""
    from acpcli.errors import ExitCode
    from acpcli.text.safe import shown_id

    if dry_run:
        env.note(f"dry run: no new session (one would hold the turns before turn {to} of {shown_id(sid)})")
        return int(ExitCode.OK)
    if env.interactive and not yes:
        answer = env.err.input(f"Start a new session from the turns before turn {to}? [y/N] ", markup=False, emoji=False)
        if answer.strip().lower() not in ("y", "yes"):
            env.note("nothing changed")
            return int(ExitCode.OK)
    _new_session(env, sid, to)
    return int(ExitCode.OK)


def _new_session(env: Environment, sid: str, to: int) -> None:
    """The conversation rewound to before turn ``to``: a new session, its id alone on stdout
    (as soon as it is recorded), how it holds the turns on stderr."""
    from acpcli.cli.sessions import _print_id
    from acpcli.session.context import Invocation
    from acpcli.session.rewinding import rewind_command

    run = Invocation(env=env, created=lambda new: _print_id(env, new))
    rewound = rewind_command(sid, to, run)
    env.note(rewound.line())
