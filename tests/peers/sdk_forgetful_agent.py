"""A v1 ACP agent written with the official SDK (``acp``) that forgets sessions the way real
agents do (codex, claude, gemini): a session exists across launches only from its first prompt on.

Sessions are kept in the JSON file ``$FORGETFUL_STATE`` (one launch writes, the next reads).
``session/new`` keeps the session in memory only; the first ``session/prompt`` saves it.
A later launch's load/resume/close of a session it does not have answers, by ``--style``:

``codex`` (default)   ``-32002`` "Resource not found" (codex-acp, claude-agent-acp)
``gemini``            ``-32603`` "Internal error" with ``data.details`` "Invalid session
                      identifier ..." (gemini --acp)

A prompt is answered ``"you said: <text>"``; the prompt ``fail`` fails (``-32603`` with
``data`` naming the cause) before anything is said, yet is kept in the history (codex does
so). ``session/load`` replays the history as real agents do: no messageIds, so prompts whose
turn failed sit back to back with the next one. ``setting:`` prompts are not special. The
agent offers one config option ``model`` (``small``/``large``) and records every
``session/set_config_option`` and every request's ``mcpServers`` in the session's entry
(``settings``, ``mcp``), so tests can see what a fresh session was given. ``session/list``
lists the saved sessions, each titled by its first prompt.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from typing import Any

import acp
from acp.schema import (
    AgentCapabilities,
    CloseSessionResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
)
from sdk_base import BaseSdkAgent, note_pid, prompt_text


def _state_path() -> str:
    return os.environ.get("FORGETFUL_STATE") or os.path.join(os.getcwd(), ".forgetful.json")


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


def _model_option(value: str) -> SessionConfigOptionSelect:
    return SessionConfigOptionSelect(
        id="model",
        name="Model",
        category="model",
        type="select",
        current_value=value,
        options=[
            SessionConfigSelectOption(value="small", name="Small"),
            SessionConfigSelectOption(value="large", name="Large"),
        ],
    )


class ForgetfulAgent(BaseSdkAgent):
    name = "sdk-forgetful"
    session_prefix = "fg"

    def __init__(self, style: str) -> None:
        super().__init__()
        self.style = style
        self.live: dict[str, dict[str, Any]] = {}  # sessions of this launch

    def capabilities(self) -> AgentCapabilities:
        return AgentCapabilities(
            load_session=True,
            session_capabilities=SessionCapabilities(
                resume=SessionResumeCapabilities() if self.style == "codex" else None,
                close=SessionCloseCapabilities() if self.style == "codex" else None,
                list=SessionListCapabilities(),
            ),
        )

    def _forgot(self, session_id: str) -> acp.RequestError:
        if self.style == "gemini":
            return acp.RequestError(
                -32603,
                "Internal error",
                {"details": f"Invalid session identifier {session_id!r}. Searched for sessions in /nowhere"},
            )
        return acp.RequestError(-32002, "Resource not found", {"uri": session_id})

    def _session(self, session_id: str, mcp_servers: Any = None) -> dict[str, Any]:
        entry = self.live.get(session_id) or _load_state().get(session_id)
        if entry is None:
            raise self._forgot(session_id)
        if mcp_servers is not None:
            entry.setdefault("mcp", []).append([_name(s) for s in mcp_servers])
        self.live[session_id] = entry
        return entry

    def _save(self, session_id: str) -> None:
        state = _load_state()
        state[session_id] = self.live[session_id]
        _save_state(state)

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        session_id = self.new_session_id()
        self.live[session_id] = {"cwd": cwd, "history": [], "settings": [], "mcp": [[_name(s) for s in mcp_servers or []]], "model": "small"}
        return NewSessionResponse(session_id=session_id, config_options=[_model_option("small")])

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any) -> LoadSessionResponse:
        entry = self._session(session_id, mcp_servers)
        for role, text in entry["history"]:
            update = acp.update_user_message_text(text) if role == "user" else acp.update_agent_message_text(text)
            await self._client.session_update(session_id, update)
        return LoadSessionResponse(config_options=[_model_option(entry["model"])])

    async def resume_session(self, session_id: str, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> ResumeSessionResponse:
        entry = self._session(session_id, mcp_servers)
        return ResumeSessionResponse(config_options=[_model_option(entry["model"])])

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        self._session(session_id)
        return CloseSessionResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: Any, **kwargs: Any) -> SetSessionConfigOptionResponse:
        entry = self._session(session_id)
        entry["settings"].append([config_id, value])
        entry["model"] = value
        return SetSessionConfigOptionResponse(config_options=[_model_option(value)])

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        entry = self._session(session_id)
        text = prompt_text(prompt)
        entry["history"].append(["user", text])
        if text.strip() == "fail":
            self._save(session_id)
            raise acp.RequestError(-32603, "Internal error", {"message": "the model provider answered 503: overloaded"})
        answer = f"you said: {text}"
        await self.say(session_id, answer)
        entry["history"].append(["agent", answer])
        self._save(session_id)
        return PromptResponse(stop_reason="end_turn")

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any) -> ListSessionsResponse:
        # Saved sessions only (the ones it would still know), titled by their first prompt.
        return ListSessionsResponse(
            sessions=[
                SessionInfo(session_id=sid, cwd=entry["cwd"], title=entry["history"][0][1] if entry["history"] else None)
                for sid, entry in _load_state().items()
            ]
        )


def _name(server: Any) -> str:
    return str(getattr(server, "name", None) or (server.get("name") if isinstance(server, dict) else "?"))


def main() -> None:
    p = argparse.ArgumentParser(prog="sdk_forgetful_agent")
    p.add_argument("--style", choices=("codex", "gemini"), default="codex")
    args = p.parse_args()
    note_pid()
    asyncio.run(acp.run_agent(ForgetfulAgent(args.style), use_unstable_protocol=True))


if __name__ == "__main__":
    main()
