"""A v1 ACP agent written with the official Python SDK (``acp``) for races: it does to its
session's working directory what its command line says, as a coding agent would with its
own tools (files written directly, never through the client)::

    sdk_race_agent.py [--write PATH=TEXT]... [--delete PATH]... [--sleep S] [--steps N]
                      [--crash] [--hang] [--refuse] [--ask] [--cost C] [--name NAME]

Each prompt: ``--steps`` tool calls (titled ``edit PATH`` / ``step I``), spread over
``--sleep`` seconds, each followed by a ``usage_update`` (cost ``--cost`` per step); then
the writes and deletes; then ``end_turn``. ``--crash`` exits mid-turn (after half the
sleep, status 3); ``--hang`` never answers (until cancelled: then it keeps hanging, it
ignores the cancel); ``--refuse`` ends with ``refusal``; ``--ask`` asks one permission
first (``may NAME write?``) and writes only when allowed. Its pid goes to ``$PID_FILE``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import acp
from acp.schema import PermissionOption, PromptResponse, ToolCallUpdate
from sdk_base import BaseSdkAgent, note_pid


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--write", action="append", default=[])
    p.add_argument("--delete", action="append", default=[])
    p.add_argument("--sleep", type=float, default=0.0)
    p.add_argument("--steps", type=int, default=1)
    p.add_argument("--crash", action="store_true")
    p.add_argument("--hang", action="store_true")
    p.add_argument("--refuse", action="store_true")
    p.add_argument("--ask", action="store_true")
    p.add_argument("--cost", type=float, default=0.01)
    p.add_argument("--name", default="racer")
    return p.parse_args()


class RaceAgent(BaseSdkAgent):
    name = "sdk-race"
    session_prefix = "race"

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.args = args
        self.cwd: dict[str, str] = {}
        self.spent = 0.0

    async def new_session(self, cwd: str, **kwargs: Any) -> Any:
        answer = await super().new_session(cwd, **kwargs)
        self.cwd[answer.session_id] = cwd
        return answer

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        args = self.args
        cwd = Path(self.cwd.get(session_id, os.getcwd()))
        if args.hang:
            while True:
                await asyncio.sleep(3600)
        if args.ask:
            call = ToolCallUpdate(tool_call_id="ask-1", title=f"may {args.name} write?", kind="edit", status="pending")
            options = [
                PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                PermissionOption(option_id="no", name="Reject", kind="reject_once"),
            ]
            answer = await self._client.request_permission(session_id=session_id, tool_call=call, options=options)
            if getattr(answer.outcome, "option_id", None) != "yes":
                await self.say(session_id, f"{args.name}: not allowed")
                return PromptResponse(stop_reason="end_turn")
        targets = [w.partition("=")[0] for w in args.write] or [f"step {i}" for i in range(args.steps)]
        steps = max(1, args.steps)
        for i in range(steps):
            title = f"edit {targets[i % len(targets)]}" if args.write else f"step {i}"
            await self._client.session_update(
                session_id, acp.start_tool_call(f"t-{i}", title, kind="edit", status="completed")
            )
            self.spent += args.cost
            await self._client.session_update(
                session_id,
                acp.schema.UsageUpdate(
                    session_update="usage_update", used=1000 * (i + 1), size=100_000,
                    cost=acp.schema.Cost(amount=round(self.spent, 4), currency="USD"),
                ),
            )
            if args.crash and i >= steps // 2:
                await asyncio.sleep(args.sleep / 2)
                os._exit(3)
            await asyncio.sleep(args.sleep / steps)
        for item in args.write:
            rel, _, text = item.partition("=")
            path = cwd / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8").decode("unicode_escape").encode("latin-1"))
        for rel in args.delete:
            (cwd / rel).unlink(missing_ok=True)
        await self.say(session_id, f"{args.name} done")
        return PromptResponse(stop_reason="refusal" if args.refuse else "end_turn")


if __name__ == "__main__":
    note_pid()
    sys.stdout.reconfigure(line_buffering=False)  # type: ignore[attr-defined]
    asyncio.run(acp.run_agent(RaceAgent(_args())))
