"""Builders for the params acpcli sends, for v1 and v2 alike: pure shapes from plain values.

Nothing here knows what the agent advertised: whether a method or field may be sent to *this*
agent is :mod:`acpcli.wire.capabilities`' call, which checks first and then builds with these. The
shapes are checked against the generated pydantic models in ``tests/protocol/test_wire.py``; at
run time they stay plain dicts because building models on the start-up path of every command
costs more than it buys.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def server_for_version(server: dict[str, Any], version: int) -> dict[str, Any]:
    """An MCP server in the shape of ``version``: v1's stdio variant has no ``type``
    discriminator; v2 requires it. The input is not modified."""
    untagged_stdio = server.get("type", "stdio") == "stdio"
    if version == 1 and untagged_stdio:
        return {k: v for k, v in server.items() if k != "type"}
    if version >= 2 and untagged_stdio and "type" not in server:
        return {"type": "stdio", **server}
    return server


def _roots_and_servers(
    version: int,
    params: dict[str, Any],
    additional_directories: Sequence[str] | None,
    mcp_servers: Sequence[dict[str, Any]],
) -> dict[str, Any]:
    if additional_directories:
        params["additionalDirectories"] = list(additional_directories)
    params["mcpServers"] = [server_for_version(s, version) for s in mcp_servers]
    return params


def opening_params(
    version: int,
    cwd: str,
    additional_directories: Sequence[str] | None = None,
    mcp_servers: Sequence[dict[str, Any]] = (),
    *,
    session_id: str | None = None,
    replay_from_start: bool = False,
) -> dict[str, Any]:
    """The params of every way of opening a session: ``session/new`` (no ``session_id``),
    ``session/load``, ``session/resume`` and ``session/fork`` (the session named; a fork's new
    session gets the roots and MCP servers given, as a new one does). ``replay_from_start``: the
    later v2 draft's load, ``session/resume`` with ``replayFrom`` the start. No
    ``additionalDirectories`` when there are none."""
    params: dict[str, Any] = {"cwd": cwd} if session_id is None else {"sessionId": session_id, "cwd": cwd}
    if replay_from_start:
        params["replayFrom"] = {"type": "start"}
    return _roots_and_servers(version, params, additional_directories, mcp_servers)


def close_params(session_id: str) -> dict[str, Any]:
    """``session/close`` params."""
    return {"sessionId": session_id}


def delete_params(session_id: str) -> dict[str, Any]:
    """``session/delete`` params."""
    return {"sessionId": session_id}


def list_params(cwd: str | None = None, cursor: str | None = None) -> dict[str, Any]:
    """``session/list`` params."""
    params: dict[str, Any] = {}
    if cwd is not None:
        params["cwd"] = cwd
    if cursor is not None:
        params["cursor"] = cursor
    return params


def prompt_params(session_id: str, blocks: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``session/prompt`` params."""
    return {"sessionId": session_id, "prompt": list(blocks)}


def steering_params(session_id: str, blocks: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``_session/steering`` params (an extension: sent only to an agent advertising
    ``_meta.steering.supported``). ``promptRequired``: an idle agent must not start a turn
    on its own; it answers so, and the client sends the prompt as a ``session/prompt``."""
    return {"sessionId": session_id, "prompt": list(blocks), "_meta": {"steering": {"idleBehavior": "promptRequired"}}}


def text_block(text: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": text}


def cancel_params(session_id: str) -> dict[str, Any]:
    """``session/cancel`` params."""
    return {"sessionId": session_id}


# -- authentication -------------------------------------------------------------------------


def auth_method_id(method: dict[str, Any]) -> str | None:
    """An advertised method's id: v1 ``id``, v2 ``methodId``."""
    value = method.get("methodId", method.get("id"))
    return value if isinstance(value, str) and value else None


def auth_method_type(method: dict[str, Any]) -> str:
    """``agent`` (the default when absent, v1), ``terminal`` (v1), or whatever else is given."""
    kind = method.get("type")
    return kind if isinstance(kind, str) and kind else "agent"


@dataclass(frozen=True)
class LoginMethod:
    """An advertised login method, read alike for v1 and v2 (``raw`` is what was sent)."""

    id: str
    type: str  # "agent" (sent as authenticate / auth/login), "terminal", or another
    name: str
    description: str
    raw: dict[str, Any]

    @property
    def label(self) -> str:
        """``Name — description`` for a menu."""
        return (self.name or self.id) + (f" — {self.description}" if self.description else "")


def login_methods(auth_methods: Sequence[dict[str, Any]]) -> list[LoginMethod]:
    """The advertised login methods (``authMethods``; those without an id are skipped), in order."""
    out = []
    for method in auth_methods:
        method_id = auth_method_id(method)
        if method_id is not None:
            description = method.get("description")
            out.append(LoginMethod(
                method_id, auth_method_type(method), str(method.get("name") or ""),
                description if isinstance(description, str) else "", method,
            ))
    return out


def login_request(version: int, method_id: str) -> tuple[str, dict[str, Any]]:
    """``authenticate`` (v1) or ``auth/login`` (v2) with ``method_id``."""
    return ("authenticate" if version == 1 else "auth/login"), {"methodId": method_id}


def logout_request(version: int) -> tuple[str, dict[str, Any]]:
    """``logout`` (v1) or ``auth/logout`` (v2)."""
    return ("logout" if version == 1 else "auth/logout"), {}
