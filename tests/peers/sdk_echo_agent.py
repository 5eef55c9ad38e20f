"""A v1 ACP agent written with the official Python SDK (``acp``), as a peer we did not write.

It answers ``initialize`` (protocol version 1), ``session/new`` and ``session/prompt``. A
prompt is answered with a thought, then the prompt's text echoed back in two
``agent_message_chunk`` updates, then ``stopReason: end_turn``. A prompt containing the word
"permission" first asks the client ``session/request_permission`` and reports the outcome
in one more chunk.
"""

from __future__ import annotations

import asyncio
from typing import Any

import acp
from acp.schema import PermissionOption, PromptResponse, ToolCallUpdate
from sdk_base import BaseSdkAgent, prompt_text


class EchoAgent(BaseSdkAgent):
    """Implements the part of ``acp.Agent`` this test peer needs."""

    name = "sdk-echo"
    session_prefix = "echo"
    id_digits = 8

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = prompt_text(prompt)
        client = self._client
        await client.session_update(session_id, acp.update_agent_thought_text("thinking about it"))
        await self.say(session_id, "you said: ")
        await self.say(session_id, text)
        if "permission" in text:
            answer = await client.request_permission(
                session_id=session_id,
                tool_call=ToolCallUpdate(tool_call_id="call-1", title="touch a file", status="pending"),
                options=[
                    PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                    PermissionOption(option_id="deny", name="Deny", kind="reject_once"),
                ],
            )
            outcome = answer.outcome
            chosen = getattr(outcome, "option_id", outcome.outcome)
            await self.say(session_id, f" [permission: {chosen}]")
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(EchoAgent()))
