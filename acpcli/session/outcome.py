"""How a one-turn command ends, from how its turn ended: its exit code or the error it leaves
with. Shared by a command that runs its turn itself (:mod:`acpcli.cli.commands`) and one whose
turn a live session's host runs (:mod:`acpcli.host.client`); light to import (the host's
clients import no event loop)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acpcli.errors import StepTimeout
    from acpcli.services.permissions import Refusals
    from acpcli.session.context import Invocation


#: What is said of a turn the agent ended (``end_turn``) having said and done nothing: claude,
#: after a cancelled turn, may answer the next prompt so and put the work into the turn after.
NO_ANSWER = "the agent ended the turn without an answer"


def said_anything(entries: Iterable[object]) -> bool:
    """Whether a turn's transcript entries hold anything of the agent's: a message or thought
    that is not blank, a tool call, a plan (the user's prompt and acpcli's own record of where
    the turn ended do not count)."""
    from acpcli.model import USER, Message, TurnEnd

    for entry in entries:
        if isinstance(entry, TurnEnd):
            continue
        if not isinstance(entry, Message):
            return True
        if entry.kind != USER and (entry.text.strip() or any(b.get("type") != "text" for b in entry.content)):
            return True
    return False


def reopened_line(session_id: str) -> str:
    """What continuing a closed session (``prompt --session``, ``load``, ``resume``) says: it
    is marked active again."""
    from acpcli.text.safe import shown_id

    return f"acpcli: {shown_id(session_id)} was closed: reopened"


def turn_exit(
    stop: str,
    run: Invocation,
    session_id: str,
    *,
    interrupted: bool,
    timed_out: bool = False,
    answered: bool = False,
    said: bool = True,
) -> int:
    """The exit of a one-turn command from how its turn ended: 0 for ``end_turn``; else the
    error it ends with (``--timeout``: exit 15, ``answered`` if the agent ended the cancelled
    turn itself; our own Ctrl-C: 130; another stop reason: its code, with a hint when the
    policy refused something in a cancelled turn). An ``end_turn`` in which the agent ``said``
    nothing is still 0, with one line on stderr saying so (:data:`NO_ANSWER`)."""
    from acpcli.errors import ExitCode, Interrupted, TurnStopped

    if timed_out:
        raise turn_timed_out(run.timeout, session_id, answered=answered)
    if stop == "cancelled" and interrupted:
        raise Interrupted()  # our Ctrl-C cancelled it: exit 130, as shells expect
    if stop != "end_turn":
        ended = TurnStopped(stop)
        if stop == "cancelled" and run.refusals is not None and run.refusals.count:
            ended.hint = refused_hint(run.refusals)
        raise ended
    if not said:
        run.say(f"acpcli: {NO_ANSWER}")
    return int(ExitCode.OK)


def turn_timed_out(seconds: float | None, session_id: str, *, answered: bool) -> StepTimeout:
    """The one line of a turn that outlasted ``--timeout`` (exit 15)."""
    from acpcli.errors import StepTimeout
    from acpcli.text.safe import safe_line

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


def closed_line(session_id: str, answer: object) -> str:
    """What ``close`` and ``/close`` say: ``closed ID``, with the agent's answer when it said
    more than ``{}``."""
    import json

    from acpcli.text.safe import shown_id

    said = f" (the agent answered {json.dumps(answer)})" if answer else ""
    return f"closed {shown_id(session_id)}{said}"
