"""A v1 ACP agent (official SDK) that dies or leaves processes behind, as its prompt says.

For the tests of what acpcli does about an agent's leftovers (``tests/cli/test_leftovers.py``).
Every process it starts is a ``sleep 301`` whose pid is appended to ``$CHILD_PID_FILE``; none of
them may be running once acpcli has exited. The first word of the prompt chooses:

``exit-holding``        start ``sleep 301`` (in the agent's group, holding its stdout and
                        stderr), send a chunk, then exit with status 5 mid-turn
``exit-holding-setsid`` the same with ``setsid sleep 301`` (a new session: outside the group)
``exit-holding-untagged`` the same with a ``sleep 301`` double-forked into a session of its own
                        with an empty environment (no owner tag: only the sweep at acpcli's
                        exit, as its subreaper, can find it)
``orphan``              a shell starts ``setsid sleep 301`` in the background (holding the
                        agent's stdout) and exits, so the sleep is an orphan; then ``end_turn``
``terminal-orphan``     ``terminal/create`` of a shell that starts ``setsid sleep 301`` in the
                        background and exits; waits for it, releases it; ``end_turn``
``terminal-child``      ``terminal/create`` of a shell that starts ``setsid sleep 301`` and
                        waits for it; releases the terminal while it runs; ``end_turn``
``flood N``             writes N bytes of stderr (lines of ``x``), then ``end_turn``

The agent's own pid is appended to ``$PID_FILE`` (if set) at start-up.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from typing import Any

import acp
from acp.schema import PromptResponse
from sdk_base import BaseSdkAgent, append_line, note_pid, prompt_text

# `$!` is the background job's pid; `setsid` does not fork there (the job is no group leader),
# so that pid is the sleep's own.
BACKGROUND_SETSID = "setsid sleep 301 & echo $!"


class LeaverAgent(BaseSdkAgent):
    name = "leaver"
    session_prefix = "leaver"

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        verb, _, arg = prompt_text(prompt).partition(" ")
        if verb in ("exit-holding", "exit-holding-setsid"):
            argv = ["sleep", "301"] if verb == "exit-holding" else ["setsid", "sleep", "301"]
            child = subprocess.Popen(argv)  # inherits stdin, stdout and stderr
            append_line("CHILD_PID_FILE", str(child.pid))
            await self.say(session_id, "started a child")
            await asyncio.sleep(0.2)
            sys.stderr.write("leaver: exiting mid-turn, my child keeps my stdout\n")
            sys.stderr.flush()
            os._exit(5)
        if verb == "exit-holding-untagged":
            if os.fork() == 0:
                os.setsid()
                holder = os.fork()
                if holder == 0:
                    os.execve(shutil.which("sleep") or "/bin/sleep", ["sleep", "301"], {})
                append_line("CHILD_PID_FILE", str(holder))
                os._exit(0)
            os.wait()
            await self.say(session_id, "started a child")
            sys.stderr.write("leaver: exiting mid-turn, my child keeps my stdout\n")
            sys.stderr.flush()
            os._exit(5)
        if verb == "orphan":
            subprocess.run(["sh", "-c", 'setsid sleep 301 & echo $! >> "$CHILD_PID_FILE"'], check=True)
        elif verb in ("terminal-orphan", "terminal-child"):
            await self._terminal(session_id, BACKGROUND_SETSID + ("; wait" if verb == "terminal-child" else ""))
        elif verb == "flood":
            line = b"x" * 1023 + b"\n"
            err = sys.stderr.buffer
            for _ in range(int(arg) // len(line)):
                err.write(line)
            err.flush()
        await self.say(session_id, f"{verb} done")
        return PromptResponse(stop_reason="end_turn")

    async def _terminal(self, sid: str, script: str) -> None:
        client = self._client
        created = await client.create_terminal(session_id=sid, command="sh", args=["-c", script])
        tid = created.terminal_id
        pid = ""
        for _ in range(500):  # the pid is the command's first output line
            output = await client.terminal_output(session_id=sid, terminal_id=tid)
            pid = output.output.strip()
            if pid:
                break
            await asyncio.sleep(0.01)
        append_line("CHILD_PID_FILE", pid)
        if "wait" not in script:
            await client.wait_for_terminal_exit(session_id=sid, terminal_id=tid)
        await client.release_terminal(session_id=sid, terminal_id=tid)


def main() -> None:
    note_pid()
    asyncio.run(acp.run_agent(LeaverAgent()))


if __name__ == "__main__":
    main()
