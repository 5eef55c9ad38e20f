"""A v1 ACP agent written with the official Python SDK that tries everything a permission policy
decides: it reads a file, asks permission to read and to edit, writes a file and runs a command
through the client, as a coding agent would.

A prompt ``try DIR`` does, in order, in directory ``DIR`` (inside the session's cwd):

1. ``fs/read_text_file DIR/input.txt``;
2. ``session/request_permission`` for a tool call of kind ``read`` ("Read input.txt");
3. ``session/request_permission`` for a tool call of kind ``edit`` ("Edit output.txt");
4. ``fs/write_text_file DIR/output.txt``;
5. ``terminal/create`` of ``touch DIR/ran``, then waits for it and releases it.

Each step's outcome goes into one JSON report sent as an ``agent_message_chunk``:
``{"read": ..., "ask_read": ..., "ask_edit": ..., "write": ..., "terminal": ...}`` where each
value is ``{"ok": ...}`` or ``{"error": {"code", "message"}}`` (for permissions: the chosen
option id, or ``"cancelled"``). The turn ends ``end_turn``.

A prompt ``edit DIR`` is what codex does: it asks permission to edit (kind ``edit``) and, when
refused or cancelled, ends the turn ``cancelled`` without writing anything; when allowed it
writes ``DIR/output.txt`` through the client and ends ``end_turn``.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import acp
from acp.exceptions import RequestError
from acp.schema import PermissionOption, PromptResponse, ToolCallUpdate
from sdk_base import BaseSdkAgent, prompt_text

OPTIONS = [
    PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
    PermissionOption(option_id="always", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="no", name="Reject", kind="reject_once"),
]


class PolicyAgent(BaseSdkAgent):
    name = "sdk-policy"
    session_prefix = "policy"
    id_digits = 8

    def __init__(self) -> None:
        super().__init__()
        self._calls = 0

    async def _ask(self, sid: str, kind: str, title: str) -> str:
        self._calls += 1
        call = ToolCallUpdate(tool_call_id=f"call-{self._calls}", title=title, kind=kind, status="pending")
        answer = await self._client.request_permission(session_id=sid, tool_call=call, options=OPTIONS)
        outcome = answer.outcome
        return str(getattr(outcome, "option_id", None) or outcome.outcome)

    async def _step(self, coro: Any) -> dict[str, Any]:
        try:
            result = await coro
        except RequestError as exc:
            return {"error": {"code": exc.code, "message": str(exc)}}
        if hasattr(result, "model_dump"):
            result = result.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return {"ok": result}

    async def _terminal(self, sid: str, directory: str) -> Any:
        client = self._client
        created = await client.create_terminal(session_id=sid, command="touch", args=[os.path.join(directory, "ran")])
        await client.wait_for_terminal_exit(session_id=sid, terminal_id=created.terminal_id)
        await client.release_terminal(session_id=sid, terminal_id=created.terminal_id)
        return {"terminalId": created.terminal_id}

    async def _noop(self, value: Any) -> Any:
        return value

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = prompt_text(prompt, "")
        verb, _, directory = text.partition(" ")
        client = self._client
        sid = session_id
        if verb == "edit":
            chosen = await self._ask(sid, "edit", "Edit output.txt")
            if chosen not in ("yes", "always"):
                return PromptResponse(stop_reason="cancelled")
            await client.write_text_file(session_id=sid, path=os.path.join(directory, "output.txt"), content="edited")
            await self.say(sid, "edited")
            return PromptResponse(stop_reason="end_turn")
        report = {
            "read": await self._step(client.read_text_file(session_id=sid, path=os.path.join(directory, "input.txt"))),
            "ask_read": await self._step(self._noop(await self._ask(sid, "read", "Read input.txt"))),
            "ask_edit": await self._step(self._noop(await self._ask(sid, "edit", "Edit output.txt"))),
            "write": await self._step(
                client.write_text_file(session_id=sid, path=os.path.join(directory, "output.txt"), content="written")
            ),
            "terminal": await self._step(self._terminal(sid, directory)),
        }
        await self.say(sid, json.dumps(report))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(PolicyAgent()))
