"""An ACP agent (official ``acp`` SDK) for "send now": a prompt sent while a turn runs.

``python sdk_queueing_agent.py [--queueing] [--steering]``

* ``--queueing`` advertises ``agentCapabilities._meta.claudeCode.promptQueueing`` and behaves
  as claude-agent-acp does: a ``session/prompt`` arriving while a turn runs joins it, and the
  running turn's request is answered ``end_turn`` at once (handed off); the new one goes on.
* ``--claude-order`` (with ``--queueing``): the order claude-agent-acp 0.23.1 really keeps
  when a prompt joins: the running turn finishes its sentence (``…END[text]``) and a
  ``usage_update`` ends its answer; the joined prompt's whole answer streams
  (``JOINED[text]``, then ``DONE[text]`` once its gate opens); only then are both requests
  answered, the running turn's first.
* ``--steering`` advertises ``_meta.steering.supported`` in the ``initialize`` answer and
  answers ``_session/steering``: ``injected`` (saying ``STEERED[text]`` in the running turn)
  or ``promptRequired`` when no turn runs.
* Without either, a prompt arriving during a turn says ``CONCURRENT-PROMPT`` (a client must
  not send one: the tests look for it).

A turn says ``START[text]``, then waits until the file ``$GATE_DIR/WORD`` exists (``WORD``:
the prompt's first word; at most 60 s), then says ``DONE[text]`` and ends. A cancel ends it
with ``cancelled``. Writes its pid to ``$PID_FILE`` and every incoming call to
``$RECORD_FILE`` (see ``sdk_base``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path
from typing import Any, ClassVar

import acp
from acp.schema import AgentCapabilities, PromptResponse
from sdk_base import BaseSdkAgent, note_pid, prompt_text, recorder

GATE_LIMIT = 60.0


class QueueingAgent(BaseSdkAgent):
    name: ClassVar[str] = "sdk-queueing"
    session_prefix = "queue"

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.queueing, self.steering = args.queueing, args.steering
        self.running: str | None = None  # the text of the running turn's prompt
        self.handed_off = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.claude_order = args.claude_order
        self.wrapped_up = asyncio.Event()  # (claude order) the running turn's answer has ended
        self.joined_done = asyncio.Event()  # (claude order) the joined prompt's answer has ended

    def capabilities(self) -> AgentCapabilities:
        meta = {"claudeCode": {"promptQueueing": True}} if self.queueing else None
        return AgentCapabilities(load_session=False, field_meta=meta)

    def initialize_extras(self) -> dict[str, Any]:
        return {"field_meta": {"steering": {"supported": True}}} if self.steering else {}

    async def _gate(self, word: str, handed_off: asyncio.Event, cancelled: asyncio.Event) -> str:
        """Wait for the gate (``end_turn``), a hand-off (``handed_off``) or a cancel."""
        gates = os.environ.get("GATE_DIR")
        deadline = time.monotonic() + GATE_LIMIT
        while gates and not Path(gates, word).exists() and time.monotonic() < deadline:
            if cancelled.is_set():
                return "cancelled"
            if handed_off.is_set():
                return "handed_off"
            await asyncio.sleep(0.02)
        return "end_turn"

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = prompt_text(prompt)
        if self.running is not None:
            if not self.queueing:
                await self.say(session_id, f"CONCURRENT-PROMPT[{text}] ")
                return PromptResponse(stop_reason="end_turn")
            self.handed_off.set()  # the running turn's request is answered now
            if self.claude_order:
                return await self._joined_late(session_id, text)
            await self.say(session_id, f"JOINED[{text}] ")
        else:
            self.cancelled = asyncio.Event()  # a turn starts: a fresh cancel state
            await self.say(session_id, f"START[{text}] ")
        self.running = text
        self.handed_off = handed_off = asyncio.Event()
        how = await self._gate((text.split() or ["turn"])[0], handed_off, self.cancelled)
        if how == "handed_off":
            if self.claude_order:
                await self.say(session_id, "and so on to the …")
                await self.say(session_id, f"END[{text}]")
                await self._client.session_update(
                    session_id, acp.schema.UsageUpdate(session_update="usage_update", used=10, size=1000)
                )
                self.wrapped_up.set()
                await self.joined_done.wait()  # answered only once the joined prompt's answer is out
            return PromptResponse(stop_reason="end_turn")
        self.running = None
        if how == "cancelled":
            return PromptResponse(stop_reason="cancelled")
        await self.say(session_id, f"DONE[{text}]")
        return PromptResponse(stop_reason="end_turn")

    async def _joined_late(self, session_id: str, text: str) -> PromptResponse:
        """(claude order) The joined prompt's turn: its answer after the running one's, then
        both requests answered, the running one's first."""
        self.wrapped_up = asyncio.Event()
        self.joined_done = joined_done = asyncio.Event()
        await self.wrapped_up.wait()
        await self.say(session_id, f"JOINED[{text}] ")
        how = await self._gate((text.split() or ["turn"])[0], asyncio.Event(), self.cancelled)
        if how != "cancelled":
            await self.say(session_id, f"DONE[{text}]")
        joined_done.set()
        await asyncio.sleep(0.05)  # the running turn's answer goes out first
        self.running = None
        return PromptResponse(stop_reason="cancelled" if how == "cancelled" else "end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.set()
        self.joined_done.set()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method != "session/steering" or not self.steering:
            raise acp.RequestError.method_not_found(f"_{method}")
        text = " ".join(str(b.get("text", "")) for b in params.get("prompt", []) if isinstance(b, dict))
        if self.running is None:
            return {"outcome": "promptRequired", "reason": "noRunningTurn"}
        await self.say(str(params.get("sessionId")), f"STEERED[{text}] ")
        return {"outcome": "injected"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queueing", action="store_true")
    parser.add_argument("--steering", action="store_true")
    parser.add_argument("--claude-order", action="store_true")
    args = parser.parse_args()
    note_pid()
    asyncio.run(acp.run_agent(QueueingAgent(args), observers=[recorder("RECORD_FILE")]))


if __name__ == "__main__":
    main()
