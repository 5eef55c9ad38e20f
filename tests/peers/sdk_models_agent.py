"""A v1 ACP agent written with the official Python SDK (``acp``) that offers models the way
gemini does: a ``models`` state (``availableModels``, ``currentModelId``) in the
``session/new`` and ``session/load`` results, no model config option, and the unstable
``session/set_model`` to change it (as gemini-cli 0.61.0 does).

- ``initialize`` advertises ``loadSession`` only (no resume, close or list: gemini's set);
- sessions also carry ``modes`` (``default``, ``yolo``), changed with ``session/set_mode``;
- ``session/set_model`` with a known ``modelId`` answers ``{}``; an unknown one is -32602, and
  so is the one named by ``SDK_MODELS_REFUSE`` (an offered model the account may not use);
- ``session/load`` accepts any id (a session from another process) and answers the model
  recorded for it, when ``SDK_MODELS_STATE`` names a JSON file shared between processes;
- a prompt is answered with one text chunk ``model=<id> mode=<id>``.

The SDK this repository tests with has no route for ``session/set_model`` (it is unstable), so
one is added to the SDK's own router (:func:`_router_with_set_model`). Every incoming method
call is appended, as received, as one JSON line to ``$RECORD_FILE`` when set, and the pid to
``$PID_FILE``, like ``sdk_record_agent.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import acp
import acp.agent.connection as agent_connection
from acp.exceptions import RequestError
from acp.router import Route
from acp.schema import (
    AgentCapabilities,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
)
from sdk_base import BaseSdkAgent, note_pid, recorder

MODELS = (
    ("gemini-2.5-pro", "Gemini 2.5 Pro", "Deep reasoning"),
    ("gemini-2.5-flash", "Gemini 2.5 Flash", "Fast"),
)
DEFAULT_MODEL = "gemini-2.5-flash"
MODES = (("default", "Default"), ("yolo", "YOLO"))


class NewWithModels(NewSessionResponse):
    models: dict[str, Any] | None = None


class LoadWithModels(LoadSessionResponse):
    models: dict[str, Any] | None = None


class _State:
    """session id -> {"model", "mode"}, in memory or in ``$SDK_MODELS_STATE``."""

    def __init__(self) -> None:
        self._path = os.environ.get("SDK_MODELS_STATE")
        self._memory: dict[str, dict[str, str]] = {}

    def _all(self) -> dict[str, dict[str, str]]:
        if self._path and os.path.exists(self._path):
            with open(self._path, encoding="utf-8") as f:
                return dict(json.load(f))
        return self._memory

    def get(self, session_id: str) -> dict[str, str]:
        return dict(self._all().get(session_id) or {"model": DEFAULT_MODEL, "mode": "default"})

    def put(self, session_id: str, state: dict[str, str]) -> None:
        everything = self._all()
        everything[session_id] = state
        if self._path:
            with open(self._path, "w", encoding="utf-8") as f:
                json.dump(everything, f)
        else:
            self._memory = everything


class ModelsAgent(BaseSdkAgent):
    """The part of ``acp.Agent`` this peer needs (see the module docstring)."""

    name = "sdk-models"
    session_prefix = "mdl"

    def __init__(self) -> None:
        super().__init__()
        self._state = _State()

    def capabilities(self) -> AgentCapabilities:
        return AgentCapabilities(load_session=True)

    async def new_session(self, cwd: str, **kwargs: Any) -> NewWithModels:
        session_id = self.new_session_id()
        state = self._state.get(session_id)
        self._state.put(session_id, state)
        return NewWithModels(session_id=session_id, modes=_modes(state), models=_models(state))

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadWithModels:
        state = self._state.get(session_id)
        await self._client.session_update(session_id, acp.update_user_message_text("earlier question"))
        await self.say(session_id, "earlier answer")
        return LoadWithModels(modes=_modes(state), models=_models(state))

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        if mode_id not in {m for m, _ in MODES}:
            raise RequestError.invalid_params({"modeId": mode_id})
        state = self._state.get(session_id)
        state["mode"] = mode_id
        self._state.put(session_id, state)
        return SetSessionModeResponse()

    async def set_session_model(self, params: Any) -> dict[str, Any]:
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        model_id = params.get("modelId") if isinstance(params, dict) else None
        if not isinstance(session_id, str) or model_id not in {m for m, _, _ in MODELS}:
            raise RequestError.invalid_params({"modelId": model_id})
        if model_id == os.environ.get("SDK_MODELS_REFUSE"):
            raise RequestError.invalid_params({"modelId": model_id, "reason": "not available to this account"})
        state = self._state.get(session_id)
        state["model"] = str(model_id)
        self._state.put(session_id, state)
        return {}

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        state = self._state.get(session_id)
        await self.say(session_id, f"model={state['model']} mode={state['mode']}")
        return PromptResponse(stop_reason="end_turn")


def _models(state: dict[str, str]) -> dict[str, Any]:
    return {
        "currentModelId": state["model"],
        "availableModels": [{"modelId": m, "name": n, "description": d} for m, n, d in MODELS],
    }


def _modes(state: dict[str, str]) -> SessionModeState:
    return SessionModeState(
        current_mode_id=state["mode"], available_modes=[SessionMode(id=m, name=n) for m, n in MODES]
    )


_build_router = agent_connection.build_agent_router


def _router_with_set_model(agent: Any, use_unstable_protocol: bool = False) -> Any:
    """The SDK's router plus a ``session/set_model`` route (unstable; not in this SDK)."""
    router = _build_router(agent, use_unstable_protocol=use_unstable_protocol)
    router.add_route(Route(method="session/set_model", func=agent.set_session_model, kind="request"))
    return router


def main() -> None:
    note_pid()
    agent_connection.build_agent_router = _router_with_set_model  # type: ignore[assignment]  # see the docstring
    asyncio.run(acp.run_agent(ModelsAgent(), observers=[recorder("RECORD_FILE")]))


if __name__ == "__main__":
    main()
