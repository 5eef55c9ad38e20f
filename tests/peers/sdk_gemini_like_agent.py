"""A v1 ACP agent written with the official Python SDK (``acp``) that behaves as gemini does
where the REPL's screen is concerned.

* It advertises ``loadSession`` and nothing else (no resume, close, list).
* ``session/load`` is answered first; the replay follows afterwards, ``REPLAY_DELAY``
  seconds later (environment variable, default 0.3): one user message, one tool call, one
  agent message, each with a fixed text (``REPLAYED-QUESTION``, ``replayed-tool``,
  ``REPLAYED-ANSWER``), then a ``session_info_update`` titling the session ``Replayed
  title``. It keeps no state: any session id loads.
* A prompt asks ``session/request_permission`` with the options in claude's order (the
  broadest first: allow_always, allow_once, reject_once), then reports the outcome as
  ``CHOSEN=<optionId or cancelled>`` and echoes the prompt as ``GOT[<text>]``.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

import acp
from acp.schema import (
    AgentCapabilities,
    LoadSessionResponse,
    PermissionOption,
    PromptResponse,
    SessionInfoUpdate,
    ToolCallUpdate,
)
from sdk_base import BaseSdkAgent, prompt_text

OPTIONS = [
    PermissionOption(option_id="yes-always", name="Always Allow", kind="allow_always"),
    PermissionOption(option_id="yes-once", name="Allow", kind="allow_once"),
    PermissionOption(option_id="no-once", name="Reject", kind="reject_once"),
]


class GeminiLikeAgent(BaseSdkAgent):
    """Implements the part of ``acp.Agent`` this test peer needs."""

    name = "sdk-gemini-like"
    title = "Gemini-like"
    session_prefix = "gl"
    id_digits = 8

    def __init__(self) -> None:
        super().__init__()
        self._tasks: set[asyncio.Task[None]] = set()

    def capabilities(self) -> AgentCapabilities:
        return AgentCapabilities(load_session=True)

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        task = asyncio.get_running_loop().create_task(self._replay(session_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return LoadSessionResponse()

    async def _replay(self, session_id: str) -> None:
        await asyncio.sleep(float(os.environ.get("REPLAY_DELAY", "0.3")))
        client = self._client
        await client.session_update(session_id, acp.update_user_message_text("REPLAYED-QUESTION"))
        await client.session_update(
            session_id, acp.start_tool_call("t-1", "replayed-tool", kind="read", status="completed")
        )
        await self.say(session_id, "REPLAYED-ANSWER")
        await client.session_update(
            session_id, SessionInfoUpdate(session_update="session_info_update", title="Replayed title")
        )

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = prompt_text(prompt)
        client = self._client
        answer = await client.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id=f"call-{uuid.uuid4().hex[:6]}", title="touch a file",
                                     status="pending"),
            options=OPTIONS,
        )
        outcome = answer.outcome
        chosen = getattr(outcome, "option_id", outcome.outcome)
        await self.say(session_id, f"CHOSEN={chosen} GOT[{text}]")
        return PromptResponse(stop_reason="cancelled" if chosen == "cancelled" else "end_turn")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(GeminiLikeAgent()))
