"""The interactive prompt (prompt-toolkit) around one live session.

Keys: Enter sends; Alt-Enter (or Esc then Enter) inserts a newline; Ctrl-C clears the line;
Ctrl-D leaves (the session stays resumable and the exact ``acpcli resume ID`` is printed).
During a turn, Ctrl-C sends ``session/cancel``; a second Ctrl-C within 3 seconds kills the
agent and leaves with exit code 130. The input line stays usable during a turn
(:mod:`acpcli.repl.typeahead`): Enter queues (:mod:`acpcli.repl.queue`), Alt-Enter sends now
where the agent takes it (:mod:`acpcli.repl.sendnow`).

Slash commands are data (:data:`acpcli.repl.commands.COMMANDS`), echoed into the scrollback
when run; the agent's own commands (from ``available_commands_update``) are sent to it as
prompts, ``//word`` sends ``/word`` to it, and an unknown ``/word`` is not sent. TAB completion is the pure
:func:`acpcli.repl.completion.complete`; the toolbar is :func:`acpcli.repl.toolbar.status_line`.
``@path`` in a prompt mentions a file (:mod:`acpcli.services.mentions`). A prompt the agent refuses,
or one whose mention cannot be sent, comes back on the input line: nothing typed is lost.

This module is the door (:func:`run_repl`); the loop is :class:`acpcli.repl.loop.Repl`,
one method a step. Its pieces live beside it: the key bindings (:mod:`acpcli.repl.keys`),
the completer (:mod:`acpcli.repl.completion`), the toolbar (:mod:`acpcli.repl.toolbar`), the
input history (:mod:`acpcli.repl.input_history`), the questions put to the person
(:mod:`acpcli.repl.asking`) and the first and last lines (:mod:`acpcli.repl.banner`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acpcli.env import Environment
    from acpcli.session.conversation import Conversation

__all__ = ["run_repl"]


async def run_repl(env: Environment, conversation: Conversation, *, banner: bool = True, first: str | None = None) -> int:
    """The read-prompt-render loop. Returns the exit code.

    ``banner``: start with the session line (an interactive load/resume has printed it
    already, before its replay). While the input line waits, the session's changes are
    drawn above it as they arrive (:class:`acpcli.repl.above.AboveInput`).

    ``conversation`` (:class:`~acpcli.session.conversation.Conversation`) holds the session's
    own :class:`~acpcli.session.link.AgentLink`, or is a
    :class:`~acpcli.session.hosted.HostedConversation` when the session lives in a host (each turn
    goes through the host's queue, the host reads the mentions and does the bookkeeping, other
    terminals' turns are drawn as they come); the loop drives both alike.

    ``first``: a prompt to send first, as if typed (``acpcli "fix the tests"``)."""
    from acpcli.repl.loop import Repl

    repl = Repl(env, conversation, banner=banner)
    if first:
        repl.queue.add(first)
    return await repl.run()
