"""A v1 ACP agent written with the official Python SDK for the Python API's tests: it loads
and closes sessions, and asks permission before the tool call of every prompt.

Each prompt: the agent announces a tool call ``Edit notes.txt`` (kind ``edit``), asks
permission for it (``allow``/``reject`` once), marks it ``completed`` or ``failed``, then says
``you said: <prompt>; chosen: <option id or "cancelled">`` and ends the turn ``end_turn``
(``cancelled`` when the answer was). The conversation is kept in ``$API_AGENT_STATE`` (a JSON
file), so a later launch can ``session/load`` it: the user's and the agent's messages are
replayed. A session it does not know is "Resource not found" (-32002).
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import acp
from acp.schema import (
    AgentCapabilities,
    CloseSessionResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    ToolCallUpdate,
)
from sdk_base import BaseSdkAgent, note_pid, prompt_text

OPTIONS = [
    PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
    PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
]


def _state() -> dict[str, Any]:
    try:
        with open(os.environ["API_AGENT_STATE"], encoding="utf-8") as f:
            return json.load(f)
    except (KeyError, OSError, ValueError):
        return {}


def _save(state: dict[str, Any]) -> None:
    path = os.environ.get("API_AGENT_STATE")
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(state, f)


class ApiAgent(BaseSdkAgent):
    name = "sdk-api"
    session_prefix = "api"

    def capabilities(self) -> AgentCapabilities:
        return AgentCapabilities(
            load_session=True, session_capabilities=SessionCapabilities(close=SessionCloseCapabilities())
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        answer = await super().new_session(cwd, **kwargs)
        state = _state()
        state[answer.session_id] = []
        _save(state)
        return answer

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        history = _state().get(session_id)
        if history is None:
            raise acp.RequestError(-32002, "Resource not found", {"uri": session_id})
        for role, text in history:
            update = acp.update_user_message_text(text) if role == "user" else acp.update_agent_message_text(text)
            await self._client.session_update(session_id, update)
        return LoadSessionResponse()

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        state = _state()
        if state.pop(session_id, None) is None:
            raise acp.RequestError(-32002, "Resource not found", {"uri": session_id})
        _save(state)
        return CloseSessionResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = prompt_text(prompt)
        call_id = f"call-{len(_state().get(session_id, []))}"
        await self._client.session_update(
            session_id, acp.start_tool_call(call_id, "Edit notes.txt", kind="edit", status="pending")
        )
        call = ToolCallUpdate(tool_call_id=call_id, title="Edit notes.txt", kind="edit", status="pending")
        answer = await self._client.request_permission(session_id=session_id, tool_call=call, options=OPTIONS)
        chosen = getattr(answer.outcome, "option_id", None) or "cancelled"
        status = "completed" if chosen == "allow" else "failed"
        await self._client.session_update(session_id, acp.update_tool_call(call_id, status=status))
        said = f"you said: {text}; chosen: {chosen}"
        await self.say(session_id, said)
        state = _state()
        state.setdefault(session_id, []).extend([["user", text], ["agent", said]])
        _save(state)
        return PromptResponse(stop_reason="cancelled" if chosen == "cancelled" else "end_turn")


if __name__ == "__main__":
    note_pid()
    asyncio.run(acp.run_agent(ApiAgent(), use_unstable_protocol=True))
