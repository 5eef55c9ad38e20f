"""A v1 ACP agent written with the official Python SDK (``acp``) that records what it receives.

Tests use it to assert exactly what arrived on the agent's side of the wire. Every JSON-RPC
message with a ``method`` (requests and notifications) is appended, *as received* (before the
SDK parses it), as one JSON line ``{"method": ..., "params": ..., "request": bool}`` to the
file named by the environment variable ``RECORD_FILE``. The line is written before the SDK
dispatches the message, so by the time the client sees an answer the record is on disk.
If ``PID_FILE`` is set, the agent's pid is appended to it at start-up, so a test can check
that no agent process outlives the client.

Capabilities are chosen on the command line; nothing is advertised unless asked for:

``--load``                    ``agentCapabilities.loadSession: true``
``--resume`` / ``--close`` / ``--list`` / ``--additional-directories``
                              the matching ``sessionCapabilities`` marker
``--mcp-http``                ``mcpCapabilities.http: true``

The SDK routes every method whether advertised or not, so a client that sends an unadvertised
method is caught by the record, not hidden by a -32601. The agent holds no state: any
session id is accepted by load/resume/close. ``session/load`` replays one fixed exchange
(:data:`REPLAYED_PROMPT`, :data:`REPLAYED_ANSWER`); ``session/list`` answers in two pages;
a prompt is answered with ``"you said: <text>"``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

import acp
from acp.schema import (
    AgentCapabilities,
    CloseSessionResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionAdditionalDirectoriesCapabilities,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
)
from sdk_base import BaseSdkAgent, note_pid, prompt_text, recorder

REPLAYED_PROMPT = "the replayed question"
REPLAYED_ANSWER = "the replayed answer"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The capability flags (see the module docstring)."""
    p = argparse.ArgumentParser(prog="sdk_record_agent")
    for flag in ("--load", "--resume", "--close", "--list", "--additional-directories", "--mcp-http"):
        p.add_argument(flag, action="store_true")
    return p.parse_args(argv)


class RecordAgent(BaseSdkAgent):
    """Implements the part of ``acp.Agent`` the lifecycle tests need."""

    name = "sdk-record"
    session_prefix = "rec"

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self._args = args

    def capabilities(self) -> AgentCapabilities:
        a = self._args
        session_caps = SessionCapabilities(
            resume=SessionResumeCapabilities() if a.resume else None,
            close=SessionCloseCapabilities() if a.close else None,
            list=SessionListCapabilities() if a.list else None,
            additional_directories=SessionAdditionalDirectoriesCapabilities() if a.additional_directories else None,
        )
        return AgentCapabilities(
            load_session=a.load,
            session_capabilities=session_caps,
            mcp_capabilities=McpCapabilities(http=a.mcp_http, sse=False),
        )

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        await self._client.session_update(session_id, acp.update_user_message_text(REPLAYED_PROMPT))
        await self.say(session_id, REPLAYED_ANSWER)
        return LoadSessionResponse()

    async def resume_session(self, session_id: str, cwd: str, **kwargs: Any) -> ResumeSessionResponse:
        return ResumeSessionResponse()

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        return CloseSessionResponse()

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any) -> ListSessionsResponse:
        # Two pages, so a client that stops after the first one is caught.
        where = cwd or os.getcwd()
        if cursor is None:
            return ListSessionsResponse(sessions=[SessionInfo(session_id="rec-page-1", cwd=where)], next_cursor="page-2")
        return ListSessionsResponse(sessions=[SessionInfo(session_id="rec-page-2", cwd=where)])

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        await self.say(session_id, f"you said: {prompt_text(prompt)}")
        return PromptResponse(stop_reason="end_turn")


def main() -> None:
    args = parse_args()
    note_pid()
    # use_unstable_protocol: the SDK routes session/resume and session/close only then.
    asyncio.run(acp.run_agent(RecordAgent(args), use_unstable_protocol=True, observers=[recorder("RECORD_FILE")]))


if __name__ == "__main__":
    main()
