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

Over a live session's host the host does either (:meth:`acpcli.host.remote.HostedLink.now`,
as the host read the agent's ``initialize`` answer): the prompt is handed to it as text; a
prompt the host could not hand to the turn (it had ended) goes back to the head of the queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from acpcli.repl.queue import QUEUEING, STEERING, PromptQueue, send_now_way

if TYPE_CHECKING:
    from acpcli.session.conversation import Conversation


class SendNow:
    """Hands prompts to the running turn (see the module docstring). Call it with the text;
    it returns the line to show under the input line."""

    def __init__(
        self, conversation: Conversation, queue: PromptQueue, build: Callable[[str], list[dict[str, Any]]]
    ) -> None:
        self.conversation, self.queue, self.build = conversation, queue, build
        #: A REPL over a live session's host: the host hands the prompt to the turn.
        self.hosted = conversation.hosted
        self.way = (
            getattr(conversation.link, "send_now", None) if self.hosted
            else send_now_way(getattr(conversation.features, "raw", None))
        )  # fmt: skip
        #: promptQueueing: the answer of the prompt sent during the turn, awaited as the next turn.
        self.pending: asyncio.Task[Any] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    def __call__(self, text: str) -> str:
        features = self.conversation.features
        name = features.agent_title or features.agent_name or "the agent"
        if self.way is None:
            self.queue.add(text)
            return f"queued: {name} does not take a prompt during a turn"
        if not self.hosted and not self.conversation.live.turn_active:  # (the host knows its own)
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
        loop = asyncio.get_running_loop()
        if self.hosted:  # the host builds the prompt again, from the text, as it builds its turns
            handed = loop.create_task(self._hosted(text))
            if self.way == QUEUEING:
                self.pending = handed  # (True once joined: the host runs its turn next)
                return f"sent now: {name} takes it up when it can"
            self._tasks.add(handed)
            handed.add_done_callback(self._tasks.discard)
            return f"sent now to {name}"
        if self.way == QUEUEING:
            self.pending = loop.create_task(self.conversation.send_during_turn(blocks))
            return f"sent now: {name} takes it up when it can"
        assert self.way == STEERING
        task = loop.create_task(self._steer(text, blocks))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return f"sent now to {name}"

    async def _steer(self, text: str, blocks: list[dict[str, Any]]) -> None:
        try:
            outcome = await self.conversation.steer(blocks)
        except Exception:  # noqa: BLE001 - refused or lost: the prompt is not lost, it goes first
            outcome = "failed"
        if outcome != "injected":
            self.queue.items.insert(0, text)

    async def _hosted(self, text: str) -> bool:
        """Hand ``text`` to the running turn through the host; False (and the prompt back at
        the head of the queue) when the host could not."""
        link: Any = self.conversation.link
        try:
            outcome = await link.now(text)
        except Exception:  # noqa: BLE001 - refused or lost: the prompt is not lost, it goes first
            outcome = "failed"
        if outcome in ("injected", "joined"):
            return True
        self.queue.items.insert(0, text)
        return False

    def take_pending(self) -> asyncio.Task[Any] | None:
        """The prompt sent during the last turn, whose answer the next turn waits for."""
        pending, self.pending = self.pending, None
        return pending

    def close(self) -> None:
        """The REPL ends: stop waiting for anything still sent."""
        for task in [*self._tasks, *([self.pending] if self.pending else [])]:
            task.cancel()
        self.pending = None
