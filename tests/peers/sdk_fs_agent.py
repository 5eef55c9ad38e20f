"""A v1 ACP agent written with the official Python SDK (``acp``) that exercises the client's
file system and terminals, as a peer we did not write.

Each prompt is one command; its text drives the agent. The result is reported back as one
``agent_message_chunk`` whose text is JSON: ``{"ok": <the client's answer>}`` or
``{"error": {"code": ..., "message": ..., "data": ...}}``. Commands::

    caps                              the clientCapabilities the client sent in initialize
    read PATH [LINE|- [LIMIT|-]]      fs/read_text_file
    write PATH TEXT                   fs/write_text_file (TEXT: the rest of the prompt, verbatim)
    run [OPTIONS] [--] CMD ARGS...    terminal/create, wait_for_exit, output, release
    start [OPTIONS] [--] CMD ARGS...  terminal/create only; answers {"terminalId": ...}
    shell LINE                        terminal/create with LINE as command and no args
    output ID | wait ID | kill ID | release ID    the terminal method of that name

    later SECONDS REPORT COMMAND...   answers {"ok": "later"} and ends the turn at once; SECONDS
                                      later (between turns) does COMMAND and writes its report
                                      (the JSON above) to the file REPORT

OPTIONS: ``--limit N`` (outputByteLimit), ``--cwd DIR``, ``--env NAME=VALUE`` (repeatable).
The agent calls what it is told even when the client did not advertise it (a test peer must
be able to misbehave), so tests can check the client's -32601.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
from typing import Any

import acp
from acp.exceptions import RequestError
from acp.schema import (
    AgentCapabilities,
    EnvVariable,
    PromptResponse,
    SessionAdditionalDirectoriesCapabilities,
    SessionCapabilities,
)
from sdk_base import BaseSdkAgent, prompt_text


def _dump(model: Any) -> Any:
    if model is None:
        return None
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


def _terminal_options(words: list[str]) -> tuple[dict[str, Any], list[str]]:
    options: dict[str, Any] = {}
    env: list[EnvVariable] = []
    while words:
        word = words[0]
        if word == "--":
            words = words[1:]
            break
        if word == "--limit":
            options["output_byte_limit"] = int(words[1])
        elif word == "--cwd":
            options["cwd"] = words[1]
        elif word == "--env":
            name, _, value = words[1].partition("=")
            env.append(EnvVariable(name=name, value=value))
        else:
            break
        words = words[2:]
    if env:
        options["env"] = env
    return options, words


class FsAgent(BaseSdkAgent):
    """Implements the part of ``acp.Agent`` this test peer needs."""

    name = "sdk-fs"
    session_prefix = "fs"
    id_digits = 8

    def capabilities(self) -> AgentCapabilities:
        return AgentCapabilities(
            load_session=False,
            session_capabilities=SessionCapabilities(additional_directories=SessionAdditionalDirectoriesCapabilities()),
        )

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = prompt_text(prompt, "")
        try:
            report: dict[str, Any] = {"ok": await self._command(session_id, text)}
        except RequestError as exc:
            report = {"error": {"code": exc.code, "message": str(exc), "data": exc.data}}
        except Exception as exc:  # a bug in the test or a malformed answer: say so, do not die
            report = {"error": {"code": None, "message": f"{type(exc).__name__}: {exc}", "data": None}}
        await self.say(session_id, json.dumps(report))
        return PromptResponse(stop_reason="end_turn")

    async def _later(self, sid: str, seconds: float, report_path: str, command: str) -> None:
        await asyncio.sleep(seconds)
        try:
            report: dict[str, Any] = {"ok": await self._command(sid, command)}
        except RequestError as exc:
            report = {"error": {"code": exc.code, "message": str(exc), "data": exc.data}}
        except Exception as exc:
            report = {"error": {"code": None, "message": f"{type(exc).__name__}: {exc}", "data": None}}
        with open(report_path + ".part", "w", encoding="utf-8") as out:
            out.write(json.dumps(report))
        os.replace(report_path + ".part", report_path)

    async def _command(self, sid: str, text: str) -> Any:
        verb, _, rest = text.partition(" ")
        client = self._client
        if verb == "later":
            seconds, report_path, command = rest.split(" ", 2)
            self._pending = asyncio.get_running_loop().create_task(
                self._later(sid, float(seconds), report_path, command)
            )
            return "later"
        if verb == "caps":
            return _dump(self.client_capabilities)
        if verb == "read":
            words = rest.split(" ")
            path = words[0]
            line = int(words[1]) if len(words) > 1 and words[1] != "-" else None
            limit = int(words[2]) if len(words) > 2 and words[2] != "-" else None
            return _dump(await client.read_text_file(session_id=sid, path=path, line=line, limit=limit))
        if verb == "write":
            path, _, content = rest.partition(" ")
            return _dump(await client.write_text_file(session_id=sid, path=path, content=content))
        if verb in ("run", "start"):
            options, argv = _terminal_options(shlex.split(rest))
            created = await client.create_terminal(session_id=sid, command=argv[0], args=argv[1:], **options)
            tid = created.terminal_id
            if verb == "start":
                return {"terminalId": tid}
            try:
                exited = await client.wait_for_terminal_exit(session_id=sid, terminal_id=tid)
                output = await client.terminal_output(session_id=sid, terminal_id=tid)
            finally:
                await client.release_terminal(session_id=sid, terminal_id=tid)
            return {"terminalId": tid, "exit": _dump(exited), "output": _dump(output)}
        if verb == "shell":
            created = await client.create_terminal(session_id=sid, command=rest)
            return {"terminalId": created.terminal_id}
        if verb == "output":
            return _dump(await client.terminal_output(session_id=sid, terminal_id=rest))
        if verb == "wait":
            return _dump(await client.wait_for_terminal_exit(session_id=sid, terminal_id=rest))
        if verb == "kill":
            return _dump(await client.kill_terminal(session_id=sid, terminal_id=rest))
        if verb == "release":
            return _dump(await client.release_terminal(session_id=sid, terminal_id=rest))
        raise ValueError(f"unknown command {verb!r}")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(FsAgent()))
