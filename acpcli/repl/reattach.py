"""The screen of an interactive ``load`` / ``resume``, before the REPL takes over.

Order on the terminal, whatever the agent's timing:

1. the capability check (an agent without ``session/resume`` refuses an interactive
   ``resume`` before anything is printed: exit 6);
2. the session banner;
3. the replay, drawn whole and once, in order, after it has finished arriving
   (:meth:`~acpcli.session.link.AgentLink.settle`: gemini answers ``session/load`` first and
   replays afterwards) -- or, for a ``resume`` the agent did not replay, the transcript
   acpcli stored locally;
4. the input prompt (the REPL), whose view streams from then on.

The replay is collected by a view made with ``final_only`` (nothing is drawn while it
arrives, so no live region can overwrite the banner or draw a line twice) and printed when
that view is closed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acpcli.env import Environment
    from acpcli.render import View
    from acpcli.session.link import AgentLink
    from acpcli.session.live import LiveSession
    from acpcli.store import Store

#: ``settle`` for a resume: no replay is expected, so no long wait for a first update.
RESUME_FIRST_UPDATE = 0.1


def held_view(env: Environment) -> View:
    """The view a replay is collected in: it shows the whole replay when closed."""
    from acpcli.render import make_view

    return make_view(env, final_only=True)


async def show_replay(
    env: Environment, link: AgentLink, live: LiveSession, command: str, held: View, local: Store | None
) -> View:
    """Wait for the replay to finish, draw it (or, after a ``resume`` that replayed
    nothing, ``local``: the store acpcli recorded, if any), and return the streaming view
    the REPL continues with (attached to ``live``)."""
    from acpcli.render import make_view

    if command == "resume":  # ``load`` settled already, before its end-of-replay marker
        await link.settle(live, first=RESUME_FIRST_UPDATE)
    replayed = bool(live.store.entries)
    if command == "resume" and not replayed and local is not None and local.entries:
        env.err.print("[dim]── stored locally by acpcli, not replayed by the agent ──[/]")
        held.print_store(local)
        env.err.print("[dim]── resumed ──[/]")
    held.close()  # prints what it collected: the replay, whole and once
    view = make_view(env)
    live.sink = view
    return view
