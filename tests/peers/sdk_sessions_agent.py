"""A v1 ACP agent written with the official Python SDK (``acp``) that keeps its sessions on disk
and can delete and fork them, offer a boolean option, and take long to load.

An independent peer for ``sessions rm --remote`` (``session/delete``), ``fork``
(``session/fork``, unstable), boolean config options and ``$/cancel_request``:

- sessions live in the JSON file ``$SDK_SESSIONS_STATE`` (one per test), so every acpcli
  command, each with its own agent process, sees the same ones: ``{id: {"cwd", "said",
  "parent", "deleted"}}``; ``said`` is every prompt's text, in order;
- ``session/list`` lists those not deleted; ``session/load`` replays each prompt and its answer;
- a prompt is answered ``you said: <text> (I remember: <earlier prompts>)``, so a test sees
  which conversation the agent holds for a session (a fork's starts with its parent's);
- ``--delete`` advertises ``sessionCapabilities.delete`` and ``--fork`` ``sessionCapabilities.fork``;
  the methods are routed either way, so a client that sends one unadvertised is caught by the
  record, not hidden by a -32601. ``session/delete`` marks the session deleted; ``session/fork``
  copies it under a new id (``parent`` set) and answers like ``session/new``;
- sessions offer the select options ``mode`` (category ``mode``), ``model`` (``model``) and
  ``effort`` (``model_config``);
- ``--boolean`` adds a boolean option ``brave`` (``currentValue`` false) when the client
  advertised ``session.configOptions.boolean``; set with ``type: boolean`` and a boolean value;
- ``--forgetful``: like claude, a session (or fork) not prompted yet is known only to the
  process that made it: another process's load of it is -32002 (Resource not found);
- ``--slow-load`` makes ``session/load`` wait (up to a minute) until ``$/cancel_request`` names
  it, then answer -32800 (Request Cancelled), as the cancellation page says.

Every incoming message with a method is recorded, as received, to ``$RECORD_FILE`` (like
``sdk_record_agent.py``), and the pid appended to ``$PID_FILE``. The SDK this repository tests
with routes neither ``session/delete`` nor ``$/cancel_request``: both are added to its router
(:func:`_router`).
"""

from __future__ import annotations

import argparse
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
    ForkSessionResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    SessionCapabilities,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionForkCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SetSessionConfigOptionResponse,
)
from sdk_base import BaseSdkAgent, note_pid, prompt_text, recorder

MODES = (("ask", "Ask"), ("code", "Code"))
MODELS = (("sdk-small", "SDK Small"), ("sdk-large", "SDK Large"))
EFFORTS = (("low", "Low"), ("medium", "Medium"), ("high", "High"))
DEFAULTS = {"mode": "ask", "model": "sdk-small", "effort": "medium", "brave": False}
SELECTS = {"mode": ("Mode", "mode", MODES), "model": ("Model", "model", MODELS), "effort": ("Effort", "model_config", EFFORTS)}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="sdk_sessions_agent")
    for flag in ("--delete", "--fork", "--boolean", "--slow-load", "--forgetful"):
        p.add_argument(flag, action="store_true")
    return p.parse_args(argv)


class _State:
    """The sessions, in ``$SDK_SESSIONS_STATE`` (or in memory when unset)."""

    def __init__(self) -> None:
        self._path = os.environ.get("SDK_SESSIONS_STATE")
        self._memory: dict[str, dict[str, Any]] = {}

    def all(self) -> dict[str, dict[str, Any]]:
        if self._path and os.path.exists(self._path):
            with open(self._path, encoding="utf-8") as f:
                return dict(json.load(f))
        return self._memory

    def put(self, everything: dict[str, dict[str, Any]]) -> None:
        if self._path:
            with open(self._path, "w", encoding="utf-8") as f:
                json.dump(everything, f)
        else:
            self._memory = everything


class SessionsAgent(BaseSdkAgent):
    name = "sdk-sessions"
    session_prefix = "ses"

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self._args = args
        self._state = _State()
        self._options: dict[str, dict[str, Any]] = {}  # per session, in memory
        self._loading: dict[Any, asyncio.Event] = {}  # request id -> cancelled

    def capabilities(self) -> AgentCapabilities:
        a = self._args
        delete = {"delete": {}} if a.delete else {}
        caps = SessionCapabilities(
            list=SessionListCapabilities(), fork=SessionForkCapabilities() if a.fork else None, **delete
        )
        return AgentCapabilities(load_session=True, session_capabilities=caps)

    # -- sessions ---------------------------------------------------------------------------

    def _session(self, session_id: str) -> dict[str, Any]:
        found = self._state.all().get(session_id)
        if found is None or found.get("deleted") or self._forgot(found):
            raise RequestError(-32002, "Resource not found", {"sessionId": session_id})
        return found

    def _forgot(self, found: dict[str, Any]) -> bool:
        """``--forgetful``: a session no prompt reached, made by another process."""
        return bool(self._args.forgetful and found.get("pid") not in (None, os.getpid()))

    def _boolean_ok(self) -> bool:
        caps = self.client_capabilities
        session = getattr(caps, "session", None) if caps is not None else None
        config = getattr(session, "config_options", None) if session is not None else None
        return self._args.boolean and getattr(config, "boolean", None) is not None

    def _config(self, session_id: str) -> list[Any]:
        state = self._options.setdefault(session_id, dict(DEFAULTS))
        options: list[Any] = [
            SessionConfigOptionSelect(
                id=key, name=name, category=category, type="select", current_value=state[key],
                options=[SessionConfigSelectOption(value=v, name=n) for v, n in values],
            )
            for key, (name, category, values) in SELECTS.items()
        ]
        if self._boolean_ok():
            options.append(SessionConfigOptionBoolean(
                id="brave", name="Brave", description="Act without asking", type="boolean",
                current_value=state["brave"],
            ))
        return options

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session_id = self.new_session_id()
        everything = self._state.all()
        everything[session_id] = {"cwd": cwd, "said": [], "parent": None, "deleted": False, "pid": os.getpid()}
        self._state.put(everything)
        return NewSessionResponse(session_id=session_id, config_options=self._config(session_id))

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any) -> ListSessionsResponse:
        return ListSessionsResponse(sessions=[
            SessionInfo(session_id=sid, cwd=info["cwd"], title=(info["said"] or [None])[0])
            for sid, info in self._state.all().items()
            if not info.get("deleted")
        ])

    def observe(self, event: Any) -> None:
        """Sees every message before the SDK dispatches it: remembers the id of each
        ``session/load`` request (a handler is not told its request's id)."""
        from acp.connection import StreamDirection

        message = event.message
        if event.direction == StreamDirection.INCOMING and message.get("method") == "session/load" and "id" in message:
            self._loading[message["id"]] = asyncio.Event()

    async def cancel_request(self, params: Any) -> None:
        """``$/cancel_request``: wake the load it names (others are done already)."""
        request_id = params.get("requestId") if isinstance(params, dict) else None
        if request_id in self._loading:
            self._loading[request_id].set()

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        if self._args.slow_load and self._loading:
            request_id, cancelled = list(self._loading.items())[-1]
            try:
                await asyncio.wait_for(cancelled.wait(), 60)
            except asyncio.TimeoutError:
                pass
            else:
                raise RequestError(-32800, "Request cancelled", {"requestId": request_id})
        found = self._session(session_id)
        for text in found["said"]:
            await self._client.session_update(session_id, acp.update_user_message_text(text))
            await self.say(session_id, f"you said: {text}")
        return LoadSessionResponse(config_options=self._config(session_id))

    async def delete_session(self, params: Any) -> dict[str, Any]:
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if not isinstance(session_id, str):
            raise RequestError.invalid_params({"sessionId": session_id})
        everything = self._state.all()
        if session_id in everything:  # deleting an unknown session succeeds silently (the spec)
            everything[session_id]["deleted"] = True
            self._state.put(everything)
        return {}

    async def fork_session(self, session_id: str, cwd: str, **kwargs: Any) -> ForkSessionResponse:
        parent = self._session(session_id)
        new_id = self.new_session_id()
        everything = self._state.all()
        everything[new_id] = {
            "cwd": cwd, "said": list(parent["said"]), "parent": session_id, "deleted": False, "pid": os.getpid(),
        }
        self._state.put(everything)
        return ForkSessionResponse(session_id=new_id, config_options=self._config(new_id))

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        self._session(session_id)
        state = self._options.setdefault(session_id, dict(DEFAULTS))
        if config_id == "brave" and self._boolean_ok() and isinstance(value, bool):
            state["brave"] = value
        elif config_id in SELECTS and value in {v for v, _ in SELECTS[config_id][2]}:
            state[config_id] = value
        else:
            raise RequestError.invalid_params({"configId": config_id, "value": value})
        return SetSessionConfigOptionResponse(config_options=self._config(session_id))

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        everything = self._state.all()
        found = everything.get(session_id)
        if found is None or found.get("deleted"):
            raise RequestError(-32002, "Resource not found", {"sessionId": session_id})
        found["pid"] = None  # prompted: kept for every process from now on
        text = prompt_text(prompt)
        earlier = ", ".join(found["said"]) or "nothing"
        found["said"].append(text)
        self._state.put(everything)
        brave = self._options.get(session_id, {}).get("brave")
        await self.say(session_id, f"you said: {text} (I remember: {earlier}; brave={brave})")
        return PromptResponse(stop_reason="end_turn")


def _router(agent: SessionsAgent) -> Any:
    """The SDK's router (unstable methods on: it routes session/fork only then), plus
    ``session/delete`` and ``$/cancel_request``, which this SDK does not route."""
    router = _build_router(agent, use_unstable_protocol=True)
    router.add_route(Route(method="session/delete", func=agent.delete_session, kind="request"))
    router.add_route(Route(method="$/cancel_request", func=agent.cancel_request, kind="notification"))
    return router


_build_router = agent_connection.build_agent_router


def main() -> None:
    args = parse_args()
    note_pid()
    agent = SessionsAgent(args)
    agent_connection.build_agent_router = lambda _agent, use_unstable_protocol=False: _router(agent)  # type: ignore[assignment]
    observers = [recorder("RECORD_FILE"), agent.observe]
    asyncio.run(acp.run_agent(agent, use_unstable_protocol=True, observers=observers))


if __name__ == "__main__":
    main()
