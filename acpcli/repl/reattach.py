"""The screen of an interactive ``load`` / ``resume``, before the REPL takes over.

Order on the terminal, whatever the agent's timing:

1. the capability check (an agent without ``session/resume`` refuses an interactive
   ``resume`` before anything is printed: exit 6);
2. the session banner;
3. for a ``load``, once the replay has finished arriving
   (:meth:`~acpcli.session.link.AgentLink.settle`: gemini answers ``session/load`` first and
   replays afterwards), the session's record drawn whole and once, in order: what acpcli
   recorded with what the replay adds, merged as ``acpcli show`` has it
   (:mod:`acpcli.history.replay_merge`), never the agent's raw replay (claude's slash-command
   artefacts and gemini's ``<session_context>`` glued to the first prompt, gemini's tool
   results as user messages); for a session acpcli has no prompt of, the replay itself. For
   a ``resume``: what it replayed, or if nothing, the transcript acpcli stored locally;
4. the input prompt (the REPL), whose view streams from then on.

What is drawn goes through a view made with ``final_only`` (nothing is drawn while the
replay arrives, so no live region can overwrite the banner or draw a line twice).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acpcli.env import Environment
    from acpcli.model import Store
    from acpcli.render import View
    from acpcli.session.conversation import Conversation

#: ``settle`` for a resume: no replay is expected, so no long wait for a first update.
RESUME_FIRST_UPDATE = 0.1


def held_view(env: Environment) -> View:
    """The view a replay is collected in: it shows the whole replay when closed."""
    from acpcli.render import make_view

    return make_view(env, final_only=True)


async def show_replay(env: Environment, conversation: Conversation, command: str, held: View, local: Store | None) -> View:
    """Wait for the replay to finish and draw it, and return the streaming view the REPL
    continues with (attached to the conversation's live session). ``local``: for a ``load``, the record merged with
    the replay (drawn instead of what ``held`` could have collected, which is nothing: the
    load ran without a view); for a ``resume``, the store acpcli recorded, drawn when the
    agent replayed nothing."""
    from acpcli.render import make_view

    if command == "load" and local is not None:  # settled already, before its end-of-replay marker
        held.print_store(local)
    if command == "resume":
        await conversation.settle(first=RESUME_FIRST_UPDATE)
    replayed = bool(conversation.live.store.entries)
    if command == "resume" and not replayed and local is not None and local.entries:
        env.err.print("[dim]── stored locally by acpcli, not replayed by the agent ──[/]")
        held.print_store(local)
        env.err.print("[dim]── resumed ──[/]")
    held.close()  # prints what it collected, if anything: a resume's replay, whole and once
    view = make_view(env)
    conversation.live.sink = view
    return view
