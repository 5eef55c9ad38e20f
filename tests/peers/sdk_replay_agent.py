"""A v1 ACP agent (official SDK) whose ``session/load`` replays a conversation in exactly the
shapes claude-agent-acp 0.23.1 and gemini-cli 0.61.0 replay it (frames
recorded from both through the real-agents harness), while its live turns look like theirs.

Sessions are kept in the JSON file ``$REPLAY_STATE`` (one launch writes, the next reads):
each prompt's text, and whether its turn ran the shell. Any session id it has not saved is
"Resource not found" (``-32002``).

A live turn: the prompt ``... run ...`` answers "I will read the README with the shell.", a
completed ``execute`` tool call, then "The README says hello. All done."; any other prompt
answers "Hello from the fake model. This is a streamed answer." No messageIds, ever.

The replay (``--style``):

``claude``  before each prompt, its ``/model`` slash-command artefacts as two user chunks
            (``<command-name>/model</command-name>…<command-args>default</command-args>`` and
            ``<local-command-stdout>Set model to claude-sonnet-4-6</local-command-stdout>``),
            then the prompt as a third user chunk: with no boundary, one glued user message.
``gemini``  (named ``sdk-replay-gemini``, so acpcli waits for a replay that trails the
            answer, as for gemini) its ``<session_context>…</session_context>`` block as a user chunk before the
            ``session/load`` answer, everything else after it (gemini answers first and
            replays afterwards): the first prompt glued to that block; a tool call replayed
            with the title "Shell" and no content, followed by the tool's result echoed as a
            user chunk ``[Function Response: run_shell_command]``, then the rest of the answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from typing import Any

import acp
from acp.schema import AgentCapabilities, LoadSessionResponse, PromptResponse
from sdk_base import BaseSdkAgent, note_pid, prompt_text

HELLO = "Hello from the fake model. This is a streamed answer."
WILL = "I will read the README with the shell."
DONE = "The README says hello. All done."
CLAUDE_COMMAND = (
    "<command-name>/model</command-name>\n            <command-message>model</command-message>\n"
    "            <command-args>default</command-args>"
)
CLAUDE_STDOUT = "<local-command-stdout>Set model to claude-sonnet-4-6</local-command-stdout>"
GEMINI_CONTEXT = (
    "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
    "My operating system is: linux\n- **Workspace Directories:**\n  - {cwd}\n</session_context>"
)
GEMINI_ECHO = "[Function Response: run_shell_command]"


def _state_path() -> str:
    return os.environ.get("REPLAY_STATE") or os.path.join(os.getcwd(), ".replay-agent.json")


def _load_state() -> dict[str, Any]:
    try:
        with open(_state_path(), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def _save_state(state: dict[str, Any]) -> None:
    tmp = _state_path() + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(state, f)
    os.replace(tmp, _state_path())


def _user(text: str) -> Any:
    return acp.update_user_message_text(text)


class ReplayAgent(BaseSdkAgent):
    name = "sdk-replay"
    session_prefix = "rp"

    def __init__(self, style: str) -> None:
        super().__init__()
        self.style = style
        self.cwd: dict[str, str] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def capabilities(self) -> AgentCapabilities:
        return AgentCapabilities(load_session=True)

    async def new_session(self, cwd: str, **kwargs: Any) -> Any:
        answer = await super().new_session(cwd, **kwargs)
        self.cwd[answer.session_id] = cwd
        return answer

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        turns = _load_state().get(session_id)
        if turns is None:
            raise acp.RequestError(-32002, "Resource not found", {"uri": session_id})
        self.cwd[session_id] = cwd
        if self.style == "claude":
            for turn in turns:
                await self._replay_claude(session_id, turn)
            return LoadSessionResponse()
        await self._client.session_update(session_id, _user(GEMINI_CONTEXT.format(cwd=cwd)))
        task = asyncio.get_running_loop().create_task(self._replay_gemini(session_id, turns))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return LoadSessionResponse()

    async def _replay_claude(self, session_id: str, turn: dict[str, Any]) -> None:
        for text in (CLAUDE_COMMAND, CLAUDE_STDOUT, turn["prompt"]):
            await self._client.session_update(session_id, _user(text))
        if not turn["shell"]:
            await self.say(session_id, HELLO)
            return
        await self.say(session_id, WILL)
        await self._tool(session_id, "toolu_fake0002", "cat README.md", output=True)
        await self.say(session_id, DONE)

    async def _replay_gemini(self, session_id: str, turns: list[dict[str, Any]]) -> None:
        await asyncio.sleep(0.05)  # after the load's answer, as gemini does
        for turn in turns:
            await self._client.session_update(session_id, _user(turn["prompt"]))
            if not turn["shell"]:
                await self.say(session_id, HELLO)
                continue
            await self.say(session_id, WILL)
            await self._client.session_update(
                session_id, acp.start_tool_call("run_shell_command__fcall_0001", "Shell", kind="execute", status="completed")
            )
            await self._client.session_update(session_id, _user(GEMINI_ECHO))
            await self.say(session_id, DONE)

    async def _tool(self, session_id: str, tool_id: str, title: str, *, output: bool) -> None:
        await self._client.session_update(session_id, acp.start_tool_call(tool_id, title, kind="execute", status="pending"))
        content = [acp.tool_content(acp.text_block("```console\nhello from the README\n```"))] if output else None
        await self._client.session_update(session_id, acp.update_tool_call(tool_id, status="completed", content=content))

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = prompt_text(prompt)
        shell = "run" in text.split()
        if shell:
            await self.say(session_id, WILL)
            title = "cat README.md" if self.style == "claude" else "Shell"
            await self._tool(session_id, "tool-live-1", title, output=self.style == "claude")
            await self.say(session_id, DONE)
        else:
            await self.say(session_id, HELLO)
        state = _load_state()
        state.setdefault(session_id, []).append({"prompt": text, "shell": shell})
        _save_state(state)
        return PromptResponse(stop_reason="end_turn")


class GeminiReplayAgent(ReplayAgent):
    """Named so that acpcli knows its replay may trail the load's answer, as it knows gemini's."""

    name = "sdk-replay-gemini"


def main() -> None:
    p = argparse.ArgumentParser(prog="sdk_replay_agent")
    p.add_argument("--style", choices=("claude", "gemini"), required=True)
    args = p.parse_args()
    note_pid()
    agent = GeminiReplayAgent(args.style) if args.style == "gemini" else ReplayAgent(args.style)
    asyncio.run(acp.run_agent(agent, use_unstable_protocol=True))


if __name__ == "__main__":
    main()
