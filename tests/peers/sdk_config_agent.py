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
from typing import Any

import acp
from acp.exceptions import RequestError
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    AuthMethodAgent,
    NewSessionResponse,
    PromptResponse,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)
from sdk_base import BaseSdkAgent, recorder

AUTH_METHOD = "sdk-login"
MODES = (("ask", "Ask", "Ask before changing anything"), ("code", "Code", "Change files freely"))
MODELS = (("sdk-small", "SDK Small", "Quick"), ("sdk-large", "SDK Large", "Thorough"))
DEFAULTS = {"mode": "ask", "model": "sdk-small"}


def _select(key: str, name: str, category: str, values: tuple[tuple[str, str, str], ...], current: str) -> Any:
    return SessionConfigOptionSelect(
        id=key, name=name, category=category, type="select", current_value=current,
        options=[SessionConfigSelectOption(value=v, name=n, description=d) for v, n, d in values],
    )


class ConfigAgent(BaseSdkAgent):
    """The part of ``acp.Agent`` this peer needs (see the module docstring)."""

    name = "sdk-config"
    session_prefix = "cfg"

    def __init__(self) -> None:
        super().__init__()
        self._logged_in = False
        self._sessions: dict[str, dict[str, str]] = {}

    def capabilities(self) -> AgentCapabilities:
        return AgentCapabilities()

    def initialize_extras(self) -> dict[str, Any]:
        return {"auth_methods": [AuthMethodAgent(id=AUTH_METHOD, name="SDK login", description="Pretend to sign in")]}

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        if method_id != AUTH_METHOD:
            raise RequestError.invalid_params({"methodId": method_id, "known": [AUTH_METHOD]})
        self._logged_in = True
        return AuthenticateResponse()

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        self._require_login()
        session_id = self.new_session_id()
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
        await self.say(session_id, f"mode={state['mode']} model={state['model']}")
        return PromptResponse(stop_reason="end_turn")

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
    asyncio.run(acp.run_agent(ConfigAgent(), observers=[recorder("SDK_RECORD_FILE")]))


if __name__ == "__main__":
    main()
