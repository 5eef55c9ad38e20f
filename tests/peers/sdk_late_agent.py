"""A v1 ACP agent (official ``acp`` SDK) that talks outside its turns, for the tests of what a
transcript keeps: text between turns, updates after a turn's answer, turns that end badly, usage.

* ``session/resume`` and ``session/load`` are advertised and accepted for any id (nothing is
  replayed); sessions carry the modes ``default`` and ``yolo``.
* ``session/set_mode`` says ``[MODE_UPDATE] <mode>`` in an id-less
  ``agent_message_chunk`` outside any turn (as gemini does after ``/mode yolo``), then answers.
* ``session/prompt``, by the first word of the prompt:

  - ``late``: the answer ``ANSWER`` (messageId ``answer-1``) and a tool call ``bg-1``
    ``in_progress``; the turn ends (``end_turn``), and ``LATE_DELAY`` seconds later (default
    0.1) come, after the response: `` +MORE`` for ``answer-1``, the tool call ``bg-1``
    ``completed`` with the text ``BG-DONE``, and ``LATE-TEXT`` in an id-less chunk (claude's
    background subagents report so); with ``LATE_GATE`` set (a path), all but `` +MORE`` wait
    until that file exists;
  - ``cancel``: says ``PARTIAL``, then waits for ``session/cancel`` and ends ``cancelled``;
  - ``cancelled``: says ``PARTIAL`` and ends ``cancelled`` at once (as after a cancel);
  - ``fail``: fails the request at once (``-32603``, ``model exploded``);
  - ``usage``: a ``usage_update`` of ``USED`` tokens (default 95000) of 100000 costing
    $0.12, then ``ANSWER``;
  - anything else: ``ANSWER to <prompt>``.

Writes its pid to ``$PID_FILE`` (see ``sdk_base``).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import acp
from acp.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    CurrentModeUpdate,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionMode,
    SessionModeState,
    SessionResumeCapabilities,
    SetSessionModeResponse,
    TextContentBlock,
    UsageUpdate,
)
from sdk_base import BaseSdkAgent, note_pid, prompt_text

MODES = SessionModeState(
    current_mode_id="default",
    available_modes=[SessionMode(id="default", name="Default"), SessionMode(id="yolo", name="YOLO")],
)


class LateAgent(BaseSdkAgent):
    name = "sdk-late"
    session_prefix = "late"

    def __init__(self) -> None:
        super().__init__()
        self._tasks: set[asyncio.Task[None]] = set()
        self._cancelled: dict[str, asyncio.Event] = {}

    def capabilities(self) -> AgentCapabilities:
        return AgentCapabilities(
            load_session=True, session_capabilities=SessionCapabilities(resume=SessionResumeCapabilities())
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=self.new_session_id(), modes=MODES)

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        return LoadSessionResponse(modes=MODES)

    async def resume_session(self, session_id: str, cwd: str, **kwargs: Any) -> ResumeSessionResponse:
        return ResumeSessionResponse(modes=MODES)

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        await self._mode_said(session_id, mode_id)  # before the answer: the next turn comes after it
        return SetSessionModeResponse()

    async def _mode_said(self, session_id: str, mode_id: str) -> None:
        await self._client.session_update(
            session_id, CurrentModeUpdate(session_update="current_mode_update", current_mode_id=mode_id)
        )
        await self.say(session_id, f"[MODE_UPDATE] {mode_id}")

    def _later(self, work: Any, delay: float) -> None:
        async def run() -> None:
            await asyncio.sleep(delay)
            await work

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _chunk(self, session_id: str, text: str, message_id: str | None = None) -> None:
        chunk = AgentMessageChunk(
            session_update="agent_message_chunk", content=TextContentBlock(type="text", text=text), message_id=message_id
        )
        await self._client.session_update(session_id, chunk)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = prompt_text(prompt)
        word = (text.split() or [""])[0]
        client = self._client
        if word == "late":
            await self._chunk(session_id, "ANSWER", "answer-1")
            await client.session_update(session_id, acp.start_tool_call("bg-1", "background task", status="in_progress"))
            self._later(self._after(session_id), float(os.environ.get("LATE_DELAY", "0.1")))
            return PromptResponse(stop_reason="end_turn")
        if word == "cancelled":
            await self.say(session_id, "PARTIAL")
            return PromptResponse(stop_reason="cancelled")
        if word == "cancel":
            cancelled = self._cancelled[session_id] = asyncio.Event()
            await self.say(session_id, "PARTIAL")
            try:
                await asyncio.wait_for(cancelled.wait(), 30)
            except asyncio.CancelledError:  # the SDK cancels the request's task on session/cancel
                pass
            return PromptResponse(stop_reason="cancelled")
        if word == "fail":
            raise acp.RequestError.internal_error({"message": "model exploded"})
        if word == "usage":
            used = int(os.environ.get("USED", "95000"))
            await client.session_update(
                session_id,
                UsageUpdate(session_update="usage_update", used=used, size=100000, cost={"amount": 0.12, "currency": "USD"}),
            )
            await self.say(session_id, "ANSWER")
            return PromptResponse(stop_reason="end_turn")
        await self.say(session_id, f"ANSWER to {text}")
        return PromptResponse(stop_reason="end_turn")

    async def _after(self, session_id: str) -> None:
        await self._chunk(session_id, " +MORE", "answer-1")
        gate = os.environ.get("LATE_GATE")
        while gate and not os.path.exists(gate):  # the rest waits for the test to open the gate
            await asyncio.sleep(0.02)
        await self._client.session_update(
            session_id,
            acp.update_tool_call("bg-1", status="completed", content=[acp.tool_content(acp.text_block("BG-DONE"))]),
        )
        await self._chunk(session_id, "LATE-TEXT")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        event = self._cancelled.get(session_id)
        if event is not None:
            event.set()


if __name__ == "__main__":
    note_pid()
    asyncio.run(acp.run_agent(LateAgent(), use_unstable_protocol=True))
