"""A v1 ACP agent written with the official Python SDK (``acp``) that sends what claude and
codex send around tool calls, for the tests of what the REPL's screen keeps
(``tests/cli/test_live_screen.py``). Prompt keywords (the first one found decides):

* ``think-write``: streams a thought, then (while the thought is still the newest entry)
  asks the client to write ``WRITTEN.txt`` (``fs/write_text_file``; refused under
  ``--permissions deny``), then says ``THOUGHT-DONE``.
* ``asked``: a tool call ``TOOL-ASKED`` ``pending`` with text content, a
  ``session/request_permission`` about it, then ``in_progress``, ``in_progress`` with more
  content, ``completed`` (claude's sequence), then ``ASKED-DONE``; when the question is
  dismissed, the tool call ``cancelled`` twice, alike (as codex sends it), and the turn ends
  ``cancelled``.
* ``parallel``: two tool calls started one after the other (``TOOL-FIRST``, ``TOOL-SECOND``),
  the second finishing first (claude's parallel reads), then ``PARALLEL-DONE``.
* ``cancel``: a 400-line fenced code block streamed a line at a time, slowly, until
  ``session/cancel``; the turn ends ``cancelled``.
* ``session/set_mode`` is answered after a message ``[MODE_UPDATE] <mode>`` (as gemini does).
* ``console``: a completed tool call ``TOOL-CONSOLE`` whose content is a fenced
  ```` ```console ```` block followed by a ``<system-reminder>`` of three lines, and a fenced
  block with a one-line reminder inside the fence (claude's tool outputs), then ``CONSOLE-DONE``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import acp
from acp.schema import (
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    ToolCallUpdate,
)
from sdk_base import BaseSdkAgent, prompt_text

OPTIONS = [
    PermissionOption(option_id="yes-once", name="Allow", kind="allow_once"),
    PermissionOption(option_id="no-once", name="Reject", kind="reject_once"),
]

#: claude's Read output: the reminder inside the fence
READ_OUTPUT = "```\n     1→hello from the README\n     2→\n<system-reminder>\nREAD-REMINDER\n</system-reminder>\n```"
CONSOLE_OUTPUT = (
    "```console\n$ ls -la\ntotal 8\n-rw-r--r-- 1 me me 12 README.md\n```\n"
    "<system-reminder>\nWhenever you read a file, consider whether it is malware.\n"
    "You must not improve malware.\nREMINDER-LAST-LINE\n</system-reminder>"
)


def _text(text: str) -> Any:
    return acp.tool_content(acp.text_block(text))


class ScreenAgent(BaseSdkAgent):
    name = "sdk-screen"
    session_prefix = "scr"

    def __init__(self) -> None:
        super().__init__()
        self._cancelled: dict[str, asyncio.Event] = {}

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        modes = SessionModeState(
            current_mode_id="default",
            available_modes=[
                SessionMode(id="default", name="Default"),
                SessionMode(id="yolo", name="YOLO"),
            ],
        )
        return NewSessionResponse(session_id=self.new_session_id(), modes=modes)

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        # gemini answers a mode change with a message of its own, streamed before the answer
        await self.say(session_id, f"[MODE_UPDATE] {mode_id}")
        await asyncio.sleep(0.4)  # drawn live meanwhile
        return SetSessionModeResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self._cancelled.setdefault(session_id, asyncio.Event()).set()

    async def _update(self, session_id: str, update: Any) -> None:
        await self._client.session_update(session_id, update)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = prompt_text(prompt)
        self._cancelled[session_id] = asyncio.Event()
        if "think-write" in text:
            return await self._think_write(session_id)
        if "asked" in text:
            return await self._asked(session_id)
        if "parallel" in text:
            return await self._parallel(session_id)
        if "cancel" in text:
            return await self._cancel(session_id)
        if "console" in text:
            await self._update(
                session_id,
                acp.start_tool_call("c-1", "TOOL-CONSOLE", kind="execute", status="pending"),
            )
            await self._update(
                session_id,
                acp.update_tool_call(
                    "c-1", status="completed", content=[_text(CONSOLE_OUTPUT), _text(READ_OUTPUT)]
                ),
            )
            await self.say(session_id, "CONSOLE-DONE")
            return PromptResponse(stop_reason="end_turn")
        await self.say(session_id, "say think-write, asked, cancel or console")
        return PromptResponse(stop_reason="end_turn")

    async def _think_write(self, sid: str) -> PromptResponse:
        for word in ("Let", " me", " think", " about", " this", " first."):
            await self._update(sid, acp.update_agent_thought_text(word))
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # the thought is drawn live meanwhile
        try:
            await self._client.write_text_file(session_id=sid, path="WRITTEN.txt", content="x")
        except Exception:
            pass
        await asyncio.sleep(0.3)
        await self.say(sid, "THOUGHT-DONE")
        return PromptResponse(stop_reason="end_turn")

    async def _asked(self, sid: str) -> PromptResponse:
        await self._update(
            sid,
            acp.start_tool_call(
                "a-1",
                "TOOL-ASKED",
                kind="execute",
                status="pending",
                content=[_text("first output line")],
            ),
        )
        await asyncio.sleep(0.2)
        answer = await self._client.request_permission(
            session_id=sid,
            tool_call=ToolCallUpdate(
                tool_call_id="a-1", title="TOOL-ASKED", kind="execute", status="pending"
            ),
            options=OPTIONS,
        )
        chosen = getattr(answer.outcome, "option_id", "cancelled")
        if chosen == "cancelled":
            for _ in range(2):  # codex sends the cancelled status twice
                await self._update(sid, acp.update_tool_call("a-1", status="cancelled"))
            return PromptResponse(stop_reason="cancelled")
        await self._update(sid, acp.update_tool_call("a-1", status="in_progress"))
        await asyncio.sleep(0.2)
        await self._update(
            sid,
            acp.update_tool_call(
                "a-1",
                status="in_progress",
                content=[_text("first output line"), _text("second output line")],
            ),
        )
        await asyncio.sleep(0.2)
        await self._update(sid, acp.update_tool_call("a-1", status="completed"))
        await self.say(sid, f"ASKED-DONE CHOSEN={chosen}")
        return PromptResponse(stop_reason="end_turn")

    async def _parallel(self, sid: str) -> PromptResponse:
        steps = [
            acp.start_tool_call("p-1", "TOOL-FIRST", kind="read", status="pending"),
            acp.start_tool_call("p-2", "TOOL-SECOND", kind="read", status="pending"),
            acp.update_tool_call("p-1", status="in_progress"),
            acp.update_tool_call("p-2", status="completed", content=[_text("second result")]),
            acp.update_tool_call("p-1", status="completed", content=[_text("first result")]),
        ]
        for step in steps:
            await self._update(sid, step)
            await asyncio.sleep(0.2)  # each state is drawn
        await self.say(sid, "PARALLEL-DONE")
        return PromptResponse(stop_reason="end_turn")

    async def _cancel(self, sid: str) -> PromptResponse:
        cancelled = self._cancelled[sid]
        await self.say(sid, "Here is the code:\n\n```python\n")
        for i in range(400):
            if cancelled.is_set():
                break
            await self.say(sid, f"value_{i} = {i}  # line {i}\n")
            await asyncio.sleep(0.02)
        await cancelled.wait()
        return PromptResponse(stop_reason="cancelled")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(ScreenAgent()))
