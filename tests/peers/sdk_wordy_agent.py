"""A v1 ACP agent written with the official Python SDK (``acp``) that says a lot, as gemini does:
the peer of the "screens that fit" tests (issue 24).

- ``initialize`` advertises two login methods with long descriptions (logging in is not needed);
- sessions carry modes whose descriptions take several lines at 80 columns;
- right after ``session/new`` it sends ``available_commands_update`` with many commands, some
  of whose names hold a space (``/extensions list``), and a ``usage_update`` of 23,700 of
  200,000 tokens;
- a prompt holding ``ask`` asks a permission whose option names are longer than a 60-column
  row and hold numbers (``23.7k/200k``), and says ``CHOSEN=<optionId or cancelled>``;
- a prompt is answered with both updates again, then one text chunk ``ok`` (a test that saw
  ``ok`` knows the commands and the usage arrived).
"""

from __future__ import annotations

import asyncio
from typing import Any

import acp
from acp.schema import (
    AgentCapabilities,
    AuthMethodAgent,
    AvailableCommand,
    AvailableCommandsUpdate,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    ToolCallUpdate,
    UsageUpdate,
)
from sdk_base import BaseSdkAgent, prompt_text

MODES = (
    (
        "default",
        "Default Approval",
        "Prompts for approval before every tool call that changes a file or runs a command",
    ),
    (
        "autoEdit",
        "Auto Edit",
        "Approves the edit tools automatically and asks before running any shell command",
    ),
    (
        "yolo",
        "YOLO",
        "Approves every tool call automatically without asking anything at all, use with care",
    ),
)
COMMANDS = [
    "memory",
    "memory show",
    "memory refresh",
    "memory list",
    "extensions",
    "extensions list",
    "extensions explore",
    "extensions enable",
    "extensions disable",
    "extensions install",
    "extensions uninstall",
    "extensions restart",
    "init",
    "restore",
    "restore list",
    "about",
]
#: Asked on a prompt holding "ask": names longer than a 60-column row, with numbers in them.
OPTIONS = [
    PermissionOption(
        option_id="always",
        name="Allow every edit of this kind in all 2,345,678,901 files of the session",
        kind="allow_always",
    ),
    PermissionOption(
        option_id="once",
        name="Allow all 25 edits of 1,234,567 lines in README.md",
        kind="allow_once",
    ),
    PermissionOption(option_id="no", name="Reject", kind="reject_once"),
]
LOGINS = (
    (
        "oauth-personal",
        "Log in with Google",
        "Use your personal Google account in the browser that opens",
    ),
    (
        "gemini-api-key",
        "Gemini API key",
        "Use an API key of the Gemini Developer API from the environment",
    ),
)


class WordyAgent(BaseSdkAgent):
    name = "sdk-wordy"
    title = "Wordy Agent"
    session_prefix = "wordy"

    def capabilities(self) -> AgentCapabilities:
        return AgentCapabilities()

    def initialize_extras(self) -> dict[str, Any]:
        return {
            "auth_methods": [AuthMethodAgent(id=i, name=n, description=d) for i, n, d in LOGINS]
        }

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session_id = self.new_session_id()
        asyncio.get_running_loop().call_later(
            0.05, lambda: asyncio.ensure_future(self._announce(session_id))
        )
        modes = SessionModeState(
            current_mode_id="default",
            available_modes=[SessionMode(id=i, name=n, description=d) for i, n, d in MODES],
        )
        return NewSessionResponse(session_id=session_id, modes=modes)

    async def _announce(self, session_id: str) -> None:
        commands = [
            AvailableCommand(name=name, description=f"the {name} command") for name in COMMANDS
        ]
        await self._client.session_update(
            session_id,
            AvailableCommandsUpdate(
                session_update="available_commands_update", available_commands=commands
            ),
        )
        await self._client.session_update(
            session_id, UsageUpdate(session_update="usage_update", used=23_700, size=200_000)
        )

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        return SetSessionModeResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        await self._announce(session_id)  # again: once the answer is shown, so are these
        if "ask" in prompt_text(prompt):
            answer = await self._client.request_permission(
                session_id=session_id,
                tool_call=ToolCallUpdate(
                    tool_call_id="call-1", title="edit README.md", status="pending"
                ),
                options=OPTIONS,
            )
            await self.say(
                session_id, f"CHOSEN={getattr(answer.outcome, 'option_id', 'cancelled')} "
            )
        await self.say(session_id, "ok")
        return PromptResponse(stop_reason="end_turn")


def main() -> None:
    asyncio.run(acp.run_agent(WordyAgent()))


if __name__ == "__main__":
    main()
