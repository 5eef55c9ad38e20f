"""The REPL's first and last words: the session line it starts with, and the command that
comes back to the session, which it ends with; and the line another terminal's turn starts
with (a REPL over a live session's host)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from acpcli.text.safe import safe_line, shown_id

if TYPE_CHECKING:
    from acpcli.env import Environment
    from acpcli.wire.negotiate import AgentFeatures

#: The line another terminal's turn starts with (rich markup).
OTHER_TURN = "[dim]── (from another terminal) ──[/]"


class OtherTurnBegan(Exception):
    """(Hosted) The input line gives way: another terminal's turn began, and the REPL draws
    it (:meth:`acpcli.repl.loop.Repl.watch_others`)."""


def print_banner(env: Environment, session_id: str, display_name: str, *, forked_from: str | None = None) -> None:
    """The line the REPL starts with: which session (and, for a fork, of which session),
    which agent, where help is."""
    from acpcli.render.fit import wrap

    fork = f", a fork of {shown_id(forked_from)}," if forked_from is not None else ""
    line = f"session {shown_id(session_id)}{fork} with {safe_line(display_name)} — /help for commands"
    env.err.print("\n".join(wrap(line, env.err.width, 2)), style="dim", markup=False, highlight=False)


def come_back(features: AgentFeatures, session_id: str) -> str:
    """The command that reopens ``session_id`` with this agent: ``resume`` when it offers
    that, else ``load`` (gemini); for an agent with neither, ``show`` (the transcript)."""
    from acpcli.env import program

    shown = shown_id(session_id)  # a unique prefix reopens it as well as the whole id
    acpcli = program()  # (as the user can type it: .venv/bin/acpcli when it is not on the PATH)
    if features.resume:
        return f"{acpcli} resume {shown}"
    if features.load:
        return f"{acpcli} load {shown}"
    # Neither: the agent cannot reopen it, but what was said stays readable.
    return f"{acpcli} show {shown} ({features.display_name} can neither resume nor load a session)"
