""""Send now": a prompt handed to the running turn (Alt-Enter, ``/now TEXT``).

Only with an agent that says it takes one (:func:`acpcli.repl.queue.send_now_way`, read
from its ``initialize`` answer, never probed):

* ``_session/steering`` (``_meta.steering.supported``): the prompt goes in with that
  request; an agent that answers ``promptRequired`` (its turn just ended) gets it back in
  front of the queue, as a prompt of its own;
* claude-agent-acp's ``promptQueueing``: a second ``session/prompt`` is sent at once; the
  agent answers the running turn's request when it takes the new prompt up, and the REPL
  then waits for the new one's answer as the next turn (:attr:`SendNow.pending`).

With any other agent the prompt is queued, and the line says why.

The conversation hands it over (:meth:`~acpcli.session.conversation.Conversation.send_now`);
over a live session's host the host does either (as it read the agent's ``initialize``
answer): the prompt is handed to it as text. A prompt the turn did not take (it had ended)
goes back to the head of the queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from acpcli.repl.queue import QUEUEING, PromptQueue

if TYPE_CHECKING:
    from acpcli.session.conversation import Conversation


class SendNow:
    """Hands prompts to the running turn (see the module docstring). Call it with the text;
    it returns the line to show under the input line."""

    def __init__(
        self, conversation: Conversation, queue: PromptQueue, build: Callable[[str], list[dict[str, Any]]]
    ) -> None:
        self.conversation, self.queue, self.build = conversation, queue, build
        self.way = conversation.send_now_way
        #: promptQueueing: the answer of the prompt sent during the turn, awaited as the next turn.
        self.pending: asyncio.Task[Any] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    def __call__(self, text: str) -> str:
        features = self.conversation.features
        name = features.agent_title or features.agent_name or "the agent"
        if self.way is None:
            self.queue.add(text)
            return f"queued: {name} does not take a prompt during a turn"
        if not self.conversation.may_send_now():
            self.queue.add(text)
            return "queued: the turn has ended"
        if self.pending is not None:
            self.queue.add(text)
            return "queued: one prompt is already waiting to join this turn"
        try:
            blocks = self.build(text)
        except Exception as err:  # noqa: BLE001 - a bad @mention: the queue sends it later and says why
            self.queue.add(text)
            return f"queued: {getattr(err, 'message', err)}"
        handed = asyncio.get_running_loop().create_task(self.conversation.send_now(text, blocks, self._back))
        if self.way == QUEUEING:
            self.pending = handed  # its answer: the next turn waits for it
            return f"sent now: {name} takes it up when it can"
        self._tasks.add(handed)
        handed.add_done_callback(self._tasks.discard)
        return f"sent now to {name}"

    def _back(self, text: str) -> None:
        """A prompt the turn did not take: first in the queue."""
        self.queue.items.insert(0, text)

    def take_pending(self) -> asyncio.Task[Any] | None:
        """The prompt sent during the last turn, whose answer the next turn waits for."""
        pending, self.pending = self.pending, None
        return pending

    def close(self) -> None:
        """The REPL ends: stop waiting for anything still sent."""
        for task in [*self._tasks, *([self.pending] if self.pending else [])]:
            task.cancel()
        self.pending = None
