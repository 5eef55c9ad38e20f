"""An ACP agent (official ``acp`` SDK) whose turns wait at a gate the test opens, for the tests
of one writer per session.

``python sdk_gate_agent.py [--session-id ID] [--name NAME]``

* ``session/new`` answers ``ID`` when given (every time, whatever the cwd: ids are the
  agent's, and some reuse them), else a fresh ``gate-<hex>``; ``--name`` is ``agentInfo.name``.
* ``session/resume`` and ``session/load`` are advertised and accepted for any id (a load
  replays nothing); ``session/list`` lists the ``--session-id`` one, titled ``listed by NAME``.
* ``session/prompt`` with text ``WORD ...`` says ``WORD:start@NAME``, then waits until the file
  ``$GATE_DIR/WORD`` exists (at once without ``$GATE_DIR``; at most 60 s), then says
  ``WORD:tick0`` … ``WORD:tick4`` a moment apart, each its own ``agent_message_chunk``, and
  ends the turn. Two turns running at once therefore interleave their ticks.

Writes its pid to ``$PID_FILE`` and every request to ``$RECORD_FILE`` (see ``sdk_base``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path
from typing import Any, ClassVar

import acp
from acp.schema import (
    AgentCapabilities,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
)
from sdk_base import BaseSdkAgent, note_pid, prompt_text, recorder

TICKS = 5
GATE_LIMIT = 60.0


class GateAgent(BaseSdkAgent):
    name: ClassVar[str] = "sdk-gate"
    session_prefix = "gate"

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self._fixed = args.session_id

    def capabilities(self) -> AgentCapabilities:
        return AgentCapabilities(
            load_session=True,
            session_capabilities=SessionCapabilities(resume=SessionResumeCapabilities(), list=SessionListCapabilities()),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=self._fixed or self.new_session_id())

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any) -> ListSessionsResponse:
        if not self._fixed:
            return ListSessionsResponse(sessions=[])
        info = SessionInfo(session_id=self._fixed, cwd=cwd or os.getcwd(), title=f"listed by {self.name}")
        return ListSessionsResponse(sessions=[info])

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        return LoadSessionResponse()

    async def resume_session(self, session_id: str, cwd: str, **kwargs: Any) -> ResumeSessionResponse:
        return ResumeSessionResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        word = (prompt_text(prompt).split() or ["turn"])[0]
        await self.say(session_id, f"{word}:start@{self.name} ")
        gates = os.environ.get("GATE_DIR")
        if gates:
            deadline = time.monotonic() + GATE_LIMIT
            while not (Path(gates) / word).exists() and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
        for i in range(TICKS):
            await asyncio.sleep(0.02)
            await self.say(session_id, f"{word}:tick{i} ")
        return PromptResponse(stop_reason="end_turn")


def main() -> None:
    parser = argparse.ArgumentParser(prog="sdk_gate_agent")
    parser.add_argument("--session-id")
    parser.add_argument("--name", default="sdk-gate")
    args = parser.parse_args()
    GateAgent.name = args.name
    note_pid()
    asyncio.run(acp.run_agent(GateAgent(args), use_unstable_protocol=True, observers=[recorder("RECORD_FILE")]))


if __name__ == "__main__":
    main()
