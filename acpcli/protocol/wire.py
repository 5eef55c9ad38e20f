"""Builders for the params acpcli sends, for v1 and v2 alike. Pure data, no I/O.

Every outgoing session-lifecycle frame is built here, from what the caller asked for *and*
what the agent advertised (:class:`acpcli.negotiate.AgentFeatures`), so a field whose
capability marker is absent can never be sent by accident. The shapes are checked against the
generated pydantic models in ``tests/protocol/test_wire.py``; at run time these stay plain dicts
because building models on the start-up path of every command costs more than it buys.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from acpcli.errors import CapabilityMissing

if TYPE_CHECKING:
    from acpcli.negotiate import AgentFeatures

#: The capability each gated method needs, as the user would read it in an error.
_METHOD_CAPABILITY = {
    "session/load": ("load", "session.load (v2) / loadSession (v1)"),
    "session/resume": ("resume", "session.resume (v2) / sessionCapabilities.resume (v1)"),
    "session/close": ("close", "session.close (v2) / sessionCapabilities.close (v1)"),
    "session/list": ("list", "session.list (v2) / sessionCapabilities.list (v1)"),
}

#: What to suggest instead when a method is missing.
_ALTERNATIVE = {
    "load": "use `acpcli resume` instead (no replay; the local transcript is shown)",
    "resume": "use `acpcli load` instead (the agent replays the conversation)",
    "close": "acpcli marks it closed locally all the same; the agent keeps it until it exits",
    "list": "use `acpcli sessions` to list the sessions recorded locally",
}


def require(features: AgentFeatures, method: str) -> None:
    """Raise :class:`CapabilityMissing` unless the agent advertised ``method``."""
    attr, marker = _METHOD_CAPABILITY[method]
    ok = features.load if method == "session/load" else bool(getattr(features, attr))
    if ok:
        return
    alternatives = []
    if attr == "load" and features.resume:
        alternatives.append(_ALTERNATIVE["load"])
    elif attr == "resume" and features.load:
        alternatives.append(_ALTERNATIVE["resume"])
    elif attr in ("close", "list"):
        alternatives.append(_ALTERNATIVE[attr])
    raise CapabilityMissing(
        f"{features.display_name} does not support {method}: it does not advertise {marker}",
        hint=alternatives[0] if alternatives else None,
    )


def _roots_and_servers(
    features: AgentFeatures,
    params: dict[str, Any],
    additional_directories: Sequence[str] | None,
    mcp_servers: Sequence[dict[str, Any]],
) -> dict[str, Any]:
    if additional_directories:
        if not features.additional_directories:
            raise CapabilityMissing(
                f"{features.display_name} does not support additional directories "
                "(session.additionalDirectories / sessionCapabilities.additionalDirectories)",
                hint="drop --add-dir (or use --no-add-dirs when loading or resuming)",
            )
        params["additionalDirectories"] = list(additional_directories)
    for server in mcp_servers:
        transport = server.get("type", "stdio")
        if not features.supports_mcp_transport(transport):
            raise CapabilityMissing(
                f"{features.display_name} does not support {transport} MCP servers "
                f"(server {server.get('name')!r})",
                hint="remove that server from --mcp / --mcp-config",
            )
    params["mcpServers"] = [server_for_version(s, features.protocol_version) for s in mcp_servers]
    return params


def server_for_version(server: dict[str, Any], version: int) -> dict[str, Any]:
    """An MCP server in the shape of ``version``: v1's stdio variant has no ``type``
    discriminator; v2 requires it. The input is not modified."""
    untagged_stdio = server.get("type", "stdio") == "stdio"
    if version == 1 and untagged_stdio:
        return {k: v for k, v in server.items() if k != "type"}
    if version >= 2 and untagged_stdio and "type" not in server:
        return {"type": "stdio", **server}
    return server


def new_params(
    features: AgentFeatures,
    cwd: str,
    additional_directories: Sequence[str] | None = None,
    mcp_servers: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """``session/new`` params."""
    return _roots_and_servers(features, {"cwd": cwd}, additional_directories, mcp_servers)


def resume_params(
    features: AgentFeatures,
    session_id: str,
    cwd: str,
    additional_directories: Sequence[str] | None = None,
    mcp_servers: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """``session/resume`` params, no replay (the full root list is sent again)."""
    require(features, "session/resume")
    params: dict[str, Any] = {"sessionId": session_id, "cwd": cwd}
    return _roots_and_servers(features, params, additional_directories, mcp_servers)


def load_params(
    features: AgentFeatures,
    session_id: str,
    cwd: str,
    additional_directories: Sequence[str] | None = None,
    mcp_servers: Sequence[dict[str, Any]] = (),
) -> tuple[str, dict[str, Any]]:
    """The method and params of a load with replay, whichever way this agent does it."""
    require(features, "session/load")
    method = features.load_via or "session/load"
    params: dict[str, Any] = {"sessionId": session_id, "cwd": cwd}
    if method == "session/resume":
        params["replayFrom"] = {"type": "start"}
    return method, _roots_and_servers(features, params, additional_directories, mcp_servers)


def close_params(features: AgentFeatures, session_id: str) -> dict[str, Any]:
    """``session/close`` params."""
    require(features, "session/close")
    return {"sessionId": session_id}


def list_params(features: AgentFeatures, cwd: str | None = None, cursor: str | None = None) -> dict[str, Any]:
    """``session/list`` params."""
    require(features, "session/list")
    params: dict[str, Any] = {}
    if cwd is not None:
        params["cwd"] = cwd
    if cursor is not None:
        params["cursor"] = cursor
    return params


def prompt_params(session_id: str, blocks: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``session/prompt`` params."""
    return {"sessionId": session_id, "prompt": list(blocks)}


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


def login_methods(features: AgentFeatures) -> list[LoginMethod]:
    """The login methods the agent advertises (those without an id are skipped), in order."""
    out = []
    for method in features.auth_methods:
        method_id = auth_method_id(method)
        if method_id is not None:
            description = method.get("description")
            out.append(LoginMethod(
                method_id, auth_method_type(method), str(method.get("name") or ""),
                description if isinstance(description, str) else "", method,
            ))
    return out


def login_request(features: AgentFeatures, method_id: str) -> tuple[str, dict[str, Any]]:
    """``authenticate`` (v1) or ``auth/login`` (v2) for an advertised, protocol-driven method.

    A ``terminal`` method is never sent (the spec forbids it: the client runs the agent's own
    login instead), nor is a method the agent did not advertise.
    """
    methods = {auth_method_id(m): m for m in features.auth_methods}
    method = methods.get(method_id)
    if method is None:
        known = ", ".join(k for k in methods if k) or "none"
        raise CapabilityMissing(
            f"{features.display_name} does not offer the login method {method_id!r} (it offers: {known})"
        )
    if auth_method_type(method) != "agent":
        raise CapabilityMissing(
            f"{method_id!r} is a {auth_method_type(method)} login, which is not done over the protocol",
            hint="run `acpcli auth` for this agent: it runs terminal logins in your terminal",
        )
    return ("authenticate" if features.protocol_version == 1 else "auth/login"), {"methodId": method_id}


def logout_request(features: AgentFeatures) -> tuple[str, dict[str, Any]]:
    """``logout`` (v1, only when ``agentCapabilities.auth.logout`` is advertised) or
    ``auth/logout`` (v2, only when the agent lists ``authMethods``: with none, there is no
    authenticated state to end and the spec forbids the call)."""
    if features.protocol_version == 1:
        if not features.auth_logout:
            raise CapabilityMissing(
                f"{features.display_name} does not support logout: it does not advertise agentCapabilities.auth.logout"
            )
        return "logout", {}
    if not features.auth_methods:
        raise CapabilityMissing(f"{features.display_name} lists no login methods, so there is nothing to log out of")
    return "auth/logout", {}
