"""The screen of an interactive ``load`` / ``resume``, before the REPL takes over.

Order on the terminal, whatever the agent's timing:

1. the capability check (an agent without ``session/resume`` refuses an interactive
   ``resume`` before anything is printed: exit 6);
2. the session banner;
3. the replay, drawn whole and once, in order, after it has finished arriving
   (:meth:`~acpcli.session.AgentLink.settle`: gemini answers ``session/load`` first and
   replays afterwards) -- or, for a ``resume`` the agent did not replay, the transcript
   acpcli stored locally;
4. the input prompt (the REPL), whose view streams from then on.

The replay is collected by a view made with ``final_only`` (nothing is drawn while it
arrives, so no live region can overwrite the banner or draw a line twice) and printed when
that view is closed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acpcli.env import Environment

#: ``settle`` for a resume: no replay is expected, so no long wait for a first update.
RESUME_FIRST_UPDATE = 0.1


def banner(env: Environment, session_id: str, display_name: str) -> None:
    """The line the REPL starts with: which session, which agent, where help is."""
    from acpcli.repl import print_banner

    print_banner(env, session_id, display_name)


def check_capability(features: Any, command: str) -> None:
    """Refuse a ``load``/``resume`` the agent does not offer, before anything is shown."""
    from acpcli import capabilities

    if command in ("load", "resume"):
        capabilities.require(features, f"session/{command}")


def held_view(env: Environment) -> Any:
    """The view a replay is collected in: it shows the whole replay when closed."""
    from acpcli.render import make_view

    return make_view(env, final_only=True)


async def show_replay(env: Environment, link: Any, live: Any, command: str, held: Any, local: Any) -> Any:
    """Wait for the replay to finish, draw it (or, after a ``resume`` that replayed
    nothing, ``local``: the store acpcli recorded, if any), and return the streaming view
    the REPL continues with (attached to ``live``)."""
    from acpcli.render import make_view

    if command == "resume":  # ``load`` settled already, before its end-of-replay marker
        await link.settle(live, first=RESUME_FIRST_UPDATE)
    replayed = bool(live.store.entries)
    if command == "resume" and not replayed and local is not None and local.entries:
        env.err.print("[dim]── stored locally by acpcli, not replayed by the agent ──[/]")
        print_store = getattr(held, "print_store", None)
        if print_store is not None:
            print_store(local)
        env.err.print("[dim]── resumed ──[/]")
    held.close()  # prints what it collected: the replay, whole and once
    view = make_view(env)
    live.sink = view
    return view
