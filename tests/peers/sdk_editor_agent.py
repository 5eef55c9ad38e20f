"""A v1 ACP agent written with the official Python SDK (``acp``) that edits files itself, as
codex does through its shell: never through the client's ``fs`` methods, so only acpcli's
checkpoints can see what it did.

A prompt is a list of commands separated by `` ; ``, run in the session's folder, in order:

    write PATH TEXT     create or replace PATH with TEXT (``\\n`` in TEXT is a newline)
    append PATH TEXT    add TEXT to the end of PATH
    rm PATH             remove a file or a link
    mv OLD NEW          rename
    chmod MODE PATH     set the mode (octal)
    link TARGET PATH    a symbolic link PATH -> TARGET (never followed)
    bytes PATH HEX      create or replace PATH with those bytes (binary, empty: ``-``)

The answer is one ``agent_message_chunk`` naming each command done. ``session/load`` is
advertised (no replay: the sessions are only folders), so each acpcli process, hosted or not,
reaches the same session.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import acp
from acp.schema import AgentCapabilities, LoadSessionResponse, NewSessionResponse, PromptResponse
from sdk_base import BaseSdkAgent, prompt_text


class EditorAgent(BaseSdkAgent):
    name = "sdk-editor"
    session_prefix = "edit"

    def __init__(self) -> None:
        super().__init__()
        self.cwds: dict[str, str] = {}

    def capabilities(self) -> AgentCapabilities:
        return AgentCapabilities(load_session=True)

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session_id = self.new_session_id()
        self.cwds[session_id] = cwd
        return NewSessionResponse(session_id=session_id)

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        self.cwds[session_id] = cwd
        return LoadSessionResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        root = self.cwds[session_id]
        done = []
        for command in prompt_text(prompt).split(" ; "):
            verb, _, rest = command.strip().partition(" ")
            path = os.path.join(root, rest.split(" ", 1)[0]) if rest else root
            arg = rest.split(" ", 1)[1] if " " in rest else ""
            if verb in ("write", "append"):
                with open(path, "a" if verb == "append" else "w", encoding="utf-8") as f:
                    f.write(arg.replace("\\n", "\n"))
            elif verb == "bytes":
                with open(path, "wb") as f:
                    f.write(b"" if arg == "-" else bytes.fromhex(arg))
            elif verb == "rm":
                os.unlink(path)
            elif verb == "mv":
                os.rename(path, os.path.join(root, arg))
            elif verb == "chmod":  # chmod MODE PATH
                os.chmod(os.path.join(root, arg), int(rest.split(" ", 1)[0], 8))
            elif verb == "link":
                os.symlink(rest.split(" ", 1)[0], os.path.join(root, arg))
            else:
                await self.say(session_id, f"unknown command: {verb}")
                continue
            done.append(verb)
        await self.say(session_id, "done: " + ", ".join(done))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(EditorAgent()))
