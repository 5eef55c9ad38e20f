"""Version negotiation, the ``initialize`` answer (v1 and v2 shapes) and request-side gates.

Invariant: what is advertised and what is accepted come from the same :class:`Options`, so a
capability withheld with ``--without`` (or not turned on with ``--with``) is both absent from
the answer and refused when used. Methods of the other protocol version (v1 ``session/set_mode``,
``authenticate``, ``logout``; v2 ``auth/login``, ``auth/logout``) are refused like unknown ones.
A refusal is logged as ``UNADVERTISED METHOD CALLED: <method>`` or
``UNADVERTISED FIELD SENT: <what> in <method>``; client tests look for those lines.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from acpcli import __version__
from acpcli.demo_agent.credentials import auth_methods
from acpcli.demo_agent.flags import Options
from acpcli.demo_agent.rpc import log
from acpcli.errors import RpcError

AGENT_INFO = {"name": "acpcli-demo-agent", "title": "acpcli demo agent", "version": __version__}

#: Methods that exist only when their capability is advertised.
METHOD_FEATURES = {
    "session/load": "load",
    "session/resume": "resume",
    "session/close": "close",
    "session/list": "list",
    "session/set_mode": "modes",
    "session/set_config_option": "config-options",
}

#: Methods that exist in one protocol version only.
V1_ONLY = frozenset({"session/set_mode", "authenticate", "logout"})
V2_ONLY = frozenset({"auth/login", "auth/logout"})

_SESSION_FEATURES = (
    ("load", "load"),
    ("resume", "resume"),
    ("close", "close"),
    ("list", "list"),
    ("additional-directories", "additionalDirectories"),
)


@dataclass(frozen=True)
class ClientFacts:
    """What the client advertised (v1 ``clientCapabilities``; v2 has no client methods)."""

    read_text_file: bool = False
    write_text_file: bool = False
    terminal: bool = False
    boolean_config: bool = False  # session.configOptions.boolean: boolean config options allowed
    elicitation_form: bool = False  # elicitation.form present and non-null: form requests allowed


def negotiate(offered: Any, maximum: int) -> int:
    """The version to speak: the client's if we support it, else our latest (spec rule)."""
    if isinstance(offered, int) and not isinstance(offered, bool) and offered >= 1:
        return min(offered, maximum)
    return maximum


def initialize_result(version: int, options: Options) -> dict[str, Any]:
    """The ``initialize`` result for ``version``, leaving out every ``--without`` capability."""
    methods = auth_methods(version, options.require_auth)
    if version >= 2:
        mcp: dict[str, Any] = {key: {} for feat, key in (("mcp-stdio", "stdio"), ("mcp-http", "http")) if options.has(feat)}
        prompt: dict[str, Any] = {key: {} for key in ("image", "audio") if options.offers(key)}
        if options.has("embedded-context"):
            prompt["embeddedContext"] = {}
        session: dict[str, Any] = {"prompt": prompt, "mcp": mcp}
        # The later draft has no per-method markers: `session` itself means resume/close/list.
        latest_baseline = ("load", "resume", "close", "list") if options.latest(version) else ()
        session.update({key: {} for feat, key in _SESSION_FEATURES if options.has(feat) and feat not in latest_baseline})
        return {"protocolVersion": version, "capabilities": {"session": session}, "info": AGENT_INFO,
                "authMethods": methods}
    session_caps: dict[str, Any] = {key: {} for feat, key in _SESSION_FEATURES if feat != "load" and options.has(feat)}
    agent_caps: dict[str, Any] = {
        "loadSession": options.has("load"),
        "promptCapabilities": {"image": options.offers("image"), "audio": options.offers("audio"),
                               "embeddedContext": options.has("embedded-context")},
        # v1: stdio is mandatory for every agent, so --without mcp-stdio cannot be expressed.
        "mcpCapabilities": {"http": options.has("mcp-http"), "sse": False},
        "sessionCapabilities": session_caps,
    }
    if options.require_auth:
        agent_caps["auth"] = {"logout": {}}
    return {"protocolVersion": version, "agentCapabilities": agent_caps, "agentInfo": AGENT_INFO,
            "authMethods": methods}


#: Methods the later v2 draft makes baseline (never withheld there).
LATEST_BASELINE = frozenset({"session/resume", "session/close", "session/list"})


def method_available(method: str, version: int, options: Options) -> bool:
    """Whether ``method`` exists on a connection speaking ``version`` (feature gates aside)."""
    if (method in V1_ONLY and version >= 2) or (method in V2_ONLY and version < 2):
        return False
    if method == "session/load" and options.latest(version):
        return False  # the later v2 draft removed it: a load is session/resume with replayFrom
    # v1 logout exists only when advertised (agentCapabilities.auth.logout); v2 auth/logout is baseline.
    return method != "logout" or options.require_auth


def client_facts(params: dict[str, Any], version: int) -> ClientFacts:
    """What the client advertised. Only v1 defines any (fs, terminal, boolean config options)."""
    if version >= 2:
        return ClientFacts()
    caps = params.get("clientCapabilities")
    caps = caps if isinstance(caps, dict) else {}
    fs = caps.get("fs")
    fs = fs if isinstance(fs, dict) else {}
    return ClientFacts(
        read_text_file=fs.get("readTextFile") is True,
        write_text_file=fs.get("writeTextFile") is True,
        terminal=caps.get("terminal") is True,
        boolean_config=isinstance(_dig(caps, "session", "configOptions", "boolean"), dict),
        elicitation_form=isinstance(_dig(caps, "elicitation", "form"), dict),
    )


def _dig(obj: Any, *keys: str) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def refuse_method(method: str) -> RpcError:
    """Log the marker line and build the -32601 error for a withheld or unknown method."""
    log(f"UNADVERTISED METHOD CALLED: {method}")
    return RpcError(RpcError.METHOD_NOT_FOUND, f"Method not found: {method}")


def refuse_field(what: str, method: str) -> RpcError:
    """Log the marker line and build the -32602 error for a withheld field."""
    log(f"UNADVERTISED FIELD SENT: {what} in {method}")
    return RpcError(RpcError.INVALID_PARAMS, f"{what} was not advertised by this agent")


def absolute_path(value: Any, what: str) -> str:
    """``value`` if it is an absolute path string, else an invalid-params error."""
    if not isinstance(value, str) or not os.path.isabs(value):
        raise RpcError(RpcError.INVALID_PARAMS, f"{what} must be an absolute path, got {value!r}")
    return value


def additional_directories(params: dict[str, Any], method: str, options: Options) -> list[str]:
    """The request's additionalDirectories (all absolute), refused when not advertised."""
    value = params.get("additionalDirectories")
    if value is None:
        return []
    if not options.has("additional-directories"):
        raise refuse_field("additionalDirectories", method)
    if not isinstance(value, list):
        raise RpcError(RpcError.INVALID_PARAMS, "additionalDirectories must be an array")
    return [absolute_path(d, "each additionalDirectories entry") for d in value]


def mcp_server_names(params: dict[str, Any], method: str, version: int, options: Options) -> list[str]:
    """The names of the requested MCP servers, after checking each transport was advertised.

    Only names are returned: commands, env and headers may hold secrets and are never stored.
    """
    servers = params.get("mcpServers")
    if servers is None:
        return []
    if not isinstance(servers, list):
        raise RpcError(RpcError.INVALID_PARAMS, "mcpServers must be an array")
    names = []
    for i, server in enumerate(servers):
        if not isinstance(server, dict) or not isinstance(server.get("name"), str):
            raise RpcError(RpcError.INVALID_PARAMS, f"mcpServers[{i}] needs a name")
        kind = server.get("type", "stdio")
        if kind == "stdio":
            if version >= 2 and not options.has("mcp-stdio"):
                raise refuse_field(f"mcpServers[{i}] of type stdio", method)
            absolute_path(server.get("command"), f"mcpServers[{i}].command")
        elif kind == "http":
            if not options.has("mcp-http"):
                raise refuse_field(f"mcpServers[{i}] of type http", method)
            if not isinstance(server.get("url"), str):
                raise RpcError(RpcError.INVALID_PARAMS, f"mcpServers[{i}].url must be a string")
        else:
            raise refuse_field(f"mcpServers[{i}] of type {kind}", method)
        names.append(server["name"])
    return names
