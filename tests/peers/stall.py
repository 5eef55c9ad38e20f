"""A v1 ACP agent (official SDK) that streams a little, starts a child process, then stalls.

For the signal and sudden-exit tests: a turn that is certainly in progress when the test
signals acpcli, with a grandchild process whose fate shows whether acpcli killed the agent's
whole process group.

On ``session/prompt`` it:

1. starts ``sleep 600`` (in the agent's process group) and appends the child's pid to the
   file named by ``CHILD_PID_FILE`` (if set);
2. sends ``agent_message_chunk`` "streamed part one";
3. appends "streaming" to ``STALL_MARK_FILE`` (if set), so a test knows the chunk is out;
4. waits up to 600 s, or until ``session/cancel`` arrives; then answers ``cancelled``.

``--ignore-cancel``: a cancel is not honoured (the turn stays stuck), so only a kill ends it.
The agent's own pid is appended to ``PID_FILE`` (if set) at start-up.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
from typing import Any

import acp
from acp.schema import PromptResponse
from sdk_base import BaseSdkAgent, append_line, note_pid

PART_ONE = "streamed part one"


class StallAgent(BaseSdkAgent):
    name = "stall"
    session_prefix = "stall"

    def __init__(self, ignore_cancel: bool) -> None:
        super().__init__()
        self._ignore_cancel = ignore_cancel
        self._cancelled: dict[str, asyncio.Event] = {}
        self._children: list[subprocess.Popen[bytes]] = []

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        cancelled = self._cancelled.setdefault(session_id, asyncio.Event())
        cancelled.clear()
        child = subprocess.Popen(["sleep", "600"])
        self._children.append(child)
        append_line("CHILD_PID_FILE", str(child.pid))
        await self.say(session_id, PART_ONE)
        append_line("STALL_MARK_FILE", "streaming")
        try:
            await asyncio.wait_for(cancelled.wait(), timeout=600)
        except TimeoutError:
            pass
        return PromptResponse(stop_reason="cancelled")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        append_line("STALL_MARK_FILE", "cancel")
        if not self._ignore_cancel:
            self._cancelled.setdefault(session_id, asyncio.Event()).set()


def main() -> None:
    p = argparse.ArgumentParser(prog="stall")
    p.add_argument("--ignore-cancel", action="store_true")
    args = p.parse_args()
    note_pid()
    asyncio.run(acp.run_agent(StallAgent(args.ignore_cancel)))


if __name__ == "__main__":
    main()
