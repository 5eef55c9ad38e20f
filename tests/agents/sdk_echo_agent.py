"""A v1 ACP agent written with the official Python SDK (``acp``), as a peer we did not write.

It answers ``initialize`` (protocol version 1), ``session/new`` and ``session/prompt``. A
prompt is answered with a thought, then the prompt's text echoed back in two
``agent_message_chunk`` updates, then ``stopReason: end_turn``. A prompt containing the word
"permission" first asks the client ``session/request_permission`` and reports the outcome
in one more chunk.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import acp
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
)


class EchoAgent:
    """Implements the part of ``acp.Agent`` this test peer needs."""

    def __init__(self) -> None:
        self._client: Any = None

    def on_connect(self, conn: Any) -> None:
        self._client = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(load_session=False),
            agent_info=Implementation(name="sdk-echo", version="0.1"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=f"echo-{uuid.uuid4().hex[:8]}")

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = " ".join(getattr(block, "text", "") for block in prompt)
        client = self._client
        await client.session_update(session_id, acp.update_agent_thought_text("thinking about it"))
        await client.session_update(session_id, acp.update_agent_message_text("you said: "))
        await client.session_update(session_id, acp.update_agent_message_text(text))
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
            await client.session_update(session_id, acp.update_agent_message_text(f" [permission: {chosen}]"))
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None


if __name__ == "__main__":
    asyncio.run(acp.run_agent(EchoAgent()))
