"""``/rewind`` without a turn: a picker of the session's turns (each with its prompt's first
line and the files it changed), a preview of what going back before the one picked undoes
(the files, as ``git diff --stat`` and the first lines of the diff), then what to restore:
the files and the conversation, the files only, or the conversation only.

The files go back as ``/rewind N`` puts them (:mod:`acpcli.worktree`); the conversation is a
new session holding the turns before N (:func:`acpcli.session.rewinding.rewind_apart`: an
agent of its own, so it is the same hosted or not), and this prompt stays on the current
session, as after ``/fork``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from acpcli.text.safe import safe_line, shown_id

if TYPE_CHECKING:
    from acpcli.wire.negotiate import AgentFeatures
    from acpcli.worktree import Checkpoint

#: The most lines of the diff shown under its summary in the preview.
PREVIEW_LINES = 16
#: What the second question offers, in order: (label, files, conversation).
WHAT = (
    ("files and conversation (a new session from the turns before it)", True, True),
    ("files only", True, False),
    ("conversation only (a new session; the files stay as they are)", False, True),
)


def turn_label(cp: Checkpoint) -> str:
    """One picker row: the turn, its prompt's first line, the files it changed."""
    n = len(cp.files)
    if cp.base is None:
        files = "files: ?"
    elif not n:
        files = "no file changed"
    else:
        names = ", ".join(f.path for f in cp.files[:3]) + (f" and {n - 3} more" if n > 3 else "")
        files = f"{n} file{'s' if n != 1 else ''} (+{cp.added} -{cp.removed}): {names}"
    return safe_line(f"turn {cp.turn}: {cp.label or '(no text)'} · {files}")


@dataclass(frozen=True)
class Tools:
    """What ``/rewind`` borrows of the other slash commands (:mod:`acpcli.repl.commands`):
    the session's checkpoints, the REPL's toolbar, a diff drawn as ``/diff`` draws it, the
    files put back as ``/rewind N`` puts them, the hint naming how to reopen a session."""

    checkpoints: Any
    toolbar: Callable[[], str] | None
    print_diff: Callable[[Any, str], None]
    rewind_files: Callable[[Any, int, bool], Awaitable[int | None]]
    come_back: Callable[..., str]


async def pick_and_rewind(ctx: Any, tools: Tools) -> int | None:
    """The whole of ``/rewind`` without a turn (see the module docstring); ``ctx`` is the
    slash command's :class:`~acpcli.repl.commands.Context`."""
    checkpoints, toolbar = tools.checkpoints, tools.toolbar
    import anyio.to_thread

    from acpcli.errors import CheckpointError
    from acpcli.repl.asking import choose

    try:
        found = await anyio.to_thread.run_sync(checkpoints.list)
        numbers = {cp.turn for cp in found}
        turns = [cp for cp in found if cp.turn - 1 in numbers]  # those with the files before them
    except CheckpointError as err:
        ctx.say(str(err), style="yellow")
        return None
    if not turns:
        ctx.say("no turn of this session has a checkpoint yet: nothing to rewind to")
        return None
    picked = await choose(
        "rewind to before which turn?", [turn_label(cp) for cp in turns], default=len(turns) - 1, toolbar=toolbar
    )
    if picked is None:
        ctx.say("nothing changed")
        return None
    turn = turns[picked].turn
    try:
        stat = await anyio.to_thread.run_sync(lambda: checkpoints.diff_since(turn, stat=True))
        patch = await anyio.to_thread.run_sync(lambda: checkpoints.diff_since(turn))
    except CheckpointError as err:
        ctx.say(str(err), style="yellow")
        stat = patch = ""
    since = f"turn {turn}" if turn == turns[-1].turn else f"turns {turn}-{turns[-1].turn}"
    if stat.strip():
        ctx.say(f"what {since} did to the files (a rewind to before turn {turn} undoes it):")
        lines = patch.splitlines()
        tools.print_diff(ctx, stat.rstrip("\n") + "\n" + "\n".join(lines[:PREVIEW_LINES]))
        if len(lines) > PREVIEW_LINES:
            ctx.say(f"  … {len(lines) - PREVIEW_LINES} more lines (/diff N shows a turn whole)")
    else:
        ctx.say(f"{since} changed no file")
    what = await choose(f"restore what, as before turn {turn}?", [label for label, _, _ in WHAT], toolbar=toolbar)
    if what is None:
        ctx.say("nothing changed")
        return None
    _, files, conversation = WHAT[what]
    if files:
        await tools.rewind_files(ctx, turn, False)
    if conversation:
        await rewind_conversation(ctx, turn, tools.come_back)
    return None


async def rewind_conversation(ctx: Any, turn: int, come_back: Callable[..., str]) -> None:
    """A new session holding the turns before ``turn``; this prompt stays where it is."""
    from acpcli.errors import AcpcliError
    from acpcli.session.context import Invocation
    from acpcli.session.rewinding import rewind_apart

    ctx.conversation.flush()  # the transcript so far, whole, before it is copied
    sid = ctx.live.session_id
    ctx.say(f"starting {safe_line(ctx.conversation.features.display_name)} for the new session…", style="dim")
    try:
        rewound = await rewind_apart(sid, turn, Invocation(env=ctx.env))
    except AcpcliError as err:
        ctx.say(f"the conversation was not rewound: {err}", style="yellow")
        return
    ctx.say(rewound.line().removeprefix("acpcli: "))
    features: AgentFeatures = ctx.conversation.features
    ctx.say(f"this prompt stays on {shown_id(sid)}")
    ctx.say("  " + come_back(features, shown_id(rewound.session_id), lead="continue the new session with"))
