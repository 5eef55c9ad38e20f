"""A v1 ACP agent written with the official Python SDK (``acp``): modes, config options, auth.

An independent peer for the client's ``/mode``, ``/model``, ``/config`` and ``/login`` code:

- ``initialize`` advertises one auth method, ``sdk-login`` (type agent, the default);
- until ``authenticate`` with that id, ``session/new`` and ``session/prompt`` fail with the SDK's
  auth-required error (-32000 "Authentication required"); another id is -32602;
- sessions carry ``modes`` (``ask``, ``code``) and ``configOptions`` (``mode``, ``model``),
  kept in sync: ``session/set_mode`` moves the ``mode`` option and setting the ``mode`` option
  moves the modes; an unknown mode, option or value is -32602;
- a prompt is answered with one text chunk ``mode=<id> model=<id>``.

State lives in memory (one process = one login). Every incoming method call, requests and
notifications, is appended *as received* (before the SDK parses it) as one JSON line
``{"method", "params", "request"}`` to the file named by ``SDK_RECORD_FILE``, if set, so a
test can assert what exactly the client sent.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from typing import Any

import acp
from acp.connection import StreamDirection, StreamEvent
from acp.exceptions import RequestError
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    AuthMethodAgent,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

AUTH_METHOD = "sdk-login"
MODES = (("ask", "Ask", "Ask before changing anything"), ("code", "Code", "Change files freely"))
MODELS = (("sdk-small", "SDK Small", "Quick"), ("sdk-large", "SDK Large", "Thorough"))
DEFAULTS = {"mode": "ask", "model": "sdk-small"}


def record(event: StreamEvent) -> None:
    """Connection observer: append each incoming method call, raw, to ``$SDK_RECORD_FILE``."""
    path = os.environ.get("SDK_RECORD_FILE")
    message = event.message
    if not path or event.direction != StreamDirection.INCOMING or "method" not in message:
        return
    entry = {"method": message["method"], "params": message.get("params"), "request": "id" in message}
    # Append mode, one write per line: lines stay whole even if two agents share the file.
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")


def _select(key: str, name: str, category: str, values: tuple[tuple[str, str, str], ...], current: str) -> Any:
    return SessionConfigOptionSelect(
        id=key, name=name, category=category, type="select", current_value=current,
        options=[SessionConfigSelectOption(value=v, name=n, description=d) for v, n, d in values],
    )


class ConfigAgent:
    """The part of ``acp.Agent`` this peer needs (see the module docstring)."""

    def __init__(self) -> None:
        self._client: Any = None
        self._logged_in = False
        self._sessions: dict[str, dict[str, str]] = {}

    def on_connect(self, conn: Any) -> None:
        self._client = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(),
            auth_methods=[AuthMethodAgent(id=AUTH_METHOD, name="SDK login", description="Pretend to sign in")],
            agent_info=Implementation(name="sdk-config", version="0.1"),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        if method_id != AUTH_METHOD:
            raise RequestError.invalid_params({"methodId": method_id, "known": [AUTH_METHOD]})
        self._logged_in = True
        return AuthenticateResponse()

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        self._require_login()
        session_id = f"cfg-{uuid.uuid4().hex[:12]}"
        self._sessions[session_id] = dict(DEFAULTS)
        state = self._sessions[session_id]
        return NewSessionResponse(session_id=session_id, modes=self._modes(state),
                                  config_options=self._options(state))

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        state = self._state(session_id)
        if mode_id not in {v for v, _, _ in MODES}:
            raise RequestError.invalid_params({"modeId": mode_id})
        state["mode"] = mode_id
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        state = self._state(session_id)
        allowed = {"mode": MODES, "model": MODELS}.get(config_id)
        if allowed is None or value not in {v for v, _, _ in allowed}:
            raise RequestError.invalid_params({"configId": config_id, "value": value})
        state[config_id] = str(value)
        return SetSessionConfigOptionResponse(config_options=self._options(state))

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        self._require_login()
        state = self._state(session_id)
        text = f"mode={state['mode']} model={state['model']}"
        await self._client.session_update(session_id, acp.update_agent_message_text(text))
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None

    # -- helpers -----------------------------------------------------------------------------------

    def _require_login(self) -> None:
        if not self._logged_in:
            raise RequestError.auth_required()

    def _state(self, session_id: str) -> dict[str, str]:
        state = self._sessions.get(session_id)
        if state is None:
            raise RequestError.invalid_params({"sessionId": session_id, "reason": "unknown session"})
        return state

    @staticmethod
    def _modes(state: dict[str, str]) -> SessionModeState:
        return SessionModeState(current_mode_id=state["mode"],
                                available_modes=[SessionMode(id=v, name=n, description=d) for v, n, d in MODES])

    @staticmethod
    def _options(state: dict[str, str]) -> list[Any]:
        return [_select("mode", "Mode", "mode", MODES, state["mode"]),
                _select("model", "Model", "model", MODELS, state["model"])]


def main() -> None:
    asyncio.run(acp.run_agent(ConfigAgent(), observers=[record]))


if __name__ == "__main__":
    main()
