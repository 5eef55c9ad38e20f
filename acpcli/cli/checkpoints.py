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


@app.command(short_help="Bring a session's files back to their state before a turn.")
def rewind(
    session_id: SessionId,
    to: Annotated[str | None, typer.Option("--to", metavar="TURN", help="Bring the files back to their state before TURN.", show_default=False)] = None,
    undo: Annotated[bool, typer.Option("--undo", help="Put back the files as they were before the last rewind.")] = False,
    files: Annotated[bool, typer.Option("--files", help="Restore the files only (the conversation stays as it is).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change; change nothing.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask first on a terminal.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite files changed by hand since the last checkpoint too.")] = False,
) -> None:
    """Bring a session's files back to their state before a turn.

    Only the paths the turns since changed are written: files they created are removed, files
    they deleted come back. Files you changed by hand after the last checkpoint are not
    overwritten (the rewind refuses and names them) unless --force. The present files are
    checkpointed first: `acpcli rewind SESSION --undo --files` puts them back. Each file is replaced
    whole, so a rewind stopped half way leaves every file old or new.

    \b
    Examples:

    \b
      acpcli rewind SESSION --to 3 --files --dry-run
      acpcli rewind SESSION --to 3 --files
      acpcli rewind SESSION --undo --files
    """
    raise typer.Exit(rewind_files(session_id, to=_number(to, "--to"), undo=undo, files=files, dry_run=dry_run, yes=yes, force=force))


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
    if checkpoint.turn == 0:
        return "-"
    if checkpoint.base is None:
        return "?"
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


def _plan_lines(env: Environment, plan: RewindPlan, first: Path | None) -> None:
    conflicts = {(c.root, c.path) for c in plan.conflicts}
    for change in plan.changes:
        mark = "  (changed by hand since the last checkpoint)" if (change.root, change.path) in conflicts else ""
        env.stdout.write(f"{_VERBS[change.status]:<8} {_where(change, first)}{mark}\n")
    for change, why in plan.skipped:
        env.note(f"left alone: {_where(change, first)}: {why}")


def _nothing(env: Environment, plan: RewindPlan, first: Path | None, what: str) -> int:
    from acpcli.errors import ExitCode

    for change, why in plan.skipped:
        env.note(f"left alone: {_where(change, first)}: {why}")
    env.note(f"nothing to change: the files are as they were before {what}")
    return int(ExitCode.OK)


def rewind_files(
    session_id: str, *, to: int | None, undo: bool, files: bool, dry_run: bool, yes: bool, force: bool
) -> int:
    """``acpcli rewind``: the files part. The plan is printed first (stdout: one line per file,
    ``restore``/``remove``), asked about on a terminal, then carried out. The session's turn
    lock is held throughout: no rewind while a turn of the session runs."""
    from acpcli.cli.streams import environment
    from acpcli.errors import ExitCode, SessionBusy, UsageError
    from acpcli.history.lock import SessionLock, busy_message
    from acpcli.text.safe import shown_id

    if (to is None) == (not undo):
        raise UsageError("say where to: --to TURN, or --undo", hint="acpcli checkpoints SESSION lists the turns")
    if not files:
        raise UsageError(
            "rewinding the conversation is not available yet: --files rewinds the files only",
            hint=f"acpcli rewind {session_id} " + ("--undo" if undo else f"--to {to}") + " --files",
        )
    env = environment()
    sid, cps = _open(session_id)
    lock = SessionLock(sid)
    if not lock.try_acquire():
        raise SessionBusy(busy_message(sid, lock.holder()))
    try:
        first = cps.roots[0] if cps.roots else None

        def run(dry: bool) -> RewindPlan:
            if undo:
                return cps.undo(dry_run=dry, force=force)
            assert to is not None
            return cps.rewind(to, dry_run=dry, force=force)

        what = "the last rewind" if undo else f"turn {to}"
        ask = env.interactive and not yes and not dry_run
        shown: RewindPlan | None = None
        if dry_run or ask:  # the plan first (to show, or to ask about); else one pass only
            plan = run(True)
            if not plan.changes:
                return _nothing(env, plan, first, what)
            if plan.conflicts and not force and not dry_run:
                run(False)  # refused (RewindRefused names the files): nothing written, nothing listed
            _plan_lines(env, plan, first)
            if dry_run:
                n = len(plan.changes)
                env.note(f"dry run: nothing changed ({n} file{'s' if n != 1 else ''} would be)")
                return int(ExitCode.OK)
            n = len(plan.changes)
            answer = env.err.input(f"Rewind {'this file' if n == 1 else f'these {n} files'}? [y/N] ", markup=False, emoji=False)
            if answer.strip().lower() not in ("y", "yes"):
                env.note("nothing changed")
                return int(ExitCode.OK)
            shown = plan
        done = run(False)
        if not done.changes:
            return _nothing(env, done, first, what)
        if shown is None:
            _plan_lines(env, done, first)
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
                f"`{program()} rewind {shown_id(sid)} --undo --files` puts them back"
            )
        return int(ExitCode.OK)
    finally:
        lock.release()
