"""How a one-turn command ends, from how its turn ended: its exit code or the error it leaves
with. Shared by a command that runs its turn itself (:mod:`acpcli.session.run`) and one whose
turn a live session's host runs (:mod:`acpcli.host.client`); light to import (the host's
clients import no event loop)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acpcli.client_side import Refusals
    from acpcli.errors import StepTimeout
    from acpcli.session.context import Run


def turn_exit(
    stop: str, run: Run, session_id: str, *, interrupted: bool, timed_out: bool = False, answered: bool = False
) -> int:
    """The exit of a one-turn command from how its turn ended: 0 for ``end_turn``; else the
    error it ends with (``--timeout``: exit 15, ``answered`` if the agent ended the cancelled
    turn itself; our own Ctrl-C: 130; another stop reason: its code, with a hint when the
    policy refused something in a cancelled turn)."""
    from acpcli.errors import ExitCode, Interrupted, TurnEnded

    if timed_out:
        raise turn_timed_out(run.timeout, session_id, answered=answered)
    if stop == "cancelled" and interrupted:
        raise Interrupted()  # our Ctrl-C cancelled it: exit 130, as shells expect
    if stop != "end_turn":
        ended = TurnEnded(stop)
        if stop == "cancelled" and run.refusals is not None and run.refusals.count:
            ended.hint = refused_hint(run.refusals)
        raise ended
    return int(ExitCode.OK)


def turn_timed_out(seconds: float | None, session_id: str, *, answered: bool) -> StepTimeout:
    """The one line of a turn that outlasted ``--timeout`` (exit 15)."""
    from acpcli.errors import StepTimeout
    from acpcli.safe_text import safe_line

    how = "cancelled" if answered else "the agent did not answer the cancel and was stopped"
    return StepTimeout(
        f"the turn outlasted --timeout {seconds or 0:g} s: {how}; what arrived is kept "
        f"(acpcli show {safe_line(session_id)})"
    )


def refused_hint(refusals: Refusals) -> str:
    """The hint for a turn the agent cancelled after the policy refused something."""
    n = refusals.count
    what = "a request" if n == 1 else f"{n} requests"
    return f"acpcli refused {what} of the agent (see above), which may be why it stopped: {refusals.change}"
