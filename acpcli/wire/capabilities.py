"""What may be sent to this agent: the capability gates in front of the protocol's pure builders.

Every session-lifecycle request, login, logout and settings change acpcli sends is built here:
first the check against what the agent advertised (:class:`~acpcli.wire.negotiate.AgentFeatures`),
then the shape from :mod:`acpcli.protocol.wire` or :mod:`acpcli.protocol.settings`. So a method
or field whose capability marker is absent is never sent by accident: the check raises
:class:`~acpcli.errors.CapabilityMissing` (exit 6) naming the marker, with an alternative when
there is one. A setting's value the agent does not offer is a :class:`~acpcli.errors.UsageError`.

Level: above :mod:`acpcli.protocol` (pure shapes) and :mod:`acpcli.wire.negotiate` (the features),
below the session layer that sends what these return.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from acpcli.errors import CapabilityMissing, UsageError
from acpcli.protocol import settings, wire

if TYPE_CHECKING:
    from acpcli.protocol.settings import Choice
    from acpcli.wire.negotiate import AgentFeatures

#: The capability each gated method needs, as the user would read it in an error.
_METHOD_CAPABILITY = {
    "session/load": ("load", "session.load (v2) / loadSession (v1)"),
    "session/resume": ("resume", "session.resume (v2) / sessionCapabilities.resume (v1)"),
    "session/close": ("close", "session.close (v2) / sessionCapabilities.close (v1)"),
    "session/list": ("list", "session.list (v2) / sessionCapabilities.list (v1)"),
    "session/delete": ("delete", "session.delete (v2) / sessionCapabilities.delete (v1)"),
    "session/fork": ("fork", "session.fork (v2) / sessionCapabilities.fork (v1), unstable upstream"),
}

#: What to suggest instead when a method is missing.
_ALTERNATIVE = {
    "load": "use `acpcli resume` instead (no replay; the local transcript is shown)",
    "resume": "use `acpcli load` instead (the agent replays the conversation)",
    "close": "the agent keeps the session until it exits",
    "list": "use `acpcli sessions` to list the sessions recorded locally",
    "delete": "`acpcli sessions rm ID` without --remote deletes the local record only",
}


#: Agents known to answer ``session/load`` while their replay is still coming (observed:
#: gemini sends part of it, its ``<session_context>`` message, before the answer and the rest
#: after): the answer alone does not say the replay is over.
_TRAILING_REPLAY = ("gemini",)


def replay_may_trail(features: AgentFeatures) -> bool:
    """Whether this agent's load replay may go on after its answer (see ``AgentLink.settle``)."""
    name = (features.agent_name or "").lower()
    return any(known in name for known in _TRAILING_REPLAY)


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
    elif attr in ("close", "list", "delete"):
        alternatives.append(_ALTERNATIVE[attr])
    raise CapabilityMissing(
        f"{features.display_name} does not support {method}: it does not advertise {marker}",
        hint=alternatives[0] if alternatives else None,
    )


def require_roots_and_servers(
    features: AgentFeatures,
    additional_directories: Sequence[str] | None,
    mcp_servers: Sequence[dict[str, Any]],
) -> None:
    """Raise :class:`CapabilityMissing` for extra roots or an MCP transport not advertised."""
    if additional_directories and not features.additional_directories:
        raise CapabilityMissing(
            f"{features.display_name} does not support additional directories "
            "(session.additionalDirectories / sessionCapabilities.additionalDirectories)",
            hint="drop --add-dir (or use --no-add-dirs when loading or resuming)",
        )
    for server in mcp_servers:
        transport = server.get("type", "stdio")
        if not features.supports_mcp_transport(transport):
            raise CapabilityMissing(
                f"{features.display_name} does not support {transport} MCP servers "
                f"(server {server.get('name')!r})",
                hint="remove that server from --mcp / --mcp-config",
            )


# -- session lifecycle ------------------------------------------------------------------------


#: The ways of opening a session.
Opening = Literal["new", "load", "resume", "fork"]


def opening_params(
    features: AgentFeatures,
    how: Opening,
    cwd: str,
    additional_directories: Sequence[str] | None = None,
    mcp_servers: Sequence[dict[str, Any]] = (),
    *,
    session_id: str | None = None,
) -> tuple[str, dict[str, Any]]:
    """The method and params that open a session ``how`` on this agent, checked against what
    it advertised: the method (a load is ``session/load``, or the later v2 draft's
    ``session/resume`` from the start), then the roots and MCP servers it can take."""
    if how == "new":
        method = "session/new"
    else:
        require(features, f"session/{how}")
        method = (features.load_via or "session/load") if how == "load" else f"session/{how}"
    require_roots_and_servers(features, additional_directories, mcp_servers)
    params = wire.opening_params(
        features.protocol_version, cwd, additional_directories, mcp_servers,
        session_id=session_id, replay_from_start=how == "load" and method == "session/resume",
    )
    return method, params


def close_params(features: AgentFeatures, session_id: str) -> dict[str, Any]:
    """``session/close`` params."""
    require(features, "session/close")
    return wire.close_params(session_id)


def delete_params(features: AgentFeatures, session_id: str) -> dict[str, Any]:
    """``session/delete`` params (v1 ``sessionCapabilities.delete``, v2 ``session.delete``)."""
    require(features, "session/delete")
    return wire.delete_params(session_id)


def list_params(features: AgentFeatures, cwd: str | None = None, cursor: str | None = None) -> dict[str, Any]:
    """``session/list`` params."""
    require(features, "session/list")
    return wire.list_params(cwd, cursor)


# -- authentication ---------------------------------------------------------------------------


def login_request(features: AgentFeatures, method_id: str) -> tuple[str, dict[str, Any]]:
    """``authenticate`` (v1) or ``auth/login`` (v2) for an advertised, protocol-driven method.

    A ``terminal`` method is never sent (the spec forbids it: the client runs the agent's own
    login instead), nor is a method the agent did not advertise.
    """
    methods = {wire.auth_method_id(m): m for m in features.auth_methods}
    method = methods.get(method_id)
    if method is None:
        known = ", ".join(k for k in methods if k) or "none"
        raise CapabilityMissing(
            f"{features.display_name} does not offer the login method {method_id!r} (it offers: {known})"
        )
    if wire.auth_method_type(method) != "agent":
        raise CapabilityMissing(
            f"{method_id!r} is a {wire.auth_method_type(method)} login, which is not done over the protocol",
            hint="run `acpcli auth` for this agent: it runs terminal logins in your terminal",
        )
    return wire.login_request(features.protocol_version, method_id)


def logout_request(features: AgentFeatures) -> tuple[str, dict[str, Any]]:
    """``logout`` (v1, only when ``agentCapabilities.auth.logout`` is advertised) or
    ``auth/logout`` (v2, only when the agent lists ``authMethods``: with none, there is no
    authenticated state to end and the spec forbids the call)."""
    if features.protocol_version == 1:
        if not features.auth_logout:
            raise CapabilityMissing(
                f"{features.display_name} does not support logout: it does not advertise agentCapabilities.auth.logout"
            )
    elif not features.auth_methods:
        raise CapabilityMissing(f"{features.display_name} lists no login methods, so there is nothing to log out of")
    return wire.logout_request(features.protocol_version)


# -- session settings -------------------------------------------------------------------------

_TRUE = {"on", "true", "yes", "1", "enable", "enabled"}
_FALSE = {"off", "false", "no", "0", "disable", "disabled"}


def resolve(choice: Choice, text: str) -> str | bool:
    """The value the person meant: a value id or its name (without case), else a whole word
    of exactly one of them; ``on``/``off`` for a boolean. Raises :class:`UsageError` naming
    the valid values (nothing the agent does not offer is ever sent)."""
    if choice.kind == "boolean":
        word = text.strip().casefold()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise UsageError(f"{choice.key} is true or false (on or off), not {text!r}")
    if choice.kind not in ("select", "modes", "models"):
        raise UsageError(f"{choice.key} is a {choice.kind} option, which acpcli cannot set")
    folded = text.strip().casefold()
    for value, name, _ in choice.values:
        if value == text.strip() or value.casefold() == folded or name.casefold() == folded:
            return value
    # "smart" for "demo-smart" / "Demo Smart": a whole word of exactly one value (a typo or
    # a fragment such as "4" of "gpt-4o" must not pick a value by guess)
    partial = {value for value, name, _ in choice.values if folded and folded in _words(value) | _words(name)}
    if len(partial) == 1:
        return partial.pop()
    if partial:
        several = ", ".join(v for v, _, _ in choice.values if v in partial)
        raise UsageError(f"{text!r} matches several values of {choice.key}: {several} (name one of them)")
    valid = ", ".join(v for v, _, _ in choice.values) or "none"
    raise UsageError(f"{text!r} is not a value of {choice.key} (choose from: {valid})")


def _words(text: str) -> set[str]:
    return {word for word in re.split(r"[^0-9a-z]+", text.casefold()) if word}


def change_request(features: AgentFeatures, session_id: str, choice: Choice, value: str | bool) -> tuple[str, dict[str, Any]]:
    """The method and params that set ``choice`` to ``value`` on this connection
    (:func:`acpcli.protocol.settings.change_request`): ``session/set_mode``, ``session/set_model``
    and boolean options exist in protocol v1 only, so a v2 connection never sends them."""
    if features.protocol_version != 1:
        if choice.kind == "modes":
            raise CapabilityMissing("session/set_mode exists in protocol v1 only", hint="use /config")
        if choice.kind == "models":
            raise CapabilityMissing("session/set_model exists in protocol v1 only", hint="use /config")
        if choice.kind == "boolean":
            raise CapabilityMissing("boolean config options exist in protocol v1 only")
    return settings.change_request(session_id, choice, value)
